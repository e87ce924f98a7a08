package jobs

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// retainedJobs is how many finished jobs BenchmarkRetainedJobs keeps: a long test suite's worth
// within the retention window.
const retainedJobs = 100_000

// benchInput is a realistic text-to-image input of about 200 bytes.
const benchInput = `{"prompt":"a hot air balloon drifting over a red canyon at sunrise, slow aerial shot, soft light","num_images":1,"image_size":"landscape_16_9","output_format":"png","guidance_scale":3.5,"seed":1234567}`

// benchLabel is the label of a benchmark job's output: the model's name and the prompt.
const benchLabel = "FLUX.1 [dev]: a hot air balloon drifting over a red canyon at sunrise, slow aerial shot, soft light"

// newBenchJob builds a job the way the generate handler does: a fresh copy of the input, ids of
// UUID length, and one output described in full, with its own path and label.
func newBenchJob(i int) New {
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	quote := fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)
	raw := []byte(benchInput)
	return New{
		ID: id, Account: "acct_all", Model: "fal-ai/flux/dev", QuoteID: quote, Credits: 3,
		Input: raw,
		Plan:  Plan{Queue: 200 * time.Millisecond, Run: 800 * time.Millisecond, QueueTimeout: 10 * time.Minute, Ending: Ending{Status: Succeeded}},
		Outputs: []Output{{
			Output: api.Output{Type: "image", ContentType: "image/png", Width: 1344, Height: 768, SizeBytes: 48_213},
			Path:   "/files/" + id + "/0.png", Format: "png", Seed: 1,
			Label: strings.Clone(benchLabel), // made per job, as the server does
		}},
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkRetainedJobs measures the heap that 100,000 finished jobs (each with a ~200-byte
// input and one output) hold while the engine retains them, and reports it per job, beside an
// estimate added up from struct sizes.
func BenchmarkRetainedJobs(b *testing.B) {
	b.ReportAllocs()
	var perJob float64
	for b.Loop() {
		perJob = retainedBytesPerJob(b, retainedJobs)
	}
	b.ReportMetric(perJob, "B/job")
	b.Logf("measured: %d retained jobs hold %.1f MB (%.0f B/job)", retainedJobs, perJob*retainedJobs/1e6, perJob)
	est := estimateRetainedJob()
	b.Logf("estimated from struct sizes: %d retained jobs ≈ %.1f MB (%d B/job):\n%s",
		retainedJobs, float64(est.total)*retainedJobs/1e6, est.total, est.breakdown)
}

// retainedBytesPerJob creates n jobs, lets them all succeed, and measures the heap they keep
// once garbage is collected.
func retainedBytesPerJob(tb testing.TB, n int) float64 {
	before := heapAlloc()
	c := clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	l := ledger.New(map[string]int64{"acct_all": 1 << 40})
	e := NewEngine(c, l, Options{Retention: 24 * time.Hour, MaxJobs: n})
	for i := range n {
		j := newBenchJob(i)
		if err := l.Hold(j.Account, j.Credits); err != nil {
			tb.Fatal(err)
		}
		e.Create(j)
	}
	if err := c.Advance(time.Second); err != nil {
		tb.Fatal(err)
	}
	if got := e.Counts(); got.Succeeded != n || e.Len() != n {
		tb.Fatalf("%d of %d jobs succeeded and retained", got.Succeeded, e.Len())
	}
	after := heapAlloc()
	runtime.KeepAlive(e)
	runtime.KeepAlive(c)
	return float64(after-before) / float64(n)
}

// TestRetainedJobBytes holds the engine to its memory budget: a retained finished job with a
// ~200-byte input and one output costs well under 2 KiB of heap. The figure is a property of
// the data structures, not of the machine's speed; the budget leaves room for the Go version.
func TestRetainedJobBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of megabytes")
	}
	if per := retainedBytesPerJob(t, 20_000); per > 2048 {
		t.Errorf("a retained job holds %.0f bytes; the budget is 2048", per)
	} else {
		t.Logf("a retained job holds %.0f bytes", per)
	}
}

// sizeClass rounds an allocation up to the Go allocator's size class (for sizes up to 2 KiB).
func sizeClass(n uintptr) uintptr {
	for _, c := range []uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
		288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048} {
		if n <= c {
			return c
		}
	}
	return n
}

type estimate struct {
	total     uintptr
	breakdown string
}

// estimateRetainedJob adds up, without running anything, what one finished job keeps alive:
// the engine's record (its list links included), its strings, input and output, and its map
// slot. Map slots are counted at a load of 7/8 plus half a doubling of slack.
func estimateRetainedJob() estimate {
	var e estimate
	var b bytes.Buffer
	add := func(name string, size uintptr) {
		e.total += size
		fmt.Fprintf(&b, "  %-40s %5d B\n", name, size)
	}
	n := newBenchJob(0)
	add("job record", sizeClass(unsafe.Sizeof(job{})))
	add("ID + QuoteID strings", 2*sizeClass(uintptr(len(n.ID))))
	add("Input bytes", sizeClass(uintptr(len(n.Input))))
	add("outputs slice (1 Output)", sizeClass(unsafe.Sizeof(Output{})))
	add("output Path string", sizeClass(uintptr(len(n.Outputs[0].Path))))
	add("output Label string", sizeClass(uintptr(len(n.Outputs[0].Label))))
	add("byID map slot (string key + pointer)", (16+8+1)*8/7*3/2)
	e.breakdown = b.String()
	return e
}
