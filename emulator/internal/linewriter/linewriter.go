// Package linewriter writes a log's lines from a goroutine of its own, in batches under load,
// so a request pays no system call for its log line.
package linewriter

import (
	"io"
	"sync"
	"time"
)

// MaxPending is the usual bound of the bytes waiting to be written: a request that would pass
// it waits, so a reader that stops (a full pipe) slows the emulator rather than growing it.
const MaxPending = 1 << 20

// logLinger is the least time between two writes of the log: lines that arrive sooner wait
// for the next write, together.
const logLinger = time.Millisecond

// Writer writes the log from one goroutine of its own. On a quiet emulator a line is written
// at once; under load, lines leave together at most once per logLinger, so a request pays
// neither a system call for its log line nor a wake-up of the writer. Lines keep their order.
type Writer struct {
	out   io.Writer
	limit int // bytes pending at most, unless one line is longer

	mu      sync.Mutex
	room    sync.Cond // signalled when pending has been taken for writing
	pending []byte
	closed  bool
	wake    chan struct{} // holds a token while pending has lines to write
	done    chan struct{} // closed once the last lines have been written
}

// New starts a Writer onto out that keeps at most limit bytes waiting (more only when one line
// is longer); Close stops it.
func New(out io.Writer, limit int) *Writer {
	lw := &Writer{out: out, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	lw.room.L = &lw.mu
	go lw.loop()
	return lw
}

// Write queues p, a whole log line as slog hands it over. After Close it writes p itself.
func (lw *Writer) Write(p []byte) (int, error) {
	lw.mu.Lock()
	for !lw.closed && len(lw.pending) > 0 && len(lw.pending)+len(p) > lw.limit {
		lw.room.Wait()
	}
	if lw.closed {
		lw.mu.Unlock()
		<-lw.done // after the lines queued before it
		return lw.out.Write(p)
	}
	lw.pending = append(lw.pending, p...)
	lw.mu.Unlock()
	select {
	case lw.wake <- struct{}{}:
	default: // a wake-up is already due
	}
	return len(p), nil
}

func (lw *Writer) loop() {
	defer close(lw.done)
	var batch []byte
	var last time.Time
	for range lw.wake {
		if wait := logLinger - time.Since(last); wait > 0 {
			time.Sleep(wait) // let the lines of a busy moment gather
		}
		lw.mu.Lock()
		batch, lw.pending = lw.pending, batch[:0]
		closed := lw.closed
		lw.room.Broadcast()
		lw.mu.Unlock()
		if len(batch) > 0 {
			_, _ = lw.out.Write(batch) // a log that cannot be written has nowhere to complain
			last = time.Now()
		}
		if cap(batch) > lw.limit { // a burst's buffer is not kept for good
			batch = nil
		}
		if closed {
			return
		}
	}
}

// Close writes what is pending and returns once it has been; later lines are written directly.
func (lw *Writer) Close() error {
	lw.mu.Lock()
	if lw.closed {
		lw.mu.Unlock()
		return nil
	}
	lw.closed = true
	lw.room.Broadcast()
	lw.mu.Unlock()
	select {
	case lw.wake <- struct{}{}:
	default: // the loop has a wake-up due, and will find the writer closed when it takes it
	}
	<-lw.done
	return nil
}
