package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/internal/syncbuf"
)

const smallCatalog = "testdata/catalogs/small.yaml"

// env returns a getenv over a fixed map, so the machine's own MEDIAGEN_* never leak in.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// result is what one synchronous run gives: the exit code main would use and the output.
type result struct {
	err    error
	code   int
	stdout string
	stderr string // including what exitCode prints
}

// runSync runs a command that is expected to return on its own (not serve).
func runSync(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, env(vars), &stdout, &stderr) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatalf("run(%q) did not return; stdout:\n%s", args, stdout.String())
	}
	var msg bytes.Buffer
	code := exitCode(err, &msg)
	return result{err: err, code: code, stdout: stdout.String(), stderr: stderr.String() + msg.String()}
}

var listeningLine = regexp.MustCompile(`^listening on http://((?:127\.0\.0\.1|0\.0\.0\.0):(\d+))\n$`)

// instance is a serving run.
type instance struct {
	addr   string
	stderr *syncbuf.Buffer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// serve starts run with args, reads the first stdout line through a pipe, and checks it is
// exactly the listening line.
func serve(t testing.TB, vars map[string]string, args ...string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	in := &instance{stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := run(ctx, args, env(vars), pw, in.stderr)
		pw.Close()
		in.done <- err
	}()
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		cancel()
		runErr := <-in.done
		var msg bytes.Buffer
		code := exitCode(runErr, &msg)
		t.Fatalf("run(%q) wrote no listening line (%v); it returned %v (exit %d)\n%s%s", args, err, runErr, code, in.stderr, msg.String())
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	m := listeningLine.FindStringSubmatch(line)
	if m == nil {
		cancel()
		t.Fatalf("first stdout line %q; want exactly \"listening on http://127.0.0.1:PORT\" (or 0.0.0.0)", line)
	}
	in.addr = m[1]
	t.Cleanup(func() { in.stop(t) })
	return in
}

// stop cancels the run's context and returns what run returned.
func (in *instance) stop(t testing.TB) error {
	t.Helper()
	in.once.Do(func() {
		in.cancel()
		select {
		case in.err = <-in.done:
		case <-time.After(30 * time.Second):
			in.err = errors.New("run did not return within 30 s of its context's cancelation")
		}
	})
	return in.err
}

func (in *instance) get(t testing.TB, path string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+in.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, body
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runSync(t, nil, "version")
	if r.err != nil || r.code != 0 || r.stdout != "mediagen-emulator "+emulator.Version+"\n" || r.stderr != "" {
		t.Errorf("version: %+v", r)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help"} {
		r := runSync(t, nil, arg)
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "Usage:") || !strings.Contains(r.stderr, "-addr") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, r.code, r.stdout, r.stderr)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []string
		code  int
		lines []string
	}{
		{"good", []string{smallCatalog}, 0, []string{smallCatalog + ": ok"}},
		{"default catalog", []string{"fixtures/catalog/default.yaml"}, 0, []string{"fixtures/catalog/default.yaml: ok"}},
		{"syntax", []string{"testdata/catalogs/bad-syntax.yaml"}, 1, []string{
			"testdata/catalogs/bad-syntax.yaml:5: mapping values are not allowed in this context",
		}},
		{"empty", []string{"testdata/catalogs/bad-empty.yaml"}, 1, []string{
			"testdata/catalogs/bad-empty.yaml: the file is empty",
		}},
		{"several problems", []string{"testdata/catalogs/bad-many.yaml"}, 1, []string{
			`testdata/catalogs/bad-many.yaml:4: duplicate product id "p"`,
			`testdata/catalogs/bad-many.yaml:6: model "m1" names unknown product "nope"`,
			`testdata/catalogs/bad-many.yaml:30: model "m2": input_schema is not a valid JSON Schema: at /properties/prompt/minLength: expected integer, but got string`,
			`testdata/catalogs/bad-many.yaml:40: unknown field "colour" (known: category, description, id, input_schema, inputs, mode, name, output, output_type, pricing, product, status, timing)`,
			`testdata/catalogs/bad-many.yaml:46: model "m4": output_type "picture" must be image, video or audio`,
			`testdata/catalogs/bad-many.yaml:59: model "m4": example 0 is not valid: (the input): missing properties: 'prompt'`,
			`testdata/catalogs/bad-many.yaml:60: model "m4": pricing.per_unit names "steps", which is not a top-level property of input_schema`,
			`testdata/catalogs/bad-many.yaml:65: key "k1": unknown permission "admin" (known: models:read, generate)`,
			`testdata/catalogs/bad-many.yaml:66: key "k2" names unknown account "ghost"`,
		}},
		{"good, bad and missing", []string{smallCatalog, "testdata/catalogs/bad-key-account.yaml", "testdata/catalogs/nope.yaml", "testdata/catalogs/bad-id.yaml"}, 1, []string{
			smallCatalog + ": ok",
			`testdata/catalogs/bad-key-account.yaml:21: key "k2" names unknown account "someone"`,
			"testdata/catalogs/nope.yaml: no such file",
			`testdata/catalogs/bad-id.yaml:13: model "m": $id is not allowed in input schemas; references are local to the model`,
		}},
		{"a directory", []string{"testdata/catalogs"}, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runSync(t, nil, append([]string{"validate"}, tc.files...)...)
			if r.code != tc.code {
				t.Errorf("exit %d; want %d (err %v)", r.code, tc.code, r.err)
			}
			if tc.code == 1 {
				var ee *exitError
				if !errors.As(r.err, &ee) || ee.code != 1 {
					t.Errorf("err = %#v; want an *exitError with code 1", r.err)
				}
			}
			if r.stderr != "" {
				t.Errorf("stderr %q; validate reports on stdout only", r.stderr)
			}
			if tc.lines == nil {
				if !strings.HasPrefix(r.stdout, "testdata/catalogs:") || strings.Contains(r.stdout, "ok") {
					t.Errorf("stdout %q; want a problem naming the path", r.stdout)
				}
				return
			}
			if want := strings.Join(tc.lines, "\n") + "\n"; r.stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
			}
		})
	}
}

