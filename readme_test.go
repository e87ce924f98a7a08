package main

// The guides' curl transcripts are run, not trusted. TestREADME reads the sections of the
// documents named in transcriptSections (README.md and the guides under docs/):
//
//   - the first section's first ```sh block starts the emulator (the flags after
//     "mediagen-emulator" or "go run .") and sets shell variables (its second line);
//   - in each ```console block, a line starting with "$ " is a command (a line ending in "\"
//     continues on the next), and the lines after it, up to the next command, are its output.
//
// Each command runs in bash, after the variables, against an emulator the test starts with those
// flags on a free port, one fresh emulator per section; http://127.0.0.1:8080 stands for that emulator's address both in the
// commands and in the output. The output must equal what the document shows, with two shorthands:
//
//   - "..." matches any text, including none and line breaks;
//   - a line that begins with spaces or tabs continues the line above: the break and the
//     indentation are not part of the output (so long one-line answers can be wrapped).
//
// A command with no output under it is run and must succeed; its output is not compared.
// A section runs to the next "## " heading outside a fenced block.
//
// Every section of README.md and docs/*.md with a console command is either run (listed in
// transcriptSections) or named in shownOnly with the reason it cannot run here;
// TestEveryTranscriptRuns fails otherwise, so a new transcript is never left unchecked.
//
// When the emulator's answers change (new ids, new media sizes), rewrite the transcripts with
//
//	go test -run TestREADME -update .
//
// which replaces what no longer matches by what the emulator printed, keeping the document's "..."
// and line breaks where the text around them still fits, and carries changed ids into the
// commands that use them. Read the diff before committing it.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/emulatortest"
)

// docSection is a section of a document: its file and its "## " heading line.
type docSection struct{ file, heading string }

// transcriptSections are the sections whose transcripts the tests run, in order; the first
// starts the emulator and sets the variables for all of them.
var transcriptSections = []docSection{
	{"docs/reference.md", "## The client flow in curl"},
	{"docs/reference.md", "## Browsers (CORS)"},
	{"docs/control-api.md", "## Tenants: many isolated tests on one emulator"},
	{"docs/verification.md", "## Verification and coverage"},
	{"docs/snapshots.md", "## Snapshots: save, restore and share a tenant's world"},
	{"docs/scenarios.md", "## Refusals, partial results and retired models"},
	{"docs/scenarios.md", "## Output links that expire"},
	{"docs/scenarios.md", "## Concurrency limits and the queue they make"},
	{"docs/scenarios.md", "## Forward compatibility: an API that evolves"},
}

// ownSetupSections are sections whose first sh block starts an emulator of their own, with the
// flags they need (a webhook receiver, say), apart from transcriptSections' shared one.
var ownSetupSections = []docSection{
	{"docs/webhooks.md", "## Try it with curl"},
	{"docs/scenarios.md", "## Clock modes: real, manual and skip"},
	{"docs/inputs.md", "## Try it with curl"},
}

// shownOnly are the sections whose console commands are shown, not run, and why.
var shownOnly = map[docSection]string{
	{"docs/reference.md", "## Command line"}:                             "validates files of the reader's own",
	{"docs/reference.md", "## The emulator's OpenAPI document"}:          "runs a generator fetched from the npm registry",
	{"docs/import.md", "## Importing a live catalog and checking drift"}: "needs a live service",
}

// docBase is the emulator's address as the documents write it.
const docBase = "http://127.0.0.1:8080"

