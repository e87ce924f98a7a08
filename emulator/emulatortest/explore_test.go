package emulatortest_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// subjectEnv makes TestExploreSubject explore a client: "careful" or "buggy". The tests below
// run it in a child test binary, since a failing Explore fails the test that calls it.
const subjectEnv = "EMULATORTEST_EXPLORE_SUBJECT"

// TestExploreSubject is the explored test the other tests run in a child process.
func TestExploreSubject(t *testing.T) {
	subject := os.Getenv(subjectEnv)
	if subject == "" {
		t.Skip("run by TestExploreFindsTheBuggyClient and TestExploreCarefulClientPasses")
	}
	runs, _ := strconv.Atoi(os.Getenv("EMULATORTEST_EXPLORE_RUNS"))
	emulatortest.Explore(t, runs, func(t *testing.T, emu *emulatortest.Emulator) {
		c := &renderer{base: emu.URL, key: emu.Keys.All, freshKeyOnRetry: subject == "buggy"}
		if err := c.render("fal-ai/flux/schnell", map[string]any{"prompt": "a red fox"}); err != nil {
			t.Fatal(err)
		}
	}, emulatortest.WithExploreSeed(7), emulatortest.WithExploreOut(os.Getenv("EMULATORTEST_EXPLORE_OUT")))
}

// child runs TestExploreSubject in a child test binary; its output and whether it passed.
func child(t *testing.T, subject string, runs int, out string, env ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExploreSubject$", "-test.v")
	cmd.Env = append(os.Environ(), subjectEnv+"="+subject, "EMULATORTEST_EXPLORE_RUNS="+strconv.Itoa(runs),
		"EMULATORTEST_EXPLORE_OUT="+out, emulatortest.URLEnv+"=", emulatortest.PlanEnv+"=")
	cmd.Env = append(cmd.Env, env...)
	got, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the child test: %v", err)
	}
	return string(got), err == nil
}

func TestExploreFindsTheBuggyClient(t *testing.T) {
	out := t.TempDir()
	got, passed := child(t, "buggy", 30, out)
	if passed {
		t.Fatalf("explore passed the buggy client:\n%s", got)
	}
	for _, want := range []string{"mediagen-emulator explore: run ", "POST /v1/generate", "new-key-on-retry", "MEDIAGEN_PLAN="} {
		if !strings.Contains(got, want) {
			t.Errorf("the failure lacks %q:\n%s", want, got)
		}
	}
	path := filepath.Join(out, "TestExploreSubject-seed7.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no bundle: %v\n%s", err, got)
	}
	var b api.Bundle
	if err := json.Unmarshal(data, &b); err != nil || b.Format != api.BundleFormat || b.Seed != 7 || !b.Verdict.Failed {
		t.Fatalf("the bundle: %v %+v", err, b.Verdict)
	}
	if n := len(b.Plan.Perturbations); n == 0 || n > 2 {
		t.Errorf("the shrunk plan has %d perturbations: %+v", n, b.Plan)
	}
	if !regexp.MustCompile(`the plan and the failing tenant are in \S*TestExploreSubject-seed7\.json`).MatchString(got) {
		t.Errorf("the failure does not name the bundle file:\n%s", got)
	}

	// The bundle replays: the test fails again under its plan, in one run.
	again, passed := child(t, "buggy", 30, t.TempDir(), emulatortest.PlanEnv+"="+path)
	if passed || !strings.Contains(again, "fails under the plan of "+path) || !strings.Contains(again, "new-key-on-retry") {
		t.Errorf("the replay did not fail as the bundle says:\n%s", again)
	}
	if strings.Contains(again, "run-2") {
		t.Errorf("the replay explored instead of running once:\n%s", again)
	}
	// The careful client passes under the same plan.
	if got, passed := child(t, "careful", 1, t.TempDir(), emulatortest.PlanEnv+"="+path); !passed {
		t.Errorf("the careful client fails under the buggy one's plan:\n%s", got)
	}
}

func TestExploreCarefulClientPasses(t *testing.T) {
	got, passed := child(t, "careful", 12, t.TempDir())
	if !passed {
		t.Fatalf("explore failed the careful client:\n%s", got)
	}
	if !strings.Contains(got, "12 runs under plans drawn from seed 7: none failed") || !strings.Contains(got, "run-12") {
		t.Errorf("the output does not show 12 runs:\n%s", got)
	}
}

// renderer is a small client of the service for the tests above: it quotes, generates with
// wait=true, retries what may succeed later after Retry-After, and downloads the outputs,
// resuming a cut download and refreshing an expired link. freshKeyOnRetry is the bug explore
// must find: a new Idempotency-Key on the retry of an ambiguous generation.
type renderer struct {
	base, key       string
	freshKeyOnRetry bool
}