// TestValidateEveryBadCatalog: each bad catalog fails with lines that all name the file.
func TestValidateEveryBadCatalog(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/catalogs/bad-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad catalogs: %v", err)
	}
	for _, f := range files {
		r := runSync(t, nil, "validate", f)
		if r.code != 1 || r.stdout == "" {
			t.Errorf("validate %s: exit %d, stdout %q", f, r.code, r.stdout)
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			if !strings.HasPrefix(line, f+":") {
				t.Errorf("validate %s: line %q does not start with FILE:", f, line)
			}
		}
	}
}

func TestValidateWithoutFiles(t *testing.T) {
	t.Parallel()
	r := runSync(t, nil, "validate")
	if r.code != 2 || !strings.Contains(r.stderr, "usage: mediagen-emulator validate FILE...") {
		t.Errorf("validate without files: %+v", r)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{&exitError{code: 1}, 1, ""},
		{&exitError{code: 2, msg: "bad flag"}, 2, "bad flag\n"},
		{errors.New("boom"), 1, "mediagen-emulator: boom\n"},
	} {
		var buf bytes.Buffer
		if got := exitCode(tc.err, &buf); got != tc.code || buf.String() != tc.out {
			t.Errorf("exitCode(%v) = %d, %q; want %d, %q", tc.err, got, buf.String(), tc.code, tc.out)
		}
	}
}

