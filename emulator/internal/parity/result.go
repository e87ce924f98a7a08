package parity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
)

// The results a case can have.
const (
	Same          = "same"
	Differs       = "differs"
	NotProvokable = "not_provokable"
	// Unavailable is a case the live service answered with a 429 or 503 it does not expect,
	// past what a run waits: an outage (or a limit) answered, not the case, so nothing was
	// compared, and the run fails until the case is compared.
	Unavailable = "unavailable"
)

// Result is a whole run: every error case of the coverage list, in the list's order.
type Result struct {
	From      string       `json:"from"`
	Catalog   string       `json:"catalog"`
	StartedAt string       `json:"started_at"`
	Summary   Summary      `json:"summary"`
	Cases     []CaseResult `json:"cases"`
	// StaleKnown are the accepted differences no case showed: the live service or the
	// emulator changed, and the entry can go.
	StaleKnown []KnownEntry `json:"stale_known,omitempty"`
}

// Summary counts the cases by result; New counts the differences --known did not accept.
// A run fails when New or Unavailable is not zero.
type Summary struct {
	Same          int `json:"same"`
	Differs       int `json:"differs"`
	NotProvokable int `json:"not_provokable"`
	Unavailable   int `json:"unavailable"`
	New           int `json:"new_differences"`
}

