package main

import (
	"flag"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// defaultFlags parses an empty command line with no MEDIAGEN_* variable set.
func defaultFlags(t *testing.T) (*flag.FlagSet, *options) {
	t.Helper()
	fs, o, envErrs := flagSet("mediagen-emulator", func(string) string { return "" }, io.Discard)
	if err := fs.Parse(nil); err != nil || len(envErrs) > 0 {
		t.Fatalf("parse: %v %v", err, envErrs)
	}
	return fs, o
}

// TestFlagDefaultsAreTheConfigDefaults: the command line given no flag builds the settings a
// zero emulator.Config becomes in NewServer, and the connection limits a zero ServeLimits
// becomes in Serve, so the defaults -h shows are the ones a Go test gets.
func TestFlagDefaultsAreTheConfigDefaults(t *testing.T) {
	t.Parallel()
	_, o := defaultFlags(t)
	cfg, err := configure(o)
	if err != nil {
		t.Fatal(err)
	}
	// NewServer applies the defaults to what the flags left out (the settings no flag names);
	// a setting a flag gives keeps the flag's value, so a flag whose default differed shows.
	got, want := cfg.WithDefaults(), emulator.Config{}.WithDefaults()
	got.Logger, want.Logger = nil, nil // two loggers that discard; configure leaves it to run
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the flags' defaults:\n%+v\nzero Config with defaults:\n%+v", got, want)
	}
	limits := emulator.ServeLimits{}.WithDefaults()
	if o.limits.BodyTimeout != limits.BodyTimeout || o.limits.IdleTimeout != limits.IdleTimeout {
		t.Errorf("--body-timeout %v and --idle-timeout %v; ServeLimits defaults %+v", o.limits.BodyTimeout, o.limits.IdleTimeout, limits)
	}
}

// TestReferenceFlagDefaults: the flags table in docs/reference.md names every flag of the
// command (bar the state and webhook flags, which have sections of their own), its variable,
// and the default -h shows.
func TestReferenceFlagDefaults(t *testing.T) {
	t.Parallel()
	fs, _ := defaultFlags(t)
	doc, err := os.ReadFile("docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `([A-Z_]+)` \\| ([^|]+) \\|")
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		name, variable, def := m[1], m[2], strings.TrimSpace(m[3])
		seen[name] = true
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("docs/reference.md documents --%s, which the command does not have", name)
			continue
		}
		if want := "MEDIAGEN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")); variable != want {
			t.Errorf("--%s: the table names %s, want %s", name, variable, want)
		}
		value, quoted := strings.CutPrefix(def, "`")
		value, _ = strings.CutSuffix(value, "`")
		switch {
		case !quoted: // "embedded", "random", "none": the flag's own default is empty
			if f.DefValue != "" {
				t.Errorf("--%s: the table says %q, -h shows %q", name, def, f.DefValue)
			}
		case isDuration(f):
			if d, err := time.ParseDuration(value); err != nil || d.String() != f.DefValue {
				t.Errorf("--%s: the table says %s, -h shows %s", name, value, f.DefValue)
			}
		case value != f.DefValue:
			t.Errorf("--%s: the table says %s, -h shows %s", name, value, f.DefValue)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] && !strings.HasPrefix(f.Name, "state") && !strings.HasPrefix(f.Name, "webhook") {
			t.Errorf("--%s is missing from the flags table in docs/reference.md", f.Name)
		}
	})
	if len(seen) < 10 {
		t.Errorf("found %d rows of the flags table; has its layout changed?", len(seen))
	}
}

// isDuration reports whether a flag takes a duration.
func isDuration(f *flag.Flag) bool {
	_, ok := f.Value.(flag.Getter).Get().(time.Duration)
	return ok
}