// TestBadSettings: every bad flag, value or environment variable exits 2 with a message on
// standard error, before listening (nothing on standard output).
func TestBadSettings(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // not defer: the parallel subtests run after this returns
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want string // in stderr
	}{
		{"unknown flag", nil, []string{"--nope"}, "flag provided but not defined: -nope"},
		{"flag without value", nil, []string{"--clock"}, "flag needs an argument: -clock"},
		{"unexpected argument", nil, []string{"--clock", "manual", "extra"}, `unexpected argument "extra"`},
		{"unknown command", nil, []string{"serv"}, `unexpected argument "serv"`},
		{"bad clock", nil, []string{"--clock", "sundial"}, `--clock "sundial": want real, manual or skip`},
		{"bad seed", nil, []string{"--seed", "abc"}, `--seed "abc": want an integer`},
		{"seed too big", nil, []string{"--seed", "99999999999999999999"}, `--seed "99999999999999999999": want an integer`},
		{"bad log format", nil, []string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
		{"bad duration", nil, []string{"--max-wait", "soon"}, `invalid value "soon" for flag -max-wait`},
		{"zero duration", nil, []string{"--quote-ttl", "0s"}, "must be positive"},
		{"negative duration", nil, []string{"--max-wait", "-1s"}, "must be positive"},
		{"bad addr", nil, []string{"--addr", "nocolon"}, `--addr "nocolon": want HOST:PORT`},
		{"busy addr", nil, []string{"--addr", busy.Addr().String(), "--catalog", smallCatalog}, "cannot listen on " + busy.Addr().String()},
		{"bad catalog", nil, []string{"--addr", "127.0.0.1:0", "--catalog", "testdata/catalogs/bad-id.yaml"},
			`testdata/catalogs/bad-id.yaml:13: model "m": $id is not allowed in input schemas; references are local to the model`},
		{"missing catalog", nil, []string{"--addr", "127.0.0.1:0", "--catalog", "testdata/catalogs/nope.yaml"}, "testdata/catalogs/nope.yaml: no such file"},
		{"bad MEDIAGEN_CLOCK", map[string]string{"MEDIAGEN_CLOCK": "sundial"}, nil, `--clock "sundial": want real, manual or skip`},
		{"bad MEDIAGEN_SEED", map[string]string{"MEDIAGEN_SEED": "x"}, nil, `--seed "x": want an integer`},
		{"bad MEDIAGEN_LOG_FORMAT", map[string]string{"MEDIAGEN_LOG_FORMAT": "xml"}, nil, `--log-format "xml"`},
		{"bad MEDIAGEN_MAX_WAIT", map[string]string{"MEDIAGEN_MAX_WAIT": "soon"}, nil, `MEDIAGEN_MAX_WAIT="soon": want a positive duration such as 90s`},
		{"negative MEDIAGEN_QUOTE_TTL", map[string]string{"MEDIAGEN_QUOTE_TTL": "-1s"}, nil, `MEDIAGEN_QUOTE_TTL="-1s": want a positive duration such as 90s`},
		{"admin token with spaces", nil, []string{"--admin-token", " secret "}, "--admin-token begins or ends with white space"},
		{"admin token of spaces", map[string]string{"MEDIAGEN_ADMIN_TOKEN": "  "}, nil, "--admin-token begins or ends with white space"},
		{"retention below output ttl", nil, []string{"--output-ttl", "2h", "--job-retention", "1h"}, "--job-retention 1h0m0s is shorter than --output-ttl 2h0m0s"},
		{"MEDIAGEN_JOB_RETENTION below output ttl", map[string]string{"MEDIAGEN_JOB_RETENTION": "30m"}, nil, "--job-retention 30m0s is shorter than --output-ttl 1h0m0s"},
		{"manual clock without control", nil, []string{"--addr", "0.0.0.0:0", "--clock", "manual"}, "--clock manual moves time only through the control API, which is disabled on 0.0.0.0:0 without --admin-token"},
		{"zero body timeout", nil, []string{"--body-timeout", "0s"}, "must be positive"},
		{"zero idle timeout", map[string]string{"MEDIAGEN_IDLE_TIMEOUT": "-1s"}, nil, `MEDIAGEN_IDLE_TIMEOUT="-1s"`},
		{"bad MEDIAGEN_ADDR", map[string]string{"MEDIAGEN_ADDR": "nocolon"}, nil, `--addr "nocolon": want HOST:PORT`},
		{"bad MEDIAGEN_CATALOG", map[string]string{"MEDIAGEN_CATALOG": "testdata/catalogs/bad-empty.yaml", "MEDIAGEN_ADDR": "127.0.0.1:0"}, nil,
			"testdata/catalogs/bad-empty.yaml: the file is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runSync(t, tc.vars, tc.args...)
			if r.code != 2 {
				t.Errorf("exit %d; want 2 (err %v)", r.code, r.err)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q; want nothing (no listening line)", r.stdout)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr:\n%s\nwant it to contain %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
				t.Errorf("stderr shows a panic:\n%s", r.stderr)
			}
		})
	}
}

