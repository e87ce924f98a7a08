package importer

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// hostile is a loopback "service" that misbehaves as its handler says and records what it was
// asked.
type hostile struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // request URIs as sent
}

func newHostile(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *hostile {
	t.Helper()
	s := &hostile{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.RequestURI)
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hostile) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// waits records the retry waits asked for, without waiting.
type waits struct {
	mu  sync.Mutex
	all []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, d)
	return ctx.Err()
}

func (w *waits) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.all)
}

func hostileOptions(url string, w *waits, progress *bytes.Buffer) Options {
	o := Options{From: url, Key: "k", Sleep: w.sleep, attemptTimeout: 2 * time.Second, notice: time.Hour}
	if progress != nil {
		o.Progress = progress
	}
	return o
}

// writeListing writes a listing page of the given ids.
func writeListing(w http.ResponseWriter, more bool, ids ...string) {
	var items []string
	for _, id := range ids {
		items = append(items, fmt.Sprintf(`{"id":%q,"name":"n","category":"text-to-image","status":"ready"}`, id))
	}
	fmt.Fprintf(w, `{"data":[%s],"total":%d,"has_more":%t}`, strings.Join(items, ","), len(ids), more)
}

func TestUntrustedIDsNeverLeaveV1(t *testing.T) {
	t.Parallel()
	bad := []string{"../../_emulator/reset", "a/../../_emulator/reset", "./x", "a//b", "/abs", "a/./b", "..", "%2e%2e/x", "a?b", "a#b", "", "a b"}
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			writeListing(w, false, bad...)
		case "/v1/models/categories":
			fmt.Fprint(w, `{"data":[]}`)
		default:
			http.Error(w, `{"code":"not_found"}`, http.StatusNotFound)
		}
	})
	res, err := Import(context.Background(), hostileOptions(srv.URL, &waits{}, nil))
	if err == nil || !strings.Contains(err.Error(), "no models to import") {
		t.Errorf("import of nothing but bad ids: %v, %v", res, err)
	}
	for _, uri := range srv.requests() {
		if uri != "/v1/models?limit=100&offset=0" && uri != "/v1/models/categories" {
			t.Errorf("requested %s", uri)
		}
	}

	_, err = Import(context.Background(), Options{From: srv.URL, Key: "k", Models: []string{"../../_emulator/reset"}})
	if err == nil || !strings.Contains(err.Error(), "not a model id") {
		t.Errorf("a bad --models id: %v", err)
	}
	for _, uri := range srv.requests() {
		if strings.Contains(uri, "_emulator") {
			t.Errorf("requested %s", uri)
		}
	}

	c, err := (&Options{From: srv.URL, Key: "k"}).client()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/models/../../_emulator/reset", "/_emulator/reset", "/v1/models/%2e%2e/x", "/v1//models", "/v2/models"} {
		if _, err := c.do(context.Background(), http.MethodGet, p, nil, nil); err == nil || !strings.Contains(err.Error(), "not a path under /v1") {
			t.Errorf("do %s: %v", p, err)
		}
	}
	for _, id := range []string{"acme/pix/v1", "fal-ai/flux/dev", "a.b_c-d/1.5"} {
		if !catalog.ValidModelID(id) {
			t.Errorf("%q is refused", id)
		}
	}
}

