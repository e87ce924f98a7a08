package emulatortest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runner stands in for a *testing.M: it runs a function as the tests and exits with code.
type runner struct {
	run  func()
	code int
}

func (r runner) Run() int {
	r.run()
	return r.code
}

func TestMainPrintsCoverageAndGates(t *testing.T) {
	t.Parallel()
	emu := Start(t)
	miss := func() { emu.Verify(t, Pattern{}) } // the tests exercise nothing
	notFound := func() {
		resp, err := emu.client.Get(emu.URL + "/v1/jobs/x")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	summary := filepath.Join(t.TempDir(), "summary.md")
	cases := []struct {
		name     string
		tests    runner
		require  []string
		summary  string
		want     int
		contains []string
	}{
		{"passing, nothing required", runner{miss, 0}, nil, "", 0, []string{"emulator coverage (the whole run): 0 of "}},
		{"failing tests keep their code", runner{miss, 3}, []string{"job *"}, "", 3, []string{"required but never exercised (8):"}},
		{"a required case missing fails the run", runner{miss, 0}, []string{"job canceled"}, summary, 1, []string{"  job canceled\n"}},
		{"required cases exercised", runner{notFound, 0}, []string{"GET /v1/jobs/{id} 401 *"}, "", 0, []string{"errors     1 of "}},
	}
	for _, c := range cases {
		var out strings.Builder
		code := emu.main(c.tests, &out, c.summary, c.require)
		if code != c.want {
			t.Errorf("%s: exit code %d, want %d", c.name, code, c.want)
		}
		for _, want := range c.contains {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: the output lacks %q:\n%s", c.name, want, out.String())
			}
		}
	}
	md, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(md), "- `job canceled`") || !strings.Contains(string(md), "| case | group | count |") {
		t.Errorf("step summary: %v\n%s", err, md)
	}

	// An emulator that cannot be read fails the run, with the reason.
	gone := *emu
	gone.URL = "http://127.0.0.1:1"
	var out strings.Builder
	if code := gone.main(runner{func() {}, 0}, &out, "", nil); code != 1 || !strings.Contains(out.String(), "emulator coverage: emulatortest: GET /_emulator/coverage") {
		t.Errorf("unreachable emulator: %d %s", code, out.String())
	}
}
