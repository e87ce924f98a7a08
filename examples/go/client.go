// Package mediagen is a small client of the Media Generation Service, written twice over: a
// careful client, and a naive one with the mistakes that pass every test against a stub and
// cost money in production. The tests in this folder show both against a plain stub (where both
// pass) and against the emulator, whose report names each mistake of the naive client by its
// rule id and finds nothing wrong with the careful one.
//
// The naive client (Careful false):
//   - retries a failed generation with a new Idempotency-Key (new-key-on-retry),
//   - retries a 429 or 503 at once, whatever Retry-After says (retry-after-ignored),
//   - polls its job every 100 ms (poll-too-fast),
//   - keeps a quote per input and uses it again for the next generation (quote-reused),
//   - hands back its outputs' URLs and never downloads them (outputs-never-downloaded),
//   - sends an input the content policy refused again, unchanged (retry-unchanged),
//   - keeps using a model after its answers said it is deprecated (deprecated-model-used),
//   - polls only while a job is queued or running, so a status a later version adds ends its
//     wait as if the job had failed (a scenario's evolution shows it),
//   - edits an image by sending the URL it is served at on the developer's machine
//     (http://127.0.0.1:8000/...), which the hosted service, fetching from its own network,
//     cannot reach (unreachable-input-url).
//
// The careful client remembers the inputs the content policy refused and does not send them
// again, moves to a deprecated model's successor-version as soon as an answer names it,
// reports a partial result (some outputs filtered out) as what it is, sends its key to the API
// only (never to a file URL), reads the job again for a fresh link when a signed one has
// expired (403), and polls until the job's status is terminal, taking any other status for
// "not finished yet" — so a job queued behind an account's concurrency limit is waited for,
// however long its line, not given up on as stuck. A 429 (rate_limited, or concurrency_limited
// where the service refuses jobs past the limit) is sent again with the same key once
// Retry-After has passed. It edits an image by uploading it (POST /v1/uploads) once per file and
// sending the upload's URL, and uploads it again when the upload expired while the job waited
// in the queue (input_expired).
package mediagen

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client renders media with the service.
type Client struct {
	BaseURL string // such as http://127.0.0.1:8080, without a trailing slash
	Key     string // the API key
	HTTP    *http.Client
	// Sleep waits between polls and retries: time.Sleep unless set. A test on the emulator's
	// manual clock makes it move that clock instead.
	Sleep func(time.Duration)
	// Careful picks the careful client; the zero value is the naive one.
	Careful bool

	quotes    map[string]string // the naive client's quote per model and input
	refused   map[string]error  // the careful client's refused inputs, by model and input
	successor map[string]string // the careful client's move from a deprecated model
	uploads   map[string]string // the careful client's upload URL per file (its sha256)
}

// Result is a finished generation: the job, its outputs' URLs and, for the careful client,
// their bytes.
type Result struct {
	JobID string
	Model string // the model that made it: a deprecated one's successor, for the careful client
	URLs  []string
	Files [][]byte
	// Filtered is how many of the outputs asked for the service filtered out (a partial
	// result); the job was charged only for the rest.
	Filtered int
}

// JobFailed is a job that did not succeed, with its error's code.
type JobFailed struct {
	JobID, Status, Code string
}

func (e *JobFailed) Error() string {
	return fmt.Sprintf("mediagen: job %s %s %s", e.JobID, e.Status, e.Code)
}

// LocalImageURL is where the naive client's edits say their image is: a file server on the
// developer's machine, where it worked in development.
const LocalImageURL = "http://127.0.0.1:8000/input.png"

