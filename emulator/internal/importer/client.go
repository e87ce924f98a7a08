package importer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Limits of talking to the live service.
const (
	maxBodyBytes   = 32 << 20               // a response larger than this is refused
	maxAttempts    = 8                      // tries of one request before giving up
	firstBackoff   = 250 * time.Millisecond // the first wait before trying a dropped request again
	maxBackoff     = 30 * time.Second       // the longest wait between tries of a failed request
	maxRetryWait   = 2 * time.Minute        // a longer Retry-After is not waited for: the import stops
	attemptTimeout = time.Minute            // one try of a request, its whole body included
	waitNotice     = 10 * time.Second       // how often a slow request says it is still waiting
	maxRedirects   = 5                      // redirects followed by one request
	pageLimit      = 100                    // models per listing page
	maxListed      = 20_000                 // listing entries read; a longer listing is refused
	// maxListingBytes bounds what a whole listing holds once read (see nodeSize), so pages
	// that each fit maxBodyBytes cannot add up past it.
	maxListingBytes = 64 << 20
	// maxModelsBytes bounds what the models read hold together, as the file is made of them
	// (see liveModel.size): the file, its YAML tree and the check that it loads each cost a
	// multiple of it.
	maxModelsBytes = 32 << 20
	// maxRetriedBytes bounds the bytes the tries of one request may read before they stop:
	// an answer that breaks off after megabytes, every time, is not read eight times over.
	maxRetriedBytes = maxBodyBytes
	// DefaultTimeout is how long a whole import or drift may take.
	DefaultTimeout = 30 * time.Minute
)

// client reads the live service with one key, retrying only what may pass: a 429 or 503 that
// says when to come back (Retry-After), and a connection that drops or resets before its
// answer is whole (a restart, a proxy cutting it), with bounded exponential backoff. Any other
// answer would come again on every try, so it stops at once: another status (a 500, a
// gateway's 502 or 504, a 429 or 503 that says nothing of when), a 2xx that is not a JSON
// object, a document too large or too deep, a refused connection, a request that timed out,
// a redirect away from /v1, a wait longer than maxRetryWait.
type client struct {
	base  *url.URL
	key   string
	http  *http.Client
	sleep func(context.Context, time.Duration) error
	logf  func(format string, args ...any)
	// pageLimit is the listing page size; tests make it small to force many pages.
	pageLimit int
	// notice is how often a slow request reports that it is still waiting.
	notice time.Duration
	// listingBytes bounds what a whole listing holds (maxListingBytes).
	listingBytes int
	// requests counts requests sent, retries included.
	requests int
}

// statusError is a final, non-retried answer other than 2xx.
type statusError struct {
	Status int
	Code   string
	Detail string
	answer *answer
}

// Error names the status the service answered, its problem code and detail.
func (e *statusError) Error() string {
	msg := fmt.Sprintf("status %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// statusOf returns the status of a final error answer, or 0.
func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// permanentError is a failure that trying again cannot fix.
type permanentError struct{ err error }

// Error is the wrapped error's text.
func (e *permanentError) Error() string { return e.err.Error() }

// Unwrap gives errors.Is and errors.As the wrapped error.
func (e *permanentError) Unwrap() error { return e.err }

// SleepContext waits d or until ctx ends; the commands that pace their requests to the live
// service wait through it.
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkRedirect follows a redirect only within the service's /v1 and only a few times, so no
// redirect can send the key elsewhere or loop.
func (c *client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return &permanentError{fmt.Errorf("more than %d redirects", maxRedirects)}
	}
	if err := c.inside(req.URL); err != nil {
		return &permanentError{fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), err)}
	}
	return nil
}

// inside checks that u is on the service and under its /v1.
func (c *client) inside(u *url.URL) error {
	if u.Scheme != c.base.Scheme || u.Host != c.base.Host {
		return errors.New("not the service")
	}
	p := u.EscapedPath()
	if !strings.HasPrefix(p, c.base.EscapedPath()+"/v1/") || strings.Contains(p+"/", "/../") ||
		strings.Contains(p+"/", "/./") || strings.Contains(p, "//") || strings.Contains(strings.ToLower(p), "%2e") {
		return errors.New("outside the API's /v1")
	}
	return nil
}

