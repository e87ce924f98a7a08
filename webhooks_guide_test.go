package main

import (
	"os"
	"strings"
	"testing"
)

// webhooksGuide is the guide whose curl transcript TestWebhooksGuide runs, and its section.
const (
	webhooksGuide   = "docs/webhooks.md"
	webhooksSection = "## Try it with curl"
)

// TestWebhooksGuide runs the webhook guide's transcript as TestREADME runs the README's: its
// first ```sh block starts the emulator, and every "$ " command's output must match. With
// -update it rewrites the outputs that no longer match.
func TestWebhooksGuide(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(webhooksGuide)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	tr, err := parseTranscript(lines, webhooksSection, true)
	if err != nil {
		t.Fatalf("%s: %v", webhooksGuide, err)
	}
	lines, n := runTranscript(t, lines, tr, tr)
	if !updating() || t.Failed() || n == 0 {
		return
	}
	if err := os.WriteFile(webhooksGuide, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %d transcript entries of %s", n, webhooksGuide)
}
