package battery

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
)

// Emulator starts an emulator for a run without --emulator: its base URL, its admin token
// ("" for none) and a function that stops it.
type Emulator func(ctx context.Context) (url, adminToken string, stop func(), err error)

// AdminTokenVariable is where --admin-token defaults from.
const AdminTokenVariable = "MEDIAGEN_ADMIN_TOKEN"

const usage = `Usage: mediagen-emulator conformance --adapter CMD [--battery v1] [--out DIR] [--emulator URL] [--admin-token T] [--timeout D] [--keep]
       mediagen-emulator conformance [flags] -- CMD [ARGS...]
       mediagen-emulator conformance --list [--battery v1]

Runs every case of a conformance battery against a client through its adapter: a small program
in the client's language that reads one task from MEDIAGEN_TASK as JSON ({"model", "input",
"output_dir"}), does it with the client against MEDIAGEN_EMULATOR_URL and MEDIAGEN_API_KEY, and
exits 0 when the client reports success with its outputs saved in output_dir, non-zero when it
reports failure. Each case runs in a fresh tenant (MEDIAGEN_TENANT) under a fixed adversity
plan, and passes when the exit is the one the case expects, the tenant's verdict has no
failure and the case's own checks hold.

CMD is split into words as a shell would (quotes and backslashes), but run without a shell.
Without --emulator, an emulator is started in-process (skipping clock, seed 1). Writes
conformance.json, conformance.md and badge.svg into --out.

Exit status: 0 when every case passed, 1 when one failed, 2 on a usage error or when the
battery could not be run.

Flags:
`

// Main runs the conformance command and returns its exit status.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, start Emulator) int {
	fs := flag.NewFlagSet("mediagen-emulator conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var adapter, name, out, emu, token string
	var list, keep bool
	fs.StringVar(&adapter, "adapter", "", "the adapter's command line, such as \"python3 adapter.py\"")
	fs.StringVar(&name, "battery", "v1", "the battery to run: "+strings.Join(Names(), ", "))
	fs.StringVar(&out, "out", "conformance", "folder to write conformance.json, conformance.md and badge.svg into")
	fs.StringVar(&emu, "emulator", "", "base URL of a running emulator (default: start one in-process)")
	fs.StringVar(&token, "admin-token", "", "the emulator's admin token, for its control API (default $"+AdminTokenVariable+")")
	timeout := fs.Duration("timeout", DefaultTimeout, "longest one case's adapter may run before it is killed")
	fs.BoolVar(&keep, "keep", false, "leave each case's tenant in place once judged, to read its journal")
	fs.BoolVar(&list, "list", false, "print the battery's cases and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediagen-emulator conformance: "+format+"\n", a...)
		return 2
	}
	b, err := Lookup(name)
	if err != nil {
		return fail("--battery: %v", err)
	}
	if list {
		if fs.NArg() > 0 || adapter != "" {
			return fail("--list runs no adapter")
		}
		fmt.Fprint(stdout, b.List())
		return 0
	}
	command := fs.Args()
	switch {
	case adapter != "" && len(command) > 0:
		return fail("give the adapter once: --adapter CMD or -- CMD [ARGS...]")
	case adapter != "":
		if command, err = Words(adapter); err != nil {
			return fail("--adapter: %v", err)
		}
	}
	switch {
	case len(command) == 0:
		return fail("no adapter: give --adapter CMD (see conformance -h)")
	case *timeout <= 0:
		return fail("--timeout must be positive")
	case out == "":
		return fail("--out must name a folder")
	}
	if token == "" {
		token = getenv(AdminTokenVariable)
	}
	if emu != "" {
		if u, err := url.Parse(emu); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("--emulator %q: want a base URL such as http://127.0.0.1:8080", emu)
		}
	}
	// A folder that cannot be written is found before the battery runs, not after.
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fail("--out: %v", err)
	}
	if emu == "" {
		var stop func()
		if emu, token, stop, err = start(ctx); err != nil {
			return fail("cannot start an emulator: %v", err)
		}
		defer stop()
	}
	res, err := Run(ctx, b, Options{Target: explore.Target{URL: emu, AdminToken: token, Client: &http.Client{Timeout: time.Minute}},
		Command: command, Timeout: *timeout, Keep: keep, Progress: stderr})
	if err != nil {
		return fail("%v", err)
	}
	if err := res.Write(out); err != nil {
		return fail("--out: %v", err)
	}
	fmt.Fprintf(stdout, "%s (%s)\n", res.Label(), out)
	for _, c := range res.Cases {
		if !c.Passed {
			fmt.Fprintf(stdout, "FAIL %s: %s\n", c.Name, failureText(c.Failures[0]))
		}
	}
	if !res.Passed() {
		return 1
	}
	return 0
}

// List is the battery's cases as a markdown table: each case's name, what a correct client
// reports, what the case does, and what must not show beside a failed verdict. The
// conformance guide holds this table as it is (a test compares them).
func (b *Battery) List() string {
	var s strings.Builder
	fmt.Fprintf(&s, "| case (battery %s, version %d: %d cases) | expects | what happens, and what a correct client does | must not show |\n|---|---|---|---|\n",
		b.Name, b.Version, len(b.Cases))
	for _, c := range b.Cases {
		var not []string
		for _, r := range c.Absent {
			not = append(not, "`"+r+"`")
		}
		if c.MaxJobs > 0 {
			not = append(not, fmt.Sprintf("more than %d job", c.MaxJobs))
		}
		if c.JobModel != "" {
			not = append(not, "a job of another model than `"+c.JobModel+"`")
		}
		for _, code := range c.NeverAnswered {
			not = append(not, "an answer `"+code+"`")
		}
		fmt.Fprintf(&s, "| `%s` | %s | %s | %s |\n", c.Name, c.Expect, cell(c.Description), strings.Join(not, ", "))
	}
	return s.String()
}

// Words splits a command line into words as a POSIX shell would, without expanding anything:
// blanks separate words, single quotes keep everything, double quotes keep everything but a
// backslash before ", \, $ or `, and a backslash outside quotes keeps the next character.
func Words(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case ch == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends the command")
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, errors.New("a double quote is not closed")
			}
			inWord = true
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
