package evidence

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
)

// The rules about how a client sends its media inputs, judged while inputs are fetched
// (docs/inputs.md): only then does the emulator answer what they look at.
const (
	UnreachableInputURL     = "unreachable-input-url"
	OversizedInlineInput    = "oversized-inline-input"
	InputExpiredBeforeStart = "input-expired-before-start"
	UploadNotReused         = "upload-not-reused"
)

// InputRules are the rules above, which judge only what a run with inputs fetched answers.
var InputRules = map[string]bool{UnreachableInputURL: true, OversizedInlineInput: true, InputExpiredBeforeStart: true, UploadNotReused: true}

// ReuploadsNoted is how many uploads of the same bytes, each while an earlier one of them was
// still live, make an upload-not-reused finding: once is a retry, twice a habit.
const ReuploadsNoted = 2

// mediaSeen is what the report has seen of a client's media inputs.
type mediaSeen struct {
	refused map[string]bool // rule findings made, one per rule and input member
	expired map[string]bool // jobs found failed input_expired
	uploads map[string]*uploadSeen
}

// uploadSeen is the uploads of the same bytes by one account.
type uploadSeen struct {
	expires time.Time // the latest expires_at among them
	seqs    []uint64
	again   int // uploads while an earlier one was still live
	finding int // index in out, or -1
}

// inputRefused judges a generation answered 422 input_url_refused or input_too_large: a URL a
// hosted service cannot reach (loopback, private, a local name, http:) is unreachable-input-url,
// a data: URI over the limit oversized-inline-input. One finding per rule and member.
func (j *judge) inputRefused(e *Entry) {
	var body struct {
		Rule   string `json:"rule"`
		Errors []struct {
			Pointer string `json:"pointer"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(e.ResponseBody, &body) != nil || len(body.Errors) == 0 {
		return
	}
	if j.media.refused == nil {
		j.media.refused = map[string]bool{}
	}
	ptr, msg := body.Errors[0].Pointer, body.Errors[0].Message
	switch {
	case e.Code == "input_too_large":
		if k := OversizedInlineInput + ptr; !j.media.refused[k] {
			j.media.refused[k] = true
			j.subject(j.add(OversizedInlineInput, fmt.Sprintf("a data: URI at %s is over the service's inline limit (%s): upload the file (POST /v1/uploads) and send its url",
				clipText(ptr), clipText(msg)), e.Seq), e.Seq)
		}
	case inputs.Unreachable(body.Rule):
		if k := UnreachableInputURL + ptr; !j.media.refused[k] {
			j.media.refused[k] = true
			j.subject(j.add(UnreachableInputURL, fmt.Sprintf("the input at %s is a URL the hosted service cannot reach (%s): %s; upload the file (POST /v1/uploads) or serve it from a public https: host",
				clipText(ptr), body.Rule, clipText(msg)), e.Seq), e.Seq)
		}
	}
}

// inputExpired judges an answer that shows a job failed input_expired: its upload or output URL
// expired while the job waited, so the client uploaded too early or queued too long.
func (j *judge) inputExpired(e *Entry) {
	if e.JobStatus != "failed" || len(e.ResponseBody) == 0 {
		return
	}
	var job struct {
		ID    string `json:"id"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(e.ResponseBody, &job) != nil || job.Error == nil || job.Error.Code != "input_expired" || job.ID == "" {
		return
	}
	if j.media.expired == nil {
		j.media.expired = map[string]bool{}
	}
	if j.media.expired[job.ID] {
		return
	}
	j.media.expired[job.ID] = true
	j.add(InputExpiredBeforeStart, fmt.Sprintf("job %s failed as it started because an input (an upload or an output URL) had expired while it was queued: upload inputs right before generating, and upload again when a generation is retried later than the upload's expires_at",
		clipText(job.ID)), e.Seq)
}

// upload judges a POST /v1/uploads answered 201: the same bytes uploaded again by the same
// account while an earlier upload of them was still live could have reused its url.
func (j *judge) upload(e *Entry) {
	if e.Status != 201 || e.InputDigest == "" {
		return
	}
	var up struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	_ = json.Unmarshal(e.ResponseBody, &up)
	if j.media.uploads == nil {
		j.media.uploads = map[string]*uploadSeen{}
	}
	k := e.Account + "\x00" + e.InputDigest
	u := j.media.uploads[k]
	if u == nil {
		u = &uploadSeen{finding: -1}
		j.media.uploads[k] = u
	}
	if len(u.seqs) > 0 && arrived(e).Before(u.expires) {
		u.again++
	}
	u.seqs = append(u.seqs, e.Seq)
	if up.ExpiresAt.After(u.expires) {
		u.expires = up.ExpiresAt
	}
	if u.again < ReuploadsNoted {
		return
	}
	if u.finding < 0 {
		u.finding = j.add(UploadNotReused, "", u.seqs...)
		j.later = append(j.later, func() { // written once every upload of it has been seen
			j.out[u.finding].Reason = fmt.Sprintf("the same file was uploaded %d times while an earlier upload of it was still live: upload it once and send its url to every generation until its expires_at",
				len(u.seqs))
		})
		return
	}
	j.addSeq(u.finding, e.Seq)
}
