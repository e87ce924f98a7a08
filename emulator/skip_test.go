package emulator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// skipServer is an emulator over the small test catalog whose test/pixel takes 30 s in its
// queue and 4 min to run, on a skipping clock (or the mode given), with waits bounded at 10 min.
func skipServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	raw, err := os.ReadFile("../testdata/catalogs/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(string(raw), "timing: {queue: 100ms, run: 900ms, queue_timeout: 1m}", "timing: {queue: 30s, run: 4m, queue_timeout: 10m}", 1)
	if slow == string(raw) {
		t.Fatal("the small catalog's test/pixel timing changed; update skipServer")
	}
	path := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(path, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.CatalogFile, cfg.Seeded, cfg.Seed = path, true, 7
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 10 * time.Minute
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A wait=true generation on a skipping clock answers the finished job at once, with the
// simulated times of a run that took minutes; a job made before it moved on with the jump.
func TestSkipClockWaitAnswersTheTerminalJobAtOnce(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{SkipClock: true})
	other := decode[api.Job](t, generate(t, s, "key_a", "other", quote(t, s, "key_a", "test/pixel", pixelInput), pixelInput, ""))
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	began := time.Now()
	rec := generate(t, s, "key_a", "wait", q, pixelInput, "?wait=true")
	took := time.Since(began)
	if rec.Code != 200 {
		t.Fatalf("wait=true: %d %s", rec.Code, rec.Body)
	}
	job := decode[api.Job](t, rec)
	if job.Status != "succeeded" || job.CreatedAt != "2026-01-01T00:00:00Z" || *job.StartedAt != "2026-01-01T00:00:30Z" || *job.FinishedAt != "2026-01-01T00:04:30Z" {
		t.Fatalf("job = %s created %s started %v finished %v", job.Status, job.CreatedAt, *job.StartedAt, *job.FinishedAt)
	}
	// Generous: the point is no wait for simulated minutes (nor for --max-wait).
	if took > 5*time.Second {
		t.Errorf("wait=true of a 4.5-minute job took %v of real time", took)
	}
	t.Logf("wait=true of a 4.5-minute job answered in %v of real time", took)
	if now := s.world().Now(); !now.Equal(ManualStart.Add(4*time.Minute + 30*time.Second)) {
		t.Errorf("clock = %v; want the job's end", now)
	}
	got := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+other.ID, "key_a", nil))
	if got.Status != "succeeded" {
		t.Errorf("the tenant's other job is %s after the jump; want succeeded", got.Status)
	}
}

// A poll of a job that is not terminal moves a skipping clock to the job's next transition:
// a polling client sees queued, then running, then succeeded, one poll each.
func TestSkipClockPollMovesTheJobOn(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{SkipClock: true})
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	job := decode[api.Job](t, generate(t, s, "key_a", "poll", q, pixelInput, ""))
	if job.Status != "queued" {
		t.Fatalf("new job %s", job.Status)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	began := time.Now()
	var seen []string
	for range 10 {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/jobs/"+job.ID, nil)
		req.Header.Set("Authorization", "Bearer key_a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v api.Job
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, v.Status)
		if v.Status == "succeeded" {
			break
		}
	}
	t.Logf("polled %v in %v of real time", seen, time.Since(began))
	if strings.Join(seen, ",") != "running,succeeded" {
		t.Fatalf("polls saw %v; want running, then succeeded", seen)
	}
	// A poll of a finished job, or of another account's, moves nothing.
	before := s.world().Now()
	call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil)
	q2 := quote(t, s, "key_a", "test/pixel", pixelInput)
	job2 := decode[api.Job](t, generate(t, s, "key_a", "poll-2", q2, pixelInput, ""))
	if rec := call(t, s, "GET", "/v1/jobs/"+job2.ID, "key_b", nil); rec.Code != 404 {
		t.Fatalf("another account's poll: %d", rec.Code)
	}
	if now := s.world().Now(); !now.Equal(before) {
		t.Errorf("clock moved from %v to %v without a poll of a live job of the caller's", before, now)
	}
}

// A wait=true whose job outlasts the wait jumps to the wait's bound and answers 202.
func TestSkipClockWaitStopsAtItsBound(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{SkipClock: true, MaxWait: 2 * time.Minute})
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	rec := generate(t, s, "key_a", "bound", q, pixelInput, "?wait=true")
	if rec.Code != 202 || decode[api.Job](t, rec).Status != "running" {
		t.Fatalf("wait=true past its bound: %d %s", rec.Code, rec.Body)
	}
	if now := s.world().Now(); !now.Equal(ManualStart.Add(2 * time.Minute)) {
		t.Errorf("clock = %v; want the wait's bound", now)
	}
}

