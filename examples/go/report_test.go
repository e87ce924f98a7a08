package mediagen_test

import (
	"context"
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
	emu.AddFault(api.FaultRule{Match: api.FaultMatch{Method: "POST", Path: "/v1/generate"}, Status: 503, Count: 1})
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