// TestServe starts the emulator on a free port, talks to it over HTTP, and stops it.
func TestServe(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--clock", "manual", "--seed", "3")
	status, body := in.get(t, "/_emulator/health")
	if status != http.StatusOK || body["status"] != "ok" || body["clock"] != "manual" || body["seeded"] != true || body["models"] != float64(5) {
		t.Errorf("health: %d %v", status, body)
	}
	status, body = in.get(t, "/v1/models", "Authorization", "Bearer key_a")
	if status != http.StatusOK || body["total"] != float64(4) {
		t.Errorf("GET /v1/models: %d %v", status, body)
	}
	status, body = in.get(t, "/v1/models/test%2Fpixel/", "Authorization", "Bearer key_a") // no redirect on the wire either
	if status != http.StatusNotFound || body["code"] != "model_not_found" {
		t.Errorf("GET /v1/models/test%%2Fpixel/: %d %v", status, body)
	}
	if err := in.stop(t); err != nil {
		t.Errorf("run returned %v after its context was canceled; want nil", err)
	}
	if _, err := net.DialTimeout("tcp", in.addr, time.Second); err == nil {
		t.Error("still listening after run returned")
	}
}

// TestServeDefaultCatalog measures nothing: it checks that the emulator starts with its
// embedded default catalog and serves the contract's keys.
func TestServeDefaultCatalog(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0")
	status, body := in.get(t, "/v1/models?limit=1", "Authorization", "Bearer mg_test_all")
	if status != http.StatusOK || body["total"].(float64) < 1 {
		t.Errorf("GET /v1/models with the default catalog: %d %v", status, body)
	}
	if status, _ := in.get(t, "/_emulator/health"); status != http.StatusOK {
		t.Errorf("health: %d", status)
	}
	if err := in.stop(t); err != nil {
		t.Errorf("run returned %v", err)
	}
}

// TestFlagBeatsEnvironment: a flag wins over its MEDIAGEN_* variable, whatever the variable
// holds; a variable alone is used.
func TestFlagBeatsEnvironment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		vars  map[string]string
		args  []string
		key   string
		value any
	}{
		{"env alone", map[string]string{"MEDIAGEN_CLOCK": "manual"}, nil, "clock", "manual"},
		{"flag over env", map[string]string{"MEDIAGEN_CLOCK": "manual"}, []string{"--clock", "real"}, "clock", "real"},
		{"flag over bad env", map[string]string{"MEDIAGEN_CLOCK": "sundial"}, []string{"--clock", "manual"}, "clock", "manual"},
		{"seed flag over bad env", map[string]string{"MEDIAGEN_SEED": "abc"}, []string{"--seed", "5"}, "seeded", true},
		{"seed env alone", map[string]string{"MEDIAGEN_SEED": "5"}, nil, "seeded", true},
		{"log format flag over bad env", map[string]string{"MEDIAGEN_LOG_FORMAT": "xml"}, []string{"--log-format", "json"}, "status", "ok"},
		{"catalog flag over bad env", map[string]string{"MEDIAGEN_CATALOG": "testdata/catalogs/bad-empty.yaml"}, []string{"--catalog", smallCatalog}, "models", float64(5)},
		{"catalog env alone", map[string]string{"MEDIAGEN_CATALOG": smallCatalog}, nil, "models", float64(5)},
		// Durations must behave like every other flag: the flag wins over a bad variable.
		{"duration flag over bad env", map[string]string{"MEDIAGEN_MAX_WAIT": "soon"}, []string{"--max-wait", "5s"}, "status", "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"MEDIAGEN_ADDR": "256.0.0.1:1"} // a bad address the flag replaces
			for k, v := range tc.vars {
				vars[k] = v
			}
			args := append([]string{"--addr", "127.0.0.1:0"}, tc.args...)
			if vars["MEDIAGEN_CATALOG"] == "" && !contains(args, "--catalog") {
				args = append(args, "--catalog", smallCatalog)
			}
			in := serve(t, vars, args...)
			_, body := in.get(t, "/_emulator/health")
			if body[tc.key] != tc.value {
				t.Errorf("health %s = %v; want %v", tc.key, body[tc.key], tc.value)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog)
	if r := runSync(t, nil, "healthcheck", "--addr", in.addr); r.code != 0 || r.stdout != "" {
		t.Errorf("healthcheck --addr %s: %+v", in.addr, r)
	}
	if r := runSync(t, map[string]string{"MEDIAGEN_ADDR": in.addr}, "healthcheck"); r.code != 0 {
		t.Errorf("healthcheck with MEDIAGEN_ADDR: %+v", r)
	}
	_, port, _ := net.SplitHostPort(in.addr)
	if r := runSync(t, nil, "healthcheck", "--addr", "0.0.0.0:"+port); r.code != 0 {
		t.Errorf("healthcheck of a wildcard address (checks loopback): %+v", r)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	r := runSync(t, nil, "healthcheck", "--addr", addr)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "healthcheck: unhealthy:") {
		t.Errorf("healthcheck of a closed port: %+v", r)
	}

	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	r = runSync(t, nil, "healthcheck", "--addr", strings.TrimPrefix(sick.URL, "http://"))
	if r.code != 1 || !strings.Contains(r.stderr, "status 503") {
		t.Errorf("healthcheck of an unhealthy server: %+v", r)
	}

	if r := runSync(t, nil, "healthcheck", "--addr", "nocolon"); r.code != 2 {
		t.Errorf("healthcheck --addr nocolon: %+v", r)
	}
	if r := runSync(t, nil, "healthcheck", "--nope"); r.code != 2 {
		t.Errorf("healthcheck --nope: %+v", r)
	}
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--log-format", "json")
	in.get(t, "/_emulator/health", "X-Request-Id", "req-log-test")
	in.get(t, "/v1/nope", "X-Request-Id", "req-log-404")
	if err := in.stop(t); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"req-log-test": 200, "req-log-404": 404}
	paths := map[string]string{"req-log-test": "/_emulator/health", "req-log-404": "/v1/nope"}
	found := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(in.stderr.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("stderr line is not JSON under --log-format json: %q", line)
			continue
		}
		id, _ := entry["request_id"].(string)
		if entry["msg"] != "request" || want[id] == 0 {
			continue
		}
		found[id] = true
		if entry["method"] != "GET" || entry["path"] != paths[id] || entry["status"] != want[id] {
			t.Errorf("request log %v; want GET %s %v", entry, paths[id], want[id])
		}
		if ms, ok := entry["duration_ms"].(float64); !ok || ms < 0 || ms > 60_000 {
			t.Errorf("request log %v has no duration_ms in milliseconds", entry)
		}
		if _, ok := entry["duration"]; ok {
			t.Errorf("request log %v still has a duration in nanoseconds", entry)
		}
		if entry["level"] != "INFO" || entry["time"] == nil {
			t.Errorf("request log %v lacks level or time", entry)
		}
	}
	for id := range want {
		if !found[id] {
			t.Errorf("no request log line for %s in:\n%s", id, in.stderr)
		}
	}
}

