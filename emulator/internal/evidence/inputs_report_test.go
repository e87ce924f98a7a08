package evidence

import (
	"fmt"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// refusedGen is a generation answered 422 with an input problem.
func (c *client) refusedGen(key, code, rule string) uint64 {
	e := gen(key, "q1", 422, code, "", "")
	e.ResponseBody = []byte(fmt.Sprintf(`{"code":%q,"rule":%q,"errors":[{"pointer":"/input/image_url","message":"no"}]}`, code, rule))
	return c.add(e)
}

// uploaded is a POST /v1/uploads answered 201 for a file of the digest, live for an hour.
func (c *client) uploaded(digest string) uint64 {
	return c.add(api.JournalEntry{Method: "POST", Path: "/v1/uploads", Status: 201, InputDigest: digest,
		ResponseBody: []byte(fmt.Sprintf(`{"id":"u","expires_at":%q}`, c.now.Add(time.Hour).Format(time.RFC3339Nano)))})
}

// pollFailed is a poll that shows the job failed with code.
func (c *client) pollFailed(job, code string) uint64 {
	return c.add(api.JournalEntry{Method: "GET", Path: "/v1/jobs/" + job, Status: 200, JobID: job, JobStatus: "failed",
		ResponseBody: []byte(fmt.Sprintf(`{"id":%q,"status":"failed","error":{"code":%q,"message":"x"}}`, job, code))})
}

func init() {
	cases = append(cases,
		ruleCase{rule: UnreachableInputURL,
			fires: func(c *client) {
				c.quote("q1", 10*time.Minute)
				c.refusedGen("k1", "input_url_refused", "loopback_address")
			},
			seqs: []uint64{2}, reason: "loopback_address",
			quiet: func(c *client) {
				c.quote("q1", 10*time.Minute)
				c.refusedGen("k1", "input_url_refused", "bare_ip") // a rule of the service's, not an unreachable host
				c.generate("k2", "q1", 202, "", "j1", "queued")
			}},
		ruleCase{rule: OversizedInlineInput,
			fires: func(c *client) {
				c.quote("q1", 10*time.Minute)
				c.refusedGen("k1", "input_too_large", "inline_too_large")
				c.refusedGen("k2", "input_too_large", "inline_too_large") // the same member: one finding
			},
			seqs: []uint64{2},
			quiet: func(c *client) {
				c.quote("q1", 10*time.Minute)
				c.generate("k1", "q1", 202, "", "j1", "queued")
			}},
		ruleCase{rule: InputExpiredBeforeStart,
			fires: func(c *client) {
				c.uploaded("sha256:a")
				c.quote("q1", 10*time.Minute)
				c.generate("k1", "q1", 202, "", "j1", "queued")
				c.sleep(2 * time.Hour)
				c.pollFailed("j1", "input_expired")
				c.pollFailed("j1", "input_expired") // seen again: still one finding
			},
			seqs: []uint64{4},
			quiet: func(c *client) {
				c.uploaded("sha256:a")
				c.quote("q1", 10*time.Minute)
				c.generate("k1", "q1", 202, "", "j1", "queued")
				c.pollFailed("j1", "generation_failed")
			}},
		ruleCase{rule: UploadNotReused,
			fires: func(c *client) {
				for range 3 {
					c.uploaded("sha256:a")
					c.sleep(time.Minute)
				}
			},
			seqs: []uint64{1, 2, 3}, reason: "uploaded 3 times",
			quiet: func(c *client) {
				c.uploaded("sha256:a")
				c.sleep(2 * time.Hour) // expired: uploading again is right
				c.uploaded("sha256:a")
				c.uploaded("sha256:b") // another file
				c.sleep(2 * time.Hour)
				c.uploaded("sha256:a")
			}},
	)
}
