package emulator

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllReadsEveryBody: readAll returns exactly the body whatever length was announced
// (none, the true one, too little, too much), and hands back what it read with an error.
func TestReadAllReadsEveryBody(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 2000) // 20,000 bytes, read a few at a time below
	for _, announced := range []int64{-1, 0, 1, 170, 20_000, 20_001, 1 << 30} {
		got, err := readAll(iotest.HalfReader(strings.NewReader(body)), announced, 1<<20, 64<<10)
		if err != nil || string(got) != body {
			t.Errorf("announced %d: read %d bytes, %v; want all %d", announced, len(got), err, len(body))
		}
		if announced >= 0 && cap(got) > 64<<10+1 && cap(got) > 2*len(body) {
			t.Errorf("announced %d: set aside %d bytes for a %d-byte body", announced, cap(got), len(body))
		}
	}
	broken := errors.New("connection reset")
	got, err := readAll(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(broken)), 100, 1<<20, 64<<10)
	if !errors.Is(err, broken) || !bytes.Equal(got, []byte("partial")) {
		t.Errorf("a body cut short: %q, %v; want what arrived and the error", got, err)
	}
}