func TestRedirectsStayUnderV1AndDoNotLoop(t *testing.T) {
	t.Parallel()
	other := newHostile(t, func(w http.ResponseWriter, r *http.Request) { writeListing(w, false) })
	cases := []struct {
		name, to, want string
		requests       int
	}{
		{"to the control API", "/_emulator/reset", "outside the API's /v1", 1},
		{"up and out", "/v1/../_emulator/reset", "outside the API's /v1", 1},
		{"to ftp", "ftp://example.com/v1/models", "not the service", 1},
		{"to another host", other.URL + "/v1/models", "not the service", 1},
		{"in a loop", "/v1/models?again=1", "more than 5 redirects", 1 + maxRedirects},
	}
	for _, c := range cases {
		srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", c.to)
			w.WriteHeader(http.StatusFound)
		})
		w := &waits{}
		_, err := Import(context.Background(), hostileOptions(srv.URL, w, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if got := srv.requests(); len(got) != c.requests || w.count() != 0 {
			t.Errorf("%s: requests %q and %d retries; want %d requests, no retry", c.name, got, w.count(), c.requests)
		}
		for _, uri := range srv.requests() {
			if !strings.HasPrefix(uri, "/v1/") {
				t.Errorf("%s: followed to %s", c.name, uri)
			}
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("another host was asked %d times", n)
	}
}

func TestWhatCannotRecoverIsNotRetried(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
		want    string
	}{
		{"deep nesting", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, `{"data":%s}`, deep) }, "nests more than 128"},
		{"too many values", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"data":[0`+strings.Repeat(",0", maxDocNodes)+`]}`)
		}, "more than 500000 values"},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"data":"`)
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range maxBodyBytes>>20 + 1 {
				w.Write(chunk)
			}
		}, "larger than 32 MiB"},
		{"a Retry-After of an hour", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
		}, "asks to wait 1h0m0s, more than 2m0s"},
		{"an answer that never comes", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"data":[`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "Client.Timeout"},
	}
	for _, c := range cases {
		srv := newHostile(t, c.handler)
		w := &waits{}
		o := hostileOptions(srv.URL, w, nil)
		o.attemptTimeout = time.Minute
		if c.want == "Client.Timeout" {
			o.attemptTimeout = 300 * time.Millisecond
		}
		_, err := Import(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if n := len(srv.requests()); n != 1 || w.count() != 0 {
			t.Errorf("%s: %d requests, %d retries; want one request", c.name, n, w.count())
		}
	}
}

func TestRetriesAreReportedAndStopAtTheDeadline(t *testing.T) {
	t.Parallel()
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var progress bytes.Buffer
	w := &waits{}
	_, err := Import(context.Background(), hostileOptions(srv.URL, w, &progress))
	if err == nil || w.count() != maxAttempts-1 || !strings.Contains(progress.String(), "status 503; try 2 of 8 in 5s") {
		t.Errorf("err %v after %d retries; progress:\n%s", err, w.count(), progress.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	srv = newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "100") // under the 2 minutes waited, past the deadline below
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	short, cancelShort := context.WithTimeout(ctx, 90*time.Second)
	defer cancelShort()
	w = &waits{}
	_, err = Import(short, hostileOptions(srv.URL, w, nil))
	if err == nil || !strings.Contains(err.Error(), "pass the deadline") || w.count() != 0 {
		t.Errorf("a wait past the deadline: %v after %d retries", err, w.count())
	}
}

func TestSlowAnswersSayTheyAreStillComing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.Error(w, `{"code":"forbidden"}`, http.StatusForbidden)
	})
	noticed := make(chan struct{})
	var once sync.Once
	progress := writerFunc(func(p []byte) {
		if bytes.Contains(p, []byte("GET /v1/models: still waiting after")) {
			once.Do(func() { close(noticed) })
		}
	})
	o := Options{From: srv.URL, Key: "k", Progress: progress, notice: time.Millisecond}
	done := make(chan error)
	go func() {
		_, err := Import(context.Background(), o)
		done <- err
	}()
	// The answer is held until the import has said it is still waiting for it.
	select {
	case <-noticed:
	case err := <-done:
		t.Fatalf("import ended first: %v", err)
	}
	close(release)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("err %v", err)
	}
}

// writerFunc is a writer that hands each write to a function.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}

func TestMainChecksOutBeforeReading(t *testing.T) {
	t.Parallel()
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) { writeListing(w, false) })
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "missing", "cat.yaml"), dir} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), "import", []string{"--from", srv.URL, "--key", "k", "--out", out}, func(string) string { return "" }, &stdout, &stderr, nil)
		if code != 2 || !strings.Contains(stderr.String(), "--out") {
			t.Errorf("--out %s: exit %d, stderr %q", out, code, stderr.String())
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("the service was asked %d times before --out was found unwritable", n)
	}
}

func TestMainGivesUpAtTheTimeout(t *testing.T) {
	t.Parallel()
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), "drift", []string{"--from", srv.URL, "--key", "k", "--catalog", "testdata/source.yaml", "--timeout", "200ms"},
		func(string) string { return "" }, &stdout, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "gave up after 200ms (--timeout)") || len(srv.requests()) > 1 {
		t.Errorf("exit %d after %d requests, stderr %q", code, len(srv.requests()), stderr.String())
	}
	code = Main(context.Background(), "drift", []string{"--from", srv.URL, "--timeout", "0s"}, func(string) string { return "" }, &stdout, &stderr, nil)
	if code != 2 || !strings.Contains(stderr.String(), "--timeout must be positive") {
		t.Errorf("--timeout 0s: exit %d, stderr %q", code, stderr.String())
	}
}

// TestLargeListingIsBoundedAsAWhole: pages that each fit the size bound cannot add up past the
// bound on the whole listing; the import stops with a clear error instead of holding them all.
func TestLargeListingIsBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100<<10)
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		var items []string
		for i := range 10 { // about 1 MiB a page, well under the page bound
			items = append(items, fmt.Sprintf(`{"id":"m-%d","name":"n","description":%q,"category":"text-to-image","status":"ready"}`, offset+i, big))
		}
		fmt.Fprintf(w, `{"data":[%s],"total":100000,"has_more":true}`, strings.Join(items, ","))
	})
	o := hostileOptions(srv.URL, &waits{}, nil)
	o.attemptTimeout = time.Minute // big pages, on a loaded machine
	o.listingBytes = 4 << 20
	_, err := Import(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "the listing holds more than") {
		t.Fatalf("import of an ever larger listing: %v", err)
	}
	if n := len(srv.requests()); n > 5 {
		t.Errorf("%d pages of 1 MiB read under a 4 MiB bound, want at most 5", n)
	}
}

// bigModels is a service of n models whose schemas each hold about 100 KB of description.
func bigModels(n int) func(w http.ResponseWriter, r *http.Request) {
	desc := strings.Repeat("d", 100<<10)
	schema := `{"type":"object","required":["prompt"],"properties":{"prompt":{"type":"string","description":"` + desc + `"}},"examples":[{"prompt":"a fox"}]}`
	return func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v1/models":
			offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			var items []string
			for i := offset; i < min(n, offset+limit); i++ {
				items = append(items, fmt.Sprintf(`{"id":"acme/m%d","name":"M %d","description":"d","category":"text-to-image","output_type":"image","status":"ready"}`, i, i))
			}
			fmt.Fprintf(w, `{"data":[%s],"total":%d,"has_more":%t}`, strings.Join(items, ","), n, offset+limit < n)
		case p == "/v1/models/categories":
			fmt.Fprint(w, `{"data":[{"id":"text-to-image","output_type":"image"}]}`)
		case p == "/v1/quotes":
			fmt.Fprint(w, `{"credits":3}`)
		default:
			id := strings.TrimPrefix(p, "/v1/models/")
			fmt.Fprintf(w, `{"id":%q,"name":"M","description":"d","category":"text-to-image","output_type":"image","status":"ready","input_schema":%s}`, id, schema)
		}
	}
}

// The models an import reads are bounded as a whole, not only the listing: past the bound it
// stops, having read little more than the bound.
func TestManyLargeModelsAreBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	srv := newHostile(t, bigModels(200))
	o := hostileOptions(srv.URL, &waits{}, nil)
	o.attemptTimeout = time.Minute
	o.modelsBytes = 1 << 20
	_, err := Import(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "more than 1 MiB, more than the importer writes") {
		t.Fatalf("import of 200 models of 100 KB under a 1 MiB bound: %v", err)
	}
	details := 0
	for _, uri := range srv.requests() {
		if strings.HasPrefix(uri, "/v1/models/acme/") {
			details++
		}
	}
	if details > 11 {
		t.Errorf("%d models read under a bound that 10 fill", details)
	}
}

// An answer that breaks off after megabytes, every time, is tried again only while the tries
// have read less than a whole answer's bound.
func TestALargeBrokenAnswerIsNotReadEightTimes(t *testing.T) {
	t.Parallel()
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(64<<20))
		w.Write([]byte(`{"data":"`))
		for range 12 {
			w.Write(chunk)
		}
		// The handler returns short of its Content-Length: the connection is cut.
	})
	w := &waits{}
	o := hostileOptions(srv.URL, w, nil)
	o.attemptTimeout = time.Minute
	_, err := Import(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "without a whole answer") {
		t.Errorf("import from an answer cut after 12 MiB: %v", err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d tries of an answer cut after 12 MiB; want 3 (36 MiB read, past the 32 MiB bound)", n)
	}
}
