package cli

import (
	"strings"
	"testing"
)

// TestValidateScenarioFile: a scenario file's problems are each on a line of their own with
// the file and line, and the embedded scenarios have none.
func TestValidateScenarioFile(t *testing.T) {
	t.Parallel()
	got := strings.Join(ValidateFile("../../testdata/scenarios/bad.yaml"), "\n")
	for _, want := range []string{
		"../../testdata/scenarios/bad.yaml:3: defaults: failure_rate must be between 0 and 1",
		"../../testdata/scenarios/bad.yaml:6: rate_limits[0]: limit must be at least 1",
		"../../testdata/scenarios/bad.yaml:9: concurrency[0]: limit must be from 1 to 1000 jobs at once",
		`../testdata/scenarios/bad.yaml:9: concurrency[0]: scope "tenant" must be account or key`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("validate lacks %q:\n%s", want, got)
		}
	}
	for _, name := range []string{"default", "realistic", "flaky", "slow", "expiring", "outage", "rate-limited"} {
		if problems := ValidateFile("../../scenarios/" + name + ".yaml"); len(problems) != 0 {
			t.Errorf("%s: %v", name, problems)
		}
	}
}
