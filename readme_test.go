package main

// The README's curl transcripts are run, not trusted. TestREADME reads the sections of
// README.md named in readmeSections:
//
//   - the first section's first ```sh block starts the emulator (the flags after
//     "mediagen-emulator" or "go run .") and sets shell variables (its second line);
//   - in each ```console block, a line starting with "$ " is a command (a line ending in "\"
//     continues on the next), and the lines after it, up to the next command, are its output.
//
// Each command runs in bash, after the variables, against an emulator the test starts with those
// flags on a free port, one fresh emulator per section; http://127.0.0.1:8080 stands for that emulator's address both in the
// commands and in the output. The output must equal what the README shows, with two shorthands:
//
//   - "..." matches any text, including none and line breaks;
//   - a line that begins with spaces or tabs continues the line above: the break and the
//     indentation are not part of the output (so long one-line answers can be wrapped).
//
// A command with no output under it is run and must succeed; its output is not compared.
//
// When the emulator's answers change (new ids, new media sizes), rewrite the transcript with
//
//	go test -run TestREADME -update .
//
// which replaces what no longer matches by what the emulator printed, keeping the README's "..."
// and line breaks where the text around them still fits, and carries changed ids into the
// commands that use them. Read the diff before committing it.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeSections are the README sections whose transcripts the tests run; the first starts
// the emulator and sets the variables for all of them.
var readmeSections = []string{"## The client flow in curl", "## Browsers (CORS)", "## Tenants: many isolated tests on one emulator", "## Verification and coverage", "## Snapshots: save, restore and share a tenant's world"}

const (
	readmePath = "README.md"
	// docBase is the emulator's address as the README writes it.
	docBase = "http://127.0.0.1:8080"
)

func init() {
	// -update is shared with the golden files of other packages; define it only once.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files and README transcripts from what the emulator answers")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// transcriptCmd is one "$ " command of a console block and the output shown under it.
type transcriptCmd struct {
	line     int    // the README line of the command, counted from 0
	cmd      string // the command, its continuation lines joined with "\n"
	want     []string
	wantFrom int // the README lines of want: [wantFrom, wantFrom+len(want))
}

// transcript is a README section's setup and commands.
type transcript struct {
	flags    []string // the emulator's flags
	preamble string   // the shell line that sets the variables
	cmds     []transcriptCmd
	from, to int // the section's lines
}

// parseTranscript reads the section titled heading from the README's lines; withSetup says
// that its first sh block starts the emulator.
func parseTranscript(lines []string, heading string, withSetup bool) (*transcript, error) {
	tr := &transcript{from: -1, to: len(lines)}
	for i, l := range lines {
		if l == heading {
			tr.from = i
		} else if tr.from >= 0 && strings.HasPrefix(l, "## ") {
			tr.to = i
			break
		}
	}
	if tr.from < 0 {
		return nil, fmt.Errorf("no section %q", heading)
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
			t.Skipf("the README's transcripts need %s, which is not installed", tool)
		}
	}
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var setup *transcript
	rewritten := 0
	for _, heading := range readmeSections {
		tr, err := parseTranscript(lines, heading, setup == nil)
		if err != nil {
			t.Fatalf("%s: %v", readmePath, err)
		}
		if setup == nil {
			setup = tr
		}
		var n int
		lines, n = runTranscript(t, lines, tr, setup)
		rewritten += n
	}
	if !updating() || t.Failed() || rewritten == 0 {
		return
	}
	if err := os.WriteFile(readmePath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %d transcript entries of %s", rewritten, readmePath)
}

// runTranscript runs a section's commands against a fresh emulator started as setup says and
// compares their output. Under -update it returns the README's lines with the entries that no
// longer match rewritten, and how many those are.
func runTranscript(t *testing.T, lines []string, tr, setup *transcript) ([]string, int) {
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
			t.Errorf("%s:%d: $ %s\nfailed: %v\n%s", readmePath, c.line+1, cmd, err, stderr.String())
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
			t.Errorf("%s:%d: $ %s\nwant (... matches anything):\n%s\ngot:\n%.3000s\n(go test -run TestREADME -update . rewrites the transcript)", readmePath, c.line+1, cmd, want, got)
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
	tr, err := parseTranscript(doc, readmeSections[0], true)
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
}