// On a manual clock polls and waits move nothing: tests that look at a job's steps keep them.
func TestManualClockPollMovesNothing(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{ManualClock: true})
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	job := decode[api.Job](t, generate(t, s, "key_a", "still", q, pixelInput, ""))
	for range 3 {
		if got := decode[api.Job](t, call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil)); got.Status != "queued" {
			t.Fatalf("manual clock: poll saw %s", got.Status)
		}
	}
	if !s.world().Now().Equal(ManualStart) {
		t.Errorf("manual clock moved to %v", s.world().Now())
	}
}

// The control API switches one tenant's clock mode; the others keep theirs, a reset puts the
// configured mode back, and a snapshot carries the mode to its restore.
func TestClockModeThroughTheControlAPI(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{ManualClock: true})
	mode := func(tenant string) string {
		return decode[api.Clock](t, call(t, s, "GET", "/_emulator/clock", "", nil, "X-Emulator-Tenant", tenant)).Mode
	}
	rec := call(t, s, "POST", "/_emulator/clock", "", map[string]any{"mode": "skip"}, "X-Emulator-Tenant", "t1")
	if rec.Code != 200 || decode[api.Clock](t, rec).Mode != "skip" {
		t.Fatalf("mode skip: %d %s", rec.Code, rec.Body)
	}
	if mode("t1") != "skip" || mode("t2") != "manual" {
		t.Fatalf("modes t1 %s, t2 %s", mode("t1"), mode("t2"))
	}
	health := decode[api.Health](t, call(t, s, "GET", "/_emulator/health", "", nil, "X-Emulator-Tenant", "t1"))
	if health.Clock != "skip" {
		t.Errorf("health clock = %s", health.Clock)
	}
	// In t1 a wait=true now skips.
	q := quote(t, s, "key_a.t1", "test/pixel", pixelInput)
	if rec := generate(t, s, "key_a.t1", "t1", q, pixelInput, "?wait=true"); rec.Code != 200 {
		t.Fatalf("wait=true in a skipping tenant: %d", rec.Code)
	}
	snap := call(t, s, "GET", "/_emulator/snapshot", "", nil, "X-Emulator-Tenant", "t1")
	if snap.Code != 200 {
		t.Fatalf("snapshot: %d %s", snap.Code, snap.Body)
	}
	var doc api.Snapshot
	if err := json.Unmarshal(snap.Body.Bytes(), &doc); err != nil || doc.Clock.Mode != "skip" {
		t.Fatalf("snapshot clock %+v, %v", doc.Clock, err)
	}
	if rec := call(t, s, "PUT", "/_emulator/snapshot", "", snap.Body.String(), "X-Emulator-Tenant", "t3"); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	if mode("t3") != "skip" {
		t.Errorf("restored mode = %s", mode("t3"))
	}
	// A mode with a move: the mode changes first, and the clock moves on from where it stood.
	rec = call(t, s, "POST", "/_emulator/clock", "", map[string]any{"mode": "manual", "advance": "1m"}, "X-Emulator-Tenant", "t1")
	if c := decode[api.Clock](t, rec); rec.Code != 200 || c.Mode != "manual" || c.Now != "2026-01-01T00:05:30Z" {
		t.Fatalf("mode manual + advance: %d %s", rec.Code, rec.Body)
	}
	if rec := call(t, s, "POST", "/_emulator/reset", "", nil, "X-Emulator-Tenant", "t1"); rec.Code != 200 {
		t.Fatalf("reset: %d", rec.Code)
	}
	if mode("t1") != "manual" {
		t.Errorf("after reset mode = %s", mode("t1"))
	}
	for name, body := range map[string]any{
		"unknown mode":    map[string]any{"mode": "sundial"},
		"mode not text":   map[string]any{"mode": 1},
		"nothing":         map[string]any{},
		"advance and set": map[string]any{"advance": "1s", "set": "2026-01-01T00:00:00Z"},
		"bad advance":     map[string]any{"mode": "skip", "advance": "soon"},
	} {
		rec := call(t, s, "POST", "/_emulator/clock", "", body, "X-Emulator-Tenant", "t2")
		if rec.Code != 400 && rec.Code != 422 {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if mode("t2") != "manual" {
		t.Errorf("a refused change still changed the mode to %s", mode("t2"))
	}
}

// Under a skipping clock the report spaces polls in real time: a client that polls as fast as
// it can is told so, though each poll jumped the clock by minutes.
func TestSkipClockReportJudgesPollsInRealTime(t *testing.T) {
	t.Parallel()
	s := skipServer(t, Config{SkipClock: true})
	q := quote(t, s, "key_a", "test/pixel", pixelInput)
	job := decode[api.Job](t, generate(t, s, "key_a", "fast", q, pixelInput, ""))
	for range 4 {
		call(t, s, "GET", "/v1/jobs/"+job.ID, "key_a", nil)
	}
	rep := decode[api.Report](t, call(t, s, "GET", "/_emulator/report", "", nil))
	found := false
	for _, f := range rep.Findings {
		found = found || f.Rule == "poll-too-fast"
	}
	if !found {
		t.Errorf("findings %+v; want poll-too-fast", rep.Findings)
	}
}
