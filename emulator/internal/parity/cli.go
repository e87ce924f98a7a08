package parity

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// Emulator builds the emulator the live service is compared with, over a catalog file (""
// for the embedded default): its handler, the catalog it serves, that catalog's name, and a
// function that stops it.
type Emulator func(catalogFile string) (h http.Handler, cat *catalog.Catalog, name string, stop func(), err error)

// The variables the keys lacking a permission come from when their flags are not given.
const (
	ReadOnlyKeyVariable     = "MEDIAGEN_PARITY_READ_ONLY_KEY"
	GenerateOnlyKeyVariable = "MEDIAGEN_PARITY_GENERATE_ONLY_KEY"
)

const usage = `Usage: mediagen-emulator parity --from URL [--key KEY] [--read-only-key KEY] [--generate-only-key KEY] [--catalog FILE] [--known FILE] [--record DIR] [--out FILE] [--markdown FILE] [--rate N] [--timeout D]

Sends each error case of the coverage list that a request can provoke without spending to the
live service and to an emulator over the catalog (the embedded one unless --catalog), and
compares the answers' shapes: status, problem code, member names and JSON types, errors[]
pointers and parameters, and the Content-Type, Retry-After, WWW-Authenticate and Allow
headers. No request names a quote that was issued, so none can start a generation. The key
comes from --key or ` + importer.KeyVariable + `; keys are never printed or written. With a key that
lacks a permission, the 403 cases are provoked too.

A 429 or 503 a case does not expect is waited out for its Retry-After (at most 30s a wait,
30s a run); past that the case is reported unavailable, an outage answered, not compared.

Exit status: 0 when no case differs in a way --known does not accept, 1 when one does or the
live service left a case unanswered, 2 on a usage or connection error or when --timeout
passes.

Flags:
`

// Main runs the parity command and returns its exit status.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, emulator Emulator) int {
	return runMain(ctx, args, getenv, stdout, stderr, emulator, nil, nil)
}

// runMain is Main with the run's waits and clock given (real ones when nil), so tests can run
// against a live service that asks to wait without waiting.
func runMain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, emulator Emulator,
	sleep func(context.Context, time.Duration) error, now func() time.Time) int {
	fs := flag.NewFlagSet("mediagen-emulator parity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	o := Options{sleep: sleep, now: now}
	var catalogFile, knownFile, out, markdown string
	fs.StringVar(&o.From, "from", "", "base URL of the live service")
	fs.StringVar(&o.Key, "key", "", "API key of the live service (default $"+importer.KeyVariable+")")
	fs.StringVar(&o.ReadOnlyKey, "read-only-key", "", "a live key that may read models but not generate, to provoke 403 on quotes, generation and jobs (default $"+ReadOnlyKeyVariable+")")
	fs.StringVar(&o.GenerateOnlyKey, "generate-only-key", "", "a live key that may generate but not read models, to provoke 403 on the model endpoints (default $"+GenerateOnlyKeyVariable+")")
	fs.StringVar(&catalogFile, "catalog", "", "catalog file the emulator serves (default: the embedded catalog)")
	fs.StringVar(&knownFile, "known", "", `JSON file of accepted differences, {"accept": [{"case": GLOB, "path": GLOB, "why": TEXT}]}`)
	fs.StringVar(&o.Record, "record", "", "folder to keep each live answer in, one JSON file per case (the key is never written)")
	fs.StringVar(&out, "out", "", "file to write the result to as JSON")
	fs.StringVar(&markdown, "markdown", "", "file to write the result to as markdown, such as $GITHUB_STEP_SUMMARY")
	fs.Float64Var(&o.Rate, "rate", DefaultRate, "most requests a second sent to the live service")
	timeout := fs.Duration("timeout", DefaultTimeout, "give up when the whole run takes longer than this")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediagen-emulator parity: %s\n", importer.Redact(fmt.Sprintf(format, a...), o.Key, o.ReadOnlyKey, o.GenerateOnlyKey))
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case o.From == "":
		return fail("--from is required")
	case *timeout <= 0:
		return fail("--timeout must be positive")
	case !(o.Rate > 0) || o.Rate > 1000:
		return fail("--rate must be more than 0 and at most 1000 requests a second")
	}
	if _, err := checkBase(o.From); err != nil {
		return fail("%v", err)
	}
	if o.Key == "" {
		o.Key = getenv(importer.KeyVariable)
	}
	if o.Key == "" {
		return fail("no key: give --key or set %s", importer.KeyVariable)
	}
	if o.ReadOnlyKey == "" {
		o.ReadOnlyKey = getenv(ReadOnlyKeyVariable)
	}
	if o.GenerateOnlyKey == "" {
		o.GenerateOnlyKey = getenv(GenerateOnlyKeyVariable)
	}
	if knownFile != "" {
		k, err := ReadKnown(knownFile)
		if err != nil {
			return fail("%v", err)
		}
		o.Known = k
	}
	// Files that cannot be written are found before the service is asked, not after.
	for _, f := range []struct{ flag, path string }{{"--out", out}, {"--markdown", markdown}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(f.path); err == nil && fi.IsDir() {
			return fail("%s %s: a folder, not a file", f.flag, f.path)
		}
		if _, err := os.Stat(filepath.Dir(f.path)); err != nil {
			return fail("%s %s: no folder %s", f.flag, f.path, filepath.Dir(f.path))
		}
	}
	if o.Record != "" {
		if err := os.MkdirAll(o.Record, 0o755); err != nil {
			return fail("--record: %v", err)
		}
	}
	h, cat, name, stop, err := emulator(catalogFile)
	if err != nil {
		return fail("%v", err)
	}
	defer stop()
	o.Emulator, o.Catalog, o.CatalogName = h, cat, name
	o.Progress = stderr
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail("gave up after %v (--timeout): %v", *timeout, err)
		}
		return fail("%v", err)
	}
	fmt.Fprint(stdout, res.Text())
	for _, f := range []struct {
		path string
		data []byte
	}{{out, res.JSON()}, {markdown, []byte(res.Markdown())}} {
		if f.path == "" {
			continue
		}
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return fail("%v", err)
		}
	}
	if res.Summary.Unavailable > 0 {
		var names []string
		for _, c := range res.Cases {
			if c.Result == Unavailable {
				names = append(names, c.Case)
			}
		}
		fmt.Fprintf(stderr, "mediagen-emulator parity: the live service left %d cases unanswered (429 or 503 past what a run waits), so they were not compared: %s\n",
			len(names), strings.Join(names, "; "))
	}
	if res.Failed() {
		return 1
	}
	return 0
}
