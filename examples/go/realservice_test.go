package mediagen_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
	mediagen "github.com/mediagen/mediagen-emulator/examples/go"
)

// exerciseRealService runs a client through what real services do beyond the contract: a
// partial result, a prompt the content policy refuses (asked for twice), and a deprecated
// model (asked for twice). It returns the emulator's report on the client.
func exerciseRealService(t *testing.T, emu *emulatortest.Emulator, careful bool) api.Report {
	emu.SetScenario("testdata/real-service.yaml")
	c := &mediagen.Client{BaseURL: emu.URL, Key: emu.Keys.All, Careful: careful, Sleep: emu.Advance}
	ctx := context.Background()

	res, err := c.Render(ctx, "fal-ai/flux/dev", map[string]any{"prompt": "four foxes [emulator:partial]", "num_images": 4})
	if err != nil || res.Filtered < 1 || len(res.URLs)+res.Filtered != 4 {
		t.Fatalf("careful %v: a partial result: %+v %v", careful, res, err)
	}
	for range 2 {
		_, err := c.Render(ctx, "fal-ai/flux/dev", map[string]any{"prompt": "a fox [emulator:refuse]"})
		var e *mediagen.Error
		if !errors.As(err, &e) || e.Status != 422 || e.Code != "content_policy_violation" {
			t.Fatalf("careful %v: a refused prompt: %v", careful, err)
		}
	}
	for range 2 {
		res, err := c.Render(ctx, "fal-ai/flux/schnell", map[string]any{"prompt": "a lighthouse at dawn"})
		if err != nil && careful {
			t.Fatalf("a deprecated model: %v", err)
		}
		if careful && res.Model != "fal-ai/flux/dev" {
			t.Errorf("the careful client stayed on %s", res.Model)
		}
	}
	emu.Advance(2 * time.Hour)
	return emu.Report(t, "tenant")
}

func TestTheReportNamesTheNaiveClientsRealServiceFlaws(t *testing.T) {
	emu := emulatortest.Start(t)
	rep := exerciseRealService(t, emu, false)
	for _, rule := range []string{"retry-unchanged", "deprecated-model-used"} {
		if rep.Counts[rule] == 0 {
			t.Errorf("the report does not name %s; it found %v", rule, rep.Counts)
		}
	}
}

func TestTheCarefulClientHandlesRefusalsPartialsAndDeprecation(t *testing.T) {
	emu := emulatortest.Start(t)
	emu.FailOnRules(t)
	if rep := exerciseRealService(t, emu, true); len(rep.Findings) != 0 || rep.Examined == 0 {
		t.Errorf("the careful client got %+v", rep)
	}
}
