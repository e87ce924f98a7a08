package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// wireGet sends one GET over a fresh connection and reads the whole answer; err is what the
// client met reading it (an early EOF for a cut body).
func wireGet(t *testing.T, url, key string, headers ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

type journalPage struct {
	Data []api.JournalEntry `json:"data"`
}

func addFault(t *testing.T, s http.Handler, f map[string]any) {
	t.Helper()
	if rec := control(t, s, "POST", "/_emulator/faults", f); rec.Code != 201 {
		t.Fatalf("add fault %v: %d %s", f, rec.Code, rec.Body)
	}
}

func putScenario(t *testing.T, s http.Handler, sc map[string]any) {
	t.Helper()
	if rec := control(t, s, "PUT", "/_emulator/scenario", map[string]any{"scenario": sc}); rec.Code != 200 {
		t.Fatalf("put scenario: %d %s", rec.Code, rec.Body)
	}
}

// TestGatewayFaultOnTheWire: a gateway fault answers as a proxy in front of the service would —
// an HTML page, no X-Request-Id, no problem body — and the journal and coverage count it.
func TestGatewayFaultOnTheWire(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	addFault(t, s, map[string]any{"match": map[string]any{"path": "/v1/models"}, "action": "gateway", "count": 1})
	resp, body, err := wireGet(t, srv.URL+"/v1/models", "mg_test_all", "X-Request-Id", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "text/html" || resp.Header.Values("X-Request-Id") != nil ||
		!bytes.Contains(body, []byte("<title>502 Bad Gateway</title>")) || json.Valid(body) || resp.ContentLength != int64(len(body)) {
		t.Errorf("gateway answer: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if resp, _, err := wireGet(t, srv.URL+"/v1/models", "mg_test_all"); err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("after the fault is spent: %v %v", resp, err)
	}

	addFault(t, s, map[string]any{"match": map[string]any{"method": "GET"}, "action": "gateway", "status": 504, "delay": "30ms", "count": 1})
	start := time.Now()
	resp, body, err = wireGet(t, srv.URL+"/v1/models", "mg_test_all")
	if err != nil || resp.StatusCode != 504 || !bytes.Contains(body, []byte("504 Gateway Timeout")) || time.Since(start) < 30*time.Millisecond {
		t.Errorf("504 after a delay: %v %s %v after %v", resp, body, err, time.Since(start))
	}

	entries := decode[journalPage](t, control(t, s, "GET", "/_emulator/requests?status=502", nil)).Data
	if len(entries) != 1 || entries[0].Fault == "" || entries[0].Code != "" {
		t.Errorf("journal: %+v", entries)
	}
	cov := control(t, s, "GET", "/_emulator/coverage", nil).Body.String()
	if !strings.Contains(cov, `"id":"fault gateway","group":"faults","count":2`) || strings.Contains(cov, "502 \"") {
		t.Errorf("coverage: %s", cov)
	}
}

// TestRetryAfterAsAnHTTPDate: a rate limit and an outage that ask for the date form send an
// HTTP-date that Go's http.ParseTime and Python's email.utils both read, the seconds asked for
// after the answer's Date; the journal records those seconds.
func TestRetryAfterAsAnHTTPDate(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	putScenario(t, s, map[string]any{
		"rate_limits": []any{map[string]any{"match": map[string]any{"path": "/v1/models"}, "limit": 1, "per": "1m", "retry_after_format": "date"}},
		"faults":      []any{map[string]any{"match": map[string]any{"path": "/v1/quotes"}, "status": 503, "retry_after": 30, "retry_after_format": "date"}},
	})
	_ = call(t, s, "GET", "/v1/models", "mg_test_all", nil)
	limited := call(t, s, "GET", "/v1/models", "mg_test_all", nil)
	outage := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": schnell})
	for _, c := range []struct {
		name    string
		rec     *httptest.ResponseRecorder
		status  int
		seconds int
	}{{"rate limit", limited, 429, 60}, {"outage", outage, 503, 30}} {
		h := c.rec.Header()
		at, err := http.ParseTime(h.Get("Retry-After"))
		sent, derr := http.ParseTime(h.Get("Date"))
		if c.rec.Code != c.status || err != nil || derr != nil || at.Sub(sent) != time.Duration(c.seconds)*time.Second {
			t.Errorf("%s: %d, Retry-After %q (%v), Date %q; want %d seconds after Date", c.name, c.rec.Code, h.Get("Retry-After"), err, h.Get("Date"), c.seconds)
			continue
		}
		python, err := exec.LookPath("python3")
		if err != nil {
			t.Log("python3 is not installed: the date is checked with Go's parser only")
			continue
		}
		out, err := exec.Command(python, "-c", "import email.utils, sys; print(int(email.utils.parsedate_to_datetime(sys.argv[1]).timestamp()))", h.Get("Retry-After")).Output()
		if err != nil || strings.TrimSpace(string(out)) != strconv.FormatInt(at.Unix(), 10) {
			t.Errorf("%s: Python's email.utils read %q as %q (%v), Go as %d", c.name, h.Get("Retry-After"), out, err, at.Unix())
		}
	}
	for path, want := range map[string]int{"/v1/models": 60, "/v1/quotes": 30} {
		entries := decode[journalPage](t, control(t, s, "GET", "/_emulator/requests?path="+path, nil)).Data
		if last := entries[len(entries)-1]; last.RetryAfter != want {
			t.Errorf("%s: the journal's retry_after is %d, want %d", path, last.RetryAfter, want)
		}
	}
	// The seconds form stays the default.
	putScenario(t, s, map[string]any{"faults": []any{map[string]any{"match": map[string]any{"path": "/v1/quotes"}, "status": 503}}})
	if rec := call(t, s, "POST", "/v1/quotes", "mg_test_all", map[string]any{"model": schnellID, "input": schnell}); rec.Header().Get("Retry-After") != "1" {
		t.Errorf("default form: Retry-After %q", rec.Header().Get("Retry-After"))
	}
}

// TestPollingLimitPerJob: a per-job limit on GET /v1/jobs/{id} counts each key's polls of each
// job apart, and a new window lets polls through again.
func TestPollingLimitPerJob(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	// The rule matches every GET under /v1, so only per_job keeps the job list and the catalog,
	// which name no job, from being counted.
	putScenario(t, s, map[string]any{"rate_limits": []any{map[string]any{
		"match": map[string]any{"method": "GET", "path": "/v1/**"}, "limit": 2, "per": "10s", "per_job": true}}})
	a := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "a", schnellID, schnell)).ID
	b := decode[api.Job](t, startGeneration(t, s, "mg_test_all", "b", schnellID, schnell)).ID
	poll := func(key, id string) int { return call(t, s, "GET", "/v1/jobs/"+id, key, nil).Code }
	got := []int{poll("mg_test_all", a), poll("mg_test_all", a), poll("mg_test_all", a), poll("mg_test_all", b), poll("mg_test_generate", a)}
	// Job a's third poll is limited; job b, and another key polling a (another account's job:
	// 404), are counted apart.
	if want := []int{200, 200, 429, 200, 404}; !equalInts(got, want) {
		t.Errorf("polls = %v, want %v", got, want)
	}
	rec := call(t, s, "GET", "/v1/jobs/"+a, "mg_test_all", nil)
	if rec.Code != 429 || rec.Header().Get("X-RateLimit-Limit") != "2" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("limited poll: %d %v", rec.Code, rec.Header())
	}
	for i := range 3 {
		if rec := call(t, s, "GET", "/v1/jobs", "mg_test_all", nil); rec.Code != 200 || rec.Header().Get("X-RateLimit-Limit") != "" {
			t.Errorf("the job list, which names no job, answered %d (X-RateLimit-Limit %q) the %d. time", rec.Code, rec.Header().Get("X-RateLimit-Limit"), i+1)
		}
	}
	_ = s.world().Advance(10 * time.Second)
	if code := poll("mg_test_all", a); code != 200 {
		t.Errorf("the next window: %d", code)
	}
}

