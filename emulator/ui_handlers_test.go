package emulator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

func TestDashboardFilesAreServedWhateverTheControlAPIsState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   Config
		jobs  int    // what GET /_emulator/jobs answers without a token
		state string // what the page says of the control API
	}{
		{"open", Config{}, 200, "on"},
		{"token", Config{AdminToken: "s3cret"}, 401, "token"},
		{"disabled", Config{ControlDisabled: true}, 403, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.CatalogFile = "../testdata/catalogs/small.yaml"
			s := simServer(t, cfg)
			for _, f := range []struct{ path, ctype, holds string }{
				{"/_emulator/ui/", "text/html; charset=utf-8", `src="app.js"`},
				{"/_emulator/ui/index.html", "text/html; charset=utf-8", `<body data-control="` + tc.state + `">`},
				{"/_emulator/ui/app.js", "text/javascript; charset=utf-8", "/_emulator/events"},
				{"/_emulator/ui/app.css", "text/css; charset=utf-8", "prefers-color-scheme: dark"},
			} {
				rec := call(t, s, "GET", f.path, "", nil)
				if rec.Code != 200 || rec.Header().Get("Content-Type") != f.ctype || !strings.Contains(rec.Body.String(), f.holds) {
					t.Errorf("GET %s: %d %q, body holds %q: %v", f.path, rec.Code, rec.Header().Get("Content-Type"), f.holds, strings.Contains(rec.Body.String(), f.holds))
				}
				if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
					t.Errorf("GET %s: Content-Security-Policy %q", f.path, csp)
				}
				if rec.Header().Get("ETag") == "" || rec.Header().Get("X-Request-Id") == "" {
					t.Errorf("GET %s: no ETag or X-Request-Id: %v", f.path, rec.Header())
				}
			}
			if rec := call(t, s, "GET", "/_emulator/ui/nothing.js", "", nil); rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"not_found"`) {
				t.Errorf("unknown file: %d %s", rec.Code, rec.Body)
			}
			if rec := call(t, s, "GET", "/_emulator/ui", "", nil); rec.Code != 301 || rec.Header().Get("Location") != "/_emulator/ui/" {
				t.Errorf("/_emulator/ui: %d Location %q", rec.Code, rec.Header().Get("Location"))
			}
			if rec := call(t, s, "POST", "/_emulator/ui/", "", nil); rec.Code != 405 {
				t.Errorf("POST to the page: %d", rec.Code)
			}
			if rec := call(t, s, "GET", "/_emulator/jobs", "", nil); rec.Code != tc.jobs {
				t.Errorf("GET /_emulator/jobs without a token: %d; want %d", rec.Code, tc.jobs)
			}
			// A client already gone: an open stream answers its hello, then ends.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			events := httptest.NewRecorder()
			s.ServeHTTP(events, httptest.NewRequest("GET", "/_emulator/events", nil).WithContext(ctx))
			if events.Code != tc.jobs {
				t.Errorf("GET /_emulator/events without a token: %d; want %d", events.Code, tc.jobs)
			}
			if tc.jobs == 200 && !strings.HasPrefix(events.Body.String(), "event: hello\ndata: {") {
				t.Errorf("events body %q", events.Body)
			}
			// The page learns which state it is in from health, which needs no token.
			health := decode[map[string]any](t, call(t, s, "GET", "/_emulator/health", "", nil))
			if health["control"] != !cfg.ControlDisabled {
				t.Errorf("health control = %v", health["control"])
			}
		})
	}
	t.Run("revalidation", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
		first := call(t, s, "GET", "/_emulator/ui/app.js", "", nil)
		again := call(t, s, "GET", "/_emulator/ui/app.js", "", nil, "If-None-Match", first.Header().Get("ETag"))
		if again.Code != http.StatusNotModified {
			t.Errorf("If-None-Match with the ETag: %d; want 304", again.Code)
		}
	})
	// The files are served as outputs are: errors are problems, and a range in another unit is
	// ignored.
	t.Run("ranges and preconditions", func(t *testing.T) {
		t.Parallel()
		s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
		whole := call(t, s, "GET", "/_emulator/ui/app.css", "", nil)
		for _, tc := range []struct {
			header []string
			status int
			code   string
		}{
			{[]string{"Range", "bytes=0-3"}, http.StatusPartialContent, ""},
			{[]string{"Range", "bytes=99999999-"}, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable"},
			{[]string{"If-Match", `"other"`}, http.StatusPreconditionFailed, "precondition_failed"},
			{[]string{"Range", "items=0-3"}, http.StatusOK, ""},
		} {
			rec := call(t, s, "GET", "/_emulator/ui/app.css", "", nil, tc.header...)
			if rec.Code != tc.status {
				t.Errorf("%v: %d; want %d\n%s", tc.header, rec.Code, tc.status, rec.Body)
				continue
			}
			switch {
			case tc.code != "":
				if p := decode[map[string]any](t, rec); rec.Header().Get("Content-Type") != "application/problem+json" || p["code"] != tc.code {
					t.Errorf("%v: %q %v; want a %s problem", tc.header, rec.Header().Get("Content-Type"), p, tc.code)
				}
			case tc.status == http.StatusPartialContent:
				if rec.Body.String() != whole.Body.String()[:4] {
					t.Errorf("%v: %q", tc.header, rec.Body)
				}
			default:
				if rec.Body.String() != whole.Body.String() {
					t.Errorf("%v: %d bytes; want the whole %d", tc.header, rec.Body.Len(), whole.Body.Len())
				}
			}
		}
	})
}

func TestControlJobsListEveryAccountNewestFirst(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	var ids []string
	for i, g := range []struct{ key, model string }{
		{"key_a", "test/pixel"}, {"key_b", "test/voice"}, {"key_a", "test/voice"}, {"key_b", "test/pixel"}, {"key_a", "test/pixel"},
	} {
		input := map[string]any{"prompt": "n" + string(rune('0'+i))}
		if g.model == "test/voice" {
			input = map[string]any{"text": "n" + string(rune('0'+i))}
		}
		rec := startGeneration(t, s, g.key, "k"+string(rune('0'+i)), g.model, input)
		if rec.Code != 202 {
			t.Fatalf("generate %d: %d %s", i, rec.Code, rec.Body)
		}
		ids = append(ids, decode[api.Job](t, rec).ID)
	}
	list := decode[api.Page[api.ControlJob]](t, control(t, s, "GET", "/_emulator/jobs", nil))
	if list.Total != 5 || len(list.Data) != 5 || list.HasMore {
		t.Fatalf("list: total %d, %d items, has_more %v", list.Total, len(list.Data), list.HasMore)
	}
	for i, j := range list.Data {
		if want := ids[len(ids)-1-i]; j.ID != want {
			t.Errorf("item %d is %s; want %s (newest first across accounts)", i, j.ID, want)
		}
		if j.Account == "" || j.Plan != nil || j.Status != "queued" {
			t.Errorf("item %d: account %q, plan %v, status %s", i, j.Account, j.Plan, j.Status)
		}
	}
	for _, tc := range []struct {
		query string
		want  []string
		total int
	}{
		{"?model=test/voice", []string{ids[2], ids[1]}, 2},
		{"?limit=2&offset=1", []string{ids[3], ids[2]}, 5},
		{"?model=test/pixel&limit=1&offset=2", []string{ids[0]}, 3},
		{"?status=succeeded", nil, 0},
		{"?status=", []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, 5},
		{"?offset=9", nil, 5},
	} {
		got := decode[api.Page[api.ControlJob]](t, control(t, s, "GET", "/_emulator/jobs"+tc.query, nil))
		var gotIDs []string
		for _, j := range got.Data {
			gotIDs = append(gotIDs, j.ID)
		}
		if got.Total != tc.total || strings.Join(gotIDs, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: total %d, ids %v; want %d, %v", tc.query, got.Total, gotIDs, tc.total, tc.want)
		}
	}
	for _, bad := range []string{"?status=done", "?limit=0", "?offset=-1", "?limit=501", "?model=a&model=b"} {
		if rec := control(t, s, "GET", "/_emulator/jobs"+bad, nil); rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid_parameter") {
			t.Errorf("%s: %d %s", bad, rec.Code, rec.Body)
		}
	}
	// Another tenant sees none of them.
	other := call(t, s, "GET", "/_emulator/jobs", "", nil, "X-Emulator-Tenant", "elsewhere")
	if got := decode[api.Page[api.ControlJob]](t, other); got.Total != 0 {
		t.Errorf("another tenant lists %d jobs", got.Total)
	}
}

func TestControlJobShowsItsPlanAndClockWhatIsDue(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 3})
	drawn := decode[api.Job](t, startGeneration(t, s, "key_a", "d", "test/pixel", map[string]any{"prompt": "a"}))
	forced := decode[api.Job](t, startGeneration(t, s, "key_a", "f", "test/pixel", map[string]any{"prompt": "b"}, "X-Emulator-Outcome", "fail"))

	clk := decode[map[string]any](t, control(t, s, "GET", "/_emulator/clock", nil))
	due, _ := clk["next_due"].(map[string]any)
	if due == nil || due["job_id"] != drawn.ID || due["status"] != "queued" || due["at"] == "" {
		t.Errorf("clock next_due = %v; want the first job leaving queued", clk["next_due"])
	}

	d := decode[api.ControlJob](t, control(t, s, "GET", "/_emulator/jobs/"+drawn.ID, nil))
	if d.Plan == nil || d.Plan.DecidedBy != "draw" || d.Plan.Directive != "" || d.Plan.Ending.Status != "succeeded" || d.Plan.Run == "" || d.Plan.EndedByControl || d.Account != "acct_a" {
		t.Errorf("drawn job's plan: %+v, account %q", d.Plan, d.Account)
	}
	f := decode[api.ControlJob](t, control(t, s, "GET", "/_emulator/jobs/"+forced.ID, nil))
	if f.Plan == nil || f.Plan.DecidedBy != "directive" || f.Plan.Directive != "fail" || f.Plan.Ending.Status != "failed" || f.Plan.Ending.Code == "" {
		t.Errorf("forced job's plan: %+v", f.Plan)
	}
	// /v1 shows no plan.
	if rec := call(t, s, "GET", "/v1/jobs/"+drawn.ID, "key_a", nil); strings.Contains(rec.Body.String(), `"plan"`) || strings.Contains(rec.Body.String(), `"account"`) {
		t.Errorf("/v1 job body has control members: %s", rec.Body)
	}
	if rec := control(t, s, "POST", "/_emulator/jobs/"+drawn.ID+"/fail", nil); rec.Code != 200 {
		t.Fatalf("force fail: %d %s", rec.Code, rec.Body)
	}
	d = decode[api.ControlJob](t, control(t, s, "GET", "/_emulator/jobs/"+drawn.ID, nil))
	if !d.Plan.EndedByControl || d.Plan.Ending.Status != "succeeded" || d.Status != "failed" {
		t.Errorf("after a forced failure: status %s, plan %+v; want failed, ended by control, the plan kept", d.Status, d.Plan)
	}
	if rec := control(t, s, "POST", "/_emulator/clock", map[string]any{"advance": "1h"}); rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	if clk := decode[map[string]any](t, control(t, s, "GET", "/_emulator/clock", nil)); clk["next_due"] != nil {
		t.Errorf("nothing live, next_due = %v; want null", clk["next_due"])
	}
}

func TestAccountsShowRefunds(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
	j := decode[api.Job](t, startGeneration(t, s, "key_a", "r", "test/pixel", map[string]any{"prompt": "a", "num_images": 3}))
	if rec := control(t, s, "POST", "/_emulator/jobs/"+j.ID+"/fail", nil); rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	body := decode[struct {
		Data []struct {
			Account  string `json:"account"`
			Held     int64  `json:"held"`
			Refunded int64  `json:"refunded"`
		} `json:"data"`
	}](t, control(t, s, "GET", "/_emulator/accounts", nil))
	for _, b := range body.Data {
		if b.Account == "acct_a" && (b.Refunded != j.Credits || b.Held != 0) {
			t.Errorf("acct_a: %+v; want %d refunded, nothing held", b, j.Credits)
		}
	}
}

// sse reads server-sent events from a stream.
type sse struct {
	t  *testing.T
	rd *bufio.Reader
}

type sseEvent struct {
	name, data string
	comment    bool
}

func (r *sse) next() sseEvent {
	r.t.Helper()
	var ev sseEvent
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("the stream ended: %v (so far %+v)", err, ev)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" || ev.comment {
				return ev
			}
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// nextEvent skips keep-alive comments.
func (r *sse) nextEvent() (string, map[string]any) {
	r.t.Helper()
	for {
		ev := r.next()
		if ev.comment {
			continue
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
			r.t.Fatalf("event %s data %q: %v", ev.name, ev.data, err)
		}
		return ev.name, data
	}
}

func openEvents(t *testing.T, ctx context.Context, url string, headers ...string) (*http.Response, *sse) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/_emulator/events", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res, &sse{t: t, rd: bufio.NewReader(res.Body)}
}

func TestEventsStreamTheTenantsChanges(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml", Seeded: true, Seed: 1})
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, stream := openEvents(t, ctx, ts.URL, "X-Emulator-Tenant", "watched")
	defer res.Body.Close()

	name, hello := stream.nextEvent()
	if name != "hello" || hello["tenant"] != "watched" || hello["mode"] != "manual" || hello["now"] != "2026-01-01T00:00:00Z" {
		t.Fatalf("first event %s %v", name, hello)
	}
	if got := fmt.Sprint(hello["changed"]); got != "[jobs journal clock scenario accounts webhooks]" {
		t.Errorf("hello says %s changed; want every part", got)
	}
	version := hello["version"].(float64)
	// A /v1 read changes the journal and nothing else, so a reader showing jobs fetches nothing.
	call(t, s, "GET", "/v1/models", "key_a.watched", nil)
	if name, data := stream.nextEvent(); name != "change" || fmt.Sprint(data["changed"]) != "[journal]" || data["next_due"] != nil {
		t.Fatalf("after a /v1 read: %s %v; want a change of the journal alone", name, data)
	}
	// Each kind of change makes an event with a higher version that names the part it changed;
	// another tenant's changes make none.
	for _, step := range []struct {
		name string
		part string
		do   func()
	}{
		{"a job", "jobs", func() {
			q := quote(t, s, "key_a.watched", "test/pixel", map[string]any{"prompt": "x"})
			generate(t, s, "key_a.watched", "i", q, map[string]any{"prompt": "x"}, "")
		}},
		{"the clock", "clock", func() {
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "1s"}, "X-Emulator-Tenant", "watched")
		}},
		{"a fault", "scenario", func() {
			call(t, s, "POST", "/_emulator/faults", "", map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 503}, "X-Emulator-Tenant", "watched")
		}},
		{"credits", "accounts", func() {
			call(t, s, "PUT", "/_emulator/accounts/acct_a", "", map[string]any{"credits": 5}, "X-Emulator-Tenant", "watched")
		}},
		{"the scenario", "scenario", func() {
			call(t, s, "PUT", "/_emulator/scenario", "", map[string]any{"name": "flaky"}, "X-Emulator-Tenant", "watched")
		}},
		{"the journal", "journal", func() {
			call(t, s, "DELETE", "/_emulator/requests", "", nil, "X-Emulator-Tenant", "watched")
		}},
		{"the clock's mode", "clock", func() {
			call(t, s, "POST", "/_emulator/clock", "", map[string]any{"mode": "skip"}, "X-Emulator-Tenant", "watched")
		}},
	} {
		// Changes elsewhere come first: if they made an event, it would be read here instead.
		call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "1s"}, "X-Emulator-Tenant", "other")
		step.do()
		// A step of several changes may span two events; the part must be named by then.
		for i := 0; ; i++ {
			name, data := stream.nextEvent()
			if name != "change" || data["version"].(float64) <= version {
				t.Fatalf("after %s: %s %v; want a change past version %v", step.name, name, data, version)
			}
			version = data["version"].(float64)
			if slices.Contains(data["changed"].([]any), any(step.part)) {
				break
			}
			if i == 1 {
				t.Fatalf("after %s: %v changed; want %s among them", step.name, data["changed"], step.part)
			}
		}
	}
	if got := decode[map[string]any](t, call(t, s, "GET", "/_emulator/clock", "", nil, "X-Emulator-Tenant", "watched")); got["now"] != "2026-01-01T00:00:01Z" || got["mode"] != "skip" {
		t.Fatalf("watched tenant's clock %v %v", got["now"], got["mode"])
	}

	// A reset says so, and the stream goes on with the new world.
	call(t, s, "POST", "/_emulator/reset", "", nil, "X-Emulator-Tenant", "watched")
	if name, data := stream.nextEvent(); name != "reset" || data["now"] != "2026-01-01T00:00:00Z" {
		t.Fatalf("after a reset: %s %v", name, data)
	}
	call(t, s, "POST", "/_emulator/clock", "", map[string]any{"advance": "2s"}, "X-Emulator-Tenant", "watched")
	if name, data := stream.nextEvent(); name != "change" || data["now"] != "2026-01-01T00:00:02Z" {
		t.Fatalf("a change in the new world: %s %v", name, data)
	}

	// Dropping the tenant ends the stream after a "gone" event.
	if rec := call(t, s, "DELETE", "/_emulator/tenants/watched", "", nil); rec.Code != 204 {
		t.Fatal(rec.Body)
	}
	if name, _ := stream.nextEvent(); name != "gone" {
		t.Fatalf("after the drop: %s; want gone", name)
	}
	if _, err := stream.rd.ReadString('\n'); err == nil {
		t.Error("the stream goes on after gone")
	}
}

func TestEventsCoalesceAndKeepAlive(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
	// The stream itself, with a short keep-alive, framed like every route.
	lim := defaultStreams
	lim.heartbeat = 20 * time.Millisecond
	h := s.frame(s.handle(s.control(s.events(lim))))
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, stream := openEvents(t, ctx, ts.URL)
	defer res.Body.Close()
	if name, _ := stream.nextEvent(); name != "hello" {
		t.Fatalf("first event %s", name)
	}
	// A burst of 200 changes arrives as far fewer events, and the last carries the final version.
	world := s.world()
	start := time.Now()
	for range 200 {
		world.Changed(sim.PartJobs)
	}
	final := float64(world.Version())
	events := 0
	for {
		ev := stream.next()
		if ev.comment {
			continue
		}
		events++
		var data map[string]any
		_ = json.Unmarshal([]byte(ev.data), &data)
		if data["version"].(float64) == final {
			break
		}
	}
	elapsed := time.Since(start)
	// At most one event per gap, plus the first: bounded by time, not by the number of changes.
	if most := 1 + int(elapsed/lim.minGap); events > most {
		t.Errorf("%d events for 200 changes in %v; want at most %d", events, elapsed, most)
	}
	// Quiet: keep-alive comments only.
	for range 2 {
		if ev := stream.next(); !ev.comment {
			t.Fatalf("a quiet stream sent %+v; want a keep-alive comment", ev)
		}
	}
	// Shutting down ends the stream.
	s.Shutdown()
	for {
		if _, err := stream.rd.ReadString('\n'); err != nil {
			break
		}
	}
}

func TestEventsEndWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
	returned := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		close(returned)
	}))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	res, stream := openEvents(t, ctx, ts.URL)
	if name, _ := stream.nextEvent(); name != "hello" {
		t.Fatalf("first event %s", name)
	}
	cancel()
	res.Body.Close()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's handler is still running after its client left")
	}
}

// TestEventsAreCapped: past the most streams a process serves, a stream answers 429
// too_many_streams with Retry-After, and one closing makes room for another.
func TestEventsAreCapped(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
	lim := defaultStreams
	lim.max = 2
	h := s.frame(s.handle(s.control(s.events(lim))))
	ended := make(chan int, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		ended <- 0
	}))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, _ := openEvents(t, ctx, ts.URL)
	second, _ := openEvents(t, ctx, ts.URL, "X-Emulator-Tenant", "other")
	defer second.Body.Close()
	res, err := http.Get(ts.URL + "/_emulator/events")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 429 {
		res.Body.Close()
		t.Fatalf("a third stream: %d; want 429 too_many_streams", res.StatusCode)
	}
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if body["code"] != "too_many_streams" || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream: %d %v (Retry-After %q); want 429 too_many_streams", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("the refusal is %s; want a problem", res.Header.Get("Content-Type"))
	}
	<-ended // the refusal
	first.Body.Close()
	<-ended // the first stream's handler, once it noticed the close
	third, _ := openEvents(t, ctx, ts.URL)
	third.Body.Close()
}

// stuckClient is a connection whose client stopped reading: every write blocks until the write
// deadline passes, or for ever without one.
type stuckClient struct {
	header   http.Header
	mu       sync.Mutex
	deadline time.Time
}

func (c *stuckClient) Header() http.Header    { return c.header }
func (c *stuckClient) WriteHeader(int)        {}
func (c *stuckClient) FlushError() error      { return nil }
func (c *stuckClient) deadlineSet() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.deadline }

func (c *stuckClient) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return nil
}

func (c *stuckClient) Write(p []byte) (int, error) {
	d := c.deadlineSet()
	if d.IsZero() {
		d = time.Now().Add(24 * time.Hour) // as good as never, but the test ends
	}
	time.Sleep(time.Until(d))
	return 0, os.ErrDeadlineExceeded
}

// TestEventsDropAClientThatStopsReading: a stream whose client stopped reading ends once a
// write has waited the write timeout, instead of holding its socket (and a place under the
// cap) for ever.
func TestEventsDropAClientThatStopsReading(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := simServer(t, Config{CatalogFile: "../testdata/catalogs/small.yaml"})
		defer s.Close()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.ServeHTTP(&stuckClient{header: http.Header{}}, httptest.NewRequest("GET", "/_emulator/events", nil))
		}()
		<-done
		if waited := time.Since(start); waited != defaultStreams.writeTimeout {
			t.Errorf("the stream ended after %v; want the write timeout, %v", waited, defaultStreams.writeTimeout)
		}
	})
}
