package media

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/outputs.golden with the current outputs' hashes")

// TestOutputsAreStable pins the exact bytes of seeded outputs of every format, as SHA-256 hashes
// in testdata/outputs.golden. `--seed N` promises the same media run to run, and a job's
// size_bytes is stated before its file is made, so a change here is a change users can see:
// update the file (go test -run TestOutputsAreStable -update) only on purpose, and say so in
// the changelog.
func TestOutputsAreStable(t *testing.T) {
	t.Parallel()
	m := NewMaker(fixtures.FS)
	tests := []struct {
		name string
		spec Spec
	}{
		{"wav 1s seed 1", Spec{Format: "wav", Duration: time.Second, Seed: 1}},
		{"mp4 854x480 1s", Spec{Format: "mp4", Width: 854, Height: 480, Duration: time.Second}},
		{"png 64x48 seed 1", Spec{Format: "png", Width: 64, Height: 48, Seed: 1, Label: "model: prompt"}},
		{"jpeg 64x48 seed 1", Spec{Format: "jpeg", Width: 64, Height: 48, Seed: 1, Label: "model: prompt"}},
		{"png 333x250 seed 9", Spec{Format: "png", Width: 333, Height: 250, Seed: 9, Label: "fal-ai/flux/dev: a fox"}},
		{"jpeg 333x250 seed 9", Spec{Format: "jpeg", Width: 333, Height: 250, Seed: 9, Label: "fal-ai/flux/dev: a fox"}},
	}
	var got strings.Builder
	for _, tt := range tests {
		b, err := m.Render(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&got, "%s\t%s\n", hex.EncodeToString(sum[:]), tt.name)
	}
	path := filepath.Join("testdata", "outputs.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("output hashes changed:\n got:\n%s want:\n%s", got.String(), want)
	}
}