// do sends one request (retrying as above) and returns the body of its 2xx answer, which must
// be a JSON object.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body []byte) (*node, error) {
	a, err := c.send(ctx, method, path, query, body, nil)
	if err != nil {
		return nil, err
	}
	return a.doc, nil
}

// answer is one whole answer of the service: its status, headers and JSON body (nil when the
// body is not JSON).
type answer struct {
	status int
	header http.Header
	doc    *node
}

// answerOf returns the final non-2xx answer behind err, or nil.
func answerOf(err error) *answer {
	var se *statusError
	if errors.As(err, &se) {
		return se.answer
	}
	return nil
}

// send is do with extra request headers, returning the whole answer: a final answer other
// than 2xx is a *statusError that carries it.
func (c *client) send(ctx context.Context, method, path string, query url.Values, body []byte, header http.Header) (*answer, error) {
	target := strings.TrimSuffix(c.base.String(), "/") + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	label := method + " " + path
	if u, err := url.Parse(target); err != nil || c.inside(u) != nil {
		return nil, fmt.Errorf("%s: not a path under /v1 of the service", label)
	}
	backoff := firstBackoff
	read := int64(0)
	for attempt := 1; ; attempt++ {
		wait, err := c.once(ctx, method, target, label, body, header)
		if err == nil {
			return wait.answer, nil
		}
		var perm *permanentError
		if !wait.retry || errors.As(err, &perm) || attempt >= maxAttempts || ctx.Err() != nil {
			return nil, err
		}
		if read += wait.read; read > maxRetriedBytes {
			return nil, fmt.Errorf("%w; its %d tries read %d MiB without a whole answer: stopping", err, attempt, read>>20)
		}
		d := wait.after
		if d <= 0 {
			d = backoff
			backoff = min(2*backoff, maxBackoff)
		}
		if d > maxRetryWait {
			return nil, fmt.Errorf("%w; the service asks to wait %v, more than %v: stopping", err, d.Round(time.Second), maxRetryWait)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return nil, fmt.Errorf("%w; waiting %v more would pass the deadline (--timeout)", err, d.Round(time.Millisecond))
		}
		c.logf("%v; try %d of %d in %v", err, attempt+1, maxAttempts, d.Round(time.Millisecond))
		if err := c.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// outcome is what one try of a request gave: an answer, or whether and when to try again.
type outcome struct {
	answer *answer
	retry  bool
	after  time.Duration
	read   int64 // bytes of the answer's body read
}

func (c *client) once(ctx context.Context, method, target, label string, body []byte, header http.Header) (outcome, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w", label, Scrub(err))
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c.requests++
	// A slow answer says it is still coming, so a long wait is never silent.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		start, tick := time.Now(), time.NewTicker(c.notice)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.logf("%s: still waiting after %v", label, time.Since(start).Round(time.Second))
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	resp, err := c.http.Do(req)
	if err != nil {
		return outcome{retry: dropped(err)}, fmt.Errorf("%s: %w", label, Scrub(err))
	}
	defer resp.Body.Close()
	got := &bodyReader{r: resp.Body}
	doc, read, err := decodeJSON(got)
	if errors.Is(err, errTooLarge) || errors.Is(err, errTooDeep) || errors.Is(err, errTooMany) {
		return outcome{}, fmt.Errorf("%s: %w", label, err)
	}
	if resp.StatusCode/100 != 2 {
		se := &statusError{Status: resp.StatusCode, answer: &answer{status: resp.StatusCode, header: resp.Header}}
		if err == nil {
			se.Code, se.Detail = doc.str("code"), doc.str("detail")
			se.answer.doc = doc
		}
		err := fmt.Errorf("%s: %w", label, se)
		// Only a service that says when to come back is asked again: any other status (a
		// 500, a gateway's page) would come again, eight times over half a minute.
		if ra := resp.Header.Get("Retry-After"); strings.TrimSpace(ra) != "" &&
			(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			return outcome{retry: true, after: retryAfter(ra, time.Now()), read: read}, err
		}
		return outcome{}, err
	}
	if got.err != nil {
		// The body broke off on the way (try again) or did not come in time (it would not
		// the next time either).
		return outcome{retry: dropped(got.err), read: read}, fmt.Errorf("%s: reading the answer: %w", label, Scrub(got.err))
	}
	if err != nil {
		// The whole body came and is not JSON: an HTML page, a text, a document garbled where
		// it was written. The next try would bring the same.
		ctype := cmp.Or(resp.Header.Get("Content-Type"), "no Content-Type")
		return outcome{}, fmt.Errorf("%s: the answer is not JSON (%s): %v", label, ctype, err)
	}
	if doc.kind != kObject {
		return outcome{}, fmt.Errorf("%s: the answer is not a JSON object", label)
	}
	return outcome{answer: &answer{status: resp.StatusCode, header: resp.Header, doc: doc}}, nil
}

// bodyReader reads an answer's body and keeps the error the transport ended it with, if any
// other than its end: a body that breaks off on the way is told from one that came whole and
// does not parse.
type bodyReader struct {
	r   io.Reader
	err error
}

// Read reads from the body, noting a transport error.
func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// dropped reports whether a transport error is a connection that dropped or reset before the
// answer was whole, which a restart or a proxy on the way may cause once. A refused
// connection (nothing listens there), a name that does not resolve, a timeout, a refused
// redirect or a TLS failure would happen again.
func dropped(err error) bool {
	var perm *permanentError
	var ne net.Error
	switch {
	case errors.As(err, &perm), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &ne) && ne.Timeout():
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}

// RetryAfter reads a Retry-After header, seconds or an HTTP date, as a wait from now; false
// when it is absent or neither. Past a day every wait is too long alike: the bound keeps the
// conversion in range. Every command that reaches the live service reads it here.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if n, err := strconv.ParseFloat(h, 64); err == nil && n >= 0 {
		return time.Duration(min(n, 86400) * float64(time.Second)), true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryAfter is the wait a Retry-After asks for; 0 when absent. A zero wait, or one the header
// does not spell rightly, still counts as "told when": retry after a token pause, not a backoff.
func retryAfter(h string, now time.Time) time.Duration {
	if strings.TrimSpace(h) == "" {
		return 0
	}
	d, _ := RetryAfter(h, now)
	return max(d, time.Millisecond)
}

// Scrub keeps only the last part of a transport error, so no URL with a query (or anything a
// proxy added) ends up in messages, and the message reads the same on every platform. Every
// command that talks to the live service words its transport errors through it.
func Scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ModelPath is the detail path of a model id (checked with catalog.ValidModelID): slashes kept,
// each segment escaped.
func ModelPath(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/models/" + strings.Join(segs, "/")
}

// listAll reads every page of a listing.
func (c *client) listAll(ctx context.Context, query url.Values, progress func(n, total int)) ([]*node, error) {
	var items []*node
	held := 0
	limit := c.pageLimit
	for offset := 0; ; {
		q := url.Values{}
		maps.Copy(q, query)
		q.Set("limit", strconv.Itoa(limit))
		q.Set("offset", strconv.Itoa(offset))
		doc, err := c.do(ctx, http.MethodGet, "/v1/models", q, nil)
		if err != nil {
			return nil, err
		}
		data := doc.get("data")
		if data == nil || data.kind != kArray {
			return nil, errors.New("GET /v1/models: the answer has no data list")
		}
		for _, it := range data.vals {
			held += nodeSize(it)
		}
		if held > c.listingBytes {
			return nil, fmt.Errorf("GET /v1/models: the listing holds more than %d MiB, more than the importer reads", c.listingBytes>>20)
		}
		items = append(items, data.vals...)
		total := len(items)
		if t := doc.get("total"); t != nil && t.kind == kNumber {
			total, _ = strconv.Atoi(t.text)
		}
		if progress != nil {
			progress(len(items), total)
		}
		more := doc.get("has_more")
		if len(data.vals) == 0 || (more != nil && more.text != "true") || (more == nil && len(items) >= total) {
			return items, nil
		}
		if len(items) >= maxListed {
			return nil, fmt.Errorf("GET /v1/models: the listing goes on past %d entries, more than the importer reads", maxListed)
		}
		offset += len(data.vals)
	}
}