func TestRequestLogText(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog)
	in.get(t, "/_emulator/health", "X-Request-Id", "req-text")
	if err := in.stop(t); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`msg=request method=GET path=/_emulator/health tenant=default status=200 duration_ms=\S+ request_id=req-text`).MatchString(in.stderr.String()) {
		t.Errorf("no text request log line in:\n%s", in.stderr)
	}
}

// BenchmarkStartup measures run() from its call to the listening line with the default
// catalog, then stops it. The emulator parses the embedded catalog in the background, once per
// process, so this is the time to listen; the one-time parse is measured by the catalog
// package's BenchmarkParseDefault.
func BenchmarkStartup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		in := serve(b, nil, "--addr", "127.0.0.1:0")
		b.StopTimer()
		if err := in.stop(b); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func TestListenURLHostNamesTheWildcardAskedFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		asked string
		bound net.Addr
		want  string
	}{
		{"0.0.0.0:0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 4242}, "0.0.0.0:4242"},
		{":8080", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "0.0.0.0:8080"},
		{"[::]:0", &net.TCPAddr{IP: net.IPv6unspecified, Port: 7}, "[::]:7"},
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, "127.0.0.1:9"},
	} {
		if got := listenURLHost(c.asked, c.bound); got != c.want {
			t.Errorf("listenURLHost(%q, %v) = %q; want %q", c.asked, c.bound, got, c.want)
		}
	}
}

// TestSettingsThatStillStart: a longer --output-ttl raises the default retention with it, and a
// manual clock on a public address works once the control API has a token.
func TestSettingsThatStillStart(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--addr", "127.0.0.1:0", "--output-ttl", "48h"},
		{"--addr", "127.0.0.1:0", "--output-ttl", "2h", "--job-retention", "2h"},
	} {
		in := serve(t, nil, append(args, "--catalog", smallCatalog)...)
		if status, _ := in.get(t, "/_emulator/health"); status != http.StatusOK {
			t.Errorf("%q: health %d", args, status)
		}
	}
	// The control API beyond loopback needs the token, and the manual clock needs the control API.
	in := serve(t, nil, "--addr", "0.0.0.0:0", "--clock", "manual", "--admin-token", "s3cret", "--catalog", smallCatalog)
	if err := in.stop(t); err != nil {
		t.Errorf("run returned %v", err)
	}
}