func equalInts(a, b []int) bool {
	return len(a) == len(b) && string(mustJSON(a)) == string(mustJSON(b))
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// finishedFile makes one schnell image and returns its URL on srv and its bytes, as served plainly.
func finishedFile(t *testing.T, s *Server, srv *httptest.Server, idem string) (string, []byte) {
	t.Helper()
	id := decode[api.Job](t, startGeneration(t, s, "mg_test_all", idem, schnellID, schnell)).ID
	_ = s.world().Advance(10 * time.Second)
	job := jobOf(t, s, id)
	if job.Status != "succeeded" || len(job.Outputs) == 0 {
		t.Fatalf("job = %+v", job)
	}
	u := job.Outputs[0].URL
	url := srv.URL + u[strings.Index(u, "/files/"):]
	resp, body, err := wireGet(t, url, "")
	if err != nil || resp.StatusCode != 200 || len(body) < 2000 {
		t.Fatalf("plain download: %v %d bytes %v", resp, len(body), err)
	}
	return url, body
}

// TestCutDownloadResumes: a download cut after N bytes ends early with the connection closed;
// ranged requests from where it stopped put together the identical bytes.
func TestCutDownloadResumes(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	url, want := finishedFile(t, s, srv, "cut")

	// The scenario cuts every answer of the model's files after 1,000 bytes.
	putScenario(t, s, map[string]any{"defaults": map[string]any{"download": map[string]any{"cut_after": 1000}}})
	var got []byte
	for tries := 0; len(got) < len(want); tries++ {
		if tries > len(want)/1000+1 {
			t.Fatalf("no progress after %d tries: %d of %d bytes", tries, len(got), len(want))
		}
		var headers []string
		if len(got) > 0 {
			headers = []string{"Range", "bytes=" + strconv.Itoa(len(got)) + "-"}
		}
		resp, body, err := wireGet(t, url, "", headers...)
		if resp == nil {
			t.Fatal(err)
		}
		wantStatus := map[bool]int{true: 200, false: 206}[len(got) == 0]
		last := len(want)-len(got) <= 1000
		if resp.StatusCode != wantStatus || (last != (err == nil)) || (!last && !errors.Is(err, io.ErrUnexpectedEOF)) || (!last && len(body) != 1000) {
			t.Fatalf("at byte %d: %d, %d bytes, err %v", len(got), resp.StatusCode, len(body), err)
		}
		got = append(got, body...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the resumed download differs from the plain one (%d and %d bytes)", len(got), len(want))
	}

	// A fault cuts once; the resume after it is whole.
	putScenario(t, s, map[string]any{})
	addFault(t, s, map[string]any{"match": map[string]any{"path": "/files/**"}, "download": map[string]any{"cut_after": 777}, "count": 1})
	_, first, err := wireGet(t, url, "")
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(first) != 777 {
		t.Fatalf("cut by a fault: %d bytes, %v", len(first), err)
	}
	resp, rest, err := wireGet(t, url, "", "Range", "bytes=777-")
	if err != nil || resp.StatusCode != 206 || !bytes.Equal(append(first, rest...), want) {
		t.Errorf("resume after the fault: %v %d bytes %v", resp, len(rest), err)
	}
}

// TestWrongContentLengthAndThrottle: a Content-Length above the truth ends in an early EOF, one
// below it in a body that looks whole but is short; a throttled download takes at least as
// long as its rate says (only the lower bound is asserted: a slow machine only adds time).
func TestWrongContentLengthAndThrottle(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	url, want := finishedFile(t, s, srv, "len")

	addFault(t, s, map[string]any{"match": map[string]any{"path": "/files/**"}, "download": map[string]any{"length_delta": 100}, "count": 1})
	resp, body, err := wireGet(t, url, "")
	if resp == nil || resp.ContentLength != int64(len(want)+100) || !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(body, want) {
		t.Errorf("longer Content-Length: %v, %d bytes, %v", resp, len(body), err)
	}
	addFault(t, s, map[string]any{"match": map[string]any{"path": "/files/**"}, "download": map[string]any{"length_delta": -100}, "count": 1})
	resp, body, err = wireGet(t, url, "")
	if resp == nil || err != nil || resp.ContentLength != int64(len(want)-100) || !bytes.Equal(body, want[:len(want)-100]) {
		t.Errorf("shorter Content-Length: %v, %d bytes, %v", resp, len(body), err)
	}

	bps := len(want) * 4 // a quarter of a second for the whole file
	addFault(t, s, map[string]any{"match": map[string]any{"path": "/files/**"}, "download": map[string]any{"bytes_per_second": bps}, "count": 1})
	start := time.Now()
	resp, body, err = wireGet(t, url, "")
	took := time.Since(start)
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("throttled: %v %d bytes %v", resp, len(body), err)
	}
	if least := time.Duration(float64(len(want)) / float64(bps) * 0.9 * float64(time.Second)); took < least {
		t.Errorf("%d bytes at %d B/s took %v, less than %v", len(want), bps, took, least)
	}
	t.Logf("%d bytes at %d B/s took %v (%.0f B/s)", len(want), bps, took, float64(len(want))/took.Seconds())
}

// TestAnswerLatencyOnTheWire: a scenario's latency rule holds the answers it matches.
func TestAnswerLatencyOnTheWire(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	putScenario(t, s, map[string]any{"latency": []any{map[string]any{"match": map[string]any{"path": "/v1/models"}, "delay": "40ms"}}})
	start := time.Now()
	if resp, _, err := wireGet(t, srv.URL+"/v1/models", "mg_test_all"); err != nil || resp.StatusCode != 200 || time.Since(start) < 40*time.Millisecond {
		t.Errorf("delayed answer: %v %v after %v", resp, err, time.Since(start))
	}
	if sc := decode[map[string]any](t, control(t, s, "GET", "/_emulator/scenario", nil)); sc["latency"] != 1.0 {
		t.Errorf("scenario: %v", sc)
	}
}

// TestBadHardCaseFaultsPointAtTheirField: the fault API answers 422 with a JSON Pointer to the
// new field at fault.
func TestBadHardCaseFaultsPointAtTheirField(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	for _, c := range []struct {
		fault   map[string]any
		pointer string
	}{
		{map[string]any{"action": "gateway", "status": 500}, "/status"},
		{map[string]any{"status": 503, "retry_after_format": "tomorrow"}, "/retry_after_format"},
		{map[string]any{"action": "download"}, "/download"},
		{map[string]any{"download": map[string]any{"cut_after": -1}}, "/download/cut_after"},
		{map[string]any{"download": map[string]any{"pause": "1h"}}, "/download/pause"},
		{map[string]any{"download": map[string]any{"bytes_per_second": "fast"}}, "/download/bytes_per_second"},
		{map[string]any{"status": 503, "download": map[string]any{"cut_after": 5}}, "/download"},
	} {
		rec := control(t, s, "POST", "/_emulator/faults", c.fault)
		p := decode[problemJSON](t, rec)
		if rec.Code != 422 || len(p.Errors) == 0 || p.Errors[0].Pointer != c.pointer {
			t.Errorf("%v: %d %s; want 422 pointing at %s", c.fault, rec.Code, rec.Body, c.pointer)
		}
	}
	rec := control(t, s, "PUT", "/_emulator/scenario", map[string]any{"scenario": map[string]any{
		"rate_limits": []any{map[string]any{"limit": 1, "per": "1m", "retry_after_format": "x"}}}})
	if p := decode[problemJSON](t, rec); rec.Code != 422 || len(p.Errors) != 1 || p.Errors[0].Pointer != "/scenario/rate_limits/0/retry_after_format" {
		t.Errorf("scenario: %d %s", rec.Code, rec.Body)
	}
}

// scenariosGuide is the guide that shows the scenario format and the hard cases.
const scenariosGuide = "../docs/scenarios.md"

// guideBlock returns the first fenced block of kind (```yaml, ```sh) after the line that
// starts with from in the scenarios guide.
func guideBlock(t *testing.T, from, kind string) string {
	t.Helper()
	data, err := os.ReadFile(scenariosGuide)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+from)
	if !ok {
		t.Fatalf("%s has no %q", scenariosGuide, from)
	}
	_, rest, ok = strings.Cut(rest, "```"+kind+"\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no ```%s block after %q", kind, from)
	}
	return block
}

