package api

import "encoding/json"

// SnapshotFormat is the version of the snapshot document this emulator writes and reads; a
// document of a newer format is refused rather than misread.
const SnapshotFormat = 1

// Snapshot is a tenant's whole mutable world as one document (GET and PUT
// /_emulator/snapshot): restoring it puts the world back exactly, so jobs go on as they would
// have and, under a seed, the same requests get the same answers, ids and file bytes.
type Snapshot struct {
	Format   int    `json:"format"`
	Emulator string `json:"emulator"` // the version that wrote it
	// Catalog is a digest of the catalog's models and accounts when it was written: a restore
	// into another catalog is allowed as long as it has every model the document names.
	Catalog         string           `json:"catalog"`
	Tenant          string           `json:"tenant"` // the tenant it was taken from
	Clock           SnapshotClock    `json:"clock"`
	Random          SnapshotRandom   `json:"random"`
	Scenario        SnapshotScenario `json:"scenario"`
	Accounts        []Balance        `json:"accounts"`
	Quotes          []SnapshotQuote  `json:"quotes"`
	Jobs            []SnapshotJob    `json:"jobs"`
	IdempotencyKeys []SnapshotKey    `json:"idempotency_keys"`
	Faults          SnapshotFaults   `json:"faults"`
	RateLimits      []SnapshotWindow `json:"rate_limits"`
	// ExpectedErrors are the error answers a test said it expects (POST
	// /_emulator/expected-errors), in the order given.
	ExpectedErrors []RequestPattern `json:"expected_errors"`
	// Coverage is the tenant's count of the contract's cases, only those seen: the contract's
	// in its order, then the others in the order first seen. The run's counts, which outlive
	// the tenant, are not the tenant's and are not in it.
	Coverage []CoverageCase `json:"coverage"`
	// Notes are what the report judges beside the journal: downloads and balances set.
	Notes SnapshotNotes `json:"notes"`
	// Journal is present when asked for (?journal=true); a restore without it starts an empty
	// journal.
	Journal *SnapshotJournal `json:"journal,omitempty"`
	// Webhooks is the tenant's webhook, when it has one or deliveries are due; a restore
	// without it keeps the run's and the scenario's.
	Webhooks *SnapshotWebhooks `json:"webhooks,omitempty"`
	// Uploads are the tenant's live uploads (POST /v1/uploads), their bytes included; absent
	// when it has none.
	Uploads []SnapshotUpload `json:"uploads,omitempty"`
	// UploadsMade counts the uploads the tenant has made, so a restored seeded tenant names
	// its next upload as the original would.
	UploadsMade uint64 `json:"uploads_made,omitempty"`
}

// SnapshotClock is the world's clock: its mode and where it stood. A real clock goes on from
// that instant at the speed of wall time.
type SnapshotClock struct {
	Mode string `json:"mode"` // real, manual or skip
	Now  string `json:"now"`
}