// do sends a request with a JSON body and returns the status and the decoded answer.
func (in *instance) do(t testing.TB, method, path, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+in.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %d, body is not JSON: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// TestHeaderLimit: a request line and headers over 64 KiB answer 431 (Go's default allowed 1 MB).
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog)
	for _, c := range []struct {
		name string
		path string
		hdr  string
	}{
		{"long path", "/v1/" + strings.Repeat("x", 100<<10), ""},
		{"long header", "/v1/models", strings.Repeat("y", 100<<10)},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+in.addr+c.path, nil)
		if c.hdr != "" {
			req.Header.Set("X-Padding", c.hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: %d, want 431", c.name, resp.StatusCode)
		}
	}
	if status, _ := in.get(t, "/v1/models", "Authorization", "Bearer key_a", "X-Padding", strings.Repeat("z", 32<<10)); status != http.StatusOK {
		t.Errorf("32 KiB of headers: %d, want 200", status)
	}
}

const pixelBody = `{"model":"test/pixel","input":{"prompt":"a fox"}}`

// startWait makes a quote and starts a wait=true generation on it; the answer arrives on the
// channel. The caller's emulator runs a manual clock, so the job waits until the clock moves.
func startWait(t *testing.T, in *instance) <-chan int {
	t.Helper()
	status, q := in.do(t, "POST", "/v1/quotes", pixelBody, "Authorization", "Bearer key_a")
	if status != http.StatusOK {
		t.Fatalf("quote: %d %v", status, q)
	}
	body := strings.TrimSuffix(pixelBody, "}") + `,"quote_id":"` + q["quote_id"].(string) + `"}`
	answer := make(chan int, 1)
	go func() {
		// Not in.do: a goroutine may not end the test, so a failure is reported as status 0.
		req, _ := http.NewRequest(http.MethodPost, "http://"+in.addr+"/v1/generate?wait=true", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer key_a")
		req.Header.Set("Idempotency-Key", "wait-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("generate: %v", err)
			answer <- 0
			return
		}
		defer resp.Body.Close()
		var job map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&job); err != nil {
			t.Errorf("generate: %d, body is not JSON: %v", resp.StatusCode, err)
			answer <- 0
			return
		}
		answer <- resp.StatusCode
	}()
	// /_emulator/waiting answers once the generation is blocked on its job.
	if status, body := in.get(t, "/_emulator/waiting?count=1&timeout=30s"); status != http.StatusOK || body["reached"] != true {
		t.Fatalf("the generation is not waiting: %d %v", status, body)
	}
	return answer
}

// TestWaitOutlivesTheTimeouts: a wait=true generation still gets its answer when it waits far
// longer than the body and idle timeouts (a read timeout would have canceled it).
func TestWaitOutlivesTheTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--clock", "manual",
		"--body-timeout", timeout.String(), "--idle-timeout", timeout.String())
	answer := startWait(t, in)
	// The server's timeouts must pass, in wall time, while the job waits. Two witnesses that
	// start after the wait say when they have: an idle connection closed, a slow body cut.
	idle := rawRequest(t, in.addr, "GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n", "")
	slow := rawRequest(t, in.addr, slowHead, `{"model":`)
	if got := answerOf(t, idle); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("the idle witness got %q", got)
	}
	if got := answerOf(t, slow); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Fatalf("the slow-body witness got %q", got)
	}
	select {
	case status := <-answer:
		t.Fatalf("the wait ended (%d) before the job moved", status)
	default:
	}
	// The pooled connections have been idle past --idle-timeout too: the server may be closing
	// them just now, and a POST is not retried on one it closed.
	http.DefaultClient.CloseIdleConnections()
	if status, body := in.do(t, "POST", "/_emulator/clock", `{"advance":"1m"}`); status != http.StatusOK {
		t.Fatalf("advance: %d %v", status, body)
	}
	if status := <-answer; status != http.StatusOK {
		t.Errorf("the waiting generation answered %d, want 200 with the finished job", status)
	}
}