func init() {
	// -update is shared with the golden files of other packages; define it only once.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files and the documents' transcripts from what the emulator answers")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// transcriptCmd is one "$ " command of a console block and the output shown under it.
type transcriptCmd struct {
	line     int    // the document line of the command, counted from 0
	cmd      string // the command, its continuation lines joined with "\n"
	want     []string
	wantFrom int // the document lines of want: [wantFrom, wantFrom+len(want))
}

// transcript is a document section's setup and commands.
type transcript struct {
	flags    []string // the emulator's flags
	preamble string   // the shell line that sets the variables
	cmds     []transcriptCmd
	from, to int // the section's lines
}

// sectionLines finds the section titled heading in a document's lines: from its heading to the
// next "## " heading that is not inside a fenced block (a transcript's output may show one).
func sectionLines(lines []string, heading string) (from, to int, err error) {
	from, to = -1, len(lines)
	for i, l := range outsideFences(lines) {
		if l == heading {
			from = i
		} else if from >= 0 && strings.HasPrefix(l, "## ") {
			return from, i, nil
		}
	}
	if from < 0 {
		return 0, 0, fmt.Errorf("no section %q", heading)
	}
	return from, to, nil
}

// parseTranscript reads the section titled heading from a document's lines; withSetup says
// that its first sh block starts the emulator.
func parseTranscript(lines []string, heading string, withSetup bool) (*transcript, error) {
	tr := &transcript{}
	var err error
	if tr.from, tr.to, err = sectionLines(lines, heading); err != nil {
		return nil, err
	}
	fence := ""
	for i := tr.from; i < tr.to; i++ {
		l := lines[i]
		switch {
		case fence == "" && strings.HasPrefix(l, "```"):
			fence = strings.TrimPrefix(l, "```")
			if withSetup && fence == "sh" && tr.flags == nil {
				if i+2 >= tr.to {
					return nil, fmt.Errorf("line %d: the first sh block needs the start command and the variables", i+1)
				}
				start := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(lines[i+1]), "&"))
				k := max(strings.LastIndex(start, "mediagen-emulator "), strings.LastIndex(start, "go run . "))
				if k < 0 {
					return nil, fmt.Errorf("line %d: %q does not start the emulator", i+2, lines[i+1])
				}
				tr.flags = strings.Fields(start[strings.Index(start[k:], " ")+k:])
				if tr.flags == nil {
					tr.flags = []string{}
				}
				tr.preamble = lines[i+2]
			}
		case fence != "" && l == "```":
			fence = ""
		case fence == "console" && strings.HasPrefix(l, "$ "):
			c := transcriptCmd{line: i, cmd: strings.TrimPrefix(l, "$ ")}
			for strings.HasSuffix(l, `\`) && i+1 < tr.to {
				i++
				l = lines[i]
				c.cmd += "\n" + l
			}
			c.wantFrom = i + 1
			for i+1 < tr.to && lines[i+1] != "```" && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				c.want = append(c.want, lines[i])
			}
			tr.cmds = append(tr.cmds, c)
		}
	}
	if withSetup && tr.flags == nil || len(tr.cmds) == 0 {
		return nil, fmt.Errorf("section %q has no sh block starting the emulator, or no console commands", heading)
	}
	return tr, nil
}

// transcriptPattern turns expected output into a regular expression by the rules above.
func transcriptPattern(want string) *regexp.Regexp {
	want = continuation.ReplaceAllString(want, "")
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
}

// continuation is a line break followed by indentation: the next line continues this one.
var continuation = regexp.MustCompile(`\n[ \t]+`)

