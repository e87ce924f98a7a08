package api

// Upload is the answer to POST /v1/uploads: a file the service keeps for a while, named by a
// URL that any media input of a generation takes.
type Upload struct {
	// ID names the upload; its URL ends in it.
	ID string `json:"id"`
	// URL is what to send as image_url (or any media input) until ExpiresAt.
	URL string `json:"url"`
	// ContentType is the file's type, as sent or, when it named none, as its bytes say.
	ContentType string `json:"content_type"`
	// SizeBytes is the file's length.
	SizeBytes int64 `json:"size_bytes"`
	// Width and Height are a decoded image's size in pixels.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Duration is a decoded WAV's length in seconds.
	Duration float64 `json:"duration,omitempty"`
	// CreatedAt and ExpiresAt are on the tenant's clock; a job that starts after ExpiresAt
	// fails input_expired.
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
}

// ControlUpload is one of a tenant's live uploads as GET /_emulator/uploads lists it: the
// upload as POST /v1/uploads answered it, with the account that sent it and the jobs that
// read it.
type ControlUpload struct {
	Upload
	// Account is the account whose key sent the upload.
	Account string `json:"account"`
	// Failure is the code a job reading the upload fails with as it starts, when the file did
	// not decode (input_undecodable); absent when it did.
	Failure string `json:"failure,omitempty"`
	// Jobs are the ids of the tenant's jobs that name the upload among their media inputs,
	// newest first, at most 50 of them; empty when none does yet.
	Jobs []string `json:"jobs"`
	// JobCount is how many of the tenant's jobs name the upload.
	JobCount int `json:"job_count"`
}

// MediaInput is one media input of a job as its generation found it, with inputs fetched
// (GET /_emulator/jobs/{id}): what was sent, how the emulator read it, and what it was.
type MediaInput struct {
	// Member is the input member ("image_url"), Pointer where the URL is in the job's input
	// ("/input/image_urls/1").
	Member  string `json:"member"`
	Pointer string `json:"pointer"`
	// Source is how the input was read: upload (the tenant's upload), output (a job's output
	// file), data (a data: URI), fetched (a host on --inputs-allow) or stand_in (judged by the
	// rules and never contacted).
	Source string `json:"source"`
	// URL is the URL as sent; a data: URI is shown by its media type alone ("data:image/png").
	URL string `json:"url"`
	// Upload is the upload's id, when Source is upload.
	Upload string `json:"upload,omitempty"`
	// Read says the input's bytes were read (false: a stand-in of documented shape).
	Read bool `json:"read"`
	// ContentType, Width, Height, Duration and SizeBytes are what the input decoded to, as far
	// as it did; a stand-in's are the stand-in's.
	ContentType string  `json:"content_type,omitempty"`
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	Duration    float64 `json:"duration,omitempty"`
	SizeBytes   int64   `json:"size_bytes,omitempty"`
	// Failure is the code the input fails its job with as it starts (input_fetch_failed,
	// input_undecodable, ...); absent when it will do. An input that expires before the
	// job starts is known only then: the job's error says so.
	Failure string `json:"failure,omitempty"`
}
