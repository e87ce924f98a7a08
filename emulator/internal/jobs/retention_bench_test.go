package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
)

// retainedJobs is how many finished jobs BenchmarkRetainedJobs keeps: a long test suite's worth
// within the retention window.
const retainedJobs = 100_000

// benchInput is a realistic text-to-image input of about 200 bytes.
const benchInput = `{"prompt":"a hot air balloon drifting over a red canyon at sunrise, slow aerial shot, soft light","num_images":1,"image_size":"landscape_16_9","output_format":"png","guidance_scale":3.5,"seed":1234567}`

// benchSpec stands for the planned output the server's Finish closure captures.
type benchSpec struct {
	Type, Format    string
	Width, Height   int
	DurationSeconds float64
}

// newBenchJob builds a job the way the generate handler does: a fresh copy of the input, ids of
// UUID length, and a Finish closure that captures the decoded input, the planned outputs and a
// label (as the server's outputMaker does) and makes one output.
func newBenchJob(i int) New {
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	quote := fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)
	raw := []byte(benchInput)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var input map[string]any
	if err := dec.Decode(&input); err != nil {
		panic(err)
	}
	specs := []benchSpec{{Type: "image", Format: "png", Width: 1344, Height: 768}}
	label := "FLUX.1 [dev]: " + input["prompt"].(string)
	return New{
		ID: id, Account: "acct_all", Model: "fal-ai/flux/dev", QuoteID: quote, Credits: 3,
		Input: raw,
		Plan:  Plan{Queue: 200 * time.Millisecond, Run: 800 * time.Millisecond, QueueTimeout: 10 * time.Minute, Ending: Ending{Status: Succeeded}},
		Finish: func(id string) ([]Output, *Error) {
			out := make([]Output, len(specs))
			for k, s := range specs {
				out[k] = Output{
					Type: s.Type, Path: fmt.Sprintf("/files/%s/%d.%s", id, k, s.Format), ContentType: "image/png",
					Width: s.Width, Height: s.Height, SizeBytes: 48_213, Format: s.Format, Seed: uint64(k + 1), Label: label,
				}
			}
			_ = input // the server's closure holds the decoded input too
			return out, nil
		},
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
// input and one output) hold while the engine retains them, and reports it per job.
//
// "server" builds jobs as the generate handler does, with a Finish closure that captures the
// decoded input; the engine keeps that closure (in job.New) after the job finished. "no-capture"
// gives every job a Finish that captures nothing: the difference is what releasing Finish once
// the job is terminal would save.
func BenchmarkRetainedJobs(b *testing.B) {
	for _, variant := range []struct {
		name    string
		capture bool
	}{{"server", true}, {"no-capture", false}} {
		b.Run(variant.name, func(b *testing.B) {
			b.ReportAllocs()
			var perJob float64
			for b.Loop() {
				perJob = retainedBytesPerJob(b, variant.capture)
			}
			b.ReportMetric(perJob, "B/job")
			b.Logf("measured: %d retained jobs hold %.1f MB (%.0f B/job)", retainedJobs, perJob*retainedJobs/1e6, perJob)
			if variant.capture {
				est := estimateRetainedJob()
				b.Logf("estimated from struct sizes: %d retained jobs ≈ %.1f MB (%d B/job):\n%s",
					retainedJobs, float64(est.total)*retainedJobs/1e6, est.total, est.breakdown)
			}
		})
	}
}

func retainedBytesPerJob(b *testing.B, capture bool) float64 {
	before := heapAlloc()
	c := clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	l := ledger.New(map[string]int64{"acct_all": 1 << 40})
	e := NewEngine(c, l, 24*time.Hour)
	for i := range retainedJobs {
		n := newBenchJob(i)
		if !capture {
			n.Finish = finishOne
		}
		if err := l.Hold(n.Account, n.Credits); err != nil {
			b.Fatal(err)
		}
		e.Create(n)
	}
	if err := c.Advance(time.Second); err != nil {
		b.Fatal(err)
	}
	if _, total := e.List("acct_all", Filter{Status: Succeeded}, 0, 1); total != retainedJobs || e.Len() != retainedJobs {
		b.Fatalf("%d of %d jobs succeeded and retained", total, e.Len())
	}
	after := heapAlloc()
	runtime.KeepAlive(e)
	runtime.KeepAlive(c)
	return float64(after-before) / retainedJobs
}

// finishOne makes the same one output as newBenchJob's Finish without capturing anything.
func finishOne(id string) ([]Output, *Error) {
	return []Output{{
		Type: "image", Path: fmt.Sprintf("/files/%s/0.png", id), ContentType: "image/png",
		Width: 1344, Height: 768, SizeBytes: 48_213, Format: "png", Seed: 1, Label: "FLUX.1 [dev]",
	}}, nil
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
// the engine's record, its strings and output, its change channel, its drop timer, its map and
// list slots, and the Finish closure with the decoded input it captures. Map slots are counted
// at a load of 7/8 plus half a doubling of slack; the decoded input is a small map of 6 entries.
func estimateRetainedJob() estimate {
	var parts []struct {
		name string
		size uintptr
	}
	add := func(name string, size uintptr) {
		parts = append(parts, struct {
			name string
			size uintptr
		}{name, size})
	}
	n := newBenchJob(0)
	out, _ := n.Finish(n.ID)
	add("job record", sizeClass(unsafe.Sizeof(job{})))
	add("ID + QuoteID strings", 2*sizeClass(uintptr(len(n.ID))))
	add("Input bytes", sizeClass(uintptr(len(n.Input))))
	add("outputs slice (1 Output)", sizeClass(unsafe.Sizeof(Output{})))
	add("output Path string", sizeClass(uintptr(len(out[0].Path))))
	add("change channel (hchan)", sizeClass(96))
	add("drop timer + closure + heap slot", sizeClass(unsafe.Sizeof(clock.Timer{}))+sizeClass(24)+8)
	add("byID map slot (string key + pointer)", (16+8+1)*8/7*3/2)
	add("account list slot", 8*3/2)
	// The Finish closure and what it captures stay alive as long as the job does.
	add("Finish closure (specs, label, input)", sizeClass(32)+sizeClass(unsafe.Sizeof(benchSpec{}))+sizeClass(uintptr(len(out[0].Label))))
	mapBytes := sizeClass(48) + sizeClass(8+8*(16+16)) // header + one group of 8 slots
	valueBytes := uintptr(0)
	for k, v := range decodeBench() {
		valueBytes += sizeClass(uintptr(len(k)))
		switch x := v.(type) {
		case string:
			valueBytes += sizeClass(16) + sizeClass(uintptr(len(x)))
		case json.Number:
			valueBytes += sizeClass(16) + sizeClass(uintptr(len(x)))
		}
	}
	add("decoded input map captured by Finish", mapBytes+valueBytes)
	var e estimate
	var b bytes.Buffer
	for _, p := range parts {
		e.total += p.size
		fmt.Fprintf(&b, "  %-40s %5d B\n", p.name, p.size)
	}
	e.breakdown = b.String()
	return e
}

func decodeBench() map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(benchInput)))
	dec.UseNumber()
	var input map[string]any
	if err := dec.Decode(&input); err != nil {
		panic(err)
	}
	return input
}
