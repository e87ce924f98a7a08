package emulator

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/parity"
)

// TestParityRecordings replays the live answers kept under testdata/parity/recorded (written by
// `mediagen-emulator parity --record`) into the emulator: each recorded request, sent again,
// must be answered in the recorded answer's shape, but for the differences
// testdata/parity/known.json accepts. So a difference a parity run found once stays tested
// offline, and the answers themselves are checked against the OpenAPI document by TestMain.
func TestParityRecordings(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "parity", "recorded", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("%d recordings under testdata/parity/recorded; a parity run keeps one per case it provokes", len(files))
	}
	var known *parity.Known
	if _, err := os.Stat(filepath.Join("testdata", "parity", "known.json")); err == nil {
		if known, err = parity.ReadKnown(filepath.Join("testdata", "parity", "known.json")); err != nil {
			t.Fatal(err)
		}
	}
	s, err := NewServer(Config{Seeded: true, Seed: 1, ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.Ready()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := parity.ReadRecording(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if rec.Catalog != DefaultCatalogName {
			t.Errorf("%s was recorded against catalog %s; these replay on the embedded one", f, rec.Catalog)
			continue
		}
		req, err := rec.Request.NewHTTP(context.Background(), "http://emulator.test", rec.Request.EmulatorKey(s.catalog))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		got, err := parity.ReadAnswer(w.Result())
		if err != nil {
			t.Fatal(err)
		}
		ds := parity.Compare(rec.Live.Answer(), got)
		if known.Accepts(rec.Case, ds) {
			continue
		}
		for _, d := range ds {
			if !d.Known {
				t.Errorf("%s (%s): %s: %s recorded live, %s now", rec.Case, filepath.Base(f), d.Path, d.Live, d.Emulator)
			}
		}
	}
}
