package catalog

import (
	"os"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

func TestSyntheticCatalog(t *testing.T) {
	t.Parallel()
	c, err := Parse("synthetic.yaml", catalogtest.Synthetic(40))
	if err != nil {
		t.Fatalf("the synthetic catalog does not load:\n%v", err)
	}
	if len(c.Models) != 40 || len(c.Products) != 10 {
		t.Errorf("%d models, %d products; want 40, 10", len(c.Models), len(c.Products))
	}
	ready := 0
	for _, m := range c.Models {
		if m.Ready() {
			ready++
		}
	}
	if ready != 40 {
		t.Errorf("%d ready of 40", ready)
	}
	c, err = Parse("synthetic.yaml", catalogtest.Synthetic(100))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Model("synth/watercolor/m-00049"); m == nil || m.Ready() {
		t.Errorf("every 50th model is deprecated; got %+v", m)
	}
}

// BenchmarkParse10000 loads a 10,000-model catalog fully checked. Beside wall time it reports
// the CPU time a load takes (steadier than wall time on a busy machine) and the largest heap
// seen while loading (goal: under 150 MB).
func BenchmarkParse10000(b *testing.B) {
	data := catalogtest.Synthetic(10_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	peak := watchHeap(b)
	cpu := cpuTime()
	for b.Loop() {
		if _, err := Parse("synthetic.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// watchHeap samples the heap's size until the benchmark ends; the function it returns gives the
// largest sample. The heap includes garbage not yet collected, as the process's memory does.
func watchHeap(b *testing.B) func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	b.Cleanup(func() { close(done); <-stopped })
	return func() uint64 { return peak.Load() }
}

func BenchmarkParseSmall(b *testing.B) {
	data := readCatalogFile(b, "small.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("small.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDefault parses the embedded default catalog, the emulator's one-time cost
// before it answers its first request.
func BenchmarkParseDefault(b *testing.B) {
	data, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("default.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFind10000 answers searches over a 10,000-model catalog and takes a 500-item page of
// the result, as GET /v1/models does (goal: under 5 ms for a search that matches every model).
func BenchmarkFind10000(b *testing.B) {
	c, err := Parse("synthetic.yaml", catalogtest.Synthetic(10_000))
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []struct{ name, search, category string }{
		{"every model", "synth", ""},
		{"a common letter", "a", ""},
		{"every model in a category", "synth", "text-to-video"},
		{"one model", "m-09998", ""},
		{"no model", "zebra", ""},
	} {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				found := c.Find(q.search, q.category)
				page := found[:min(500, len(found))]
				if q.search == "synth" && len(page) != 500 {
					b.Fatalf("%d found", len(found))
				}
			}
		})
	}
	b.Run("grouped, every model", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if groups, _ := c.Group(c.Find("synth", ""), 0, 500); len(groups) != 500 {
				b.Fatalf("%d groups", len(groups))
			}
		}
	})
}
