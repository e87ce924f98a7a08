package battery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Format names the format of conformance.json.
const Format = "mediagen-conformance/1"

// The files a run writes into its output folder.
const (
	JSONFile     = "conformance.json"
	MarkdownFile = "conformance.md"
	BadgeFile    = "badge.svg"
)

// Results is a battery's run, as conformance.json holds it. It holds nothing that depends on
// the run (no times, ports, durations, paths or random names), so two runs of the same adapter
// write the same bytes.
type Results struct {
	Format  string       `json:"format"`
	Battery string       `json:"battery"`
	Version int          `json:"version"`
	Score   Score        `json:"score"`
	Cases   []CaseResult `json:"cases"`
}

// Score is how many of the battery's cases passed.
type Score struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// CaseResult is one case's run.
type CaseResult struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Tenant      string               `json:"tenant"`
	Expected    string               `json:"expected"`
	Got         string               `json:"got"`
	Passed      bool                 `json:"passed"`
	Failures    []api.VerdictFailure `json:"failures"`
}

// NewResults gathers the cases' results in the battery's order and scores them.
func NewResults(b *Battery, cases []CaseResult) *Results {
	r := &Results{Format: Format, Battery: b.Name, Version: b.Version, Cases: cases}
	for i := range r.Cases {
		if r.Cases[i].Failures == nil {
			r.Cases[i].Failures = []api.VerdictFailure{}
		}
		if r.Cases[i].Passed {
			r.Score.Passed++
		}
	}
	r.Score.Total = len(cases)
	return r
}

// Passed reports whether every case passed.
func (r *Results) Passed() bool { return r.Score.Passed == r.Score.Total }

// JSON is conformance.json: indented, ending in a newline.
func (r *Results) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err) // plain values only: it cannot fail
	}
	return append(b, '\n')
}

// Label is the score as the badge and the summary line say it: "conformance v1 | 24/24".
func (r *Results) Label() string {
	return fmt.Sprintf("conformance %s | %d/%d", r.Battery, r.Score.Passed, r.Score.Total)
}

// Markdown is conformance.md: the score, then a table of the cases, and each failure of a
// failed case with its rule and journal entries.
func (r *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance battery %s: %d of %d cases passed\n\n", r.Battery, r.Score.Passed, r.Score.Total)
	b.WriteString("| case | expected | got | result | why |\n|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		result := "pass"
		if !c.Passed {
			result = "**FAIL**"
		}
		var why []string
		for _, f := range c.Failures {
			why = append(why, failureText(f))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", c.Name, c.Expected, c.Got, result, cell(strings.Join(why, "; ")))
	}
	b.WriteString("\nEach case ran in its own tenant, named in conformance.json; the entries are its journal's seqs (`GET /_emulator/requests` with `X-Emulator-Tenant`).\n")
	return b.String()
}

// failureText says one failure in a line: its rule, why, and the entries it cites.
func failureText(f api.VerdictFailure) string {
	s := f.Kind
	if f.Rule != "" {
		s += " " + f.Rule
	}
	s += ": " + f.Reason
	if len(f.Entries) > 0 {
		parts := make([]string, len(f.Entries))
		for i, e := range f.Entries {
			parts[i] = fmt.Sprint(e)
		}
		s += " (entries " + strings.Join(parts, ", ") + ")"
	}
	return s
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Badge is badge.svg: a small shields-style badge, "conformance v1" on grey and the score on
// green when every case passed, red when one failed.
func (r *Results) Badge() []byte {
	left := "conformance " + r.Battery
	right := fmt.Sprintf("%d/%d", r.Score.Passed, r.Score.Total)
	color := "#4c1"
	if !r.Passed() {
		color = "#e05d44"
	}
	// About 7 pixels a character of 11px Verdana, and 10 pixels of padding on each side.
	lw, rw := 7*len(left)+10, 7*len(right)+10
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s">`+"\n", lw+rw, html.EscapeString(r.Label()))
	fmt.Fprintf(&b, "  <title>%s</title>\n", html.EscapeString(r.Label()))
	fmt.Fprintf(&b, `  <rect width="%d" height="20" rx="3" fill="#555"/>`+"\n", lw+rw)
	fmt.Fprintf(&b, `  <rect x="%d" width="%d" height="20" rx="3" fill="%s"/>`+"\n", lw, rw, color)
	fmt.Fprintf(&b, `  <rect x="%d" width="4" height="20" fill="%s"/>`+"\n", lw, color)
	b.WriteString(`  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">` + "\n")
	fmt.Fprintf(&b, `    <text x="%d" y="14">%s</text>`+"\n", lw/2, html.EscapeString(left))
	fmt.Fprintf(&b, `    <text x="%d" y="14">%s</text>`+"\n", lw+rw/2, html.EscapeString(right))
	b.WriteString("  </g>\n</svg>\n")
	return b.Bytes()
}

// Write writes conformance.json, conformance.md and badge.svg into dir, making it if needed.
func (r *Results) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{JSONFile, r.JSON()}, {MarkdownFile, []byte(r.Markdown())}, {BadgeFile, r.Badge()}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
