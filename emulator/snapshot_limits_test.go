package emulator

import (
	"testing"
)

// TestSnapshotCarriesRateLimitWindows: a restored tenant's rate-limit windows hold the counts
// the original had spent, so the request that was next to be refused is refused there too.
func TestSnapshotCarriesRateLimitWindows(t *testing.T) {
	t.Parallel()
	s := simServer(t, Config{})
	limit := map[string]any{"scenario": map[string]any{"rate_limits": []any{map[string]any{
		"match": map[string]any{"method": "GET", "path": "/v1/models"}, "limit": 2, "per": "1m"}}}}
	if rec := tenantCall(t, s, "rl-a", "PUT", "/_emulator/scenario", "", limit); rec.Code != 200 {
		t.Fatalf("put scenario: %d %s", rec.Code, rec.Body)
	}
	for i := range 2 {
		if rec := tenantCall(t, s, "rl-a", "GET", "/v1/models", "mg_test_all", nil); rec.Code != 200 {
			t.Fatalf("request %d within the limit: %d", i+1, rec.Code)
		}
	}
	if rec := restore(t, s, "rl-b", snapshotOf(t, s, "rl-a", "")); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	for _, tenant := range []string{"rl-b", "rl-a"} {
		rec := tenantCall(t, s, tenant, "GET", "/v1/models", "mg_test_all", nil)
		if rec.Code != 429 || rec.Header().Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("%s: the third request in the window answered %d (X-RateLimit-Remaining %q), want 429",
				tenant, rec.Code, rec.Header().Get("X-RateLimit-Remaining"))
		}
	}
}