// SnapshotRandom is the position of the world's id and random source. Seeded ids and draws are
// named by stable inputs (the seed, the tenant, the entity), so the only positions are counters:
// request ids drawn, and each account's quotes made.
type SnapshotRandom struct {
	Seeded bool `json:"seeded"`
	// Seed and Namespace (a UUID derived from the seed and the tenant's name) are set when
	// seeded; Seed is text so that no client's numbers lose digits.
	Seed      string `json:"seed,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Requests counts the request ids drawn.
	Requests uint64 `json:"requests"`
	// Quotes counts each account's quotes made.
	Quotes map[string]uint64 `json:"quotes"`
	// Latency counts the delays drawn by each latency rule of the scenario in force, in its
	// order, so a restored tenant draws the same delays next.
	Latency []uint64 `json:"latency,omitempty"`
}

// SnapshotScenario is the scenario in force: by name when the emulator has it, or the whole
// document when it was sent inline.
type SnapshotScenario struct {
	Name     string `json:"name"`
	Document string `json:"document,omitempty"` // YAML or JSON, as it was sent
}

// SnapshotQuote is a quote the world knows: live (unused, unexpired), or only its marker once
// spent or expired, which keeps a digest of its input rather than the input.
type SnapshotQuote struct {
	ID          string          `json:"id"`
	Account     string          `json:"account"`
	Model       string          `json:"model"`
	Credits     int64           `json:"credits"`
	CreatedAt   string          `json:"created_at"`
	ExpiresAt   string          `json:"expires_at"`
	Input       json.RawMessage `json:"input,omitempty"`
	InputDigest string          `json:"input_digest"` // hex, of the canonical input
	UsedBy      string          `json:"used_by,omitempty"`
}

// SnapshotJob is a job with the plan it was given, so a restored job goes on exactly as it
// would have. Jobs are listed in creation order.
type SnapshotJob struct {
	ID         string          `json:"id"`
	Account    string          `json:"account"`
	Model      string          `json:"model"`
	QuoteID    string          `json:"quote_id"`
	Credits    int64           `json:"credits"`
	Input      json.RawMessage `json:"input"`
	Status     string          `json:"status"`
	CreatedAt  string          `json:"created_at"`
	StartedAt  string          `json:"started_at,omitempty"`
	FinishedAt string          `json:"finished_at,omitempty"`
	Progress   int             `json:"progress"` // hundredths, as frozen when it ended
	Forced     bool            `json:"forced,omitempty"`
	Error      *JobError       `json:"error,omitempty"`
	Plan       SnapshotPlan    `json:"plan"`
	OutputTTL  Duration        `json:"output_ttl"`
	// Outputs are the files the job makes, left out when its model, input and seeded source
	// make the same ones again (as they do under a seed); [] is a job without outputs.
	Outputs []SnapshotOutput `json:"outputs,omitzero"`
	// FinishOrder places an ended job among the others in the order they ended (1 first),
	// which is the order they are dropped.
	FinishOrder int `json:"finish_order,omitempty"`
	// Slot is a live job's place under a concurrency limit, absent for a job without one.
	Slot *SnapshotSlot `json:"slot,omitempty"`
}

// SnapshotSlot is a live job's place under a scenario's concurrency limit: the group of slots
// it counts against and the group's limit, and when it got its slot — absent while it waits in
// the group's line, where jobs stand in the order they are listed.
type SnapshotSlot struct {
	Group      string `json:"group"`
	Limit      int    `json:"limit"`
	AdmittedAt string `json:"admitted_at,omitempty"`
}

// SnapshotPlan is the course a job was given when it was created.
type SnapshotPlan struct {
	Queue        Duration       `json:"queue"`
	Run          Duration       `json:"run"`
	QueueTimeout Duration       `json:"queue_timeout"`
	Ending       SnapshotEnding `json:"ending"`
	Forced       string         `json:"forced,omitempty"`
	// Struck is the id of the perturbation that forced the outcome.
	Struck string `json:"struck,omitempty"`
	// Filtered is how many outputs the job filters out (a partial result).
	Filtered int `json:"filtered,omitempty"`
	// InputsExpireAt is when an input the job reads at its start (an upload, an output URL)
	// expires: a job that starts after it fails input_expired. Absent when none does.
	InputsExpireAt string `json:"inputs_expire_at,omitempty"`
	// MediaInputs are the job's media inputs as its generation found them; absent when
	// inputs were not fetched.
	MediaInputs []MediaInput `json:"media_inputs,omitempty"`
}

// SnapshotEnding is how a job ends when nothing interrupts it.
type SnapshotEnding struct {
	Status  string  `json:"status"` // succeeded, failed or expired
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	At      float64 `json:"at,omitempty"`
	InQueue bool    `json:"in_queue,omitempty"`
}

// SnapshotOutput is a file a job has once it succeeds, with what makes it byte for byte.
type SnapshotOutput struct {
	Type        string  `json:"type"`
	File        string  `json:"file"` // its name under the job, such as 0.png
	ContentType string  `json:"content_type"`
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	Duration    float64 `json:"duration_seconds,omitempty"`
	SizeBytes   int64   `json:"size_bytes"`
	Format      string  `json:"format"`
	Seed        string  `json:"seed"` // a 64-bit number, as text
	Label       string  `json:"label"`
	// Opening is the raster a video opens on, base64: the input image its job was made from,
	// scaled (docs/inputs.md); absent when the video opens on its fixture.
	Opening string `json:"opening,omitempty"`
}

// SnapshotKey is an Idempotency-Key that created a job, remembered until Until; listed in the
// order they are forgotten.
type SnapshotKey struct {
	Account string `json:"account"`
	Key     string `json:"key"`
	Digest  string `json:"digest"` // hex SHA-256 of the request
	JobID   string `json:"job_id"`
	Until   string `json:"until"`
}

// SnapshotFaults are the fault rules in force, in order, and the number the next one takes.
type SnapshotFaults struct {
	NextID int             `json:"next_id"`
	Rules  []SnapshotFault `json:"rules"`
}

// SnapshotFault is one fault rule with its counts: Remaining (-1 for no limit), Fired, and the
// probability draws made so far.
type SnapshotFault struct {
	ID        string       `json:"id"`
	Source    string       `json:"source"`
	Rule      Perturbation `json:"rule"`
	Remaining int          `json:"remaining"`
	Fired     int          `json:"fired"`
	// Seen counts the requests or jobs the perturbation's ordinal (at) has passed over.
	Seen  int    `json:"seen,omitempty"`
	Draws uint64 `json:"draws"`
}

// SnapshotWindow is one rate-limit window's count: the scenario's limit (by index), the
// caller (a key or an account) and the window (by number since 1970).
type SnapshotWindow struct {
	Rule   int    `json:"rule"`
	Caller string `json:"caller"`
	Window int64  `json:"window"`
	Count  int    `json:"count"`
}

// SnapshotJournal is the request journal: its entries, oldest first, and the last number
// given.
type SnapshotJournal struct {
	Seq     uint64         `json:"seq"`
	Entries []JournalEntry `json:"entries"`
}

// SnapshotNotes are the downloads of output files, the balances set through the control API
// and the webhook attempts, oldest first, which the report judges beside the journal.
type SnapshotNotes struct {
	// Dropped is the time of the newest note dropped to make room, when one was: the report
	// does not judge what may lie in the gap.
	Dropped string         `json:"dropped,omitempty"`
	Entries []SnapshotNote `json:"entries"`
}

// SnapshotNote is one note: a download (job, file, status answered, whether a range was asked
// for), a balance set (account) or a webhook attempt (webhook).
type SnapshotNote struct {
	Kind   string `json:"kind"` // download, credits_set or webhook_attempt
	Time   string `json:"time"`
	Job    string `json:"job,omitempty"`
	File   string `json:"file,omitempty"`
	Status int    `json:"status,omitempty"`
	Ranged bool   `json:"ranged,omitempty"`
	// Start and Sent are the bytes of the file a download's answer held, from Start, and how
	// many reached the connection; Size is the file's whole size.
	Start   int64  `json:"start,omitempty"`
	Sent    int64  `json:"sent,omitempty"`
	Size    int64  `json:"size,omitempty"`
	Account string `json:"account,omitempty"`
	// Authorized says a download carried an Authorization header; LinkExpires is the expiry a
	// signed link named, and LinkExpired says it was refused for being past it.
	Authorized  bool   `json:"authorized,omitempty"`
	LinkExpires string `json:"link_expires,omitempty"`
	LinkExpired bool   `json:"link_expired,omitempty"`
	// Webhook is a webhook_attempt's attempt, its seq included; Audited says the receiver
	// audit was on, so the report judges the receiver by it.
	Webhook *WebhookAttempt `json:"webhook,omitempty"`
	Audited bool            `json:"audited,omitempty"`
}

// SnapshotResult is the answer to PUT /_emulator/snapshot.
type SnapshotResult struct {
	Status string `json:"status"` // restored
	Tenant string `json:"tenant"`
	Now    string `json:"now"`
	Jobs   int    `json:"jobs"`
	Quotes int    `json:"quotes"`
}

// SnapshotUpload is one upload as a snapshot carries it: its bytes, base64 in JSON, so a
// restored tenant's jobs read the very file and outputs keep following it.
type SnapshotUpload struct {
	ID          string `json:"id"`
	Account     string `json:"account"`
	ContentType string `json:"content_type"`
	Data        []byte `json:"data"`
	CreatedAt   string `json:"created_at"`
	ExpiresAt   string `json:"expires_at"`
}
