package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

const (
	defaultYAMLPath     = "../../../fixtures/catalog/default.yaml"
	defaultSnapshotPath = "../../../fixtures/catalog/default.snapshot"
)

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSnapshotIsCurrent fails when fixtures/catalog/default.snapshot is not what
// `go generate ./fixtures` makes of fixtures/catalog/default.yaml today.
func TestSnapshotIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := BuildSnapshot("default.yaml", readFixture(t, defaultYAMLPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFixture(t, defaultSnapshotPath), want) {
		t.Fatal("fixtures/catalog/default.snapshot is stale: run go generate ./fixtures")
	}
}

// TestSnapshotAnswersAsParsed: the catalog loaded from the snapshot is the catalog parsing the
// YAML gives, in everything it answers.
func TestSnapshotAnswersAsParsed(t *testing.T) {
	t.Parallel()
	source := readFixture(t, defaultYAMLPath)
	parsed, err := Parse("default.yaml", source)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadSnapshot(readFixture(t, defaultSnapshotPath), source)
	if err != nil {
		t.Fatal(err)
	}
	compareCatalogs(t, parsed, loaded)

	// And for a catalog with every kind of rule, own products and no declared accounts.
	for name, src := range map[string][]byte{"small": readCatalogFile(t, "small.yaml"), "models only": []byte(modelsOnlyYAML), "model inputs": []byte(modelInputsYAML(validInputs))} {
		snap, err := BuildSnapshot(name, src)
		if err != nil {
			t.Fatal(err)
		}
		parsed, _ := Parse(name, src)
		loaded, err := LoadSnapshot(snap, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		compareCatalogs(t, parsed, loaded)
	}
}

func compareCatalogs(t *testing.T, want, got *Catalog) {
	t.Helper()
	if !reflect.DeepEqual(got.Products, want.Products) || !reflect.DeepEqual(got.Accounts, want.Accounts) || !reflect.DeepEqual(got.Keys, want.Keys) {
		t.Errorf("products, accounts or keys differ")
	}
	if len(got.Models) != len(want.Models) {
		t.Fatalf("%d models; want %d", len(got.Models), len(want.Models))
	}
	for i, w := range want.Models {
		g := got.Models[i]
		// The snapshot drops what only loading needed, and compiles schemas on first use.
		wc, gc := *w, *g
		wc.openAPISchema, wc.input, gc.input, wc.ownProduct = nil, nil, nil, false
		if !reflect.DeepEqual(gc, wc) {
			t.Errorf("model %s differs", w.ID)
			continue
		}
		if m, ok := got.Model(w.ID); !ok || m != g {
			t.Errorf("Model(%q) does not find it", w.ID)
		}
		for _, input := range append(append([]string{}, rawStrings(w.Examples)...), `{}`, `{"prompt": 5}`, `{"num_images": 1e1000001}`) {
			we, ge := w.Validate(catalogtest.Input(t, input)), g.Validate(catalogtest.Input(t, input))
			if !reflect.DeepEqual(violationsOrNil(ge), violationsOrNil(we)) {
				t.Errorf("model %s, input %s: %v; want %v", w.ID, input, ge, we)
			}
		}
	}
	for _, q := range []struct{ search, category string }{{"", ""}, {"flux", ""}, {"", "text-to-image"}, {"pro", "text-to-video"}, {"zzz", ""}} {
		wf, gf := want.Find(q.search, q.category), got.Find(q.search, q.category)
		if !reflect.DeepEqual(ids(gf), ids(wf)) {
			t.Errorf("Find(%q, %q) = %q; want %q", q.search, q.category, ids(gf), ids(wf))
		}
		wg, wt := want.Group(wf, 1, 3)
		gg, gt := got.Group(gf, 1, 3)
		if gt != wt || fmt.Sprint(groupIDs(gg)) != fmt.Sprint(groupIDs(wg)) {
			t.Errorf("Group: %d %v; want %d %v", gt, groupIDs(gg), wt, groupIDs(wg))
		}
	}
	if !reflect.DeepEqual(got.Categories(), want.Categories()) {
		t.Errorf("categories differ")
	}
}

func rawStrings(raws []json.RawMessage) []string {
	var out []string
	for _, r := range raws {
		out = append(out, string(r))
	}
	return out
}

func violationsOrNil(err error) []schema.Violation {
	if err == nil {
		return nil
	}
	return schema.Violations(err)
}

// modelsOnlyYAML is a catalog of one model and nothing else, whose schema has numbers, arrays and
// a $ref.
const modelsOnlyYAML = `models:
  - id: b
    name: B
    description: A model with numbers in many places.
    category: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
        num_images: {type: integer, minimum: 1, maximum: 4}
        guidance: {type: number, minimum: 0, maximum: 20}
        tags: {type: array, maxItems: 4, items: {type: number}}
        refs: {$ref: "#/$defs/short"}
        scores: {type: array, items: {type: number, maximum: 1}}
        nested:
          type: object
          properties:
            sizes: {type: array, maxItems: 2, items: {type: object, properties: {w: {type: integer}}}}
      $defs:
        short: {type: array, maxItems: 2, items: {type: integer}}
      examples: [{prompt: "a fox"}]
`

func ids(ms []*Model) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func groupIDs(groups []ProductModes) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Product.ID+":"+strings.Join(ids(g.Models), ","))
	}
	return out
}

