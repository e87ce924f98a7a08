package emulator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

func TestFilesOverHTTP(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	q := quote(t, s, "key_a", "test/reel", map[string]any{"prompt": "waves", "duration": "5", "resolution": "480p"})
	job := decode[api.Job](t, generate(t, s, "key_a", "reel", q, map[string]any{"prompt": "waves", "duration": "5", "resolution": "480p"}, ""))
	_ = s.world().Advance(10 * time.Second)
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil))
	if job.Status != "succeeded" || len(job.Outputs) != 1 {
		t.Fatalf("job = %+v", job)
	}
	o := job.Outputs[0]
	if o.ContentType != "video/mp4" || o.Width != 854 || o.Height != 480 || o.Duration != 5 {
		t.Errorf("output = %+v", o)
	}
	url := srv.URL + strings.TrimPrefix(o.URL, "http://example.com")

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || int64(len(full)) != o.SizeBytes || resp.Header.Get("Content-Type") != "video/mp4" ||
		resp.Header.Get("Content-Length") != strconv.Itoa(len(full)) || etag == "" || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET: %d %v (%d bytes)", resp.StatusCode, resp.Header, len(full))
	}
	if string(full[4:8]) != "ftyp" {
		t.Errorf("not an MP4: % x", full[:8])
	}

	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Range", "bytes=4-11")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || string(part) != string(full[4:12]) || resp.Header.Get("Content-Range") != "bytes 4-11/"+strconv.Itoa(len(full)) {
		t.Errorf("range: %d %q %v", resp.StatusCode, part, resp.Header)
	}

	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("Range", "bytes=999999999-")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 416 {
		t.Errorf("unsatisfiable range: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("If-None-Match", etag)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 304 {
		t.Errorf("if-none-match: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	if resp, err = http.Head(url); err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(full)) {
		t.Errorf("HEAD: %v %v", resp, err)
	}
	resp.Body.Close()

	// Evicted from the cache, the file is made again, byte for byte.
	s.tenants.ClearFiles()
	resp, _ = http.Get(url)
	again, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(again) != string(full) {
		t.Error("the remade file differs")
	}

	_ = s.world().Advance(time.Hour)
	resp, _ = http.Get(url)
	resp.Body.Close()
	if resp.StatusCode != 410 {
		t.Errorf("after the output TTL: %d", resp.StatusCode)
	}
}

// TestFileErrorsAreProblems: ServeContent's own errors (an unsatisfiable range, a failed
// If-Match) once went out as text/plain, or with the image's content type and no body; a range
// in another unit than bytes once answered 416 instead of being ignored.
func TestFileErrorsAreProblems(t *testing.T) {
	t.Parallel()
	s := flowServer(t)
	q := quote(t, s, "key_a", "test/pixel", map[string]any{"prompt": "x"})
	job := decode[api.Job](t, generate(t, s, "key_a", "px", q, map[string]any{"prompt": "x"}, ""))
	_ = s.world().Advance(10 * time.Second)
	job = decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil))
	path := strings.TrimPrefix(job.Outputs[0].URL, "http://example.com")

	rec := call(t, s, "GET", path, "", nil, "Range", "bytes=999999999-")
	if p := decode[problemJSON](t, rec); rec.Code != 416 || p.Code != "range_not_satisfiable" ||
		rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("X-Request-Id") == "" {
		t.Errorf("unsatisfiable range: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = call(t, s, "GET", path, "", nil, "If-Match", `"nope"`)
	if p := decode[problemJSON](t, rec); rec.Code != 412 || p.Code != "precondition_failed" || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("failed If-Match: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = call(t, s, "GET", path, "", nil, "Range", "items=0-1")
	if rec.Code != 200 || int64(rec.Body.Len()) != job.Outputs[0].SizeBytes {
		t.Errorf("a range in another unit: %d (%d bytes), want the whole file", rec.Code, rec.Body.Len())
	}
}
