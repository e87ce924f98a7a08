package battery

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a conformance adapter: run with the one argument "adapter:MODE"
// it is one, a small careful client written to the contract, and exits. MODE names a bug to
// plant, or "careful" for none.
const adapterArg = "adapter:"

// adapterCommand is the command line of the test adapter with that bug.
func adapterCommand(bug string) []string { return []string{os.Args[0], adapterArg + bug} }

// Bugs the test adapter can be given.
const (
	bugNone = "careful"
	// bugNoSuccessor reports failure on a retired model instead of moving to its replacement.
	bugNoSuccessor = "no-successor"
	// bugNewKey sends every retry of a generation with a fresh Idempotency-Key.
	bugNewKey = "new-key"
	// bugKeyLater sends a generation without its Idempotency-Key first, and with it once
	// the service answers 400 missing_idempotency_key.
	bugKeyLater = "key-later"
	// bugHang never ends.
	bugHang = "hang"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && strings.HasPrefix(os.Args[1], adapterArg) {
		mode := strings.TrimPrefix(os.Args[1], adapterArg)
		if err := adapt(mode); err != nil {
			fmt.Fprintln(os.Stderr, "adapter:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// adapter is the client under test: where the service is, its key, and the planted bug.
type adapter struct {
	base, key, bug string
	http           *http.Client
}

// problem is an error answer the client understood: its status and problem body.
type problem struct {
	Status      int
	Code        string `json:"code"`
	Detail      string `json:"detail"`
	Replacement string `json:"replacement"`
}

func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Detail) }

// adapt does the task of MEDIAGEN_TASK: quote, generate with one Idempotency-Key, wait for the
// job, and save its outputs.
func adapt(bug string) error {
	if bug == bugHang {
		select {}
	}
	var task Task
	if err := json.Unmarshal([]byte(os.Getenv(TaskVariable)), &task); err != nil {
		return fmt.Errorf("%s: %w", TaskVariable, err)
	}
	a := &adapter{base: strings.TrimSuffix(os.Getenv("MEDIAGEN_EMULATOR_URL"), "/"), key: os.Getenv("MEDIAGEN_API_KEY"), bug: bug,
		// A connection per request: Go's transport itself resends a request carrying an
		// Idempotency-Key, with that key, when a reused connection drops before any answer;
		// the adapter's own retries (and its planted bug) must meet every reset instead.
		http: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	model := task.Model
	idem := newKey()
	var job map[string]any
	for attempt := 0; job == nil; attempt++ {
		if attempt == 5 {
			return errors.New("gave up generating")
		}
		var q map[string]any
		err := a.call("POST", "/v1/quotes", map[string]any{"model": model, "input": task.Input}, nil, &q)
		if err == nil && bug == bugKeyLater && attempt == 0 {
			var p *problem
			body := map[string]any{"model": model, "input": task.Input, "quote_id": q["quote_id"]}
			if err := a.call("POST", "/v1/generate?wait=true", body, nil, &job); !errors.As(err, &p) || p.Code != "missing_idempotency_key" {
				return fmt.Errorf("a generation without a key: %v", err)
			}
		}
		if err == nil {
			err = a.call("POST", "/v1/generate?wait=true", map[string]any{"model": model, "input": task.Input, "quote_id": q["quote_id"]},
				map[string]string{"Idempotency-Key": idem}, &job)
		}
		var p *problem
		switch {
		case err == nil:
		case errors.As(err, &p) && p.Code == "quote_expired":
			job = nil // quote again; the failed request left the key unused
		case errors.As(err, &p) && p.Code == "model_retired" && p.Replacement != "" && a.bug != bugNoSuccessor:
			model, job = p.Replacement, nil
		default:
			return err
		}
	}
	for !terminal(job["status"]) {
		time.Sleep(time.Second) // poll at most once a second
		if err := a.call("GET", "/v1/jobs/"+job["id"].(string), nil, nil, &job); err != nil {
			return err
		}
	}
	if job["status"] != "succeeded" {
		return fmt.Errorf("the job ended %v: %v", job["status"], job["error"])
	}
	outputs, _ := job["outputs"].([]any)
	for i := range outputs {
		if err := a.download(job["id"].(string), i, job, task.OutputDir); err != nil {
			return err
		}
	}
	return nil
}

// terminal reports whether a status ends a job; any other, known or not, means wait.
func terminal(s any) bool {
	switch s {
	case "succeeded", "failed", "canceled", "expired":
		return true
	}
	return false
}

// call sends one /v1 request, retrying what may succeed later — a dropped connection, a cut
// or broken answer, a 5xx, a 429 — with the same headers (the same Idempotency-Key) after the
// Retry-After it was given, and reads a 2xx answer's JSON into into.
func (a *adapter) call(method, path string, body any, headers map[string]string, into any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var last error
	for attempt := 0; attempt < 8; attempt++ {
		if attempt > 0 && a.bug == bugNewKey && headers["Idempotency-Key"] != "" {
			headers = map[string]string{"Idempotency-Key": newKey()}
		}
		req, err := http.NewRequest(method, a.base+path, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+a.key)
		if data != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := a.http.Do(req)
		if err != nil {
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		case resp.StatusCode == 429 || resp.StatusCode >= 500:
			last = fmt.Errorf("%s %s answered %d", method, path, resp.StatusCode)
			time.Sleep(retryAfter(resp.Header))
			continue
		case resp.StatusCode >= 400:
			p := &problem{Status: resp.StatusCode}
			_ = json.Unmarshal(answer, p)
			return p
		}
		if err := json.Unmarshal(answer, into); err != nil {
			last = fmt.Errorf("%s %s: a broken answer: %w", method, path, err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return nil
	}
	return last
}

// retryAfter is how long a 429 or 503 asks to wait: seconds, or an HTTP date read against the
// answer's own Date (the service's clock, which need not be this machine's); a second when it
// says neither.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		now, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			now = time.Now()
		}
		// A date is cut to the second: wait one more so the instant it names has passed.
		return max(at.Sub(now), 0) + time.Second
	}
	return time.Second
}

// download saves output i of the job, resuming a cut answer with a Range and reading the job
// again for a fresh link when the one it has is refused (a signed link that expired).
func (a *adapter) download(id string, i int, job map[string]any, dir string) error {
	var got []byte
	for attempt := 0; attempt < 8; attempt++ {
		o := job["outputs"].([]any)[i].(map[string]any)
		size := int64(o["size_bytes"].(float64))
		req, err := http.NewRequest("GET", o["url"].(string), nil) // a file URL takes no key
		if err != nil {
			return err
		}
		if len(got) > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", len(got)))
		}
		resp, err := a.http.Do(req)
		if err != nil {
			continue
		}
		part, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 403 || resp.StatusCode == 410:
			got = nil
			if err := a.call("GET", "/v1/jobs/"+id, nil, nil, &job); err != nil {
				return err
			}
			continue
		case resp.StatusCode == 206:
			got = append(got, part...)
		case resp.StatusCode == 200:
			got = part
		default:
			time.Sleep(retryAfter(resp.Header))
			continue
		}
		if rerr != nil || int64(len(got)) < size {
			continue
		}
		ext := ".bin"
		if exts, _ := mime.ExtensionsByType(fmt.Sprint(o["content_type"])); len(exts) > 0 {
			ext = exts[0]
		}
		return os.WriteFile(filepath.Join(dir, strconv.Itoa(i)+ext), got, 0o644)
	}
	return fmt.Errorf("could not download output %d of job %s", i, id)
}

// newKey is a fresh Idempotency-Key.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