// TestREADMEHardCaseExamples: the scenarios guide's scenario format, with every new knob, loads; and
// each fault its hard-cases examples add is accepted and fires as described.
func TestREADMEHardCaseExamples(t *testing.T) {
	t.Parallel()
	format := guideBlock(t, "## Scenarios", "yaml")
	sc, err := scenario.Parse(scenariosGuide, []byte(format))
	if err != nil {
		t.Fatalf("the guide's scenario format does not load:\n%v", err)
	}
	if sc.Defaults.Download == nil || len(sc.Latency) != 2 || !sc.RateLimits[1].PerJob || sc.Plan[1].Action != api.FaultDownload ||
		sc.Latency[0].Delay.Median != 80*time.Millisecond || len(sc.Concurrency) != 1 || sc.Concurrency[0].Limit != 2 {
		t.Errorf("the guide's format lost a knob: %+v", sc)
	}

	s := simServer(t, Config{})
	examples := guideBlock(t, "**The hard cases real clients meet**", "sh")
	bodies := regexp.MustCompile(`-d '(\{.*\})'`).FindAllStringSubmatch(examples, -1)
	if len(bodies) != 5 {
		t.Fatalf("found %d fault examples, want 5:\n%s", len(bodies), examples)
	}
	for _, b := range bodies {
		var f map[string]any
		if err := json.Unmarshal([]byte(b[1]), &f); err != nil {
			t.Fatalf("%s: %v", b[1], err)
		}
		addFault(t, s, f)
	}
	list := decode[map[string][]api.Fault](t, control(t, s, "GET", "/_emulator/faults", nil))["data"]
	want := []string{"gateway", "error", "download", "download", "download"}
	for i, f := range list {
		if f.Action != want[i] {
			t.Errorf("example %d: action %q, want %q", i, f.Action, want[i])
		}
	}
	if list[0].Status != 504 || list[1].RetryAfterFormat != "date" || list[2].Download.CutAfter != 1000 || time.Duration(list[3].Download.Pause) != 200*time.Millisecond {
		t.Errorf("faults as listed: %+v", list)
	}
	rec := call(t, s, "POST", "/v1/generate", "mg_test_all", map[string]any{"model": schnellID, "input": schnell}, "Idempotency-Key", "x")
	if at, err := http.ParseTime(rec.Header().Get("Retry-After")); rec.Code != 503 || err != nil || at.IsZero() {
		t.Errorf("the date example: %d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}
