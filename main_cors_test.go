package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestCORSOriginsSetting(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want []string
	}{
		{"*", []string{"*"}},
		{" none ", []string{"none"}},
		{"http://localhost:5173", []string{"http://localhost:5173"}},
		{"http://localhost:5173/, https://app.example ,", []string{"http://localhost:5173", "https://app.example"}},
		{"chrome-extension://abcdef", []string{"chrome-extension://abcdef"}},
	}
	for _, tc := range good {
		got, err := corsOrigins(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("corsOrigins(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", ",", "localhost:5173", "http://localhost:5173/app", "http://u@localhost", "http://x?y", "*,http://a.example", "none, http://a.example", "http://"} {
		if got, err := corsOrigins(in); err == nil {
			t.Errorf("corsOrigins(%q) = %q; want an error", in, got)
		}
	}
	for _, tc := range []struct {
		vars map[string]string
		args []string
	}{
		{nil, []string{"--cors-origins", "localhost:5173"}},
		{map[string]string{"MEDIAGEN_CORS_ORIGINS": "*,none"}, nil},
	} {
		r := runSync(t, tc.vars, tc.args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--cors-origins") {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want exit 2 naming --cors-origins", tc.vars, tc.args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestCORSOriginsReachTheServer: the flag and its variable decide what a browser is allowed.
func TestCORSOriginsReachTheServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		vars   map[string]string
		args   []string
		origin string
		want   string // Access-Control-Allow-Origin
	}{
		{"default", nil, nil, "http://localhost:5173", "*"},
		{"flag list", nil, []string{"--cors-origins", "http://localhost:5173,https://app.example"}, "https://app.example", "https://app.example"},
		{"flag list, other origin", nil, []string{"--cors-origins", "http://localhost:5173"}, "https://app.example", ""},
		{"variable none", map[string]string{"MEDIAGEN_CORS_ORIGINS": "none"}, nil, "http://localhost:5173", ""},
		{"flag over variable", map[string]string{"MEDIAGEN_CORS_ORIGINS": "none"}, []string{"--cors-origins", "*"}, "http://localhost:5173", "*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := serve(t, tc.vars, append([]string{"--addr", "127.0.0.1:0", "--catalog", smallCatalog}, tc.args...)...)
			req, _ := http.NewRequest(http.MethodGet, "http://"+in.addr+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer key_a")
			req.Header.Set("Origin", tc.origin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != tc.want {
				t.Errorf("GET /v1/models from %s: %d, Access-Control-Allow-Origin %q; want 200, %q", tc.origin, resp.StatusCode, got, tc.want)
			}
		})
	}
}
