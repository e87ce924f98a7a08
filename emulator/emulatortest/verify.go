package emulatortest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
)

// Pattern describes requests in the journal, for Requests, Verify and ExpectError alike; every
// field given must match, and the zero Pattern matches every request. Path and Model are globs
// (* within a /-separated segment, ** across); Body matches when each of its members is in the
// request body with an equal JSON value (objects member by member); Pointers maps JSON Pointers
// into the body to values.
type Pattern = api.RequestPattern

// Verify asks the emulator how many requests of this handle's tenant match p. When none does,
// the answer's NearMisses show the closest requests and which parts of p each missed.
func (e *Emulator) Verify(t TB, p Pattern) api.Verification {
	t.Helper()
	var v api.Verification
	e.For(t).do(http.MethodPost, "/_emulator/verify", p, http.StatusOK, &v)
	return v
}

// AssertRequested ends the test unless exactly times requests match p (times < 0: at least
// one), listing the near misses when none matched. The journal it reads keeps the latest 10,000
// requests.
func (e *Emulator) AssertRequested(t TB, times int, p Pattern) {
	t.Helper()
	v := e.Verify(t, p)
	if (times < 0 && v.Count > 0) || v.Count == times {
		return
	}
	want := "at least 1"
	if times >= 0 {
		want = fmt.Sprint(times)
	}
	t.Fatalf("emulatortest: %d request(s) match %s, want %s%s", v.Count, describePattern(p), want, describeNearMisses(v.NearMisses))
}

// describePattern shows a pattern as the JSON the emulator was sent.
func describePattern(p Pattern) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func describeNearMisses(ns []api.NearMiss) string {
	if len(ns) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; the closest requests:")
	for _, n := range ns {
		fmt.Fprintf(&b, "\n  #%d %s %s → %d", n.Entry.Seq, n.Entry.Method, n.Entry.Path, n.Entry.Status)
		for _, m := range n.Missed {
			want, _ := json.Marshal(m.Want)
			got, _ := json.Marshal(m.Got)
			fmt.Fprintf(&b, "\n      %s: want %s, got %s", m.Field, want, got)
		}
	}
	return b.String()
}

// ExpectError declares error answers the test expects in this handle's tenant, such as
// Pattern{Status: 402, Code: "insufficient_credits"}: AssertNoUnexpected then passes over them.
// A tenant holds at most 100 patterns; Reset forgets them.
func (e *Emulator) ExpectError(t TB, p Pattern) {
	t.Helper()
	e.For(t).do(http.MethodPost, "/_emulator/expected-errors", p, http.StatusCreated, nil)
}

// UnexpectedErrors lists the answers of status 400 and more in this handle's tenant that no
// ExpectError pattern covers, oldest first (the first 100), with how many there are.
func (e *Emulator) UnexpectedErrors(t TB) api.UnexpectedErrors {
	t.Helper()
	var u api.UnexpectedErrors
	e.For(t).do(http.MethodGet, "/_emulator/unexpected", nil, http.StatusOK, &u)
	return u
}

// AssertNoUnexpected ends the test when this handle's tenant answered an error that no
// ExpectError pattern covers, printing each such request with its bodies and the problem's
// detail. Call it last, or register it with t.Cleanup after Tenant(t).
func (e *Emulator) AssertNoUnexpected(t TB) {
	t.Helper()
	u := e.UnexpectedErrors(t)
	if u.Total == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "emulatortest: %d unexpected error answer(s) (declare the expected ones with ExpectError):", u.Total)
	for _, x := range u.Data {
		en := x.Entry
		fmt.Fprintf(&b, "\n  #%d %s %s", en.Seq, en.Method, en.Path)
		if en.Query != "" {
			b.WriteString("?" + en.Query)
		}
		fmt.Fprintf(&b, " → %d %s: %s", en.Status, en.Code, x.Detail)
		if len(en.RequestBody) > 0 {
			fmt.Fprintf(&b, "\n      sent: %.500s", en.RequestBody)
		}
		if len(en.ResponseBody) > 0 {
			fmt.Fprintf(&b, "\n      answered: %.500s", en.ResponseBody)
		}
	}
	if len(u.Data) < u.Total {
		fmt.Fprintf(&b, "\n  … and %d more", u.Total-len(u.Data))
	}
	t.Fatalf("%s", b.String())
}

