package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// TestWebhooksSection: a scenario's webhooks section decodes into the wire's configuration and
// is checked as PUT /_emulator/webhooks checks it, without a secret.
func TestWebhooksSection(t *testing.T) {
	t.Parallel()
	s, err := Parse("hooked.yaml", []byte(`name: hooked
webhooks:
  url: http://127.0.0.1:9/hook
  events: [job.failed, job.succeeded]
  audit: true
  chaos: {duplicate: 0.5, reorder: 0.25, delay: 30s, after_poll: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Webhook()
	want := webhooks.Chaos{Duplicate: 0.5, Reorder: 0.25, Delay: 30 * time.Second, AfterPoll: true}
	if c == nil || c.URL != "http://127.0.0.1:9/hook" || !c.Wants(webhooks.Failed) || c.Wants(webhooks.Canceled) || !c.Audit || c.Chaos != want || c.Source != "scenario" || c.Secret.Set() {
		t.Fatalf("webhook %+v", c)
	}
	if s, err := Parse("plain.yaml", []byte("name: plain\n")); err != nil || s.Webhook() != nil {
		t.Fatalf("a scenario without webhooks: %+v, %v", s, err)
	}
}

// TestWebhooksSectionProblemsNameTheLine: each bad member of the webhooks section is reported at
// file:line of that member, in the words PUT /_emulator/webhooks uses; a secret, which a scenario
// never holds, and a member of the wrong kind are refused before that.
func TestWebhooksSectionProblemsNameTheLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want string }{
		{`name: bad
webhooks:
  url: ftp://x
  events:
    - job.failed
    - job.done
  chaos:
    duplicate: 3
    delay: soon
`, "bad.yaml:3: webhooks.url: an absolute http or https URL, such as http://127.0.0.1:9000/webhooks\n" +
			"bad.yaml:6: webhooks.events.1: not an event\n" +
			"bad.yaml:8: webhooks.chaos.duplicate: a probability from 0 to 1\n" +
			"bad.yaml:9: webhooks.chaos.delay: a duration such as 30s"},
		{"name: bad\nwebhooks:\n  url: http://127.0.0.1:9/\n  secret: whsec_AAAA\n", `bad.yaml:4: unknown field "secret" in webhooks (known: audit, chaos, events, url)`},
		{"name: bad\nwebhooks:\n  url: http://127.0.0.1:9/\n  chaos: {after_poll: sometimes}\n", "bad.yaml:4: webhooks.chaos.after_poll: want true or false"},
		{"name: bad\nwebhooks: {events: [job.failed]}\n", "bad.yaml:2: webhooks.url: a url is required"},
	} {
		_, err := Parse("bad.yaml", []byte(tc.doc))
		if err == nil {
			t.Fatalf("%s: loaded", tc.doc)
		}
		for _, want := range strings.Split(tc.want, "\n") {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("problems lack %q:\n%s", want, err)
			}
		}
	}
}