// reply is one HTTP answer; status 0 when none came whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (c *renderer) render(model string, input map[string]any) error {
	for range 3 {
		var q struct {
			QuoteID string `json:"quote_id"`
		}
		if err := c.json("POST", "/v1/quotes", map[string]any{"model": model, "input": input}, nil, &q); err != nil {
			return err
		}
		body := map[string]any{"model": model, "input": input, "quote_id": q.QuoteID}
		key := newKey()
		var job api.Job
		err := c.json("POST", "/v1/generate?wait=true", body, &key, &job)
		var refused *refusal
		if errors.As(err, &refused) && refused.code == "quote_expired" {
			continue // nothing was made: quote again, under a new key
		}
		if err != nil {
			return err
		}
		for job.Status != "succeeded" && job.Status != "failed" && job.Status != "canceled" && job.Status != "expired" {
			time.Sleep(200 * time.Millisecond) // a wait=true again is a wait, not a poll: the pause only avoids a busy loop
			if err := c.json("POST", "/v1/generate?wait=true", body, &key, &job); err != nil {
				return err
			}
		}
		if job.Status != "succeeded" {
			return fmt.Errorf("job %s ended %s", job.ID, job.Status)
		}
		for i := range job.Outputs {
			if err := c.download(&job, i); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("every quote expired")
}

// refusal is an answer no retry changes.
type refusal struct {
	status int
	code   string
}

func (r *refusal) Error() string { return fmt.Sprintf("refused: %d %s", r.status, r.code) }

// json sends one API request until its answer is not ambiguous, the same key on every retry
// (unless freshKeyOnRetry), and decodes the answer into out.
func (c *renderer) json(method, path string, in any, key *string, out any) error {
	for attempt := range 8 {
		a := c.send(method, c.base+path, in, key, "")
		if a.status >= 200 && a.status < 300 && json.Unmarshal(a.body, out) == nil {
			return nil
		}
		if a.status >= 300 && a.status != 429 && a.status < 500 {
			var p api.Problem
			_ = json.Unmarshal(a.body, &p)
			return &refusal{a.status, p.Code}
		}
		c.pause(a, attempt)
		if key != nil && c.freshKeyOnRetry {
			*key = newKey()
		}
	}
	return fmt.Errorf("%s %s: no answer after 8 attempts", method, path)
}

// download fetches output i whole, resuming a cut body with Range and reading the job again
// for a fresh link when one has expired.
func (c *renderer) download(job *api.Job, i int) error {
	var got []byte
	for attempt := range 16 {
		out := job.Outputs[i]
		rng := ""
		if len(got) > 0 {
			rng = "bytes=" + strconv.Itoa(len(got)) + "-"
		}
		a := c.send("GET", out.URL, nil, nil, rng)
		switch {
		case a.status == 206 && len(got) > 0:
			got = append(got, a.body...)
		case a.status == 200:
			got = a.body
		case a.status == 416 && len(got) > 0:
			return nil
		case a.status == 403:
			if err := c.json("GET", "/v1/jobs/"+job.ID, nil, nil, job); err != nil {
				return err
			}
			continue
		case a.status == 0 || a.status == 429 || a.status >= 500:
			c.pause(a, attempt)
			continue
		default:
			return fmt.Errorf("output %d: %d", i, a.status)
		}
		if int64(len(got)) >= out.SizeBytes {
			return nil
		}
	}
	return fmt.Errorf("output %d never came whole", i)
}

// pause waits Retry-After (seconds or a date, measured from the answer's Date), else a little.
func (c *renderer) pause(a reply, attempt int) {
	wait := time.Duration(50<<attempt) * time.Millisecond
	if v := a.header.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			wait = time.Duration(n) * time.Second
		} else if at, err := http.ParseTime(v); err == nil {
			sent, err := http.ParseTime(a.header.Get("Date"))
			if err != nil {
				sent = time.Now()
			}
			wait = at.Sub(sent)
		}
	}
	time.Sleep(min(wait, 30*time.Second))
}

// send makes one request; the answer's status is 0 when the connection dropped, or when an API
// answer's body came short.
func (c *renderer) send(method, url string, in any, key *string, rng string) reply {
	var body io.Reader
	if in != nil {
		data, _ := json.Marshal(in)
		body = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, url, body)
	if strings.HasPrefix(url, c.base+"/v1/") {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != nil {
		req.Header.Set("Idempotency-Key", *key)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{header: http.Header{}}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	a := reply{status: resp.StatusCode, header: resp.Header, body: data}
	if err != nil && (strings.HasPrefix(url, c.base+"/v1/") || resp.StatusCode >= 300) {
		return reply{header: resp.Header} // a cut API answer is no answer
	}
	return a // a cut file keeps what came, for the next Range
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