func TestREADME(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the documents' transcripts need %s, which is not installed", tool)
		}
	}
	docs := map[string][]string{} // each document's lines, as rewritten so far
	rewritten := map[string]int{}
	var setup *transcript
	for _, sec := range transcriptSections {
		lines, ok := docs[sec.file]
		if !ok {
			raw, err := os.ReadFile(sec.file)
			if err != nil {
				t.Fatal(err)
			}
			lines = strings.Split(string(raw), "\n")
		}
		tr, err := parseTranscript(lines, sec.heading, setup == nil)
		if err != nil {
			t.Fatalf("%s: %v", sec.file, err)
		}
		if setup == nil {
			setup = tr
		}
		var n int
		docs[sec.file], n = runTranscript(t, sec.file, lines, tr, setup)
		rewritten[sec.file] += n
	}
	if !updating() || t.Failed() {
		return
	}
	for file, n := range rewritten {
		if n == 0 {
			continue
		}
		if err := os.WriteFile(file, []byte(strings.Join(docs[file], "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %d transcript entries of %s", n, file)
	}
}

// TestEveryTranscriptRuns: every section of README.md and docs/*.md that shows a console
// TestOwnSetupTranscripts runs each of ownSetupSections as TestREADME runs the shared ones: the
// section's first ```sh block starts its own emulator, and every "$ " command's output must
// match. With -update it rewrites the outputs that no longer match.
func TestOwnSetupTranscripts(t *testing.T) {
	for _, sec := range ownSetupSections {
		t.Run(sec.file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(sec.file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(raw), "\n")
			tr, err := parseTranscript(lines, sec.heading, true)
			if err != nil {
				t.Fatalf("%s: %v", sec.file, err)
			}
			lines, n := runTranscript(t, sec.file, lines, tr, tr)
			if !updating() || t.Failed() || n == 0 {
				return
			}
			if err := os.WriteFile(sec.file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %d transcript entries of %s", n, sec.file)
		})
	}
}

// command is run by TestREADME or named in shownOnly, and every section named exists.
func TestEveryTranscriptRuns(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[docSection]bool{}
	for _, sec := range transcriptSections {
		known[sec] = true
	}
	for _, sec := range ownSetupSections {
		known[sec] = true
	}
	for sec := range shownOnly {
		known[sec] = true
	}
	found := map[docSection]bool{}
	for _, file := range append([]string{"README.md"}, files...) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range consoleSections(file, strings.Split(string(raw), "\n")) {
			found[sec] = true
			if !known[sec] {
				t.Errorf("%s: %q shows console commands that no test runs: add it to transcriptSections in readme_test.go (or to shownOnly, saying why it cannot run)", sec.file, sec.heading)
			}
		}
	}
	for sec := range known {
		if !found[sec] {
			t.Errorf("%s: no section %q with console commands, which readme_test.go names", sec.file, sec.heading)
		}
	}
}

// consoleSections lists the "## " sections of a document that hold a console block with a
// "$ " command.
func consoleSections(file string, lines []string) []docSection {
	var out []docSection
	heading, fence := "", ""
	for _, l := range lines {
		switch {
		case fence == "" && strings.HasPrefix(l, "```"):
			fence = strings.TrimPrefix(l, "```")
		case fence != "" && l == "```":
			fence = ""
		case fence == "" && strings.HasPrefix(l, "## "):
			heading = l
		case fence == "console" && strings.HasPrefix(l, "$ "):
			if sec := (docSection{file, heading}); len(out) == 0 || out[len(out)-1] != sec {
				out = append(out, sec)
			}
		}
	}
	return out
}

// runTranscript runs a section of file's commands against a fresh emulator started as setup
// says and compares their output. Under -update it returns the document's lines with the entries that no
// longer match rewritten, and how many those are.
func runTranscript(t *testing.T, file string, lines []string, tr, setup *transcript) ([]string, int) {
	t.Helper()
	in := serve(t, nil, append(slices.Clone(setup.flags), "--addr", "127.0.0.1:0")...)
	defer in.stop(t)
	base := "http://" + in.addr
	dir := t.TempDir()
	// No ~/.curlrc, no proxies; what a command writes (mktemp, say) stays in the test's directory.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "LC_ALL=C"}
	preamble := strings.ReplaceAll(setup.preamble, docBase, base)

	var renames []string // old, new pairs of ids that changed, under -update
	rewrite := map[int][]string{}
	for _, c := range tr.cmds {
		cmd := strings.NewReplacer(renames...).Replace(c.cmd)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		sh := exec.CommandContext(ctx, "bash", "-c", preamble+"\n"+strings.ReplaceAll(cmd, docBase, base))
		sh.Dir, sh.Env = dir, env
		var stderr strings.Builder
		sh.Stderr = &stderr
		out, err := sh.Output()
		cancel()
		if err != nil {
			t.Errorf("%s:%d: $ %s\nfailed: %v\n%s", file, c.line+1, cmd, err, stderr.String())
			continue
		}
		got := strings.TrimRight(strings.ReplaceAll(string(out), base, docBase), "\n")
		if c.want == nil {
			continue
		}
		want := strings.NewReplacer(renames...).Replace(strings.Join(c.want, "\n"))
		if transcriptPattern(want).MatchString(got) {
			if want != strings.Join(c.want, "\n") || cmd != c.cmd {
				rewrite[c.line] = append(strings.Split("$ "+cmd, "\n"), strings.Split(want, "\n")...)
			}
			continue
		}
		if !updating() {
			t.Errorf("%s:%d: $ %s\nwant (... matches anything):\n%s\ngot:\n%.3000s\n(go test -run TestREADME -update . rewrites the transcript)", file, c.line+1, cmd, want, got)
			continue
		}
		updated := refit(want, got)
		renames = append(renames, changedIDs(want, updated)...)
		rewrite[c.line] = append(strings.Split("$ "+cmd, "\n"), strings.Split(updated, "\n")...)
	}
	if !updating() || len(rewrite) == 0 {
		return lines, 0
	}
	// Rewrite the commands and outputs that changed, last first so line numbers hold, then carry
	// the changed ids into the rest of the section (prose and other blocks).
	lines = slices.Clone(lines)
	end := tr.to
	for i := len(tr.cmds) - 1; i >= 0; i-- {
		c := tr.cmds[i]
		if r, ok := rewrite[c.line]; ok {
			old := c.wantFrom + len(c.want) - c.line
			lines = slices.Replace(lines, c.line, c.wantFrom+len(c.want), r...)
			end += len(r) - old
		}
	}
	if len(renames) > 0 {
		rn := strings.NewReplacer(renames...)
		for i := tr.from; i < end; i++ {
			lines[i] = rn.Replace(lines[i])
		}
	}
	return lines, len(rewrite)
}

