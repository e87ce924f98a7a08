package scenario

import (
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

func TestConcurrencyRules(t *testing.T) {
	sc, err := Parse("c.yaml", []byte(`
concurrency:
  - match: {model: "acme/video/**"}
    limit: 1
    scope: key
    over: reject
  - limit: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	video, image := &catalog.Model{ID: "acme/video/fast"}, &catalog.Model{ID: "acme/image"}
	i, c, ok := sc.ConcurrencyFor(video)
	if !ok || i != 0 || c.Over != OverReject {
		t.Fatalf("video: %d %+v %v", i, c, ok)
	}
	one, two := c.Slot("acct", "sk_1"), c.Slot("acct", "sk_2")
	if !strings.HasPrefix(one.Group, "concurrency[model=acme/video/**] key ") || strings.Contains(one.Group, "sk_1") || one.Limit != 1 || one == two || one != c.Slot("other", "sk_1") {
		t.Errorf("video slots %+v and %+v: want one group per key, named without the key", one, two)
	}
	i, c, ok = sc.ConcurrencyFor(image)
	if !ok || i != 1 || c.Scope != ScopeAccount || c.Over != OverQueue {
		t.Fatalf("image (the defaults filled in): %d %+v %v", i, c, ok)
	}
	if got, want := c.Slot("acct", "sk_1"), (jobs.Slot{Group: "concurrency[every model] account acct", Limit: 2}); got != want {
		t.Errorf("image slot %+v, want %+v", got, want)
	}
	// A group is named by what its rule selects, not by the rule's place: another selection at
	// the same place has a line of its own, and the same selection with a new limit keeps its.
	other := Concurrency{Match: ModelMatch{OutputType: "image", Category: "text-to-image"}, Limit: 1, Scope: ScopeAccount}
	if got := other.Slot("acct", "sk_1").Group; got != "concurrency[category=text-to-image output_type=image] account acct" {
		t.Errorf("a selection's group is %q", got)
	}
	wider := *c
	wider.Limit = 5
	if wider.Slot("acct", "sk_1").Group != c.Slot("acct", "sk_1").Group {
		t.Error("a new limit for the same selection made a new line")
	}
	if got := sc.Describe().Concurrency; got != 2 {
		t.Errorf("Describe counts %v rules, want 2", got)
	}
	if _, _, ok := (&Scenario{}).ConcurrencyFor(image); ok {
		t.Error("a scenario without rules limits a model")
	}
}

func TestConcurrencyIsChecked(t *testing.T) {
	_, err := Parse("bad.yaml", []byte(`
concurrency:
  - limit: 0
  - limit: 2
    scope: tenant
    over: drop
  - match: {model: "a/[", output_type: text}
    limit: 5000
  - match: {model: x}
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"bad.yaml:3: concurrency[0]: limit must be from 1 to 1000 jobs at once",
		`bad.yaml:4: concurrency[1]: scope "tenant" must be account or key`,
		`bad.yaml:4: concurrency[1]: over "drop" must be queue or reject`,
		`bad.yaml:7: concurrency[2].match: output_type "text" must be image, video or audio`,
		"bad.yaml:7: concurrency[2]: limit must be from 1",
		"bad.yaml:9: concurrency[3]: limit must be from 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := Parse("bad.yaml", []byte("concurrency: [{limit: two}]\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml:1: concurrency[0].limit: want a whole number") {
		t.Errorf("a limit that is not a number: %v", err)
	}
}
