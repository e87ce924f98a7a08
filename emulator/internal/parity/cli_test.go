package parity_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/parity"
)

// TestRecordKeepsAnswersNotTheKey: --record writes one file per provoked case that reads back
// as a recording of the live answer, and neither those files, the result files nor the output
// hold the key.
func TestRecordKeepsAnswersNotTheKey(t *testing.T) {
	t.Parallel()
	live := standIn(t, nil)
	dir := t.TempDir()
	rec := filepath.Join(dir, "recorded")
	out, md := filepath.Join(dir, "result.json"), filepath.Join(dir, "summary.md")
	code, stdout, stderr := parityRun(t, append([]string{"--from", live.URL, "--key", liveKey, "--record", rec, "--out", out, "--markdown", md}, limitedKeys...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := readResult(t, out)
	files, err := os.ReadDir(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != res.Summary.Same {
		t.Errorf("%d recordings for %d cases provoked", len(files), res.Summary.Same)
	}
	authed, lacking := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(rec, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), tenant) {
			t.Errorf("%s holds the key:\n%s", f.Name(), data)
		}
		r, err := parity.ReadRecording(data)
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		if parity.FileName(r.Case) != f.Name() || r.Live.Status < 400 || len(r.Live.Body) == 0 {
			t.Errorf("%s: %+v", f.Name(), r)
		}
		if r.Request.Auth {
			authed++
		}
		if r.Request.Lacking {
			lacking++
		}
		if r.Request.Padding > 0 && len(data) > 16<<10 {
			t.Errorf("%s: a padded body is recorded as its padding, yet the file is %d bytes", f.Name(), len(data))
		}
	}
	if authed == 0 || lacking == 0 {
		t.Errorf("%d recorded requests carried a key, %d a key lacking a permission: the test shows nothing", authed, lacking)
	}
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(text, tenant) {
			t.Errorf("%s holds the key", name)
		}
	}
	for _, f := range []string{out, md} {
		data, _ := os.ReadFile(f)
		if strings.Contains(string(data), tenant) {
			t.Errorf("%s holds the key", f)
		}
	}
}

// TestAnEchoedKeyIsRedacted: a live service that puts the key into its answers does not get
// it into the recordings or the messages.
func TestAnEchoedKeyIsRedacted(t *testing.T) {
	t.Parallel()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"not_found","detail":"` + r.Header.Get("Authorization") + `"}`))
	})
	live := standIn(t, func(http.Handler) http.Handler { return echo })
	rec := filepath.Join(t.TempDir(), "rec")
	code, stdout, stderr := parityRun(t, append([]string{"--from", live.URL, "--key", liveKey, "--record", rec}, limitedKeys...)...)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	files, _ := os.ReadDir(rec)
	if len(files) == 0 {
		t.Fatal("nothing recorded")
	}
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(rec, f.Name()))
		if strings.Contains(string(data), tenant) {
			t.Fatalf("%s holds the key:\n%s", f.Name(), data)
		}
	}
	if strings.Contains(stdout+stderr, tenant) {
		t.Error("the output holds the key")
	}
}

// TestUsage: bad flags, missing --from or key, a bad --known, and a --from that is not a base
// URL exit 2 before any request.
func TestUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badKnown := filepath.Join(dir, "known.json")
	if err := os.WriteFile(badKnown, []byte(`{"accept":[{"case":"x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
		{[]string{}, "--from is required"},
		{[]string{"--from", "http://127.0.0.1:1"}, "no key"},
		{[]string{"--from", "ftp://example.com", "--key", "k"}, "want the service's base URL"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--rate", "0"}, "--rate"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--timeout", "0s"}, "--timeout"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--known", badKnown}, "needs a case and a path"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--out", dir}, "a folder"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "extra"}, "unexpected argument"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--record", badKnown}, "--record"},
		{[]string{"--from", "http://127.0.0.1:1", "--key", "k", "--catalog", filepath.Join(dir, "none.yaml")}, "no such file"},
	} {
		code, stdout, stderr := parityRun(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestBounded: a live service that never answers ends the run at --timeout (exit 2), and one
// whose answers are too long is read only up to the bound and reported as such.
func TestBounded(t *testing.T) {
	t.Parallel()
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		live := standIn(t, func(http.Handler) http.Handler { return hang })
		start := time.Now()
		code, _, stderr := parityRun(t, "--from", live.URL, "--key", liveKey, "--timeout", "300ms")
		if code != 2 || !strings.Contains(stderr, "gave up after 300ms") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("long body", func(t *testing.T) {
		t.Parallel()
		long := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			chunk := []byte(strings.Repeat("x", 1<<16))
			for range 64 { // 4 MiB, of which only the bound is read
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		live := standIn(t, func(http.Handler) http.Handler { return long })
		out := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := parityRun(t, "--from", live.URL, "--key", liveKey, "--out", out)
		if code != 1 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if !strings.Contains(stdout, "/body: a body over 64 KiB, not read live, a JSON object on the emulator") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})
}

// TestTheDocsKnownFileReads: the --known example in docs/import.md is one ParseKnown takes.
func TestTheDocsKnownFileReads(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "import.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, _ := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/import.md has no json block")
	}
	k, err := parity.ParseKnown([]byte(block))
	if err != nil || len(k.Accept) == 0 {
		t.Fatalf("%v\n%s", err, block)
	}
	ds := []parity.Difference{{Path: "/headers/WWW-Authenticate"}}
	if !k.Accepts("GET /v1/jobs/{id} 401 unauthenticated", ds) {
		t.Errorf("the example's ** pattern does not accept a 401 case")
	}
}