// uuidRE matches a whole UUID.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// changedIDs pairs the UUIDs of an old and a rewritten output, in order, and returns the
// replacements (old, new, ...) for those that changed, with their shortened forms ("8a9fc5d3-").
func changedIDs(old, updated string) []string {
	a, b := uuidRE.FindAllString(old, -1), uuidRE.FindAllString(updated, -1)
	if len(a) != len(b) {
		return nil
	}
	var out []string
	for i := range a {
		if a[i] != b[i] {
			out = append(out, a[i], b[i], a[i][:9], b[i][:9])
		}
	}
	return out
}

// A token is a run of letters, digits and underscores, or one other character; in expected
// output, "..." and a line break with indentation are tokens of their own.
var (
	wantTokens = regexp.MustCompile(`(?s)\.\.\.|\n[ \t]+|[A-Za-z0-9_]+|.`)
	gotTokens  = regexp.MustCompile(`(?s)[A-Za-z0-9_]+|.`)
)

// refit rewrites expected output to match got while keeping its "..." and wrapped lines where
// the text around them still fits: it aligns the two token by token at the least number of
// changed tokens ("..." absorbs any run of tokens for free) and takes got's tokens where they
// differ.
func refit(want, got string) string {
	e := wantTokens.FindAllString(want, -1)
	a := gotTokens.FindAllString(got, -1)
	m, n := len(e), len(a)
	const inf = 1 << 30
	cost := make([][]int, m+1)
	for i := range cost {
		cost[i] = make([]int, n+1)
	}
	kind := func(tok string) byte {
		switch {
		case tok == "...":
			return 'e' // elision
		case continuation.MatchString(tok):
			return 'w' // wrap
		}
		return 'l'
	}
	for i := 0; i <= m; i++ {
		for j := 0; j <= n; j++ {
			if i == 0 && j == 0 {
				continue
			}
			best := inf
			if j > 0 {
				best = cost[i][j-1] + 1 // got has a token want lacks
			}
			if i > 0 {
				switch kind(e[i-1]) {
				case 'e':
					best = min(best, cost[i-1][j])
					if j > 0 {
						best = min(best, cost[i][j-1])
					}
				case 'w':
					best = min(best, cost[i-1][j])
				default:
					best = min(best, cost[i-1][j]+1) // want has a token got lacks
					if j > 0 {
						d := 1
						if e[i-1] == a[j-1] {
							d = 0
						}
						best = min(best, cost[i-1][j-1]+d)
					}
				}
			}
			cost[i][j] = best
		}
	}
	// Walk back from the end, preferring to keep want's tokens.
	var out []string
	i, j := m, n
	for i > 0 || j > 0 {
		c := cost[i][j]
		if i > 0 {
			switch kind(e[i-1]) {
			case 'e':
				if j > 0 && cost[i][j-1] == c {
					j-- // absorbed by the elision
					continue
				}
				if cost[i-1][j] == c {
					out = append(out, e[i-1])
					i--
					continue
				}
			case 'w':
				if cost[i-1][j] == c {
					out = append(out, e[i-1])
					i--
					continue
				}
			default:
				if j > 0 && e[i-1] == a[j-1] && cost[i-1][j-1] == c {
					out = append(out, e[i-1])
					i, j = i-1, j-1
					continue
				}
				if j > 0 && cost[i-1][j-1]+1 == c {
					out = append(out, a[j-1])
					i, j = i-1, j-1
					continue
				}
				if cost[i-1][j]+1 == c {
					i--
					continue
				}
			}
		}
		out = append(out, a[j-1])
		j--
	}
	var b strings.Builder
	for k := len(out) - 1; k >= 0; k-- {
		b.WriteString(out[k])
	}
	return b.String()
}

func TestTranscriptRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1}`, `{"a":1}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":...}`, `{"a":{"b":[1,2]}}`, true},
		{`{"a":...}`, `{"a":}`, true},                    // ... may stand for nothing
		{`{"a":...,"c":3}`, `{"a":1,"b":2,"c":3}`, true}, // ... spans anything between its neighbours
		{`{"a":...,"c":3}`, `{"a":1,"b":2,"c":4}`, false},
		{"{\"a\":1,\n   \"b\":2}", `{"a":1,"b":2}`, true}, // an indented line continues the one above
		{"{\"a\":1,\n\"b\":2}", `{"a":1,"b":2}`, false},   // an unindented one is a line of its own
		{"one\ntwo", "one\ntwo", true},
		{"one...", "one\ntwo", true},
		{`a.b(c)*`, `a.b(c)*`, true}, // everything else is literal
		{`a.b(c)*`, `axb(c)`, false},
	}
	for _, tc := range tests {
		if got := transcriptPattern(tc.want).MatchString(tc.got); got != tc.ok {
			t.Errorf("%q against %q: %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
}

func TestTranscriptRefit(t *testing.T) {
	t.Parallel()
	tests := []struct{ want, got, refitted string }{
		// A changed number is replaced in place; the elisions around it stay.
		{`{"id":"aa",...,"size_bytes":47871},...]`, `{"id":"aa","x":1,"size_bytes":986400},{"more":1}]`,
			`{"id":"aa",...,"size_bytes":986400},...]`},
		// A shortened id keeps its shortening; wrapped lines stay wrapped.
		{"{\"id\":\"8a9fc5d3-...\",\n \"status\":\"queued\"}", `{"id":"5be136b2-58f8-569b-8ae4-d93e17e4c189","status":"queued"}`,
			"{\"id\":\"5be136b2-...\",\n \"status\":\"queued\"}"},
		// New fields appear, vanished ones go.
		{`{"a":1,"b":2}`, `{"a":1,"c":3}`, `{"a":1,"c":3}`},
		{`{"a":1}`, `{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{`{"a":1,"b":2}`, `{"a":1}`, `{"a":1}`},
		{``, `x`, `x`},
		{`x`, ``, ``},
	}
	for _, tc := range tests {
		got := refit(tc.want, tc.got)
		if got != tc.refitted {
			t.Errorf("refit(%q, %q) = %q, want %q", tc.want, tc.got, got, tc.refitted)
		}
		if !transcriptPattern(got).MatchString(tc.got) {
			t.Errorf("refit(%q, %q) = %q, which does not match what it was refitted to", tc.want, tc.got, got)
		}
	}
	old := `{"id":"8a9fc5d3-0589-5db5-a109-20f13cd63dad","quote_id":"e4e9d697-2cc8-51a6-8b95-54015a58dcdd"}`
	updated := `{"id":"5be136b2-58f8-569b-8ae4-d93e17e4c189","quote_id":"e4e9d697-2cc8-51a6-8b95-54015a58dcdd"}`
	if got := changedIDs(old, updated); strings.Join(got, " ") != "8a9fc5d3-0589-5db5-a109-20f13cd63dad 5be136b2-58f8-569b-8ae4-d93e17e4c189 8a9fc5d3- 5be136b2-" {
		t.Errorf("changedIDs = %q", got)
	}
}

func TestParseTranscript(t *testing.T) {
	t.Parallel()
	doc := strings.Split("# x\n## The client flow in curl\n```sh\n"+
		"go build -o mediagen-emulator . && ./mediagen-emulator --clock manual --seed 1 &\nB=http://127.0.0.1:8080\n```\n"+
		"```console\n$ curl -s $B/a \\\n    -d x\n{\"a\":1}\n {\"b\":2}\n$ curl -s $B/b\n```\n"+
		"```console\n$ echo hi\nhi\n```\n## Next\n```console\n$ not this\n```\n", "\n")
	tr, err := parseTranscript(doc, "## The client flow in curl", true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tr.flags, " ") != "--clock manual --seed 1" || tr.preamble != "B=http://127.0.0.1:8080" || len(tr.cmds) != 3 {
		t.Fatalf("parsed %+v", tr)
	}
	c := tr.cmds[0]
	if c.cmd != "curl -s $B/a \\\n    -d x" || strings.Join(c.want, "|") != `{"a":1}| {"b":2}` || c.line != 7 || c.wantFrom != 9 {
		t.Errorf("first command: %+v", c)
	}
	if tr.cmds[1].want != nil || tr.cmds[2].cmd != "echo hi" || strings.Join(tr.cmds[2].want, "") != "hi" {
		t.Errorf("commands: %+v", tr.cmds[1:])
	}
	if _, err := parseTranscript(doc, "## Missing", false); err == nil {
		t.Error("a missing section parsed")
	}
	// A "## " line inside a fenced block is output, not the next section.
	doc = strings.Split("## A\n```console\n$ head -1 x.md\n## Heading\n$ echo b\nb\n```\n## B\n", "\n")
	tr, err = parseTranscript(doc, "## A", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.cmds) != 2 || strings.Join(tr.cmds[0].want, "|") != "## Heading" || tr.to != 7 {
		t.Errorf("a heading in a console block: %+v", tr)
	}
}

// firstTestMarker marks a block of the README's "Your first test" as one of the files or the
// commands a language's first test is made of: <!-- first-test LANG: NAME -->. scripts/dist-test
// reads the Python and TypeScript ones by the same markers and runs them.
var firstTestMarker = regexp.MustCompile(`^<!-- first-test ([a-z]+): (\S+) -->$`)

// firstTestBlocks returns the README's first-test blocks by "LANG: NAME", each the text of the
// fenced block right after its marker.
func firstTestBlocks(text string) (map[string]string, error) {
	blocks := map[string]string{}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := firstTestMarker.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("line %d: the marker %q is not followed by a fenced block", i+1, l)
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			return nil, fmt.Errorf("line %d: the block after %q is not closed", i+1, l)
		}
		blocks[m[1]+": "+m[2]] = strings.Join(lines[i+2:i+2+end], "\n") + "\n"
	}
	return blocks, nil
}

// TestREADMEFirstTestBlocks: the README marks every block scripts/dist-test and
// TestREADMEGoFirstTest run.
func TestREADMEFirstTestBlocks(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := firstTestBlocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Each test generates with wait=true; each language's commands install the built packages.
	for name, must := range map[string]string{
		"python: test_first.py": "wait=true", "typescript: first.test.ts": "wait=true", "go: first_test.go": "wait=true",
		"python: commands": "dist/", "typescript: commands": "dist/", "go: setup": "go mod init", "go: run": "go test",
	} {
		if b, ok := blocks[name]; !ok {
			t.Errorf("README.md: no block marked <!-- first-test %s -->", name)
		} else if !strings.Contains(b, must) {
			t.Errorf("README.md: the first-test block %q does not hold %q", name, must)
		}
	}
	if _, err := firstTestBlocks("<!-- first-test go: x.go -->\ntext\n"); err == nil {
		t.Error("a marker without a block was accepted")
	}
}

// TestREADMEGoFirstTest runs the README's Go first test as a reader would: in a folder beside
// the checkout, the README's setup commands (a module of its own pointed at the checkout), the
// test file, then its run commands, in that order.
func TestREADMEGoFirstTest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs another test package")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	// The first test generates with wait=true on emulatortest's default clock, which answers at
	// once only on the skip clock; on the manual clock it would wait --max-wait.
	emu := emulatortest.Start(t)
	resp, err := http.Get(emu.URL + "/_emulator/clock")
	if err != nil {
		t.Fatal(err)
	}
	var clock api.Clock
	err = json.NewDecoder(resp.Body).Decode(&clock)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if clock.Mode != "skip" {
		t.Skipf("emulatortest's default clock is %q; the README's first test needs the skip clock", clock.Mode)
	}

	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := firstTestBlocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go: setup", "go: run"} {
		if blocks[name] == "" {
			t.Fatalf("README.md: no block marked <!-- first-test %s -->", name)
		}
	}
	// The reader's folder: the checkout beside the module the setup makes.
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	if err := os.Symlink(repo, filepath.Join(parent, "mediagen-emulator")); err != nil {
		t.Fatal(err)
	}
	script := blocks["go: setup"] + "\ncat >first_test.go <<'FIRST_TEST_GO'\n" + blocks["go: first_test.go"] +
		"FIRST_TEST_GO\n" + blocks["go: run"]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = parent
	// The reader's go, outside any workspace; modules come from the cache the checkout filled.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-count=1", "PATH="+filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's Go first test, its commands in order: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok  \texample.com/myclient") {
		t.Errorf("README.md's Go first test did not run:\n%s", out)
	}
}

