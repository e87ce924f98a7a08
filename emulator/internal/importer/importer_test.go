package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// liveKey is the source catalog's own key, which must never reach the imported file.
const liveKey = "live_secret_key_4711"

// nonReady are the source's models that the listing does not show.
var nonReady = []string{"acme/pix/v0", "acme/clip/v2/i2v"}

// startService runs an emulator on a catalog file as the "live service".
func startService(t *testing.T, catalogFile string) *httptest.Server {
	t.Helper()
	srv, err := emulator.NewServer(emulator.Config{CatalogFile: catalogFile, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		t.Fatalf("start emulator on %s: %v", catalogFile, err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return hs
}

// sleeps records the waits an import asked for, without waiting.
type sleeps struct {
	mu  sync.Mutex
	all []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, d)
	return ctx.Err()
}

func importOptions(url string, sl *sleeps, progress io.Writer) importer.Options {
	return importer.Options{
		From: url, Key: liveKey, Grouped: true, ProbePrices: true, PageLimit: 3,
		Models:   append([]string{"**"}, nonReady...),
		Progress: progress, Sleep: sl.sleep,
	}
}

// importFile imports from a service into a temporary file.
func importFile(t *testing.T, o importer.Options) (string, *importer.Result) {
	t.Helper()
	res, err := importer.Import(context.Background(), o)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	path := filepath.Join(t.TempDir(), "imported.yaml")
	if err := os.WriteFile(path, res.YAML, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, res
}

// call sends one request and returns the status and the decoded body.
func call(t *testing.T, method, url, key string, body any) (int, any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	_ = dec.Decode(&out)
	return resp.StatusCode, out
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestImportServesTheSameCatalog(t *testing.T) {
	t.Parallel()
	src := startService(t, "testdata/source.yaml")
	var progress bytes.Buffer
	sl := &sleeps{}
	path, res := importFile(t, importOptions(src.URL, sl, &progress))
	if len(sl.all) != 0 {
		t.Errorf("a fault-free import waited %v", sl.all)
	}
	if res.Models != 8 {
		t.Errorf("imported %d models, want 8 (6 listed over 3 pages, 2 not ready)", res.Models)
	}
	if bytes.Contains(res.YAML, []byte(liveKey)) || strings.Contains(progress.String(), liveKey) {
		t.Error("the live key was written")
	}
	if problems := cli.ValidateFile(path); len(problems) > 0 {
		t.Fatalf("validate: %v", problems)
	}
	for _, want := range []string{"listing models: 3/6", "read 8/8 models", `"acme/clip/v2/i2v": price not observed (deprecated)`} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	again, err := importer.Import(context.Background(), importOptions(src.URL, sl, nil))
	if err != nil || !bytes.Equal(again.YAML, res.YAML) {
		t.Errorf("a second import of the same service differs (err %v)", err)
	}

	compareServices(t, src.URL, liveKey, startService(t, path).URL, nonReady, 25)
}

// compareServices checks that two services serve the same listings, categories and model
// documents, and the same credits for samples inputs (and the examples) of every model; extra
// names models the listing does not show.
func compareServices(t *testing.T, srcURL, srcKey, dstURL string, extra []string, samples int) {
	t.Helper()
	const testKey = "mg_test_all"
	for _, q := range []string{"/v1/models?limit=500", "/v1/models?grouped=true&limit=500", "/v1/models/categories",
		"/v1/models?limit=2&offset=3", "/v1/models?search=pix"} {
		_, a := call(t, "GET", srcURL+q, srcKey, nil)
		_, b := call(t, "GET", dstURL+q, testKey, nil)
		if !sameJSON(a, b) {
			t.Errorf("GET %s differs:\nsource   %s\nimported %s", q, mustJSON(a), mustJSON(b))
		}
	}
	_, list := call(t, "GET", srcURL+"/v1/models?limit=500", srcKey, nil)
	var ids []string
	for _, it := range list.(map[string]any)["data"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	for _, id := range append(ids, extra...) {
		sa, a := call(t, "GET", srcURL+"/v1/models/"+id, srcKey, nil)
		sb, b := call(t, "GET", dstURL+"/v1/models/"+id, testKey, nil)
		if sa != 200 || sb != 200 || !sameJSON(a, b) {
			t.Errorf("GET /v1/models/%s differs (%d, %d):\nsource   %s\nimported %s", id, sa, sb, mustJSON(a), mustJSON(b))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	quoted := 0
	for _, id := range append(ids, extra...) {
		_, detail := call(t, "GET", srcURL+"/v1/models/"+id, srcKey, nil)
		for _, input := range sampleInputs(detail.(map[string]any), rng, samples) {
			body := map[string]any{"model": id, "input": input}
			sa, a := call(t, "POST", srcURL+"/v1/quotes", srcKey, body)
			sb, b := call(t, "POST", dstURL+"/v1/quotes", testKey, body)
			if sa != sb {
				t.Errorf("%s %s: quote status %d from the source, %d from the import", id, mustJSON(input), sa, sb)
				continue
			}
			if sa != 200 {
				continue
			}
			quoted++
			ca, cb := a.(map[string]any)["credits"], b.(map[string]any)["credits"]
			if !sameJSON(ca, cb) {
				t.Errorf("%s %s: %v credits from the source, %v from the import", id, mustJSON(input), ca, cb)
			}
		}
	}
	if quoted < 5*samples {
		t.Errorf("only %d inputs compared", quoted)
	}
}

func TestImportTheDefaultCatalog(t *testing.T) {
	t.Parallel()
	srv, err := emulator.NewServer(emulator.Config{ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	src := httptest.NewServer(srv)
	t.Cleanup(func() {
		src.Close()
		srv.Close()
	})
	o := importer.Options{From: src.URL, Key: "mg_test_all", Grouped: true, ProbePrices: true, Sleep: (&sleeps{}).sleep}
	path, res := importFile(t, o)
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	compareServices(t, src.URL, "mg_test_all", startService(t, path).URL, nil, 8)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sampleInputs varies a model's first example at random over its properties' enums, ranges
// and lengths.
func sampleInputs(detail map[string]any, rng *rand.Rand, n int) []map[string]any {
	examples, _ := detail["examples"].([]any)
	if len(examples) == 0 {
		return nil
	}
	schema, _ := detail["input_schema"].(map[string]any)
	defs, _ := schema["$defs"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	var out []map[string]any
	for _, e := range examples {
		out = append(out, e.(map[string]any))
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	num := func(v any, def float64) float64 {
		if n, ok := v.(json.Number); ok {
			f, _ := n.Float64()
			return f
		}
		return def
	}
	for range n {
		in := map[string]any{}
		for k, v := range examples[0].(map[string]any) {
			in[k] = v
		}
		for _, name := range names {
			p, _ := props[name].(map[string]any)
			if ref, ok := p["$ref"].(string); ok {
				p, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
			}
			if rng.IntN(2) == 0 {
				continue
			}
			switch enum, _ := p["enum"].([]any); {
			case len(enum) > 0:
				in[name] = enum[rng.IntN(len(enum))]
			case p["type"] == "integer":
				lo, hi := num(p["minimum"], 0), num(p["maximum"], 10)
				in[name] = int(lo) + rng.IntN(int(hi-lo)+1)
			case p["type"] == "number":
				lo, hi := num(p["minimum"], 0), num(p["maximum"], 10)
				in[name] = lo + float64(rng.IntN(int(2*(hi-lo))+1))/2
			case p["type"] == "string" && p["format"] == nil:
				in[name] = importer.Filler(1 + rng.IntN(3000))
			}
		}
		out = append(out, in)
	}
	return out
}

// addFault injects a fault on the service through its control API.
func addFault(t *testing.T, url string, fault map[string]any) {
	t.Helper()
	if s, body := call(t, "POST", url+"/_emulator/faults", "", fault); s != http.StatusCreated {
		t.Fatalf("add fault: %d %v", s, body)
	}
}

func TestImportSurvivesFaults(t *testing.T) {
	t.Parallel()
	clean := startService(t, "testdata/source.yaml")
	want, err := importer.Import(context.Background(), importOptions(clean.URL, &sleeps{}, nil))
	if err != nil {
		t.Fatal(err)
	}

	src := startService(t, "testdata/source.yaml")
	addFault(t, src.URL, map[string]any{"match": map[string]any{"path": "/v1/models"}, "status": 429, "retry_after": 7, "count": 2})
	addFault(t, src.URL, map[string]any{"match": map[string]any{"path": "/v1/quotes"}, "status": 503, "count": 3})
	addFault(t, src.URL, map[string]any{"match": map[string]any{"path": "/v1/models/acme/**"}, "action": "reset", "count": 2})
	addFault(t, src.URL, map[string]any{"match": map[string]any{"path": "/v1/models/categories"}, "action": "malformed", "count": 1})
	sl := &sleeps{}
	got, err := importer.Import(context.Background(), importOptions(src.URL, sl, nil))
	if err != nil {
		t.Fatalf("import through faults: %v", err)
	}
	if !bytes.Equal(got.YAML, want.YAML) {
		t.Error("the import through faults differs from the one without")
	}
	_, faults := call(t, "GET", src.URL+"/_emulator/faults", "", nil)
	fired := 0
	for _, f := range faults.(map[string]any)["data"].([]any) {
		if n, ok := f.(map[string]any)["fired"].(json.Number); ok {
			k, _ := n.Int64()
			fired += int(k)
		}
	}
	if fired != 2+3+2+1 {
		t.Errorf("faults fired %d times, want 8: %s", fired, mustJSON(faults))
	}
	// Each 429 waits its Retry-After (7 s), each 503 its default Retry-After (1 s); a reset or
	// a malformed body backs off (Go's transport may itself retry a reset GET on a reused
	// connection, so those waits are not counted exactly).
	waits := map[time.Duration]int{}
	for _, d := range sl.all {
		waits[d]++
		if d > importer.MaxBackoff {
			t.Errorf("waited %v, more than the bound", d)
		}
	}
	if waits[7*time.Second] != 2 || waits[time.Second] != 3 || len(sl.all) < 6 {
		t.Errorf("waits %v: want two of 7 s, three of 1 s and at least one backoff", sl.all)
	}
}

func TestImportGivesUpOnAPersistentOutage(t *testing.T) {
	t.Parallel()
	src := startService(t, "testdata/source.yaml")
	addFault(t, src.URL, map[string]any{"match": map[string]any{"path": "/v1/*"}, "status": 503})
	sl := &sleeps{}
	_, err := importer.Import(context.Background(), importOptions(src.URL, sl, nil))
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want a connection error naming 503", err)
	}
	if len(sl.all) != importer.MaxAttempts-1 {
		t.Errorf("retried %d times, want %d", len(sl.all), importer.MaxAttempts-1)
	}
}

// modified writes a copy of the source catalog with one change of each kind drift reports.
func modified(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/source.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, r := range [][2]string{
		{"name: Pix v1\n", "name: Pix One\n"},
		{"    name: Pix\n    description: Acme's image family.\n", "    name: Pix Studio\n    description: Acme's image family.\n"},
		{"description: Speech and sound.\n", "description: Speech, sound and music.\n"},
		{"at two qualities.\n    category: upscaling\n    product: upscale\n    mode: upscaling\n    output_type: image\n    status: ready",
			"at two qualities.\n    category: upscaling\n    product: upscale\n    mode: upscaling\n    output_type: image\n    status: maintenance"},
		{"duration: {type: number, minimum: 1, maximum: 30, default: 5}", "duration: {type: number, minimum: 1, maximum: 60, default: 5}"},
		{"      base: 1\n      per_unit:\n        - {field: duration, credits: 0.5}", "      base: 2\n      per_unit:\n        - {field: duration, credits: 0.5}"},
		{"id: acme/voice/speak\n", "id: acme/voice/speak-v2\n"},
		{"  - id: acme/clip/v2/i2v\n", "  - id: acme/clip/v2/i2v-gone\n"},
		{"\n# The live service's own key", `
  - id: acme/pix/v2
    name: Pix v2
    description: The next Pix.
    category: text-to-image
    product: pix
    mode: text-to-image-v2
    output_type: image
    status: ready
    input_schema:
      type: object
      required: [prompt]
      properties:
        prompt: {type: string, minLength: 1}
      examples:
        - {prompt: "a fox"}
    pricing: {base: 4}

# The live service's own key`},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the source catalog no longer has %q", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	path := filepath.Join(t.TempDir(), "changed.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDrift(t *testing.T) {
	t.Parallel()
	src := startService(t, "testdata/source.yaml")
	path, _ := importFile(t, importOptions(src.URL, &sleeps{}, nil))
	o := importer.Options{From: src.URL + "/v1/", Key: liveKey, Grouped: true, Sleep: (&sleeps{}).sleep}
	diffs, err := importer.Drift(context.Background(), o, path)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("drift against the service imported from: %v, %v", diffs, err)
	}

	changed := startService(t, modified(t))
	o.From = changed.URL
	diffs, err = importer.Drift(context.Background(), o, path)
	if err != nil {
		t.Fatal(err)
	}
	report := importer.Report(diffs)
	want := []string{
		`renamed  acme/pix/v1: name "Pix v1" -> "Pix One"`,
		`status   acme/upscale: ready -> maintenance`,
		`schema   acme/voice/sfx: /properties/duration/maximum changed: 30 -> 60`,
		`price    acme/voice/sfx: example 0: 4 credits in the file, 5 live`,
		`renamed  acme/voice/speak: now acme/voice/speak-v2`,
		`removed  acme/clip/v2/i2v`,
		`product  pix: name "Pix" -> "Pix Studio"`,
		`product  voice: description "Speech and sound." -> "Speech, sound and music."`,
		`added    acme/pix/v2: "Pix v2" (text-to-image, ready)`,
		"9 differences",
	}
	for _, w := range want {
		if !strings.Contains(report, w+"\n") {
			t.Errorf("the report lacks %q:\n%s", w, report)
		}
	}
	if len(diffs) != len(want)-1 {
		t.Errorf("%d differences, want %d:\n%s", len(diffs), len(want)-1, report)
	}
	// The file declares products, so their names are compared without --grouped too.
	o.Grouped = false
	diffs, err = importer.Drift(context.Background(), o, path)
	if err != nil {
		t.Fatal(err)
	}
	if again := importer.Report(diffs); again != report {
		t.Errorf("without --grouped the report differs:\n%s\nwith it:\n%s", again, report)
	}
}

func TestMainExitCodes(t *testing.T) {
	t.Parallel()
	src := startService(t, "testdata/source.yaml")
	dir := t.TempDir()
	out := filepath.Join(dir, "cat.yaml")
	env := func(k string) string {
		if k == importer.KeyVariable {
			return liveKey
		}
		return ""
	}
	noEnv := func(string) string { return "" }
	run := func(getenv func(string) string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := importer.Main(context.Background(), args[0], args[1:], getenv, &stdout, &stderr, nil)
		return code, stdout.String(), stderr.String()
	}
	cases := []struct {
		args   []string
		getenv func(string) string
		code   int
		stderr string
	}{
		{[]string{"import"}, env, 2, "--from is required"},
		{[]string{"import", "--from", src.URL}, noEnv, 2, "no key"},
		{[]string{"import", "--from", "ftp://x"}, env, 2, "want an http or https URL"},
		{[]string{"import", "--from", src.URL, "--key", "wrong"}, noEnv, 2, "401"},
		{[]string{"import", "--from", src.URL, "--models", "acme/pix/**", "--out", out}, env, 0, "imported 2 models"},
		{[]string{"drift", "--from", src.URL}, env, 2, "--catalog is required"},
		{[]string{"drift", "--from", src.URL, "--catalog", out, "--spend", "-1"}, env, 2, "--spend must be a number of credits"},
		{[]string{"drift", "--from", src.URL, "--catalog", filepath.Join(dir, "missing.yaml")}, env, 2, "missing.yaml"},
		{[]string{"drift", "--from", src.URL, "--catalog", out, "--models", "acme/pix/**"}, env, 0, ""},
		{[]string{"drift", "--from", src.URL, "--catalog", out}, env, 1, ""},
	}
	for _, c := range cases {
		code, stdout, stderr := run(c.getenv, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
		if strings.Contains(stdout+stderr, liveKey) {
			t.Errorf("%v: the key was printed", c.args)
		}
		if c.args[0] == "drift" && c.code == 1 && !strings.Contains(stdout, "added    acme/voice/speak") {
			t.Errorf("%v: stdout %q", c.args, stdout)
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the written file: %v %v", fi, err)
	}
}