// Edit renders a model that edits an image (image-to-image, inpainting), its bytes of type
// contentType sent as input's image_url; the outputs have the image's size unless input names
// another.
func (c *Client) Edit(ctx context.Context, model string, image []byte, contentType string, input map[string]any) (Result, error) {
	with := func(url string) map[string]any {
		in := map[string]any{"image_url": url}
		for k, v := range input {
			in[k] = v
		}
		return in
	}
	if !c.Careful {
		return c.Render(ctx, model, with(LocalImageURL)) // naive: the service cannot reach it
	}
	sum := sha256.Sum256(image)
	digest := hex.EncodeToString(sum[:])
	for attempt := 1; ; attempt++ {
		url, ok := c.uploads[digest]
		if !ok { // the same bytes are uploaded once, and their URL reused
			var up struct {
				URL string `json:"url"`
			}
			if err := c.upload(ctx, image, contentType, &up); err != nil {
				return Result{}, err
			}
			url = up.URL
			remember(&c.uploads, digest, url)
		}
		res, err := c.Render(ctx, model, with(url))
		var failed *JobFailed
		if attempt == 1 && errors.As(err, &failed) && failed.Code == "input_expired" {
			// The upload expired while the job waited in the queue: upload it again, once.
			delete(c.uploads, digest)
			continue
		}
		return res, err
	}
}

// upload sends a file to POST /v1/uploads, retried as any call is.
func (c *Client) upload(ctx context.Context, data []byte, contentType string, out any) error {
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/v1/uploads", bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.Key)
		req.Header.Set("Content-Type", contentType)
		err = c.do(req, out, nil)
		if err == nil || attempt == 4 || !retryable(err) {
			return err
		}
		c.backOff(err, attempt)
	}
}

// Error is an answer the service refused, with its problem code.
type Error struct {
	Status     int
	Code       string
	RetryAfter time.Duration
	// Replacement is the model a retired one (410 model_retired) names.
	Replacement string
}

// Error names the status and the problem code the service answered.
func (e *Error) Error() string { return fmt.Sprintf("mediagen: %d %s", e.Status, e.Code) }

// Render quotes, generates, waits for the job and (when careful) downloads its outputs.
func (c *Client) Render(ctx context.Context, model string, input map[string]any) (Result, error) {
	if next, ok := c.successor[model]; ok && c.Careful {
		model = next
	}
	raw, _ := json.Marshal(input)
	asked := model + "\x00" + string(raw)
	if err, ok := c.refused[asked]; ok && c.Careful {
		return Result{}, err // the same input would be refused again
	}
	quote, next, err := c.quote(ctx, model, input)
	if next != "" && next != model && c.Careful {
		// The quote's answer announced the model's deprecation: move now, before generating.
		remember(&c.successor, model, next)
		model = next
		quote, _, err = c.quote(ctx, model, input)
	}
	if err != nil {
		return Result{}, err
	}
	body := map[string]any{"model": model, "input": input, "quote_id": quote}
	key := newKey()
	var job jobBody
	for attempt := 1; ; attempt++ {
		if !c.Careful {
			key = newKey() // naive: each attempt is a new request to it
		}
		err = c.call(ctx, http.MethodPost, "/v1/generate", body, key, &job)
		if err == nil || attempt == 4 || !retryable(err) {
			break
		}
		c.backOff(err, attempt)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && c.Careful {
			switch {
			case e.Code == "content_policy_violation":
				remember(&c.refused, asked, err)
			case e.Code == "model_retired" && e.Replacement != "":
				remember(&c.successor, model, e.Replacement)
			}
		}
		return Result{}, err
	}
	for polling(job.Status, c.Careful) {
		if c.Careful {
			c.sleep(time.Second)
		} else {
			c.sleep(100 * time.Millisecond)
		}
		if err := c.call(ctx, http.MethodGet, "/v1/jobs/"+job.ID, nil, "", &job); err != nil {
			return Result{}, err
		}
	}
	if job.Status != "succeeded" {
		failed := &JobFailed{JobID: job.ID, Status: job.Status}
		if job.Error != nil {
			failed.Code = job.Error.Code
		}
		return Result{JobID: job.ID}, failed
	}
	res := Result{JobID: job.ID, Model: model, Filtered: job.FilteredOutputs}
	for _, o := range job.Outputs {
		res.URLs = append(res.URLs, o.URL)
	}
	if !c.Careful {
		return res, nil // naive: the caller may download later (it never does)
	}
	for i, u := range res.URLs {
		data, err := c.download(ctx, u)
		if e := (*Error)(nil); errors.As(err, &e) && e.Status == http.StatusForbidden {
			// A signed link may expire before its file does: a read of the job gives a fresh one.
			if err = c.call(ctx, http.MethodGet, "/v1/jobs/"+job.ID, nil, "", &job); err == nil && i < len(job.Outputs) {
				res.URLs[i] = job.Outputs[i].URL
				data, err = c.download(ctx, res.URLs[i])
			}
		}
		if err != nil {
			return res, err
		}
		res.Files = append(res.Files, data)
	}
	return res, nil
}

