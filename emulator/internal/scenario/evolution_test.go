package scenario

import (
	"strings"
	"testing"
)

func TestEvolutionReadsTrueOrKinds(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want Evolution
	}{
		{"name: a\n", Evolution{}},
		{"name: a\nevolution: true\n", Evolution{true, true, true, true}},
		{"name: a\nevolution: false\n", Evolution{}},
		{"name: a\nevolution: {members: true, status: true}\n", Evolution{Members: true, Status: true}},
		{"name: a\nevolution:\n  headers: true\n  output_type: true\n", Evolution{Headers: true, OutputType: true}},
	} {
		s, err := Parse("e.yaml", []byte(c.doc))
		if err != nil {
			t.Fatalf("%q: %v", c.doc, err)
		}
		if got := s.Evolves(); got != c.want {
			t.Errorf("%q: evolves %+v, want %+v", c.doc, got, c.want)
		}
	}
}

func TestEvolutionRefusesWhatItDoesNotKnow(t *testing.T) {
	for doc, want := range map[string]string{
		"name: a\nevolution: yes please\n":                      `e.yaml:2: evolution: want true, false or a mapping`,
		"name: a\nevolution: 1\n":                               `e.yaml:2: evolution: want true, false or a mapping`,
		"name: a\nevolution:\n  members: true\n  enums: true\n": `e.yaml:4: unknown field "enums" in evolution (known: headers, members, output_type, status)`,
		"name: a\nevolution: {status: maybe}\n":                 `e.yaml:2: evolution.status: want true or false`,
		"name: a\nevolution: [members]\n":                       `e.yaml:2: evolution must be a mapping of fields`,
	} {
		_, err := Parse("e.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %s", doc, err, want)
		}
	}
}
