package mediagen_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
	mediagen "github.com/mediagen/mediagen-emulator/examples/go"
)

// exercise runs a client against the emulator on its manual clock, where the client's sleeps
// move the clock: a 503 on the first generation, then the same picture twice, then two hours
// in which outputs expire. It returns the emulator's report on the client.
func exercise(t *testing.T, emu *emulatortest.Emulator, careful bool) api.Report {
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: careful, Sleep: emu.Advance}
	emu.AddFault(api.Perturbation{Match: api.FaultMatch{Method: "POST", Path: "/v1/generate"}, Status: 503, Count: 1})
	input := map[string]any{"prompt": "a lighthouse at dawn"}
	ctx := context.Background()
	if _, err := c.Render(ctx, "fal-ai/flux/dev", input); err != nil {
		t.Fatalf("careful %v: the first picture: %v", careful, err)
	}
	_, err := c.Render(ctx, "fal-ai/flux/dev", input)
	if careful && err != nil {
		t.Fatalf("the careful client's second picture: %v", err)
	}
	emu.Advance(2 * time.Hour)
	return emu.Report(t, "tenant")
}

func TestTheReportNamesEveryFlawOfTheNaiveClient(t *testing.T) {
	emu := emulatortest.Start(t, emulatortest.WithManualClock()) // the client sleeps by moving the clock
	rep := exercise(t, emu, false)
	for _, rule := range []string{"new-key-on-retry", "retry-after-ignored", "poll-too-fast", "quote-reused", "outputs-never-downloaded"} {
		if rep.Counts[rule] == 0 {
			t.Errorf("the report does not name %s; it found %v", rule, rep.Counts)
		}
	}
	for _, f := range rep.Findings {
		if !slices.ContainsFunc(rep.Rules, func(r api.Rule) bool { return r.ID == f.Rule }) || f.Reason == "" {
			t.Errorf("finding %+v", f)
		}
		t.Logf("%s %s: %s %v", f.Severity, f.Rule, f.Reason, f.Entries)
	}
}

func TestTheCarefulClientGetsACleanReport(t *testing.T) {
	// The client sleeps by moving the clock, which stands still otherwise.
	emu := emulatortest.Start(t, emulatortest.WithManualClock())
	emu.FailOnRules(t) // every rule: the test fails at its end on any finding
	rep := exercise(t, emu, true)
	if len(rep.Findings) != 0 || rep.Examined == 0 {
		t.Errorf("the careful client got %+v", rep)
	}
}

// expireFirstDownload moves the emulator's clock past a signed link's life just before the
// first file is fetched, as a slow consumer would find it.
type expireFirstDownload struct {
	emu  *emulatortest.Emulator
	done bool
}

func (x *expireFirstDownload) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/files/") && !x.done {
		x.done = true
		x.emu.Advance(2 * time.Minute)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestTheCarefulClientRefreshesAnExpiredLink: a signed link found expired (403) is not fetched
// again; the careful client reads the job for a fresh one, and the report finds nothing.
func TestTheCarefulClientRefreshesAnExpiredLink(t *testing.T) {
	emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithScenario("testdata/signed-links.yaml"))
	emu.FailOnRules(t)
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance,
		HTTP: &http.Client{Transport: &expireFirstDownload{emu: emu}}}
	res, err := c.Render(context.Background(), "fal-ai/flux/dev", map[string]any{"prompt": "a lighthouse at dawn"})
	if err != nil || len(res.Files) != 1 || len(res.Files[0]) == 0 {
		t.Fatalf("render: %v, %d files", err, len(res.Files))
	}
	cov := emu.Coverage(t, "tenant", "link expired", "link refreshed")
	if len(cov.RequiredMissing) != 0 {
		t.Errorf("coverage lacks %v", cov.RequiredMissing)
	}
}

// An API that evolves (a scenario's evolution: undocumented members, a header, a status
// `preparing`, a model of output type 3d): the careful client renders as before; the naive one,
// which knows only queued and running, stops waiting at `preparing`.
func TestAnEvolvingAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evolving.yaml")
	if err := os.WriteFile(path, []byte("evolution: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emu := emulatortest.Start(t, emulatortest.WithManualClock(), emulatortest.WithScenario(path))
	input := map[string]any{"prompt": "a lighthouse at dawn"}
	careful := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: true, Sleep: emu.Advance}
	res, err := careful.Render(context.Background(), "fal-ai/flux/dev", input)
	if err != nil || len(res.Files) == 0 {
		t.Fatalf("the careful client: %+v, %v", res, err)
	}
	naive := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Sleep: emu.Advance}
	if _, err := naive.Render(context.Background(), "fal-ai/flux/dev", map[string]any{"prompt": "a harbour"}); err == nil || !strings.Contains(err.Error(), "preparing") {
		t.Errorf("the naive client met preparing and went on: %v", err)
	}
}