// TestSnapshotRefusesOtherSource: a snapshot is used only with the text it was made from.
func TestSnapshotRefusesOtherSource(t *testing.T) {
	t.Parallel()
	source := readFixture(t, defaultYAMLPath)
	snap := readFixture(t, defaultSnapshotPath)
	if _, err := LoadSnapshot(snap, append(source, '\n')); !errors.Is(err, ErrStaleSnapshot) {
		t.Errorf("changed source: %v; want ErrStaleSnapshot", err)
	}
	if _, err := LoadSnapshot(bytes.Replace(snap, fmt.Appendf(nil, `"version":%d,`, snapshotVersion), []byte(`"version":0,`), 1), source); !errors.Is(err, ErrStaleSnapshot) {
		t.Errorf("other version: %v; want ErrStaleSnapshot", err)
	}
	if _, err := LoadSnapshot(snap[:len(snap)/2], source); err == nil || errors.Is(err, ErrStaleSnapshot) {
		t.Errorf("truncated snapshot: %v; want a decoding error", err)
	}
}

// BenchmarkLoadSnapshot loads the embedded default catalog from its snapshot, as the emulator
// does at start; compare BenchmarkParseDefault.
func BenchmarkLoadSnapshot(b *testing.B) {
	source, snap := readFixture(b, defaultYAMLPath), readFixture(b, defaultSnapshotPath)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSnapshot(snap, source); err != nil {
			b.Fatal(err)
		}
	}
}

// startChildEnv makes the test binary, started again by BenchmarkStartToCatalogReady, load the
// embedded catalog as the named way says, print "ready" and exit.
const startChildEnv = "MEDIAGEN_CATALOG_START_CHILD"

func TestMain(m *testing.M) {
	if how := os.Getenv(startChildEnv); how != "" {
		os.Exit(startChild(how))
	}
	os.Exit(m.Run())
}

func startChild(how string) int {
	source, err := fs.ReadFile(fixtures.FS, "catalog/default.yaml")
	if err != nil {
		return 1
	}
	var c *Catalog
	switch how {
	case "snapshot":
		var snap []byte
		if snap, err = fs.ReadFile(fixtures.FS, "catalog/default.snapshot"); err != nil {
			return 1
		}
		c, err = LoadSnapshot(snap, source)
	case "parse":
		c, err = ParseWith("default.yaml", source, Options{Workers: 2, Trusted: true})
	}
	if err != nil || c == nil {
		fmt.Println(err)
		return 1
	}
	m, _ := c.Model("fal-ai/flux/schnell")
	if m == nil || m.Validate(map[string]any{"prompt": "x"}) != nil { // the first quote compiles one schema
		return 1
	}
	fmt.Println("ready")
	return 0
}

// BenchmarkStartToCatalogReady measures from starting a process to its embedded catalog being
// ready and one schema compiled, as for a first quote: this test binary started again, loading
// from the snapshot or, for comparison, parsing the YAML as a trusted catalog. The process's
// start (the runtime, and package initialisation, the JSON Schema library's ~9 ms of meta-schema
// compiling included) is part of the figure.
func BenchmarkStartToCatalogReady(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, how := range []string{"snapshot", "parse"} {
		b.Run(how, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), startChildEnv+"="+how)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				line, _ := bufio.NewReader(out).ReadString('\n')
				total += time.Since(start)
				if err := cmd.Wait(); err != nil || line != "ready\n" {
					b.Fatalf("child: %q, %v", line, err)
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-ready")
		})
	}
}
