package explore

import (
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// BenchmarkDraw draws one run's plan for a client that took the four routes of a generation,
// with some cases reached: the cost explore and the test runners' helpers pay per run.
func BenchmarkDraw(b *testing.B) {
	req := api.DrawRequest{Seed: 7, Routes: map[string]int{"POST /v1/quotes": 1, "POST /v1/generate": 1, "GET /v1/jobs/{id}": 3, "GET /files/**": 1},
		Reached: []string{"fault reset", "fault error", "job succeeded"}, Terminal: true}
	b.ReportAllocs()
	for b.Loop() {
		req.Run++
		_ = Draw(req)
	}
}

// BenchmarkCandidates shrinks a plan of three perturbations by one step.
func BenchmarkCandidates(b *testing.B) {
	plan := Draw(api.DrawRequest{Seed: 7, Run: 9, Routes: map[string]int{"POST /v1/generate": 3, "GET /files/**": 2}}).Plan
	b.ReportAllocs()
	for b.Loop() {
		_ = Candidates(plan)
	}
}