// Coverage reads which of the contract's cases happened: in this handle's tenant (scope
// "tenant", or "") or in every tenant since the emulator started (scope "run"). Cases that
// match a require pattern (package glob: * within a segment, ** across, such as "job *" or
// "POST /v1/jobs/**") and never happened are listed in RequiredMissing.
func (e *Emulator) Coverage(t TB, scope string, require ...string) api.Coverage {
	t.Helper()
	var c api.Coverage
	e.For(t).do(http.MethodGet, coveragePath(scope, "", require), nil, http.StatusOK, &c)
	return c
}

func coveragePath(scope, format string, require []string) string {
	q := url.Values{}
	if scope != "" {
		q.Set("scope", scope)
	}
	if format != "" {
		q.Set("format", format)
	}
	for _, r := range require {
		q.Add("require", r)
	}
	if len(q) == 0 {
		return "/_emulator/coverage"
	}
	return "/_emulator/coverage?" + q.Encode()
}

// Runner is what Main needs of a *testing.M.
type Runner interface{ Run() int }

// Main runs a package's tests against an emulator they share, prints the run's coverage at the
// end, and returns the exit code for os.Exit: the tests' own, or 1 when they passed but a case
// matching a require pattern was never exercised.
//
//	var shared *emulatortest.Emulator
//
//	func TestMain(m *testing.M) {
//		var tb emulatortest.Standalone
//		shared = emulatortest.Start(&tb)
//		code := shared.Main(m, "job *", "POST /v1/generate 4*")
//		tb.Close()
//		os.Exit(code)
//	}
//
// It prints a short table (cases exercised per group, and the required ones missing) to
// standard output and, when GITHUB_STEP_SUMMARY names a file, appends the whole markdown table
// there for the CI job's summary.
func (e *Emulator) Main(m Runner, require ...string) int {
	return e.main(m, os.Stdout, os.Getenv("GITHUB_STEP_SUMMARY"), require)
}

// main is Main with its outputs given.
func (e *Emulator) main(m Runner, out io.Writer, summary string, require []string) (code int) {
	code = m.Run()
	var tb quietTB
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
			fmt.Fprintf(out, "emulator coverage: %s\n", tb.msg)
			code = max(code, 1)
		}
	}()
	c := e.Coverage(&tb, "run", require...)
	fmt.Fprint(out, ShortCoverage(c))
	if summary != "" {
		md := e.CoverageMarkdown(&tb, "run", require...)
		if f, err := os.OpenFile(summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			_, _ = io.WriteString(f, md+"\n")
			_ = f.Close()
		}
	}
	if code == 0 && len(c.RequiredMissing) > 0 {
		return 1
	}
	return code
}

// ShortCoverage renders coverage as a few lines for a terminal: the cases exercised in all and
// per group, then the required cases never exercised.
func ShortCoverage(c api.Coverage) string { return evidence.CoverageShort(c) }

// quietTB is the TB Main reads coverage with once the tests have run: a failure stops the
// read with a panic that main recovers, instead of ending the process.
type quietTB struct {
	Standalone
	msg string
}

type stopped struct{}

// Fatalf records the message and stops the caller.
func (q *quietTB) Fatalf(format string, args ...any) {
	q.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// CoverageMarkdown reads the coverage as the markdown document the emulator renders, for a CI
// job's summary; scope and require are as for Coverage.
func (e *Emulator) CoverageMarkdown(t TB, scope string, require ...string) string {
	t.Helper()
	path := coveragePath(scope, "markdown", require)
	status, data, err := e.roundTrip(http.MethodGet, path, nil)
	switch {
	case err != nil:
		t.Fatalf("emulatortest: GET %s: %v", path, err)
	case status != http.StatusOK:
		t.Fatalf("emulatortest: GET %s: %s", path, describeRefusal(status, http.StatusOK, data))
	default:
		return string(data)
	}
	return ""
}
