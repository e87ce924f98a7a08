// The emulator's image under Testcontainers for Go. (A Go suite can also run the emulator
// in-process with emulator/emulatortest, with no container at all.)
package emulator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const token = "testcontainers-admin-token" // the control API is off in a container without one

func TestGeneration(t *testing.T) {
	image := os.Getenv("MEDIAGEN_IMAGE")
	if image == "" {
		image = "ghcr.io/mediagen/mediagen-emulator:latest"
	}
	ctr, err := testcontainers.Run(t.Context(), image,
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithEnv(map[string]string{
			"MEDIAGEN_CLOCK": "manual", "MEDIAGEN_SEED": "42", "MEDIAGEN_ADMIN_TOKEN": token,
		}),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/_emulator/health").WithPort("8080/tcp")),
	)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ctr.PortEndpoint(t.Context(), "8080/tcp", "http")
	if err != nil {
		t.Fatal(err)
	}

	// A tenant per test: the X-Emulator-Tenant header on every request, /v1 and control alike.
	tenant := strings.ReplaceAll(t.Name(), "/", "-")
	call := func(method, path string, body any, headers ...string) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(t.Context(), method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer mg_test_all")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Emulator-Tenant", tenant)
		req.Header.Set("X-Emulator-Admin-Token", token)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %d: %v", method, path, resp.StatusCode, err)
		}
		return out
	}

	input := map[string]any{"prompt": "a red fox"}
	quote := call("POST", "/v1/quotes", map[string]any{"model": "fal-ai/flux/dev", "input": input})
	job := call("POST", "/v1/generate", map[string]any{"model": "fal-ai/flux/dev", "input": input, "quote_id": quote["quote_id"]},
		"Idempotency-Key", "k1")
	call("POST", "/_emulator/clock", map[string]any{"advance": "1m"})
	if got := call("GET", "/v1/jobs/"+job["id"].(string), nil); got["status"] != "succeeded" {
		t.Errorf("job %v", got)
	}
}
