package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestWebhookFlags: a run's webhook without a secret, a bad secret or a bad --webhook-allow stop
// the emulator before it listens (exit 2), never echoing the secret; the variables work as the
// flags do.
func TestWebhookFlags(t *testing.T) {
	t.Parallel()
	const secret = "whsec_c2VjcmV0LWZsYWctdmFsdWUtZm9yLXRlc3Rz"
	for _, tc := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{nil, []string{"--webhook", "http://127.0.0.1:9/"}, "--webhook needs --webhook-secret"},
		{nil, []string{"--webhook", "http://127.0.0.1:9/", "--webhook-secret", "whsec_%%%"}, "--webhook-secret: after whsec_"},
		{nil, []string{"--webhook-allow", "a b"}, "--webhook-allow"},
		{map[string]string{"MEDIAGEN_WEBHOOK": "ftp://x", "MEDIAGEN_WEBHOOK_SECRET": secret}, nil, "url: an absolute http or https URL"},
		{nil, []string{"--webhook", "http://127.0.0.1:9/", "--webhook-secret", secret, "--webhook-events", "job.succeeded,job.done"}, "events/1: not an event"},
	} {
		r := runSync(t, tc.vars, append([]string{"--addr", "127.0.0.1:0"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr+r.stdout, "c2VjcmV0LWZsYWc") {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 and %q", tc.vars, tc.args, r.code, r.stderr, tc.want)
		}
	}
	in := serve(t, map[string]string{"MEDIAGEN_WEBHOOK_SECRET": secret}, "--addr", "127.0.0.1:0", "--clock", "manual",
		"--webhook", "http://127.0.0.1:9/hook", "--webhook-events", "job.failed", "--webhook-allow", "192.0.2.1:8080")
	defer in.stop(t)
	status, body := in.get(t, "/_emulator/webhooks")
	cfg, _ := body["config"].(map[string]any)
	if status != 200 || cfg["source"] != "flag" || cfg["secret_set"] != true || fmt.Sprint(cfg["events"]) != "[job.failed]" {
		t.Fatalf("GET /_emulator/webhooks: %d %v", status, body)
	}
	if strings.Contains(in.stderr.String(), "c2VjcmV0LWZsYWc") {
		t.Fatal("the log shows the secret")
	}
}
