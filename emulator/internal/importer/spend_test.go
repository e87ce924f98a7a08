package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// spendService is an emulator playing the live service for drift --spend, on a manual clock
// that the run's waits advance, behind an optional middleware; it counts generations.
type spendService struct {
	*httptest.Server
	generations atomic.Int64
}

func startSpendService(t *testing.T, catalogFile string, wrap func(http.Handler) http.Handler) *spendService {
	t.Helper()
	srv, err := emulator.NewServer(emulator.Config{CatalogFile: catalogFile, ManualClock: true, Seeded: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(h)
	}
	s := &spendService{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/generate" {
			s.generations.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	req, _ := http.NewRequest(http.MethodPut, s.URL+"/_emulator/accounts/acct_live", strings.NewReader(`{"credits":1000}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("giving the live account credits: %v %v", resp, err)
	}
	resp.Body.Close()
	return s
}

// advance is a Sleep that moves the service's manual clock instead of waiting.
func (s *spendService) advance(ctx context.Context, d time.Duration) error {
	body := fmt.Sprintf(`{"advance":%q}`, d.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/_emulator/clock", strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("advancing the clock: %d", resp.StatusCode)
	}
	return nil
}

// reference is what the command line compares with: the catalog file on a manual clock.
func reference(name string, data []byte) (http.Handler, func(), error) {
	s, err := emulator.NewServer(emulator.Config{Catalog: &emulator.Source{Name: name, Data: data}, ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// reshape renames a field of every job answer and adds a header to it, as a service whose job
// shape moved on would.
func reshape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/generate") && !strings.HasPrefix(r.URL.Path, "/v1/jobs/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var job map[string]any
		if rec.Code < 300 && json.Unmarshal(body, &job) == nil {
			job["created"] = job["created_at"]
			delete(job, "created_at")
			body, _ = json.Marshal(job)
		}
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.Header().Set("X-Job-Shape", "2")
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}

func spendOptions(s *spendService, budget int64, progress *bytes.Buffer) importer.Options {
	return importer.Options{From: s.URL, Key: liveKey, Grouped: true, Spend: budget,
		Reference: reference, Sleep: s.advance, Progress: progress}
}

func TestDriftSpendComparesShapes(t *testing.T) {
	t.Parallel()
	src := startSpendService(t, "testdata/source.yaml", nil)
	path, _ := importFile(t, importOptions(src.URL, &sleeps{}, nil))

	var progress bytes.Buffer
	diffs, err := importer.Drift(context.Background(), spendOptions(src, 1000, &progress), path)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(diffs) != 0 {
		t.Errorf("against the same emulator:\n%s%s", importer.Report(diffs), progress.String())
	}
	if n := src.generations.Load(); n != 6 {
		t.Errorf("%d POST /v1/generate, want 6 (image, video and audio, each replayed once)", n)
	}
	if !strings.Contains(progress.String(), "spent of --spend 1000 on 3 generations") {
		t.Errorf("progress:\n%s", progress.String())
	}

	changed := startSpendService(t, "testdata/source.yaml", reshape)
	progress.Reset()
	diffs, err = importer.Drift(context.Background(), spendOptions(changed, 1000, &progress), path)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.String())
	}
	every := "(GET /v1/jobs/{id} finished (200); POST /v1/generate (202); POST /v1/generate replayed (202))"
	want := []string{
		"shape    job: /created live, not on the emulator (string)",
		"shape    job: /created_at on the emulator, not live (string)",
		"header   job: X-Job-Shape sent live, not by the emulator " + every,
	}
	if !slices.Equal(got, want) {
		t.Errorf("against a reshaped job:\n got %q\nwant %q\n%s", got, want, progress.String())
	}
	// The import guide shows these very lines.
	readme, err := os.ReadFile("../../../docs/import.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !bytes.Contains(readme, []byte("\n"+w+"\n")) {
			t.Errorf("docs/import.md's drift --spend example lacks %q", w)
		}
	}
}

// TestDriftSpendsOnlyWhenAskedAndWithinBudget checks that drift never generates without a
// budget, and never starts a generation whose quote is more than what is left of it.
func TestDriftSpendsOnlyWhenAskedAndWithinBudget(t *testing.T) {
	t.Parallel()
	src := startSpendService(t, "testdata/source.yaml", nil)
	var progress bytes.Buffer
	if _, err := importer.Drift(context.Background(), spendOptions(src, 0, &progress), "testdata/source.yaml"); err != nil {
		t.Fatal(err)
	}
	if n := src.generations.Load(); n != 0 {
		t.Errorf("without --spend: %d POST /v1/generate", n)
	}
	// The cheapest image costs 2, the video 50 and the audio 1: with 2 credits, only the image.
	progress.Reset()
	diffs, err := importer.Drift(context.Background(), spendOptions(src, 2, &progress), "testdata/source.yaml")
	if err != nil || len(diffs) != 0 {
		t.Fatalf("%v %v\n%s", diffs, err, progress.String())
	}
	if n := src.generations.Load(); n != 2 {
		t.Errorf("with --spend 2: %d POST /v1/generate, want 2 (one generation and its replay)\n%s", n, progress.String())
	}
	for _, want := range []string{
		"spend: generating acme/upscale example 0 (image) for 2 credits; 0 credits left of --spend 2\n",
		"spend: not generating acme/clip/v2 example 0 (video): quoted 50 credits, more than the 0 credits left of --spend 2\n",
		"spend: not generating acme/voice/speak example 0 (audio): quoted 1 credit, more than the 0 credits left of --spend 2\n",
		"spend: 2 credits spent of --spend 2 on 1 generation\n",
	} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

// TestDriftSpendCommand runs drift --spend as the command line does, on a real clock.
func TestDriftSpendCommand(t *testing.T) {
	t.Parallel()
	srv, err := emulator.NewServer(emulator.Config{CatalogFile: "testdata/source.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	req, _ := http.NewRequest(http.MethodPut, hs.URL+"/_emulator/accounts/acct_live", strings.NewReader(`{"credits":10}`))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("giving the live account credits: %v %v", resp, err)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Import(context.Background(), "drift",
		[]string{"--from", hs.URL, "--key", liveKey, "--catalog", "testdata/source.yaml", "--models", "acme/voice/*", "--spend", "5"},
		func(string) string { return "" }, &stdout, &stderr)
	if code != 0 || stdout.String() != "no drift: the catalog matches the live service\n" ||
		!strings.Contains(stderr.String(), "1 credit spent of --spend 5 on 1 generation") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
	}
}
