package sim

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
)

// BenchmarkTenant reports what a tenant costs: the time to make one on first use, and the heap
// an idle one holds (bytes/tenant), on a manual and on a real clock.
func BenchmarkTenant(b *testing.B) {
	for _, manual := range []bool{true, false} {
		name := "real"
		if manual {
			name = "manual"
		}
		b.Run(name, func(b *testing.B) {
			cfg := testConfig(b)
			cfg.ManualClock = manual
			cfg.MaxTenants = 1 << 30
			cfg.TenantIdle = time.Hour
			ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
			defer ts.Close()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := ts.Get("t" + strconv.Itoa(n)); err != nil {
					b.Fatal(err)
				}
				n++
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/tenant")
			b.ReportMetric(float64(after.StackInuse-before.StackInuse)/float64(n), "stack-bytes/tenant")
		})
	}
}

// TestIdleTenantIsSmall fails if an idle tenant holds more than 64 KiB of heap.
func TestIdleTenantIsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory")
	}
	cfg := testConfig(t)
	cfg.MaxTenants = 1000
	cfg.TenantIdle = time.Hour
	ts := NewTenants(cfg, ids.NewSeeded(1), media.NewCache(64<<20))
	defer ts.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 200
	for i := range n {
		if _, err := ts.Get("t" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("an idle tenant holds %d bytes of heap", per)
	if per > 64<<10 {
		t.Errorf("an idle tenant holds %d bytes, over 64 KiB", per)
	}
}
