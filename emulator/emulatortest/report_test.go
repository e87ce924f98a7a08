package emulatortest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// fatalTB records what a check reports instead of ending the test.
type fatalTB struct {
	*testing.T
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

func TestAssertNoFindingsFailsOnChosenRules(t *testing.T) {
	emu := emulatortest.Start(t).Tenant(t)
	for range 2 { // the same invalid input, twice: retry-unchanged
		req, _ := http.NewRequest("POST", emu.URL+"/v1/quotes", strings.NewReader(`{"model":"fal-ai/flux/dev","input":{"prompt":5}}`))
		req.Header.Set("Authorization", "Bearer "+emu.Keys.All)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 422 {
			t.Fatalf("%v %v", resp, err)
		}
		resp.Body.Close()
	}
	if rep := emu.Report(t, "tenant"); rep.Counts["retry-unchanged"] != 1 || rep.Tenant != emu.TenantName {
		t.Fatalf("report %+v", rep)
	}
	if rep := emu.Report(t, "run"); rep.Counts["retry-unchanged"] != 1 || rep.Findings[0].Tenant != emu.TenantName {
		t.Fatalf("run report %+v", rep)
	}
	quiet := &fatalTB{T: t}
	emu.AssertNoFindings(quiet, "poll-too-fast")
	if quiet.fatal != "" {
		t.Errorf("a rule with no findings failed the test: %s", quiet.fatal)
	}
	for _, rules := range [][]string{nil, {"retry-unchanged"}} {
		loud := &fatalTB{T: t}
		emu.AssertNoFindings(loud, rules...)
		if !strings.Contains(loud.fatal, "retry-unchanged") {
			t.Errorf("rules %v: the check reported %q", rules, loud.fatal)
		}
	}
}

// TestCoverageMarkdownRefused: a refused markdown coverage ends the test with the problem's code
// and detail, as every other control call does.
func TestCoverageMarkdownRefused(t *testing.T) {
	emu := emulatortest.Start(t).Tenant(t)
	refused := &fatalTB{T: t}
	if md := emu.CoverageMarkdown(refused, "nowhere"); md != "" {
		t.Errorf("a refused coverage returned %q", md)
	}
	if !strings.Contains(refused.fatal, "GET /_emulator/coverage") || !strings.Contains(refused.fatal, "400 invalid_parameter: scope must be tenant or run") {
		t.Errorf("the check reported %q", refused.fatal)
	}
}
