package emulator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/faults"
)

// TestFaultsAreBoundedPerTenant: a tenant holds at most faults.MaxRules fault rules; one more
// answers 422 invalid_request and changes nothing, and removing the API's rules makes room.
func TestFaultsAreBoundedPerTenant(t *testing.T) {
	hs := tenantServer(t, Config{})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "faulty"}
	for i := range faults.MaxRules {
		c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": fmt.Sprint("/v1/none/", i)}, "action": "reset"})
	}
	status, out, _ := c.do("POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "action": "reset"})
	if status != 422 || out["code"] != "invalid_request" {
		t.Fatalf("fault %d: %d %v, want 422 invalid_request", faults.MaxRules+1, status, out)
	}
	c.must(204, "DELETE", "/_emulator/faults", nil)
	c.must(201, "POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": "/v1/models"}, "action": "reset"})
}

// TestFaultsCountAgainstTheBudget: fault rules are counted against --memory-budget as other
// stores are: under a budget of 1 MiB, rules of a kilobyte added one after another answer 503
// memory_budget_exhausted before the tenant's own bounds.
func TestFaultsCountAgainstTheBudget(t *testing.T) {
	hs := tenantServer(t, Config{MemoryBudget: 1 << 20})
	c := wire{t: t, base: hs.URL, key: "key_a", header: "faulty"}
	path := "/v1/" + strings.Repeat("p", 1000)
	for i := range faults.MaxRules {
		status, out, _ := c.do("POST", "/_emulator/faults", map[string]any{"match": map[string]any{"path": path}, "action": "reset", "code": fmt.Sprint("c", i)})
		if status == 201 {
			continue
		}
		if status != 503 || out["code"] != "memory_budget_exhausted" || i < 100 {
			t.Fatalf("after %d faults of 1 KB: %d %v, want 503 memory_budget_exhausted", i, status, out)
		}
		return
	}
	t.Fatalf("%d faults of 1 KB each fit in a budget of 1 MiB", faults.MaxRules)
}

// TestInlineScenarioCountsAgainstTheBudget: a scenario sent inline is held at its cost within
// --memory-budget; one tenant's large scenario leaves no room for another's.
func TestInlineScenarioCountsAgainstTheBudget(t *testing.T) {
	hs := tenantServer(t, Config{MemoryBudget: 1 << 20})
	inline := func(name string) map[string]any {
		var fs []any
		for i := range 100 {
			fs = append(fs, map[string]any{"match": map[string]any{"path": fmt.Sprintf("/v1/%d/%s", i, strings.Repeat("s", 1000))}, "action": "reset"})
		}
		return map[string]any{"scenario": map[string]any{"name": name, "faults": fs}}
	}
	a := wire{t: t, base: hs.URL, key: "key_a", header: "a"}
	b := wire{t: t, base: hs.URL, key: "key_a", header: "b"}
	a.must(200, "PUT", "/_emulator/scenario", inline("big-a"))
	b.must(200, "GET", "/_emulator/health", nil) // the tenant is made before it is full
	status, out, _ := b.do("PUT", "/_emulator/scenario", inline("big-b"))
	if status != 503 || out["code"] != "memory_budget_exhausted" {
		t.Fatalf("a second large inline scenario: %d %v, want 503 memory_budget_exhausted", status, out)
	}
	a.must(200, "PUT", "/_emulator/scenario", map[string]any{"name": "default"})
	b.must(200, "PUT", "/_emulator/scenario", inline("big-b"))
}
