package media

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/fixtures"
)

// TestOutputsAreStable pins the exact bytes of seeded outputs whose encoding is entirely this
// package's (WAV and MP4; PNG and JPEG also depend on the Go release's encoders). `--seed N`
// promises the same media run to run, so a change here is a change users can see: update the
// hashes only on purpose, and say so in the changelog.
func TestOutputsAreStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		render func() ([]byte, error)
		sha256 string
	}{
		{
			"wav 1s seed 1",
			func() ([]byte, error) { return RenderWAV(AudioSpec{Duration: time.Second, Seed: 1}) },
			"b87c06999e0d3a0a38a6977563a389aca2fa6b8b8159b0aac35606b2133435c4",
		},
		{
			"mp4 854x480 1s",
			func() ([]byte, error) {
				return RenderMP4(fixtures.FS, VideoSpec{Width: 854, Height: 480, Duration: time.Second})
			},
			"01655d2b88b7ee6870667eee3decf259a1ea1c14e1a314ff38ea291d6d064783",
		},
	}
	for _, tt := range tests {
		b, err := tt.render()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != tt.sha256 {
			t.Errorf("%s: sha256 %x, want %s", tt.name, sum, tt.sha256)
		}
	}
}
