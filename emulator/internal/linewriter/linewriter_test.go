package linewriter

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/mediagen/mediagen-emulator/internal/syncbuf"
)

// TestKeepsOrderAndFlushes: every line arrives, in order, by the time Close returns,
// and a line written after Close is written directly.
func TestKeepsOrderAndFlushes(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer
	lw := New(&out, 1<<10)
	var want strings.Builder
	for i := range 1000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if n, err := lw.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	want.WriteString("after close\n")
	_, _ = lw.Write([]byte("after close\n"))
	if got := out.String(); got != want.String() {
		t.Errorf("written:\n%.200s…\nwant:\n%.200s…", got, want.String())
	}
	if err := lw.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestWritesAtOnceWhenQuiet: a single line reaches the output without waiting for
// more lines or for Close.
func TestWritesAtOnceWhenQuiet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out syncbuf.Buffer
		lw := New(&out, 1<<10)
		defer lw.Close()
		_, _ = lw.Write([]byte("one\n"))
		synctest.Wait() // the writer's goroutine has nothing left to do
		if got := out.String(); got != "one\n" {
			t.Errorf("written %q; want the line at once", got)
		}
	})
}

// blockedWriter holds every write until released, and counts them.
type blockedWriter struct {
	release chan struct{}
	writes  int // read once the writer is closed
	syncbuf.Buffer
}

func (bw *blockedWriter) Write(p []byte) (int, error) {
	<-bw.release
	bw.writes++ // only the line writer's goroutine writes
	return bw.Buffer.Write(p)
}

// TestBoundsWhatWaits: while the output is stuck, lines queue up to the limit and
// the next writer waits; nothing is lost once the output moves again.
func TestBoundsWhatWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		out := &blockedWriter{release: make(chan struct{})}
		lw := New(out, 100)
		line := []byte(strings.Repeat("x", 39) + "\n")
		_, _ = lw.Write(line) // taken by the writer, which is now stuck
		synctest.Wait()
		_, _ = lw.Write(line)
		_, _ = lw.Write(line) // 80 bytes pending
		third := make(chan struct{})
		go func() {
			_, _ = lw.Write(line) // would make 120 > 100: waits
			close(third)
		}()
		synctest.Wait()
		select {
		case <-third:
			t.Fatal("a write past the limit did not wait")
		default:
		}
		lw.mu.Lock()
		pending := len(lw.pending)
		lw.mu.Unlock()
		if pending != 80 {
			t.Errorf("%d bytes pending; want 80", pending)
		}
		close(out.release)
		<-third
		if err := lw.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), strings.Repeat(string(line), 4); got != want {
			t.Errorf("written %d bytes; want %d", len(got), len(want))
		}
		if out.writes > 3 {
			t.Errorf("%d writes for 4 lines, 2 of which waited together; want at most 3", out.writes)
		}
	})
}
