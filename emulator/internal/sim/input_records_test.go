package sim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// TestCutURL: a URL a job records is kept whole up to the bound, and cut on a character's
// boundary past it, so a snapshot of the job reads back.
func TestCutURL(t *testing.T) {
	short := "https://images.example.com/cat.png"
	if got := cutURL(short); got != short {
		t.Errorf("cutURL(%q) = %q", short, got)
	}
	long := "https://images.example.com/" + strings.Repeat("é", jobs.MaxMediaInputURL)
	got := cutURL(long)
	if len(got) > jobs.MaxMediaInputURL || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("cutURL of %d bytes = %d bytes, valid %v", len(long), len(got), utf8.ValidString(got))
	}
}
