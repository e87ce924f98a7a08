package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// faultKindChecks holds, for each fault action, a rule sent through the control API and what a
// request it answers must get instead of its normal answer.
var faultKindChecks = map[string]struct {
	rule  map[string]any
	check func(t *testing.T, resp *http.Response, body []byte, err error, took time.Duration)
}{
	api.FaultError: {map[string]any{"status": 503}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
		if err != nil || resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("error: %v %v", resp, err)
		}
	}},
	api.FaultReset: {map[string]any{"action": "reset"}, func(t *testing.T, resp *http.Response, _ []byte, err error, _ time.Duration) {
		if err == nil {
			t.Errorf("reset: answered %d", resp.StatusCode)
		}
	}},
	api.FaultMalformed: {map[string]any{"action": "malformed"}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
		if err != nil || resp.StatusCode != 200 || json.Valid(body) {
			t.Errorf("malformed: %v %q %v", resp, body, err)
		}
	}},
	api.FaultTruncated: {map[string]any{"action": "truncated"}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
		if resp == nil || resp.StatusCode != 200 || int64(len(body)) >= resp.ContentLength || err == nil {
			t.Errorf("truncated: %v, %d bytes, %v", resp, len(body), err)
		}
	}},
	api.FaultDelay: {map[string]any{"delay": "30ms"}, func(t *testing.T, resp *http.Response, body []byte, err error, took time.Duration) {
		if err != nil || resp.StatusCode != 200 || !json.Valid(body) || took < 30*time.Millisecond {
			t.Errorf("delay: %v after %s, %v", resp, took, err)
		}
	}},
	api.FaultGateway: {map[string]any{"action": "gateway"}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
		if err != nil || resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "text/html" || resp.Header.Get("X-Request-Id") != "" {
			t.Errorf("gateway: %v %v", resp, err)
		}
	}},
	api.FaultDownload: {map[string]any{"download": map[string]any{"cut_after": 10}}, func(t *testing.T, resp *http.Response, body []byte, err error, _ time.Duration) {
		if resp == nil || resp.StatusCode != 200 || len(body) != 10 || err == nil {
			t.Errorf("download cut after 10 bytes: %v, %d bytes, %v", resp, len(body), err)
		}
	}},
}

// TestEveryFaultKind: each action of api.FaultActions is what docs/openapi.json's action enums
// list, is offered by the dashboard, has a check here, is taken by the control API, changes
// the answer of a request it matches as documented, and is counted by coverage as "fault
// KIND". An action added to the list but not to the traffic code, the document, the dashboard
// or the coverage fails here.
func TestEveryFaultKind(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	enums := actionEnums(doc["components"])
	if len(enums) == 0 {
		t.Fatal("docs/openapi.json has no enum of fault actions")
	}
	for _, e := range enums {
		if !slices.Equal(e, api.FaultActions) {
			t.Errorf("docs/openapi.json lists fault actions %v, api.FaultActions %v", e, api.FaultActions)
		}
	}

	// The dashboard's form offers every action.
	page, err := os.ReadFile("internal/ui/static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	form := regexp.MustCompile(`(?s)<select name="action">(.*?)</select>`).FindSubmatch(page)
	if form == nil {
		t.Fatal("the dashboard has no fault action select")
	}
	for _, kind := range api.FaultActions {
		if !regexp.MustCompile(`<option[^>]*>` + kind + `</option>`).Match(form[1]) {
			t.Errorf("the dashboard's fault form does not offer %q", kind)
		}
	}

	s := simServer(t, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	// A fresh connection for each request: net/http retries a GET whose reused connection drops.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, kind := range api.FaultActions {
		c, ok := faultKindChecks[kind]
		if !ok {
			t.Errorf("fault action %q has no check in faultKindChecks", kind)
			continue
		}
		rule := map[string]any{"match": map[string]any{"method": "GET", "path": "/v1/models"}, "count": 1}
		for k, v := range c.rule {
			rule[k] = v
		}
		addFault(t, s, rule)
		req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer mg_test_all")
		start := time.Now()
		resp, err := client.Do(req)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		c.check(t, resp, body, err, time.Since(start))
	}
	_, counts := coverageOf(t, s, "")
	for _, kind := range api.FaultActions {
		if counts["fault "+kind] != 1 {
			t.Errorf("coverage counts fault %s %d times, want 1", kind, counts["fault "+kind])
		}
	}
}

// actionEnums finds the enum of every property named action under v.
func actionEnums(v any) [][]string {
	var out [][]string
	eachObject(v, func(o map[string]any) {
		props, _ := o["properties"].(map[string]any)
		eachObject(props["action"], func(a map[string]any) {
			if e, ok := a["enum"].([]any); ok {
				var names []string
				for _, n := range e {
					names = append(names, fmt.Sprint(n))
				}
				out = append(out, names)
			}
		})
	})
	return out
}

// eachObject calls f on every JSON object in v, v included.
func eachObject(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, c := range x {
			eachObject(c, f)
		}
	case []any:
		for _, c := range x {
			eachObject(c, f)
		}
	}
}
