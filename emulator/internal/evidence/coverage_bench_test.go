package evidence

import "testing"

// BenchmarkHit is what counting a listed case costs: an atomic addition here and one in the
// run's counts.
func BenchmarkHit(b *testing.B) {
	c := NewCounts(NewCounts(nil))
	b.ReportAllocs()
	for b.Loop() {
		c.Hit(Replay)
	}
}

// BenchmarkError is what counting an error answer costs: finding its case, then Hit.
func BenchmarkError(b *testing.B) {
	c := NewCounts(NewCounts(nil))
	b.ReportAllocs()
	for b.Loop() {
		c.Error("GET /v1/jobs/{id}", 404, "job_not_found")
	}
}