// rawRequest opens a connection and sends a request's head and the first part of its body.
func rawRequest(t *testing.T, addr, head, partialBody string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+partialBody); err != nil {
		t.Fatal(err)
	}
	return conn
}

// servedRequest is rawRequest for a request the server is known to be serving when it returns:
// the head asks for "100 Continue", which net/http sends once the handler first reads the body,
// and only then does the first part of the body go out.
func servedRequest(t *testing.T, addr, head, partialBody string) net.Conn {
	t.Helper()
	head, ok := strings.CutSuffix(head, "\r\n\r\n")
	if !ok {
		t.Fatalf("head %q does not end with an empty line", head)
	}
	conn := rawRequest(t, addr, head+"\r\nExpect: 100-continue\r\n\r\n", "")
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Byte by byte, so that nothing the server sends after the interim answer is taken from
	// what answerOf reads.
	var got []byte
	for b := make([]byte, 1); !bytes.HasSuffix(got, []byte("\r\n\r\n")); got = append(got, b[0]) {
		if _, err := io.ReadFull(conn, b); err != nil {
			t.Fatalf("no interim answer: read %q, then %v", got, err)
		}
	}
	if string(got) != "HTTP/1.1 100 Continue\r\n\r\n" {
		t.Fatalf("the interim answer is %q; want 100 Continue", got)
	}
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, partialBody); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answerOf reads what the server sends until it closes the connection; a generous bound
// fails the test only when the server would otherwise never answer.
func answerOf(t *testing.T, conn net.Conn) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open; read so far %q", got)
	}
	return string(got)
}

const slowHead = "POST /v1/quotes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key_a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"

// TestSlowBodyIsCutOff: a client that sends a body slower than --body-timeout is answered and
// disconnected, instead of holding the connection open for ever.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--body-timeout", "100ms")
	conn := rawRequest(t, in.addr, slowHead, `{"model":`)
	if got := answerOf(t, conn); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("a stalled body got %q; want a 400 answer", got)
	}
}

// TestIdleConnectionsAreClosed: a keep-alive connection that sends nothing more is closed after
// --idle-timeout; 2,000 of them once stayed open indefinitely.
func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--idle-timeout", "100ms")
	conn := rawRequest(t, in.addr, "GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n", "")
	if got := answerOf(t, conn); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("got %q; want the health answer, then the connection closed", got)
	}
}

// TestStopAnswersWhatIsInFlight: a stop (SIGTERM cancels run's context) answers the requests in
// flight — a waiting generation gets its job as it stands, a body still arriving gets a 400 —
// and run returns nil (exit 0) without waiting out the body timeout.
func TestStopAnswersWhatIsInFlight(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--clock", "manual", "--body-timeout", "1h")
	slow := servedRequest(t, in.addr, slowHead, `{"model":`)
	answer := startWait(t, in)
	stopped := make(chan error, 1)
	go func() { stopped <- in.stop(t) }()
	if status := <-answer; status != http.StatusAccepted {
		t.Errorf("the waiting generation answered %d; want 202 with the job still running", status)
	}
	if got := answerOf(t, slow); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("the body in flight got %q; want a 400 answer", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("run returned %v; want nil (exit 0)", err)
	}
}