// quote prices a generation, and returns the successor-version its answer names when it says
// the model is deprecated. The naive client keeps its quotes and uses them again.
func (c *Client) quote(ctx context.Context, model string, input map[string]any) (id, successor string, err error) {
	raw, _ := json.Marshal(input)
	cacheKey := model + "\x00" + string(raw)
	if id, ok := c.quotes[cacheKey]; ok && !c.Careful {
		return id, "", nil
	}
	var q struct {
		QuoteID string `json:"quote_id"`
	}
	h, err := c.callHeader(ctx, http.MethodPost, "/v1/quotes", map[string]any{"model": model, "input": input}, "", &q)
	if err != nil {
		return "", "", err
	}
	remember(&c.quotes, cacheKey, q.QuoteID)
	return q.QuoteID, successorOf(h), nil
}

// successorOf reads a deprecated model's successor from an answer's headers: Deprecation
// (RFC 9745) says it is deprecated, Link rel="successor-version" names the model to move to.
func successorOf(h http.Header) string {
	if h.Get("Deprecation") == "" {
		return ""
	}
	for _, v := range h.Values("Link") {
		for _, link := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(link, ";")
			if ok && strings.Contains(params, `rel="successor-version"`) {
				return strings.TrimPrefix(strings.Trim(strings.TrimSpace(target), "<>"), "/v1/models/")
			}
		}
	}
	return ""
}

// remember sets m[k] = v, making the map on first use.
func remember[V any](m *map[string]V, k string, v V) {
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[k] = v
}

// backOff waits before a retry: the careful client waits what Retry-After asks, or a growing
// pause; the naive one retries at once.
func (c *Client) backOff(err error, attempt int) {
	if !c.Careful {
		return
	}
	wait := time.Duration(attempt) * time.Second
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > wait {
		wait = e.RetryAfter
	}
	c.sleep(wait)
}

// retryable says whether a generation may be tried again: a 429, a 5xx, or no answer at all.
func retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return true // the connection failed: the request may or may not have arrived
}

type jobBody struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	FilteredOutputs int    `json:"filtered_outputs"`
	Outputs         []struct {
		URL string `json:"url"`
	} `json:"outputs"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (c *Client) call(ctx context.Context, method, path string, in any, idemKey string, out any) error {
	_, err := c.callHeader(ctx, method, path, in, idemKey, out)
	return err
}

// callHeader is call, returning the answer's headers too.
func (c *Client) callHeader(ctx context.Context, method, path string, in any, idemKey string, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	var header http.Header
	err = c.do(req, out, &header)
	return header, err
}

// do sends a request and decodes its JSON answer into out, or returns its refusal as an
// *Error; the answer's headers go in header, when given.
func (c *Client) do(req *http.Request, out any, header *http.Header) error {
	resp, err := c.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if header != nil {
		*header = resp.Header
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		var p struct {
			Code        string `json:"code"`
			Replacement string `json:"replacement"`
		}
		_ = json.Unmarshal(raw, &p)
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &Error{Status: resp.StatusCode, Code: p.Code, RetryAfter: time.Duration(secs) * time.Second, Replacement: p.Replacement}
	}
	return json.Unmarshal(raw, out)
}

func (c *Client) download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Status: resp.StatusCode}
	}
	return io.ReadAll(resp.Body)
}

func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) sleep(d time.Duration) {
	if c.Sleep != nil {
		c.Sleep(d)
		return
	}
	time.Sleep(d)
}

// newKey is a fresh Idempotency-Key.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// polling says whether a job of that status is still to be waited for: until it is terminal
// for the careful client; the naive one knows only the statuses it was written against.
func polling(status string, careful bool) bool {
	if careful {
		return status != "succeeded" && status != "failed" && status != "canceled" && status != "expired"
	}
	return status == "queued" || status == "running"
}
