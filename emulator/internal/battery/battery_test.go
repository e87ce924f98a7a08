package battery

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

func TestV1Table(t *testing.T) {
	b, err := Lookup("v1")
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the table has problems:\n%s", strings.Join(p, "\n"))
	}
	if len(b.Cases) < 20 {
		t.Fatalf("%d cases; a battery has at least 20", len(b.Cases))
	}
	// What the battery must cover, by a word of its cases' plans: each kind of adversity
	// the conformance battery promises is struck by some case.
	var kinds []string
	for _, c := range b.Cases {
		for _, p := range c.Plan.Perturbations {
			kinds = append(kinds, kind(p))
		}
		if c.Scenario != nil {
			kinds = append(kinds, "scenario")
		}
	}
	for _, want := range []string{"error 500 POST /v1/generate", "reset POST /v1/generate", "reset after POST /v1/generate",
		"error 503 seconds", "error 503 date", "error 429", "advance POST /v1/generate", "outcome fail", "outcome refuse",
		"outcome partial", "outcome slow", "set url_ttl", "advance GET /files/**", "set evolution", "download GET /files/**", "scenario"} {
		if !slices.ContainsFunc(kinds, func(k string) bool { return strings.Contains(k, want) }) {
			t.Errorf("no case strikes with %q; kinds: %v", want, kinds)
		}
	}
	// Every model a task names, and every model a check expects, is in the embedded catalog
	// and takes the task's input.
	cat := embeddedCatalog(t)
	for _, c := range b.Cases {
		for _, id := range []string{c.Model, c.JobModel} {
			if id == "" {
				continue
			}
			m, ok := cat.Model(id)
			if !ok {
				t.Errorf("%s: model %s is not in the embedded catalog", c.Name, id)
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(c.Input))
			dec.UseNumber()
			var in any
			if err := dec.Decode(&in); err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(in); err != nil {
				t.Errorf("%s: %s does not take the input: %v", c.Name, id, err)
			}
		}
	}
}

