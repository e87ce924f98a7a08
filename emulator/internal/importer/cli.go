package importer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
	"github.com/mediagen/mediagen-emulator/internal/atomicfile"
)

// KeyVariable is the environment variable that holds the live key when --key is not given.
const KeyVariable = "MEDIAGEN_IMPORT_KEY"

const importUsage = `Usage: mediagen-emulator import --from URL [--key KEY] [--out FILE] [--models GLOB,...] [--grouped] [--probe-prices] [--timeout D]

Reads a live service's catalog (models, categories, details, free quotes) and writes a catalog
file the emulator serves. The key comes from --key or ` + KeyVariable + ` and is never written.

Flags:
`

const driftUsage = `Usage: mediagen-emulator drift --from URL [--key KEY] --catalog FILE [--models GLOB,...] [--grouped] [--spend N] [--timeout D]

Compares a catalog file with the live service and prints every difference. Only with --spend N
does it generate (spending at most N credits of the live account): one cheapest generation per
output type, whose answers are compared in shape with the emulator's. Exit status: 0 when
nothing differs, 1 when something does, 2 on a usage or connection error.

Flags:
`

// Main runs the import or drift command and returns its exit status. ref builds the emulator
// drift --spend compares with.
func Main(ctx context.Context, command string, args []string, getenv func(string) string, stdout, stderr io.Writer, ref Reference) int {
	fs := flag.NewFlagSet("mediagen-emulator "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var out, catalogFile, models string
	fs.StringVar(&o.From, "from", "", "base URL of the live service")
	fs.StringVar(&o.Key, "key", "", "API key of the live service (default $"+KeyVariable+")")
	fs.StringVar(&models, "models", "", "comma-separated id globs to keep (* matches slashes too); an id without wildcards is fetched even when unlisted")
	fs.BoolVar(&o.Grouped, "grouped", false, "read product names and modes from the grouped listing")
	timeout := fs.Duration("timeout", DefaultTimeout, "give up when the whole command takes longer than this")
	switch command {
	case "import":
		fs.StringVar(&out, "out", "-", "file to write (- for standard output)")
		fs.BoolVar(&o.ProbePrices, "probe-prices", false, "quote variations of each example to learn how inputs drive the price")
		fs.Usage = func() { fmt.Fprint(stderr, importUsage); fs.PrintDefaults() }
	case "drift":
		fs.StringVar(&catalogFile, "catalog", "", "catalog file to compare")
		fs.Int64Var(&o.Spend, "spend", 0, "spend at most this many live credits on one cheapest generation per output type, compared with the emulator's (0: never generate)")
		fs.Usage = func() { fmt.Fprint(stderr, driftUsage); fs.PrintDefaults() }
	default:
		fmt.Fprintf(stderr, "mediagen-emulator: unknown command %q\n", command)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mediagen-emulator %s: %s\n", command, fmt.Sprintf(format, a...))
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if o.From == "" {
		return fail("--from is required")
	}
	if o.Key == "" {
		o.Key = getenv(KeyVariable)
	}
	for _, m := range strings.Split(models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			if msg := glob.Check(m); msg != "" {
				return fail("--models %q: %s", m, msg)
			}
			o.Models = append(o.Models, m)
		}
	}
	if *timeout <= 0 {
		return fail("--timeout must be positive")
	}
	if o.Spend < 0 {
		return fail("--spend must be a number of credits, 0 or more")
	}
	o.Reference = ref
	o.Progress = stderr
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	failed := func(err error) int {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail("gave up after %v (--timeout): %s", *timeout, Redact(err.Error(), o.Key))
		}
		return fail("%s", Redact(err.Error(), o.Key))
	}
	if command == "drift" {
		if catalogFile == "" {
			return fail("--catalog is required")
		}
		diffs, err := Drift(ctx, o, catalogFile)
		if err != nil {
			return failed(err)
		}
		fmt.Fprint(stdout, Report(diffs))
		if len(diffs) > 0 {
			return 1
		}
		return 0
	}
	// An --out that cannot be written is found before the service is read, not after.
	var file *atomicfile.File
	if out != "-" {
		if fi, err := os.Stat(out); err == nil && !fi.Mode().IsRegular() {
			return fail("--out %s: not a regular file", out)
		}
		f, err := atomicfile.Create(out)
		if err != nil {
			return fail("--out: %v", err)
		}
		defer f.Discard()
		file = f
	}
	res, err := Import(ctx, o)
	if err != nil {
		return failed(err)
	}
	if file == nil {
		_, err = stdout.Write(res.YAML)
	} else {
		// A failed import never leaves half a catalog behind.
		err = file.Commit(res.YAML, 0o644)
	}
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stderr, "imported %s with %s; %s\n", plural(res.Models, "model"), plural(res.Quotes, "quote"), plural(len(res.Warnings), "warning"))
	return 0
}

// Redact removes the keys from a text, should the service (or anything on the way) have echoed
// one; every command that holds a key of the live service words its output through it.
func Redact(s string, keys ...string) string {
	for _, k := range keys {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[key]")
		}
	}
	return s
}