// linkedDocs are the documents whose links TestDocLinks checks, besides docs/*.md.
var linkedDocs = []string{"README.md", "CHANGELOG.md", "examples/README.md", "clients/python/README.md", "clients/node/README.md"}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6} (.+)$`)
	htmlID    = regexp.MustCompile(`<a id="([^"]+)"`)
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}_ -]`)
)

// TestDocLinks: every link of the README, the guides and the helpers' READMEs to a file of the
// repository names one that exists, and every #anchor names a heading of its document, so moving
// a section cannot leave a link behind.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	guides, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // by document, read once
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = docAnchors(string(raw))
		return anchors[file]
	}
	for _, file := range append(slices.Clone(linkedDocs), guides...) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range outsideFences(strings.Split(string(raw), "\n")) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: a link to %s, which does not exist", file, i+1, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
					t.Errorf("%s:%d: a link to %s, whose document has no heading #%s", file, i+1, target, anchor)
				}
			}
		}
	}
}

// outsideFences returns a document's lines with those of fenced blocks blanked, so that line
// numbers hold.
func outsideFences(lines []string) []string {
	out := make([]string, len(lines))
	fenced := false
	for i, l := range lines {
		switch {
		case !fenced && strings.HasPrefix(l, "```"):
			fenced = true
		case fenced:
			fenced = l != "```"
		default:
			out[i] = l
		}
	}
	return out
}

// docAnchors returns the anchors a document's headings get, as GitHub makes them (lower case,
// punctuation dropped, spaces as hyphens, "-1", "-2" on repeats), and its <a id="..."> anchors.
func docAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range outsideFences(strings.Split(text, "\n")) {
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func TestDocAnchors(t *testing.T) {
	t.Parallel()
	got := docAnchors("# Top\n## Tenants: many isolated tests on one emulator\n## The emulator's `OpenAPI` document\n" +
		"```sh\n# not a heading\n```\n## Scenarios\n### Scenarios\n<a id=\"drift-spend\"></a>**x**\n")
	for _, want := range []string{"top", "tenants-many-isolated-tests-on-one-emulator", "the-emulators-openapi-document", "scenarios", "scenarios-1", "drift-spend"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a fenced block made an anchor")
	}
}