func TestImportAndDrift(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--clock", "manual")
	defer in.stop(t)
	from := "http://" + in.addr
	keyed := map[string]string{"MEDIAGEN_IMPORT_KEY": "mg_test_all"}
	out := filepath.Join(t.TempDir(), "live.yaml")
	r := runSync(t, keyed, "import", "--from", from, "--models", "fal-ai/flux/dev", "--grouped", "--out", out)
	if r.code != 0 || !strings.Contains(r.stderr, "imported 1 model with") {
		t.Fatalf("import: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runSync(t, keyed, "drift", "--from", from, "--models", "fal-ai/flux/dev", "--grouped", "--catalog", out)
	if r.code != 0 || r.stdout != "no drift: the catalog matches the live service\n" {
		t.Errorf("drift: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runSync(t, keyed, "drift", "--from", from, "--catalog", out)
	if r.code != 1 || !strings.Contains(r.stdout, "added    fal-ai/flux/schnell") {
		t.Errorf("drift over every model: exit %d, stdout %q", r.code, r.stdout)
	}
	if r = runSync(t, nil, "import", "--from", from); r.code != 2 || !strings.Contains(r.stderr, "MEDIAGEN_IMPORT_KEY") {
		t.Errorf("import without a key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestParity: the parity command is dispatched with its own flags, its key from
// MEDIAGEN_IMPORT_KEY, exit 0 against an emulator standing in for the live service and 2 on a
// usage error.
func TestParity(t *testing.T) {
	t.Parallel()
	in := serve(t, nil, "--addr", "127.0.0.1:0", "--clock", "manual")
	defer in.stop(t)
	keyed := map[string]string{"MEDIAGEN_IMPORT_KEY": "mg_test_all"}
	r := runSync(t, keyed, "parity", "--from", "http://"+in.addr, "--rate", "500")
	if r.code != 0 || !regexp.MustCompile(`(?m)^parity: [1-9]\d* same, 0 differ \(0 new differences\), \d+ not provokable$`).MatchString(r.stdout) {
		t.Errorf("parity: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r = runSync(t, keyed, "parity", "--from", "http://"+in.addr, "--rate", "-1"); r.code != 2 || !strings.Contains(r.stderr, "--rate") {
		t.Errorf("parity --rate -1: exit %d, stderr %q", r.code, r.stderr)
	}
}

// --clock skip moves time by itself, so unlike --clock manual it needs no control API: it is
// accepted on a non-loopback address without an admin token.
func TestClockSkipNeedsNoControlAPI(t *testing.T) {
	for _, tc := range []struct {
		clock string
		ok    bool
	}{{"skip", true}, {"manual", false}, {"real", true}} {
		fs, o, _ := flagSet("mediagen-emulator", func(string) string { return "" }, io.Discard)
		if err := fs.Parse([]string{"--addr", "0.0.0.0:0", "--clock", tc.clock}); err != nil {
			t.Fatal(err)
		}
		cfg, err := configure(o)
		if (err == nil) != tc.ok {
			t.Errorf("--clock %s on 0.0.0.0 without a token: %v", tc.clock, err)
		}
		if err == nil && cfg.SkipClock != (tc.clock == "skip") {
			t.Errorf("--clock %s: SkipClock %v", tc.clock, cfg.SkipClock)
		}
	}
}

// A request with a very long path writes a short log line: its values are cut as the journal
// cuts them, in either format.
func TestRequestLogCutsLongValues(t *testing.T) {
	t.Parallel()
	long := "/v1/" + strings.Repeat("p", 60<<10)
	for _, format := range []string{"text", "json"} {
		in := serve(t, nil, "--addr", "127.0.0.1:0", "--catalog", smallCatalog, "--log-format", format)
		for range 10 {
			in.get(t, long)
		}
		if err := in.stop(t); err != nil {
			t.Fatal(err)
		}
		logged := in.stderr.String()
		t.Logf("%s: %d bytes for 10 requests", format, len(logged))
		if n := len(logged); n > 10*4<<10+4<<10 {
			t.Errorf("%s: 10 requests with a 60 KB path wrote %d bytes to the log", format, n)
		}
		if !strings.Contains(logged, "…(truncated)") {
			t.Errorf("%s: the cut path does not say it was cut:\n%.500s", format, logged)
		}
	}
}

// TestConformance: the conformance command is dispatched with its own flags; without
// --emulator it starts one in-process, and an adapter that always reports failure fails every
// case (the success cases by its exit, the failure cases because it never reached what their
// plans strike), writing the three files and exiting 1.
func TestConformance(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the adapter is a POSIX shell")
	}
	r := runSync(t, nil, "conformance", "--list")
	if r.code != 0 || !strings.Contains(r.stdout, "| `retry-ambiguous-5xx-same-key` | success |") {
		t.Errorf("conformance --list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r = runSync(t, nil, "conformance"); r.code != 2 || !strings.Contains(r.stderr, "--adapter") {
		t.Errorf("conformance without an adapter: exit %d, stderr %q", r.code, r.stderr)
	}
	out := t.TempDir()
	r = runSync(t, nil, "conformance", "--out", out, "--adapter", "sh -c 'echo no luck >&2; exit 3'")
	if r.code != 1 || !strings.Contains(r.stdout, "conformance v1 | 0/27") || !strings.Contains(r.stderr, "    | no luck") {
		t.Errorf("conformance with a failing adapter: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, name := range []string{"conformance.json", "conformance.md", "badge.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}
