package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// BenchmarkDeliver measures one delivery through the hub on the manual clock: queued, signed,
// sent and settled, without a network (fake) and to a loopback receiver (loopback).
func BenchmarkDeliver(b *testing.B) {
	b.Run("fake", func(b *testing.B) {
		b.ReportAllocs()
		h, c, _ := fakeHub(b, nil, func(Attempt) Result { return Result{Status: 204} })
		i := 0
		for b.Loop() {
			i++
			h.Reached(ended("job-"+strconv.Itoa(i), c.Now()))
			_ = c.Advance(time.Millisecond)
		}
	})
	b.Run("loopback", func(b *testing.B) {
		b.ReportAllocs()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
		defer srv.Close()
		guard, _ := ParseAllow(nil)
		tr := NewTransport(guard, "bench")
		defer tr.Close()
		h, c, _ := fakeHub(b, func(in *api.WebhookConfig) { in.URL = srv.URL }, func(a Attempt) Result { return tr.Send(context.Background(), a) })
		i := 0
		for b.Loop() {
			i++
			h.Reached(ended("job-"+strconv.Itoa(i), c.Now()))
			_ = c.Advance(time.Millisecond)
		}
		if s := h.Summary(); s.Delivered != int64(i) {
			b.Fatalf("%d of %d delivered", s.Delivered, i)
		}
	})
}