// CaseResult is one case's outcome.
type CaseResult struct {
	Case   string `json:"case"`
	Result string `json:"result"`
	// Request is the method, path and query sent.
	Request string `json:"request,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Note says when the emulator's answer was not the case's status and code.
	Note        string       `json:"note,omitempty"`
	Differences []Difference `json:"differences,omitempty"`
}

func (r *Result) add(c CaseResult) {
	switch c.Result {
	case Same:
		r.Summary.Same++
	case Differs:
		r.Summary.Differs++
	case Unavailable:
		r.Summary.Unavailable++
	default:
		r.Summary.NotProvokable++
	}
	for _, d := range c.Differences {
		if !d.Known {
			r.Summary.New++
		}
	}
	r.Cases = append(r.Cases, c)
}

// line is the case as one line of the terminal report, its differences on the lines after.
func (c CaseResult) line() string {
	var b strings.Builder
	switch c.Result {
	case NotProvokable:
		fmt.Fprintf(&b, "%-14s %s: %s", "not provokable", c.Case, c.Reason)
	case Unavailable:
		fmt.Fprintf(&b, "%-14s %s: %s", c.Result, c.Case, c.Reason)
	default:
		fmt.Fprintf(&b, "%-14s %s", c.Result, c.Case)
	}
	if c.Note != "" {
		fmt.Fprintf(&b, "\n  note: %s", c.Note)
	}
	for _, d := range c.Differences {
		fmt.Fprintf(&b, "\n  %s", d.text())
	}
	return b.String()
}

func (d Difference) text() string {
	s := fmt.Sprintf("%s: %s live, %s on the emulator", d.Path, d.Live, d.Emulator)
	if d.Known {
		s += " (known)"
	}
	return s
}

// Text is the terminal report: one line per case, then the counts.
func (r *Result) Text() string {
	var b strings.Builder
	for _, c := range r.Cases {
		b.WriteString(c.line())
		b.WriteByte('\n')
	}
	for _, k := range r.StaleKnown {
		fmt.Fprintf(&b, "stale known    %s %s: no case differs there any more\n", k.Case, k.Path)
	}
	b.WriteString(r.counts())
	b.WriteByte('\n')
	return b.String()
}

func (r *Result) counts() string {
	s := r.Summary
	out := fmt.Sprintf("parity: %d same, %d differ (%d new differences), %d not provokable", s.Same, s.Differs, s.New, s.NotProvokable)
	if s.Unavailable > 0 {
		out += fmt.Sprintf(", %d unavailable live (not compared)", s.Unavailable)
	}
	return out
}

// Failed reports whether the run should fail: a difference --known does not accept, or a case
// the live service did not answer.
func (r *Result) Failed() bool { return r.Summary.New > 0 || r.Summary.Unavailable > 0 }

// Markdown is the report for a CI job's summary: the counts, then a table of every case.
func (r *Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Parity with %s\n\n%s (catalog %s).\n\n", r.From, r.counts(), r.Catalog)
	b.WriteString("| case | result | what |\n|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	for _, c := range r.Cases {
		var what []string
		switch c.Result {
		case NotProvokable:
			what = append(what, cell(c.Reason))
		case Unavailable:
			what = append(what, "`"+cell(c.Request)+"`", cell(c.Reason))
		default:
			what = append(what, "`"+cell(c.Request)+"`")
		}
		if c.Note != "" {
			what = append(what, "note: "+cell(c.Note))
		}
		for _, d := range c.Differences {
			what = append(what, "`"+cell(d.Path)+"`: "+cell(d.Live)+" live, "+cell(d.Emulator)+" on the emulator"+map[bool]string{true: " (known)", false: " **(new)**"}[d.Known])
		}
		result := strings.ReplaceAll(c.Result, "_", " ")
		if c.Result == Differs || c.Result == Unavailable {
			result = "**" + result + "**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", cell(c.Case), result, strings.Join(what, "<br>"))
	}
	if len(r.StaleKnown) > 0 {
		b.WriteString("\nKnown differences no case showed (the entries can go):\n\n")
		for _, k := range r.StaleKnown {
			fmt.Fprintf(&b, "- `%s` `%s`\n", cell(k.Case), cell(k.Path))
		}
	}
	return b.String()
}

// JSON is the result as an indented JSON document.
func (r *Result) JSON() []byte {
	out, _ := json.MarshalIndent(r, "", "  ")
	return append(out, '\n')
}

// maxKnownBytes and maxKnown bound a --known file.
const (
	maxKnownBytes = 1 << 20
	maxKnown      = 10_000
)

// Known is a --known file: the differences accepted, by case and JSON path, each a glob
// pattern (* within a /-separated segment, ** across).
type Known struct {
	Accept []KnownEntry `json:"accept"`
	used   []bool
}

// KnownEntry is one accepted difference.
type KnownEntry struct {
	Case string `json:"case"`
	Path string `json:"path"`
	// Why says why it is accepted, for the reader.
	Why string `json:"why,omitempty"`
}

// ReadKnown reads a --known file.
func ReadKnown(path string) (*Known, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--known %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKnownBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--known %s: %w", path, err)
	}
	k, err := ParseKnown(data)
	if err != nil {
		return nil, fmt.Errorf("--known %s: %w", path, err)
	}
	return k, nil
}

// ParseKnown reads the text of a --known file: {"accept": [{"case", "path", "why"}]}.
func ParseKnown(data []byte) (*Known, error) {
	if len(data) > maxKnownBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxKnownBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var k Known
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("want {\"accept\": [{\"case\": ..., \"path\": ...}]}: %v", err)
	}
	if len(k.Accept) > maxKnown {
		return nil, fmt.Errorf("more than %d entries", maxKnown)
	}
	for i, e := range k.Accept {
		if e.Case == "" || e.Path == "" {
			return nil, fmt.Errorf("/accept/%d: needs a case and a path", i)
		}
		for _, p := range []string{e.Case, e.Path} {
			if msg := glob.Check(p); msg != "" {
				return nil, fmt.Errorf("/accept/%d: %q %s", i, p, msg)
			}
		}
	}
	k.used = make([]bool, len(k.Accept))
	return &k, nil
}

// mark sets Known on the case's differences some entry accepts.
func (k *Known) mark(caseID string, ds []Difference) {
	if k == nil {
		return
	}
	for i := range ds {
		for j, e := range k.Accept {
			if glob.Match(e.Case, caseID) && glob.Match(e.Path, ds[i].Path) {
				ds[i].Known, k.used[j] = true, true
			}
		}
	}
}

// unused lists the entries no difference matched.
func (k *Known) unused() []KnownEntry {
	if k == nil {
		return nil
	}
	var out []KnownEntry
	for i, e := range k.Accept {
		if !k.used[i] {
			out = append(out, e)
		}
	}
	return out
}

// Accepts marks the differences of a case the entries accept, and reports whether every one
// of them is accepted.
func (k *Known) Accepts(caseID string, ds []Difference) bool {
	k.mark(caseID, ds)
	for _, d := range ds {
		if !d.Known {
			return false
		}
	}
	return true
}

// Recording is one live answer kept by --record: the case, the request as sent (the key is
// never written: Auth says only that it was sent) and the live service's answer.
type Recording struct {
	Case       string   `json:"case"`
	RecordedAt string   `json:"recorded_at"`
	From       string   `json:"from"`
	Catalog    string   `json:"catalog"`
	Request    Request  `json:"request"`
	Live       Recorded `json:"live"`
}

// Recorded is an answer as a recording keeps it: a JSON body as JSON, any other as text.
type Recorded struct {
	Status   int               `json:"status"`
	Header   map[string]string `json:"header,omitempty"`
	Body     json.RawMessage   `json:"body,omitempty"`
	BodyText string            `json:"body_text,omitempty"`
	Cut      bool              `json:"cut,omitempty"`
}

func recorded(a Answer) Recorded {
	r := Recorded{Status: a.Status, Header: a.Header, Cut: a.Cut}
	if !a.Cut && json.Valid([]byte(a.Body)) {
		r.Body = json.RawMessage(a.Body)
	} else {
		r.BodyText = a.Body
	}
	return r
}

// Answer is the recorded answer, as Compare takes it.
func (r Recorded) Answer() Answer {
	body := r.BodyText
	if len(r.Body) > 0 {
		body = string(r.Body)
	}
	return Answer{Status: r.Status, Header: r.Header, Body: body, Cut: r.Cut}
}

// record writes one recording to dir, named after its case.
func record(dir string, rec Recording) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, FileName(rec.Case)), append(data, '\n'), 0o644)
}

// FileName is the name of a case's recording: its id in lower case, each run of other
// characters than letters and digits a dash.
func FileName(caseID string) string {
	words := strings.FieldsFunc(strings.ToLower(caseID), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	return strings.Join(words, "-") + ".json"
}

// ReadRecording reads a recording written by --record.
func ReadRecording(data []byte) (*Recording, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Recording
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	if r.Case == "" || r.Request.Method == "" || !strings.HasPrefix(r.Request.Path, "/v1/") {
		return nil, errors.New("a recording needs a case and a request under /v1/")
	}
	return &r, nil
}
