package scenario

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

func TestParseReportsEveryProblemWithItsLine(t *testing.T) {
	t.Parallel()
	src := `name: broken
defaults:
  failure_rate: 1.5
  failure_codes: {exploded: 1}
  failure_stage: later
  queue: {uniform: {min: 5s, max: 1s}}
overrides:
  - match: {}
    run: 2s
  - match: {output_type: hologram}
rate_limits:
  - match: {path: /v1/generate}
    limit: 0
    per: 1m
faults:
  - match: {path: /v1/**}
    status: 200
  - match: {path: /v1/**}
    action: explode
  - match: {path: /v1/**}
bogus: true
`
	_, err := Parse("broken.yaml", []byte(src))
	if err == nil {
		t.Fatal("a broken scenario loaded")
	}
	got := err.Error()
	for _, want := range []string{
		"broken.yaml:21: unknown field \"bogus\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	// Without the unknown field, the semantic problems are all reported, each at its line.
	_, err = Parse("broken.yaml", []byte(strings.Replace(src, "bogus: true\n", "", 1)))
	got = err.Error()
	for _, want := range []string{
		"broken.yaml:6: defaults.queue: need 0 <= min <= max",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	_, err = Parse("broken.yaml", []byte(strings.Replace(strings.Replace(src, "bogus: true\n", "", 1), "  queue: {uniform: {min: 5s, max: 1s}}\n", "", 1)))
	got = err.Error()
	for _, want := range []string{
		"broken.yaml:3: defaults: failure_rate must be between 0 and 1",
		`broken.yaml:4: defaults: unknown failure code "exploded"`,
		`broken.yaml:5: defaults: failure_stage "later" must be queued or running`,
		"broken.yaml:7: overrides[0]: match names no model",
		`broken.yaml:9: overrides[1]: output_type "hologram" must be image, video or audio`,
		"broken.yaml:11: rate_limits[0]: limit must be at least 1",
		"broken.yaml:15: faults[0]: status 200 must be an error status",
		`broken.yaml:17: faults[1]: action "explode" must be`,
		"broken.yaml:19: faults[2]: give a status, an action",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}

func TestDistributionsStayInTheirBounds(t *testing.T) {
	t.Parallel()
	uniform := Dist{Kind: "uniform", Min: time.Second, Max: 5 * time.Second}
	logn := Dist{Kind: "lognormal", Min: 20 * time.Second, Max: 4 * time.Minute}
	scale := Dist{Kind: "scale", Factor: 3}
	var sum float64
	const n = 2000
	for i := range n {
		u := (float64(i) + 0.5) / n
		if d := uniform.Draw(u, 0); d < time.Second || d > 5*time.Second {
			t.Fatalf("uniform(%v) = %v", u, d)
		}
		d := logn.Draw(u, 0)
		if d < 20*time.Second || d > 4*time.Minute {
			t.Fatalf("lognormal(%v) = %v", u, d)
		}
		sum += math.Log(float64(d))
	}
	// The log-normal's middle is the geometric mean of its bounds.
	middle := time.Duration(math.Exp(sum / n))
	geo := time.Duration(math.Sqrt(float64(20*time.Second) * float64(4*time.Minute)))
	if middle < geo*9/10 || middle > geo*11/10 {
		t.Errorf("lognormal middle %v, want about %v", middle, geo)
	}
	if d := scale.Draw(0.3, 2*time.Second); d != 6*time.Second {
		t.Errorf("scale 3 of 2s = %v", d)
	}
	if q := normalQuantile(0.975); math.Abs(q-1.959964) > 1e-5 {
		t.Errorf("normalQuantile(0.975) = %v", q)
	}
}

func TestPlanOutcomes(t *testing.T) {
	t.Parallel()
	sc, err := Parse("s.yaml", []byte(`
defaults:
  failure_rate: 0.5
  expire_rate: 0.25
  failure_codes: {provider_timeout: 1}
  failure_at: 0.5
overrides:
  - match: {output_type: video}
    run: {scale: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	video := &catalog.Model{ID: "v", OutputType: catalog.OutputVideo}
	image := &catalog.Model{ID: "i", OutputType: catalog.OutputImage}
	draw := func(values map[string]float64) Draw { return func(label string) float64 { return values[label] } }
	base := PlanInput{Queue: time.Second, Run: 2 * time.Second, Timeout: time.Minute, MaxWait: 3 * time.Minute}

	cases := []struct {
		name   string
		model  *catalog.Model
		forced string
		u      float64
		status jobs.Status
		code   string
		run    time.Duration
	}{
		{"expire draw", image, "", 0.1, jobs.Expired, "queue_timeout", 2 * time.Second},
		{"fail draw", image, "", 0.5, jobs.Failed, "provider_timeout", 2 * time.Second},
		{"succeed draw", image, "", 0.9, jobs.Succeeded, "", 2 * time.Second},
		{"override scales run", video, "", 0.9, jobs.Succeeded, "", 20 * time.Second},
		{"forced succeed beats the draw", image, OutcomeSucceed, 0.1, jobs.Succeeded, "", 2 * time.Second},
		{"forced fail is generation_failed", image, OutcomeFail, 0.9, jobs.Failed, "generation_failed", 2 * time.Second},
		{"forced slow outlasts the wait", image, OutcomeSlow, 0.9, jobs.Succeeded, "", 4 * time.Minute},
		{"forced content policy", image, OutcomeContentPolicy, 0.9, jobs.Failed, "content_policy_violation", 2 * time.Second},
	}
	for _, c := range cases {
		in := base
		in.Model, in.Forced = c.model, c.forced
		in.Draw = draw(map[string]float64{"outcome": c.u})
		p := sc.Effective(c.model).Plan(in)
		if p.Ending.Status != c.status || p.Ending.Code != c.code || p.Run != c.run {
			t.Errorf("%s: %+v run %v, want %s %q run %v", c.name, p.Ending, p.Run, c.status, c.code, c.run)
		}
	}
}

// TestMatchesUseTheOneGlob: a rule's path and model are globs where * stays within a segment
// and ** crosses them.
func TestMatchesUseTheOneGlob(t *testing.T) {
	t.Parallel()
	video := &catalog.Model{ID: "fal-ai/kling-video/v2/master/text-to-video", OutputType: "video"}
	for _, c := range []struct {
		match RequestMatch
		path  string
		want  bool
	}{
		{RequestMatch{Path: "/v1/*"}, "/v1/models/a/b", false},
		{RequestMatch{Path: "/v1/**"}, "/v1/models/a/b", true},
		{RequestMatch{Path: "/v1/jobs/*"}, "/v1/jobs/j1", true},
		{RequestMatch{Path: "/v1/jobs/*"}, "/v1/jobs/j1/cancel", false},
		{RequestMatch{Path: "/v1/jobs/*"}, "/v1/jobs", false},
		{RequestMatch{Path: "/v1/models"}, "/v1/models/x", false},
		{RequestMatch{Model: "fal-ai/kling*"}, "/v1/generate", false},
		{RequestMatch{Model: "fal-ai/kling**"}, "/v1/generate", true},
		{RequestMatch{Model: "fal-ai/*/v2/**", OutputType: "video"}, "/v1/generate", true},
	} {
		if got := Selects(c.match, "GET", c.path, video); got != c.want {
			t.Errorf("%+v matches %s (%s): %v, want %v", c.match, c.path, video.ID, got, c.want)
		}
	}
}

// TestPatternsAreChecked: a pattern the glob refuses is a problem at its FILE:LINE, and through
// the control API a problem with a pointer to the field.
func TestPatternsAreChecked(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 1025)
	_, err := Parse("g.yaml", []byte(`overrides:
  - match: {model: `+long+`}
    failure_rate: 1
rate_limits:
  - match: {path: `+long+`}
    limit: 1
    per: 1m
faults:
  - match: {model: `+long+`}
    status: 503
latency:
  - match: {path: `+long+`}
    delay: 1s
`))
	for _, want := range []string{
		"g.yaml:2: overrides[0].match.model must be at most 1024 bytes long",
		"g.yaml:5: rate_limits[0].match.path must be at most 1024 bytes long",
		"g.yaml:9: faults[0]: match.model must be at most 1024 bytes long",
		"g.yaml:12: latency[0].match.path must be at most 1024 bytes long",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	f := Fault{Match: RequestMatch{Path: long}, Status: 503}
	if err := CheckPerturbation(&f); err == nil || err.Error() != "match.path must be at most 1024 bytes long" {
		t.Fatalf("CheckFault = %v", err)
	}
	if got := Pointer("match.path must be at most 1024 bytes long", true); got != "/match/path" {
		t.Errorf("pointer = %q, want /match/path", got)
	}
}

func TestEveryBadDistributionIsReported(t *testing.T) {
	t.Parallel()
	_, err := Parse("d.yaml", []byte(`defaults:
  queue: soon
  run: {uniform: {min: 5s, max: 1s}}
  failure_at: [0.5, 0.1]
`))
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		`d.yaml:2: defaults.queue: "soon" is not a duration such as 500ms or 2m`,
		"d.yaml:3: defaults.run: need 0 <= min <= max",
		"d.yaml:4: defaults.failure_at: want 0 <= min <= max <= 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

// FuzzParse feeds arbitrary text to the scenario loader: it must never panic, and it either
// loads a scenario or reports problems.
//
//	go test ./emulator/internal/scenario -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"defaults: {failure_rate: 0.2}\n",
		"defaults:\n  run: {lognormal: {min: 1s, max: 5s}}\n  failure_at: [0.1, 0.9]\n",
		"overrides:\n  - match: {output_type: video}\n    run: {scale: 3}\n",
		"rate_limits:\n  - match: {path: /v1/**}\n    limit: 2\n    per: 1m\n",
		"faults:\n  - match: {path: /v1/**}\n    status: 503\n    probability: 0.5\n",
		"defaults: {queue: {uniform: {min: 5s, max: 1s}}}\n", "a: &a [*a]\n", "", "- 1\n", "defaults: 1\n",
		"latency:\n  - match: {path: /v1/**}\n    delay: {lognormal: {median: 1s, p99: 2s, max: 3s}}\n",
		"defaults: {download: {bytes_per_second: 100, cut_after: 10, length_delta: -5}}\n",
		"overrides:\n  - match: {model: \"a/**\"}\n    download: {url_ttl: 15m, reject_authorization: true}\n",
		"rate_limits:\n  - match: {path: /v1/jobs/*}\n    limit: 1\n    per: 1m\n    per_job: true\n    retry_after_format: date\n",
		"defaults: {refusal_rate: 0.1, filter_rate: 0.5}\n",
		"lifecycle:\n  - match: {model: \"a/**\"}\n    deprecated_at: 2026-01-01T00:00:00Z\n    sunset: \"2026-02-01T00:00:00Z\"\n    replacement: b\n",
		"evolution: true\n", "evolution: {members: true, status: false}\n", "evolution: ~\n", "evolution: &e {headers: true}\nname: *e\n",
		"concurrency:\n  - match: {model: \"a/**\"}\n    limit: 2\n    scope: key\n    over: reject\n", "concurrency: [{limit: 1}, {}]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sc, err := Parse("fuzz.yaml", []byte(text))
		if (sc == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v: want exactly one", text, sc, err)
		}
		if sc != nil {
			in := PlanInput{Model: &catalog.Model{ID: "m", OutputType: catalog.OutputImage}, Run: time.Second, Timeout: time.Minute,
				Draw: func(string) float64 { return 0.5 }}
			if p := sc.Effective(in.Model).Plan(in); p.Queue < 0 || p.Run < 0 {
				t.Fatalf("negative durations from %q: %+v", text, p)
			}
			if p := sc.PhaseOf(in.Model, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); p.Retired && !p.Deprecated {
				t.Fatalf("retired, not deprecated, from %q: %+v", text, p)
			}
			if _, c, ok := sc.ConcurrencyFor(in.Model); ok && (c.Limit < 1 || c.Slot("a", "k").Group == "" || (c.Scope != ScopeAccount && c.Scope != ScopeKey)) {
				t.Fatalf("a concurrency rule from %q is not sound: %+v", text, c)
			}
		}
	})
}

// TestProblemsSpeakTheEmulatorsWords: a field of the wrong kind, in a scenario or a fault sent
// inline (JSON, indented as the control API does), is named with its path, what it wants and
// what it got, at its line — never in the YAML library's words or with Go type names.
func TestProblemsSpeakTheEmulatorsWords(t *testing.T) {
	t.Parallel()
	scenarios := []struct{ src, want string }{
		{"{\n  \"defaults\": {\"failure_rate\": \"x\"}\n}", `request body:2: defaults.failure_rate: want a number, got "x"`},
		{"{\n  \"defaults\": {\"queue\": {\"uniform\": 5}}\n}", `request body:2: defaults.queue: uniform must be a mapping of fields, got "5"`},
		{"{\n  \"defaults\": {\"queue\": [1]}\n}", `request body:2: defaults.queue: want a duration such as 500ms or 2m, or a mapping with one of fixed, uniform, lognormal or scale, got a list`},
		{"{\n  \"defaults\": {\"queue\": {\"uniform\": {\"min\": 5}}}\n}", `request body:2: defaults.queue: uniform.min: want a duration such as 500ms or 2s, got "5"`},
		{"{\n  \"defaults\": {\"failure_codes\": [1]}\n}", `request body:2: defaults.failure_codes: want a mapping, got a list`},
		{"{\n  \"defaults\": {\"failure_codes\": {\"generation_failed\": 0.5}}\n}", `request body:2: defaults.failure_codes.generation_failed: want a whole number, got "0.5"`},
		{"{\n  \"defaults\": {\"messages\": {\"a\": [1]}}\n}", `request body:2: defaults.messages.a: want text, got a list`},
		{"{\n  \"overrides\": {\"a\": 1}\n}", `request body:2: overrides: want a list, got a mapping`},
		{"{\n  \"overrides\": [1]\n}", `request body:2: overrides[0] must be a mapping of fields, got "1"`},
		{"{\n  \"rate_limits\": [{\"limit\": \"x\",\n \"per\": 5}]\n}", `request body:3: rate_limits[0].per: want a duration such as 500ms or 2s, got "5"`},
		{"{\n  \"name\": [1]\n}", `request body:2: name: want text, got a list`},
		{"defaults:\n  slow_rate: .nan\n", `request body:2: defaults.slow_rate: want a finite number, got ".nan"`},
		{"defaults:\n  queue_timeout: -5s\n", `request body:2: defaults.queue_timeout: want a duration of 0 or more, got "-5s"`},
		{"{\n  \"defaults\": {\"queue\": {\"uniform\": {\"max\": 0}}}\n}", `request body:2: defaults.queue: uniform.max: want a duration with a unit such as 0s or 500ms, got "0"`},
		{"defaults:\n  queue_timeout: 0\n", `request body:2: defaults.queue_timeout: want a duration with a unit such as 0s or 500ms, got "0"`},
	}
	for _, c := range scenarios {
		_, err := Parse("request body", []byte(c.src))
		checkWords(t, c.src, err, c.want)
	}
	faults := []struct{ src, want string }{
		{`{"status": "x"}`, `request body:1: faults[0].status: want a whole number, got "x"`},
		{`{"status": 503, "count": 1.5}`, `request body:1: faults[0].count: want a whole number, got "1.5"`},
		{`{"status": 503, "retry_after": 9223372036854775807}`, `request body:1: faults[0].retry_after: want a whole number from -2147483648 to 2147483647, got "9223372036854775807"`},
		{`{"status": 503, "retry_after": 1e30}`, `request body:1: faults[0].retry_after: want a whole number, got "1e30"`},
		{`{"status": 503, "probability": true}`, `request body:1: faults[0].probability: want a number, got "true"`},
		{`{"status": 503, "match": {"path": {}}}`, `request body:1: faults[0].match.path: want text, got a mapping`},
		{`{"status": 503, "delay": "soon"}`, `request body:1: faults[0].delay: want a duration such as 500ms or 2s, got "soon"`},
		{`{"status": 503, "retry_after": 86401}`, `request body:1: faults[0]: retry_after must be at most 86400 seconds (a day), not 86401`},
	}
	for _, c := range faults {
		src := `{"faults": [` + c.src + `]}`
		_, err := Parse("request body", []byte(src))
		checkWords(t, src, err, c.want)
	}
	if sc, err := Parse("request body", []byte(`{"faults": [{"status": 503, "retry_after": 86400}]}`)); err != nil || sc.Plan[0].RetryAfter != 86400 {
		t.Errorf("a day of retry_after: %+v, %v", sc, err)
	}
}

func checkWords(t *testing.T, src string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%q loaded; want %q", src, want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%q:\n%v\nwant %q", src, err, want)
	}
	for _, leak := range leaks {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("%q: the problem leaks %q: %v", src, leak, err)
		}
	}
}

// leaks are words of the YAML library and of Go types that a problem must not show.
var leaks = []string{"unmarshal", "!!", "yaml:", "time.Duration", "int64", "float64", "map[", "scenario."}

// FuzzParseInline: no scenario or fault sent inline makes the loader panic or answer in the
// YAML library's words (a word the input itself holds may be quoted back).
func FuzzParseInline(f *testing.F) {
	f.Add([]byte(`{"status": 503, "retry_after": 5, "match": {"path": "/v1/**"}}`))
	f.Add([]byte(`{"defaults": {"queue": {"uniform": {"min": "1s", "max": "2s"}}, "failure_codes": {"provider_error": 1}}}`))
	f.Add([]byte(`{"overrides": [{"match": {"model": "m*"}, "run": {"scale": 2}, "failure_at": [0.1, 0.2]}]}`))
	f.Add([]byte(`{"defaults": {"queue": {"uniform": {"max": 0}}}}`))
	f.Add([]byte(`{"status": 503, "delay": 0}`))
	f.Add([]byte(`{"action": "gateway", "status": 504, "retry_after": 5, "retry_after_format": "date"}`))
	f.Add([]byte(`{"download": {"bytes_per_second": 1000, "pause": "1s", "cut_after": 10}}`))
	f.Add([]byte(`{"lifecycle": [{"match": {"model": "m*"}, "deprecated_at": "2026-01-01T00:00:00Z", "replacement": "n"}], "defaults": {"refusal_rate": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, err := range []error{second(Parse("request body", data)), second(Parse("request body", []byte(`{"faults": [`+string(data)+`]}`)))} {
			for _, leak := range leaks {
				if err != nil && strings.Contains(err.Error(), leak) && !strings.Contains(string(data), leak) {
					t.Fatalf("%q: the problem leaks %q: %v", data, leak, err)
				}
			}
		}
	})
}

func second[T any](_ T, err error) error { return err }

// TestAliasBombIsRefused: a thousand aliases of a thousand-entry mapping would be a million
// values to check from a document of a few kilobytes.
func TestAliasBombIsRefused(t *testing.T) {
	t.Parallel()
	var src strings.Builder
	src.WriteString("description: &m\n")
	for i := range 1000 {
		src.WriteString("  k" + strconv.Itoa(i) + ": v\n")
	}
	src.WriteString("overrides: [" + strings.Repeat("{match: {model: x}, messages: *m}, ", 1000) + "]\n")
	_, err := Parse("bomb.yaml", []byte(src.String()))
	if err == nil {
		t.Fatal("an alias bomb loaded")
	}
	if !strings.Contains(err.Error(), "too large once its aliases are expanded") {
		t.Errorf("problems: %v", err)
	}
}

// TestLogNormalByPercentiles: a log-normal given by its median and p99 puts them where it says,
// over evenly spread draws (so no sampling noise hides a wrong σ), and caps its tail.
func TestLogNormalByPercentiles(t *testing.T) {
	t.Parallel()
	sc, err := Parse("l.yaml", []byte("latency:\n  - match: {path: /v1/**}\n    delay: {lognormal: {median: 200ms, p99: 2s, max: 3s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := sc.Latency[0].Delay
	const n = 100_000
	draws := make([]time.Duration, n)
	for i := range draws {
		draws[i] = d.Draw((float64(i)+0.5)/n, 0)
	}
	for _, c := range []struct {
		at   int
		want time.Duration
	}{{n / 2, 200 * time.Millisecond}, {n * 99 / 100, 2 * time.Second}} {
		if off := math.Abs(float64(draws[c.at]-c.want)) / float64(c.want); off > 0.005 {
			t.Errorf("draw %d of %d = %v, want %v within 0.5%%", c.at, n, draws[c.at], c.want)
		}
	}
	if draws[n-1] != 3*time.Second {
		t.Errorf("the longest draw is %v, want the 3s cap", draws[n-1])
	}
}

// TestHardCaseFieldsAreChecked: each new field's bad values are reported at their FILE:LINE.
func TestHardCaseFieldsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := Parse("h.yaml", []byte(`defaults:
  download: {cut_after: -5}
overrides:
  - match: {output_type: video}
    download: {}
rate_limits:
  - match: {path: /v1/jobs/*}
    limit: 2
    per: 1m
    per_job: true
  - match: {path: /v1/**}
    limit: 2
    per: 1m
    retry_after_format: tomorrow
faults:
  - match: {path: /files/**}
    action: gateway
    status: 500
  - match: {path: /files/**}
    action: download
latency:
  - match: {path: /v1/quotes}
    delay: {scale: 2}
  - match: {path: /v1/generate}
    delay: 10m
  - match: {path: /v1/jobs}
`))
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		"h.yaml:2: defaults.download.cut_after must be at least 1 byte",
		"h.yaml:5: overrides[0].download: give at least one of bytes_per_second",
		`h.yaml:11: rate_limits[1].retry_after_format "tomorrow" must be seconds or date`,
		"h.yaml:16: faults[0]: status 500: a gateway answers 502 or 504",
		"h.yaml:19: faults[1]: download: the download action needs a download shape",
		"h.yaml:22: latency[0].delay: scale multiplies a job's catalog timing",
		"h.yaml:24: latency[1].delay: at most 5m0s",
		"h.yaml:26: latency[2].delay: give a duration or a distribution",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	_, err = Parse("t.yaml", []byte(`rate_limits:
  - match: {path: /v1/jobs/*}
    limit: 2
    per: 1m
    per_job: yes please
latency:
  - match: {path: /v1/models}
    delay: {lognormal: {median: 2s, p99: 1s}}
  - match: {path: /v1/models}
    delay: {lognormal: {median: 1s, p99: 2s, max: 1500ms}}
  - match: {path: /v1/models}
    delay: {uniform: {median: 1s}}
`))
	for _, want := range []string{
		`t.yaml:5: rate_limits[0].per_job: want true or false, got "yes please"`,
		"t.yaml:8: latency[0].delay: lognormal needs 0 < median < p99",
		"t.yaml:10: latency[1].delay: lognormal needs max (the cap) >= p99, or no max",
		`t.yaml:12: latency[2].delay: unknown field "median" in uniform (known: max, min)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	for msg, ptr := range map[string]string{
		"download.cut_after must be at least 1 byte": "/download/cut_after",
		"status 500: a gateway answers 502 or 504":   "/status",
		`retry_after_format "x" must be`:             "/retry_after_format",
		"give a status, an action":                   "",
	} {
		if got := Pointer(msg, true); got != ptr {
			t.Errorf("Pointer(%q) = %q, want %q", msg, got, ptr)
		}
	}
	if got := Pointer("rate_limits[1].retry_after_format \"x\" must be", false); got != "/rate_limits/1/retry_after_format" {
		t.Errorf("scenario pointer = %q", got)
	}
}

// TestSignedLinkSettingsAreChecked: url_ttl within its bounds, reject_authorization only with
// it, and neither on a fault's download, which shapes a body rather than a link; an override's
// download stands for the model as a whole.
func TestSignedLinkSettingsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := Parse("s.yaml", []byte(`defaults:
  download: {url_ttl: 500ms}
overrides:
  - match: {model: a/*}
    download: {reject_authorization: true}
  - match: {model: b/*}
    download: {url_ttl: 200h}
faults:
  - match: {path: /files/**}
    action: download
    download: {url_ttl: 1m}
`))
	for _, want := range []string{
		"s.yaml:2: defaults.download.url_ttl must be between 1s and 168h0m0s",
		"s.yaml:5: overrides[0].download.reject_authorization applies to signed links: give url_ttl too",
		"s.yaml:7: overrides[1].download.url_ttl must be between 1s and 168h0m0s",
		"s.yaml:9: faults[0]: download: url_ttl and reject_authorization sign a scenario's output links",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	sc, err := Parse("ok.yaml", []byte(`defaults:
  download: {url_ttl: 15m}
overrides:
  - match: {model: "a/**"}
    download: {url_ttl: 1m, reject_authorization: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]api.Download{
		"a/b/c": {URLTTL: api.Duration(time.Minute), RejectAuthorization: true},
		"b/c":   {URLTTL: api.Duration(15 * time.Minute)},
	} {
		if got := sc.Effective(&catalog.Model{ID: id}).Download; got == nil || *got != want {
			t.Errorf("%s: download %+v, want %+v", id, got, want)
		}
	}
}

// TestPlanAndItsFormerSpelling: a scenario's plan holds perturbations of every kind, and the
// former faults key is read into the same plan, after it; problems name the key they are under.
func TestPlanAndItsFormerSpelling(t *testing.T) {
	t.Parallel()
	src := "plan:\n  - at: POST /v1/generate#1\n    action: reset\n    after: true\n  - at: job#2\n    outcome: fail\n    code: provider_timeout\n  - set: {url_ttl: 1m, concurrency: 2}\nfaults:\n  - match: {path: /v1/models}\n    status: 503\n"
	sc, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Plan) != 4 || sc.Faults != nil || !sc.Plan[0].After || sc.Plan[1].Code != "provider_timeout" || sc.Plan[2].Set.Concurrency != 2 || sc.Plan[3].RetryAfter != 1 {
		t.Errorf("plan = %+v", sc.Plan)
	}
	if d := sc.Describe(); d.Faults != 4 {
		t.Errorf("described with %d perturbations", d.Faults)
	}
	_, err = Parse("bad-plan", []byte("plan:\n  - status: 200\nfaults:\n  - at: job#1\n"))
	checkWords(t, "bad plan", err, "bad-plan:2: plan[0]: status 200 must be an error status from 400 to 599")
	checkWords(t, "bad plan", err, `bad-plan:4: faults[0]: at "job#1" names a job: give it an outcome`)
}

// TestTuneTurnsKnobs: knobs tune a copy of the scenario and leave the original as it was.
func TestTuneTurnsKnobs(t *testing.T) {
	t.Parallel()
	sc, err := Parse("s.yaml", []byte("defaults:\n  quote_ttl: 5m\noverrides:\n  - match: {output_type: video}\n    quote_ttl: 20m\n"))
	if err != nil {
		t.Fatal(err)
	}
	on := true
	tuned := Tune(sc, api.Knobs{QuoteTTL: api.Duration(30 * time.Second), URLTTL: api.Duration(time.Minute), Concurrency: 1, Latency: api.Duration(time.Millisecond), Evolution: &api.Evolution{Status: on}})
	if *tuned.Defaults.QuoteTTL != 30*time.Second || *tuned.Overrides[0].QuoteTTL != 30*time.Second || tuned.Defaults.Download.URLTTL != api.Duration(time.Minute) ||
		len(tuned.Concurrency) != 1 || tuned.Concurrency[0].Limit != 1 || len(tuned.Latency) != 1 || !tuned.Evolves().Status {
		t.Errorf("tuned = %+v", tuned)
	}
	if *sc.Defaults.QuoteTTL != 5*time.Minute || *sc.Overrides[0].QuoteTTL != 20*time.Minute || sc.Defaults.Download != nil || sc.Concurrency != nil || sc.Evolution != nil {
		t.Errorf("the original changed: %+v", sc)
	}
	if Tune(sc, api.Knobs{}) != sc {
		t.Error("no knobs made a copy")
	}
}

// TestParseAt: at names a route as the journal names it; {name} is one segment, or the rest of
// the path at its end, where a model id with its slashes goes.
func TestParseAt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		at, path string
		matches  []string
		misses   []string
	}{
		{"GET /v1/models/{model}#1", "/v1/models/**", []string{"/v1/models/fal-ai/flux/schnell"}, []string{"/v1/models"}},
		{"POST /v1/jobs/{id}/cancel#2", "/v1/jobs/*/cancel", []string{"/v1/jobs/j1/cancel"}, []string{"/v1/jobs/j1", "/v1/jobs/a/b/cancel"}},
		{"get /files/**#3", "/files/**", []string{"/files/default/j/0.png"}, nil},
	} {
		w, err := ParseAt(c.at)
		if err != nil || w.Path != c.path || w.Method != strings.ToUpper(strings.Fields(c.at)[0]) || w.Job {
			t.Errorf("%s: %+v %v", c.at, w, err)
			continue
		}
		for _, p := range c.matches {
			if !Selects(RequestMatch{Method: w.Method, Path: w.Path}, w.Method, p, nil) {
				t.Errorf("%s does not select %s", c.at, p)
			}
		}
		for _, p := range c.misses {
			if Selects(RequestMatch{Method: w.Method, Path: w.Path}, w.Method, p, nil) {
				t.Errorf("%s selects %s", c.at, p)
			}
		}
	}
	if w, err := ParseAt("job#7"); err != nil || !w.Job || w.Ordinal != 7 {
		t.Errorf("job#7: %+v %v", w, err)
	}
	for _, bad := range []string{"", "job", "job#", "POST /v1/generate", "POST v1/generate#1", "POST /v1/generate#0", "POST /v1/generate#1000001"} {
		if _, err := ParseAt(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
