package importer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// hostileServices misbehave (or are merely large) in ways that once made an import hold
// gigabytes.
var hostileServices = []struct {
	name    string
	handler http.HandlerFunc
}{
	{"endless listing", func(w http.ResponseWriter, r *http.Request) {
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		var items []string
		for i := range 100 {
			items = append(items, fmt.Sprintf(`{"id":"m/%d","name":"a model with a long enough name %d","description":"%s","category":"text-to-image","status":"ready"}`, offset+i, offset+i, strings.Repeat("d", 200)))
		}
		fmt.Fprintf(w, `{"data":[%s],"total":1000000000,"has_more":true}`, strings.Join(items, ","))
	}},
	{"wide answer", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[0`)
		chunk := strings.Repeat(",0", 1<<19)
		for range 30 {
			fmt.Fprint(w, chunk)
		}
		fmt.Fprint(w, `]}`)
	}},
	{"10000 models", manyModels(10_000)},
	{"600 models of 200 KB", bigModels(600, 200<<10)},
}

// bigModels is a well-behaved service of n models whose schemas each hold size bytes of text.
func bigModels(n, size int) http.HandlerFunc {
	schema := `{"type":"object","required":["prompt"],"properties":{"prompt":{"type":"string","description":"` + strings.Repeat("d", size) +
		`"}},"examples":[{"prompt":"a fox"}]}`
	many := manyModels(n)
	return func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/acme/m"); ok {
			fmt.Fprintf(w, `{"id":"acme/m%s","name":"M","description":"d","category":"text-to-image","product":"p","mode":"m%s","output_type":"image","status":"ready","input_schema":%s}`, id, id, schema)
			return
		}
		many(w, r)
	}
}

// manyModels is a well-behaved service with n small models.
func manyModels(n int) http.HandlerFunc {
	const schema = `{"type":"object","required":["prompt"],"properties":{"prompt":{"type":"string"},` +
		`"num_images":{"type":"integer","minimum":1,"maximum":4,"default":1}},"examples":[{"prompt":"a fox"}]}`
	return func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v1/models":
			offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			var items []string
			for i := offset; i < min(n, offset+limit); i++ {
				items = append(items, fmt.Sprintf(`{"id":"acme/m%d","name":"M %d","description":"d","category":"text-to-image","product":"p","mode":"m%d","output_type":"image","status":"ready"}`, i, i, i))
			}
			fmt.Fprintf(w, `{"data":[%s],"total":%d,"has_more":%t}`, strings.Join(items, ","), n, offset+limit < n)
		case p == "/v1/models/categories":
			fmt.Fprint(w, `{"data":[{"id":"text-to-image","output_type":"image"}]}`)
		case p == "/v1/quotes":
			fmt.Fprint(w, `{"credits":3}`)
		case strings.HasPrefix(p, "/v1/models/acme/m"):
			id := strings.TrimPrefix(p, "/v1/models/")
			fmt.Fprintf(w, `{"id":%q,"name":"M","description":"d","category":"text-to-image","product":"p","mode":%q,"output_type":"image","status":"ready",`+
				`"openapi":{"openapi":"3.1.0","paths":{"/x":{"post":{"requestBody":{"content":{"application/json":{"schema":%s}}}}}}}}`, id, id, schema)
		default:
			http.NotFound(w, r)
		}
	}
}

// peakHeap samples the live heap until stop is called, which returns the peak in MiB.
func peakHeap() (stop func() float64) {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-finished
		return float64(peak.Load()) / (1 << 20)
	}
}

// BenchmarkHostileMemory reports the peak heap (live and not yet collected) of one import from
// each service. The 10,000-model import takes minutes:
//
//	go test -run '^$' -bench HostileMemory -benchtime 1x ./emulator/internal/importer/
func BenchmarkHostileMemory(b *testing.B) {
	for _, s := range hostileServices {
		b.Run(s.name, func(b *testing.B) {
			srv := httptest.NewServer(s.handler)
			defer srv.Close()
			for b.Loop() {
				stop := peakHeap()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				_, err := importer.Import(ctx, importer.Options{From: srv.URL, Key: "k",
					Sleep: func(context.Context, time.Duration) error { return nil }})
				cancel()
				b.ReportMetric(stop(), "peak-MiB")
				b.Logf("%v", err)
			}
		})
	}
}