// embeddedCatalog is the catalog the emulator embeds.
func embeddedCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	data, err := fs.ReadFile(fixtures.FS, "catalog/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse("default.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kind names what a perturbation does and where, for TestV1Table.
func kind(p api.Perturbation) string {
	where := p.At
	if i := strings.LastIndexByte(where, '#'); i >= 0 {
		where = where[:i]
	}
	var w []string
	switch {
	case p.Outcome != "":
		w = append(w, "outcome "+p.Outcome)
	case p.Set != nil:
		switch {
		case p.Set.URLTTL != 0:
			w = append(w, "set url_ttl")
		case p.Set.Evolution != nil:
			w = append(w, "set evolution")
		default:
			w = append(w, "set")
		}
	case p.Action != "":
		w = append(w, p.Action)
		if p.Status != 0 {
			w = append(w, strconv.Itoa(p.Status))
		}
		if p.RetryAfter != 0 {
			f := p.RetryAfterFormat
			if f == "" {
				f = api.RetryAfterSeconds
			}
			w = append(w, f)
		}
		if p.After {
			w = append(w, "after")
		}
	case p.Advance != 0:
		w = append(w, "advance")
	}
	return strings.Join(append(w, where), " ")
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("v0"); err == nil || !strings.Contains(err.Error(), "v1") {
		t.Fatalf("Lookup(v0) = %v; want an error naming the batteries there are", err)
	}
	b, _ := Lookup("v1")
	if c, ok := b.Case("refusal-not-retried"); !ok || c.Expect != Failure {
		t.Fatalf("Case(refusal-not-retried) = %+v, %v", c, ok)
	}
	if _, ok := b.Case("nope"); ok {
		t.Fatal("Case(nope) found a case")
	}
}

func TestProblems(t *testing.T) {
	good := Case{Name: "a-case", Description: "one line", Model: "m", Input: json.RawMessage(`{}`), Expect: Success}
	bad := []struct {
		name string
		c    Case
		want string
	}{
		{"no name", Case{Description: "d", Model: "m", Input: json.RawMessage(`{}`), Expect: Success}, "no name"},
		{"upper case", func() Case { c := good; c.Name = "A_Case"; return c }(), "lower-case"},
		{"too long", func() Case { c := good; c.Name = strings.Repeat("x", 60); return c }(), "short enough"},
		{"two lines", func() Case { c := good; c.Description = "a\nb"; return c }(), "one line"},
		{"no input", func() Case { c := good; c.Input = nil; return c }(), "input object"},
		{"input not an object", func() Case { c := good; c.Input = json.RawMessage(`[1]`); return c }(), "input object"},
		{"bad expectation", func() Case { c := good; c.Expect = "maybe"; return c }(), "expect"},
		{"bad scenario", func() Case { c := good; c.Scenario = json.RawMessage(`{`); return c }(), "scenario"},
	}
	for _, tc := range bad {
		b := &Battery{Name: "t", Cases: []Case{tc.c}}
		p := b.Problems()
		if len(p) != 1 || !strings.Contains(p[0], tc.want) {
			t.Errorf("%s: problems %q; want one saying %q", tc.name, p, tc.want)
		}
	}
	twice := &Battery{Name: "t", Cases: []Case{good, good}}
	if p := twice.Problems(); len(p) != 1 || !strings.Contains(p[0], "twice") {
		t.Errorf("a name twice: problems %q", p)
	}
	if p := (&Battery{Name: "t", Cases: []Case{good}}).Problems(); p != nil {
		t.Errorf("a good case: problems %q", p)
	}
}

// succeeded is a tenant's succeeded job of one output of size bytes.
func succeeded(id, model string, sizes ...int64) api.ControlJob {
	j := api.ControlJob{Job: api.Job{ID: id, Model: model, Status: "succeeded"}}
	for _, s := range sizes {
		j.Outputs = append(j.Outputs, api.Output{SizeBytes: s})
	}
	return j
}

func TestJudge(t *testing.T) {
	base := Case{Name: "c", Expect: Success, MaxJobs: 1, Absent: []string{"retry-unchanged"}}
	ok := Facts{Got: Success, Jobs: []api.ControlJob{succeeded("j1", "m", 10, 20)}, Files: []File{{"0.jpg", 20}, {"1.jpg", 10}}}
	cases := []struct {
		name  string
		c     Case
		f     Facts
		rules []string // the failures' kind and rule, in order; none means it passes
	}{
		{"passes", base, ok, nil},
		{"expected success, got failure", base, func() Facts { f := ok; f.Got, f.Exit = Failure, 1; return f }(), []string{"exit expected-success"}},
		{"expected failure, got success", func() Case { c := base; c.Expect = Failure; return c }(), ok, []string{"exit expected-failure"}},
		{"timeout", base, func() Facts { f := ok; f.Got, f.Exit = Timeout, -1; return f }(), []string{"exit expected-success"}},
		{"failure expected and got, no outputs needed", func() Case { c := base; c.Expect = Failure; return c }(),
			Facts{Got: Failure, Exit: 1, Jobs: []api.ControlJob{{Job: api.Job{ID: "j1", Status: "failed"}}}}, nil},
		{"the verdict's failures, its exit left out", base, func() Facts {
			f := ok
			f.Verdict = api.Verdict{Failed: true, Failures: []api.VerdictFailure{{Kind: api.FailureExit, Reason: "timed out"},
				{Kind: api.FailureFinding, Rule: "new-key-on-retry", Severity: "error", Reason: "a new key", Entries: []int64{3, 5}},
				{Kind: api.FailureInvariant, Rule: api.InvariantNothingHeld, Reason: "3 credits held"}}}
			f.Findings = []api.Finding{{Rule: "new-key-on-retry", Severity: "error", Entries: []uint64{3, 5}}}
			return f
		}(), []string{"finding new-key-on-retry", "invariant nothing-held"}},
		{"a warning the case forbids", base, func() Facts {
			f := ok
			f.Findings = []api.Finding{{Rule: "poll-too-fast", Severity: "warning"}, {Rule: "retry-unchanged", Severity: "warning", Reason: "sent again", Entries: []uint64{4}}}
			return f
		}(), []string{"finding retry-unchanged"}},
		{"two jobs", base, func() Facts {
			f := ok
			f.Jobs = append([]api.ControlJob{succeeded("j2", "m", 10, 20)}, f.Jobs...)
			return f
		}(), []string{"check at-most-jobs"}},
		{"a job of another model", func() Case { c := base; c.JobModel = "succ"; return c }(), ok, []string{"check jobs-of-model"}},
		{"no job of the successor", func() Case { c := base; c.JobModel = "succ"; c.Expect = Failure; return c }(),
			Facts{Got: Failure, Exit: 1}, []string{"check jobs-of-model"}},
		{"a forbidden code answered", func() Case { c := base; c.NeverAnswered = []string{"missing_idempotency_key"}; return c }(),
			func() Facts { f := ok; f.Answered = map[string][]uint64{"missing_idempotency_key": {2}}; return f }(), []string{"check never-answered"}},
		{"a perturbation that never struck", base, func() Facts { f := ok; f.Unstruck = []string{"GET /files/**#1 reset"}; return f }(),
			[]string{"check plan-struck"}},
		{"a file cut short", base, func() Facts { f := ok; f.Files = []File{{"0.jpg", 20}, {"1.jpg", 9}}; return f }(), []string{"check outputs-saved"}},
		{"no file", base, func() Facts { f := ok; f.Files = []File{{"0.jpg", 0}}; return f }(), []string{"check outputs-saved"}},
		{"success without a succeeded job", base, func() Facts {
			f := ok
			f.Jobs = []api.ControlJob{{Job: api.Job{ID: "j1", Status: "failed"}}}
			return f
		}(), []string{"check outputs-saved"}},
		{"the newest succeeded job counts", func() Case { c := base; c.MaxJobs = 0; return c }(), func() Facts {
			f := ok
			f.Jobs = []api.ControlJob{succeeded("j2", "m", 7), succeeded("j1", "m", 10, 20)}
			f.Files = []File{{"a", 7}}
			return f
		}(), nil},
	}
	for _, tc := range cases {
		got := Judge(tc.c, tc.f)
		var rules []string
		for _, f := range got {
			rules = append(rules, f.Kind+" "+f.Rule)
			if f.Reason == "" {
				t.Errorf("%s: failure %+v has no reason", tc.name, f)
			}
		}
		if !slices.Equal(rules, tc.rules) {
			t.Errorf("%s: failures %q; want %q (%+v)", tc.name, rules, tc.rules, got)
		}
	}
}

// A reason quoting the adapter's Idempotency-Keys names them by the order it sent them.
func TestJudgeKeys(t *testing.T) {
	c := Case{Expect: Success}
	f := Facts{Got: Failure, Exit: 1, Keys: []string{"k-9f2", "k-11a"}, Verdict: api.Verdict{Failures: []api.VerdictFailure{{Kind: api.FailureFinding,
		Rule: "new-key-on-retry", Reason: `sent again with Idempotency-Key "k-11a" after an attempt answered 500 with key "k-9f2"; k-9f2 unquoted stays`}}}}
	got := Judge(c, f)
	if len(got) != 2 || got[1].Reason != `sent again with Idempotency-Key <key 2> after an attempt answered 500 with key <key 1>; k-9f2 unquoted stays` {
		t.Fatalf("failures %+v", got)
	}
}

func TestJudgeEntries(t *testing.T) {
	c := Case{Expect: Success, Absent: []string{"stale-link-refetched"}, NeverAnswered: []string{"missing_idempotency_key"}}
	f := Facts{Got: Success, Jobs: []api.ControlJob{succeeded("j", "m", 1)}, Files: []File{{"x", 1}},
		Findings: []api.Finding{{Rule: "stale-link-refetched", Severity: "warning", Reason: "fetched again", Entries: []uint64{7, 9}}},
		Answered: map[string][]uint64{"missing_idempotency_key": {1, 2}}}
	got := Judge(c, f)
	if len(got) != 2 || !slices.Equal(got[0].Entries, []int64{7, 9}) || got[0].Severity != "warning" ||
		!slices.Equal(got[1].Entries, []int64{1, 2}) {
		t.Fatalf("failures %+v; want the finding's entries 7, 9 and the answers' 1, 2", got)
	}
}

// sample is a results value with a passed and a failed case.
func sample() *Results {
	b := &Battery{Name: "v1", Version: 1}
	return NewResults(b, []CaseResult{
		{Name: "a", Description: "first", Tenant: "conformance-v1-a", Expected: Success, Got: Success, Passed: true},
		{Name: "b", Description: "second | piped", Tenant: "conformance-v1-b", Expected: Success, Got: Failure,
			Failures: []api.VerdictFailure{{Kind: api.FailureFinding, Rule: "new-key-on-retry", Severity: "error", Reason: "a new key", Entries: []int64{4, 6}}}},
	})
}

func TestResults(t *testing.T) {
	r := sample()
	if r.Score != (Score{Passed: 1, Total: 2}) || r.Passed() {
		t.Fatalf("score %+v, passed %v", r.Score, r.Passed())
	}
	if r.Label() != "conformance v1 | 1/2" {
		t.Errorf("label %q", r.Label())
	}
	if !bytes.Equal(r.JSON(), sample().JSON()) {
		t.Error("the same results give different JSON")
	}
	var back Results
	if err := json.Unmarshal(r.JSON(), &back); err != nil || back.Cases[0].Failures == nil {
		t.Fatalf("the JSON does not read back with an empty failure list: %v %+v", err, back)
	}
	for _, want := range []string{`"format": "mediagen-conformance/1"`, `"battery": "v1"`, `"tenant": "conformance-v1-b"`,
		`"rule": "new-key-on-retry"`, `"failures": []`} {
		if !bytes.Contains(r.JSON(), []byte(want)) {
			t.Errorf("the JSON lacks %s:\n%s", want, r.JSON())
		}
	}
	md := r.Markdown()
	for _, want := range []string{"1 of 2 cases passed", "| `a` | success | success | pass |  |",
		"| `b` | success | failure | **FAIL** | finding new-key-on-retry: a new key (entries 4, 6) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	svg := string(r.Badge())
	for _, want := range []string{"<svg", "conformance v1 | 1/2", ">1/2</text>", "#e05d44"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the badge lacks %q:\n%s", want, svg)
		}
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{JSONFile, MarkdownFile, BadgeFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{"python3 adapter.py", []string{"python3", "adapter.py"}, false},
		{"  node  'my adapter.js'\t--flag ", []string{"node", "my adapter.js", "--flag"}, false},
		{`sh -c "echo \"hi\" \$HOME"`, []string{"sh", "-c", `echo "hi" $HOME`}, false},
		{`a\ b c''d ""`, []string{"a b", "cd", ""}, false},
		{"'open", nil, true},
		{`"open`, nil, true},
		{`end\`, nil, true},
		{"", nil, false},
	}
	for _, tc := range cases {
		got, err := Words(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestMainMisuse(t *testing.T) {
	noStart := func(context.Context) (string, string, func(), error) {
		t.Fatal("a misuse started an emulator")
		return "", "", nil, nil
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{},
		{"--adapter", "x", "--out", filepath.Join(file, "sub")},
		{"--battery", "v9", "--adapter", "x"},
		{"--adapter", "x", "--", "y"},
		{"--adapter", "'x"},
		{"--adapter", "x", "--timeout", "0s"},
		{"--adapter", "x", "--emulator", "localhost:8080"},
		{"--list", "--adapter", "x"},
		{"--nope"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, func(string) string { return "" }, &stdout, &stderr, noStart); code != 2 {
			t.Errorf("%q: exit %d; want 2 (stderr %s)", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"--list"}, func(string) string { return "" }, &stdout, &stderr, noStart); code != 0 ||
		!strings.Contains(stdout.String(), "retry-ambiguous-5xx-same-key") {
		t.Errorf("--list: exit %d, %s", code, stdout.String())
	}
}

// The conformance guide holds the battery's table as --list prints it.
func TestGuideTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		b, _ := Lookup(name)
		if !strings.Contains(string(doc), b.List()) {
			t.Errorf("docs/conformance.md lacks battery %s's table as `mediagen-emulator conformance --list --battery %s` prints it:\n%s", name, name, b.List())
		}
	}
}

// Every case's plan, and its scenario, passes the emulator's own checker: the case's
// perturbations as the plan: of a scenario file (with the case's scenario document around
// them, when it has one), and each perturbation alone as PUT /_emulator/plan checks it.
func TestV1PlansCheck(t *testing.T) {
	for _, c := range v1.Cases {
		doc := map[string]any{}
		if c.Scenario != nil {
			if err := json.Unmarshal(c.Scenario, &doc); err != nil {
				t.Fatal(err)
			}
		}
		doc["plan"] = c.Plan.Perturbations
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Parse(c.Name+".json", data); err != nil {
			t.Errorf("%s: the plan and scenario do not check:\n%v", c.Name, err)
		}
		for i, p := range c.Plan.Perturbations {
			if err := scenario.CheckPerturbation(&p); err != nil {
				t.Errorf("%s: perturbation %d: %v", c.Name, i+1, err)
			}
		}
	}
}
