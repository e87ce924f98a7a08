package emulator

import (
	"bytes"
	"encoding/json"
	"github.com/mediagen/mediagen-emulator/emulator/api"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// These benchmarks send requests through the full handler (framing, journal, auth, routing,
// validation) of an emulator over the embedded default catalog on a manual clock. They report
// speed; they assert only that the requests succeed.

const (
	benchKey   = "mg_test_all"
	benchModel = "fal-ai/flux/dev"
	// benchInput is the first example of fal-ai/flux/dev's input schema.
	benchInput = `{"prompt":"a red fox standing in fresh snow at dawn, telephoto, shallow depth of field","image_size":"landscape_16_9","num_images":1}`
	// wakeModel is a speech model whose short prompt makes a one-second WAV, so finishing a job
	// costs little besides the wake itself.
	wakeModel = "fal-ai/kokoro/american-english"
	wakeInput = `{"prompt":"Hi there.","voice":"am_michael"}`
)

// benchResetEvery bounds what a long benchmark accumulates (quotes, jobs, idempotency keys,
// clock timers, spent credits): the state is reset, with the timer stopped, this often — below
// the 10,000 unexpired quotes an account may hold.
const benchResetEvery = 5_000

func benchServer(b *testing.B) *Server {
	b.Helper()
	s, err := NewServer(Config{ManualClock: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	<-s.Ready() // the embedded catalog loads in the background
	return s
}

// post sends one JSON POST through the handler, as a client would, and returns the recorder.
func post(h http.Handler, path string, body []byte, idemKey string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func quoteRequest(model, input string) []byte {
	return []byte(`{"model":"` + model + `","input":` + input + `}`)
}

func generateRequest(model, input, quoteID string) []byte {
	return []byte(`{"model":"` + model + `","input":` + input + `,"quote_id":"` + quoteID + `"}`)
}

// quoteIDOf reads quote_id from a quote response without a full decode (it is the first
// field); it falls back to decoding when the body is shaped otherwise.
func quoteIDOf(b *testing.B, rec *httptest.ResponseRecorder) string {
	if rec.Code != http.StatusOK {
		b.Fatalf("quote: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	const prefix = `{"quote_id":"`
	if rest, ok := bytes.CutPrefix(body, []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			return string(rest[:end])
		}
	}
	var q api.Quote
	if err := json.Unmarshal(body, &q); err != nil || q.QuoteID == "" {
		b.Fatalf("quote body %q: %v", body, err)
	}
	return q.QuoteID
}

// resetUntimed puts the emulator back to its start with the benchmark timer stopped.
func resetUntimed(b *testing.B, s *Server) {
	b.StopTimer()
	s.tenants.Default().Reset()
	b.StartTimer()
}

// BenchmarkQuote prices one flux/dev input: decode, envelope check, schema validation,
// pricing, a quote id and the stored quote.
func BenchmarkQuote(b *testing.B) {
	s := benchServer(b)
	body := quoteRequest(benchModel, benchInput)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n%benchResetEvery == 0 {
			resetUntimed(b, s)
		}
		if rec := post(s, "/v1/quotes", body, ""); rec.Code != http.StatusOK {
			b.Fatalf("quote: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkGenerate starts flux/dev jobs without waiting. "quote+generate" is what a client
// pays per generation; "generate" times POST /v1/generate alone, over quotes made in batches
// with the timer stopped.
func BenchmarkGenerate(b *testing.B) {
	b.Run("quote+generate", func(b *testing.B) {
		s := benchServer(b)
		qbody := quoteRequest(benchModel, benchInput)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if n++; n%benchResetEvery == 0 {
				resetUntimed(b, s)
			}
			id := quoteIDOf(b, post(s, "/v1/quotes", qbody, ""))
			rec := post(s, "/v1/generate", generateRequest(benchModel, benchInput, id), "bench-"+strconv.Itoa(n))
			if rec.Code != http.StatusAccepted {
				b.Fatalf("generate: %d %s", rec.Code, rec.Body)
			}
		}
	})
	b.Run("generate", func(b *testing.B) {
		s := benchServer(b)
		qbody := quoteRequest(benchModel, benchInput)
		const batch = 512
		var bodies [][]byte
		b.ReportAllocs()
		n, sinceReset := 0, 0
		for b.Loop() {
			if len(bodies) == 0 {
				b.StopTimer()
				if sinceReset >= benchResetEvery {
					s.tenants.Default().Reset()
					sinceReset = 0
				}
				for range batch {
					id := quoteIDOf(b, post(s, "/v1/quotes", qbody, ""))
					bodies = append(bodies, generateRequest(benchModel, benchInput, id))
				}
				b.StartTimer()
			}
			n++
			sinceReset++
			body := bodies[len(bodies)-1]
			bodies = bodies[:len(bodies)-1]
			rec := post(s, "/v1/generate", body, "bench-"+strconv.Itoa(n))
			if rec.Code != http.StatusAccepted {
				b.Fatalf("generate: %d %s", rec.Code, rec.Body)
			}
		}
	})
}

// timedRecorder notes when the response body starts.
type timedRecorder struct {
	*httptest.ResponseRecorder
	wrote time.Time
}

func (t *timedRecorder) Write(p []byte) (int, error) {
	if t.wrote.IsZero() {
		t.wrote = time.Now()
	}
	return t.ResponseRecorder.Write(p)
}

// BenchmarkWakeLatency measures how long a POST /v1/generate?wait=true that is blocked on a
// running job takes to answer once the job turns terminal.
//
// Each iteration quotes and starts a speech job, advances the manual clock until the job runs,
// then replays the generation with wait=true (the same Idempotency-Key, so it waits on that
// job) in a goroutine and yields until the emulator counts it as waiting. It then schedules a
// marker on the emulator's clock just after the job's end and advances the clock past both:
// the marker's callback runs on the advancing goroutine right after the job's end callback has
// made the outputs, turned the job terminal and woken its watchers, so the time from the
// marker to the waiting handler's return is the wake plus writing the response, without the
// media rendering. Reported per wake:
//
//	ns/wake           marker -> the waiting handler returned (mean)
//	p50-ns/wake, p99-ns/wake
//	ns/wake-to-write  marker -> the response body began (mean)
//
// ns/op is the whole cycle (quote, generate, clock steps, goroutine) and means little.
func BenchmarkWakeLatency(b *testing.B) {
	s := benchServer(b)
	qbody := quoteRequest(wakeModel, wakeInput)
	type result struct {
		rec  *timedRecorder
		done time.Time
	}
	var wakes, writes []time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		// Stay inside ten minutes of emulator time, so no quote, key or output timer of an
		// earlier iteration fires between a job's end and the marker.
		if n%200 == 0 {
			resetUntimed(b, s)
		}
		st := s.world()
		idem := "wake-" + strconv.Itoa(n)
		id := quoteIDOf(b, post(s, "/v1/quotes", qbody, ""))
		body := generateRequest(wakeModel, wakeInput, id)
		rec := post(s, "/v1/generate", body, idem)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("generate: %d %s", rec.Code, rec.Body)
		}
		var job struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &job); err != nil {
			b.Fatal(err)
		}
		for range 100 {
			v, err := st.JobAny(job.ID)
			if err != nil {
				b.Fatalf("job %s is gone", job.ID)
			}
			if v.Status == jobs.Running {
				break
			}
			if v.Status.Terminal() {
				b.Fatalf("job %s ended (%s) before it was waited for", job.ID, v.Status)
			}
			if err := st.Advance(10 * time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}

		done := make(chan result, 1)
		go func() {
			req := httptest.NewRequest(http.MethodPost, "/v1/generate?wait=true", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+benchKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", idem)
			rec := &timedRecorder{ResponseRecorder: httptest.NewRecorder()}
			s.ServeHTTP(rec, req)
			done <- result{rec, time.Now()}
		}()
		waitUntilWaiting(b, s, 1)

		// Jobs of this model run 400 ms; two seconds covers the run with room to spare.
		const step = 2 * time.Second
		var marked time.Time
		st.Clock().AfterFunc(st.Now().Add(step), func() { marked = time.Now() })
		if err := st.Advance(step); err != nil {
			b.Fatal(err)
		}
		r := <-done
		if r.rec.Code != http.StatusOK {
			b.Fatalf("wait=true: %d %s", r.rec.Code, r.rec.Body)
		}
		wakes = append(wakes, max(0, r.done.Sub(marked)))
		writes = append(writes, max(0, r.rec.wrote.Sub(marked)))
	}
	b.ReportMetric(float64(mean(wakes)), "ns/wake")
	b.ReportMetric(float64(percentile(wakes, 0.50)), "p50-ns/wake")
	b.ReportMetric(float64(percentile(wakes, 0.99)), "p99-ns/wake")
	b.ReportMetric(float64(mean(writes)), "ns/wake-to-write")
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
