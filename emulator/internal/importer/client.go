package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits of talking to the live service.
const (
	maxBodyBytes = 32 << 20         // a response larger than this is refused
	maxAttempts  = 8                // tries of one request before giving up
	maxBackoff   = 30 * time.Second // the longest wait between tries of a failed request
	maxRetryWait = 2 * time.Minute  // the longest Retry-After honoured
	pageLimit    = 100              // models per listing page
)

// client reads the live service with one key, retrying what a well-behaved client retries:
// 429 after its Retry-After, 5xx and broken connections with bounded exponential backoff.
type client struct {
	base  *url.URL
	key   string
	http  *http.Client
	sleep func(context.Context, time.Duration) error
	// pageLimit is the listing page size; tests make it small to force many pages.
	pageLimit int
	// requests counts requests sent, retries included.
	requests int
}

// statusError is a final, non-retried answer other than 2xx.
type statusError struct {
	Status int
	Code   string
	Detail string
}

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

// sleepContext waits d or until ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do sends one request (retrying as above) and returns the body of its 2xx answer, which must
// be a JSON document.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body []byte) (*node, error) {
	target := strings.TrimSuffix(c.base.String(), "/") + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	label := method + " " + path
	backoff := 250 * time.Millisecond
	var last error
	for attempt := 1; ; attempt++ {
		wait, err := c.once(ctx, method, target, label, body)
		if err == nil {
			return wait.doc, nil
		}
		last = err
		if !wait.retry || attempt >= maxAttempts || ctx.Err() != nil {
			break
		}
		d := wait.after
		if d <= 0 {
			d = backoff
			backoff = min(2*backoff, maxBackoff)
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
	return nil, last
}

// outcome is what one try of a request gave: a document, or whether and when to try again.
type outcome struct {
	doc   *node
	retry bool
	after time.Duration
}

func (c *client) once(ctx context.Context, method, target, label string, body []byte) (outcome, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w", label, scrub(err))
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.requests++
	resp, err := c.http.Do(req)
	if err != nil {
		// A dropped or refused connection: the service may be restarting.
		return outcome{retry: true}, fmt.Errorf("%s: %w", label, scrub(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return outcome{retry: true}, fmt.Errorf("%s: reading the answer: %w", label, scrub(err))
	}
	if len(data) > maxBodyBytes {
		return outcome{}, fmt.Errorf("%s: the answer is larger than %d MiB", label, maxBodyBytes>>20)
	}
	if resp.StatusCode/100 != 2 {
		se := &statusError{Status: resp.StatusCode}
		if doc, err := parseJSON(data); err == nil {
			se.Code, se.Detail = doc.str("code"), doc.str("detail")
		}
		err := fmt.Errorf("%s: %w", label, se)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return outcome{retry: true, after: retryAfter(resp.Header.Get("Retry-After"), time.Now())}, err
		case resp.StatusCode >= 500:
			return outcome{retry: true, after: retryAfter(resp.Header.Get("Retry-After"), time.Now())}, err
		}
		return outcome{}, err
	}
	doc, err := parseJSON(data)
	if err != nil || doc.kind != kObject {
		// A 2xx whose body does not parse was cut or garbled on the way: try again.
		return outcome{retry: true}, fmt.Errorf("%s: the answer is not a JSON object", label)
	}
	return outcome{doc: doc}, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), bounded; 0 when absent.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(h, 64); err == nil {
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	if d < 0 {
		d = 0
	}
	// A zero wait still counts as "told when": retry after a token pause, not a backoff.
	if d == 0 {
		d = time.Millisecond
	}
	return min(d, maxRetryWait)
}

// scrub keeps only the last part of a transport error, so no URL with a query (or anything a
// proxy added) ends up in messages, and the message reads the same on every platform.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// modelPath is the detail path of a model id: slashes kept, each segment escaped.
func modelPath(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/models/" + strings.Join(segs, "/")
}

// listAll reads every page of a listing.
func (c *client) listAll(ctx context.Context, query url.Values, progress func(n, total int)) ([]*node, error) {
	var items []*node
	limit := c.pageLimit
	if limit <= 0 {
		limit = pageLimit
	}
	for offset := 0; ; {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
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
		offset += len(data.vals)
		if offset > 10_000_000 {
			return nil, errors.New("GET /v1/models: the listing does not end")
		}
	}
}
