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
