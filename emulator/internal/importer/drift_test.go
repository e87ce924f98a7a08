package importer

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// TestCompareModelListedFields checks each listed field drift compares, one change at a time,
// so that dropping any one of the comparisons fails here.
func TestCompareModelListedFields(t *testing.T) {
	t.Parallel()
	m := modelFor(t, `{type: object, properties: {prompt: {type: string}}, examples: [{prompt: a}]}`)
	m.Status = "deprecated" // not quoted: compareModel needs no service
	schema := string(m.SchemaJSON)
	live := func(over string) *node {
		return mustParse(t, `{"name":"M","description":"D","category":"text-to-image","product":"p","mode":"m",`+
			`"output_type":"image","status":"deprecated",`+over+`"input_schema":`+schema+`}`)
	}
	grouped := &listing{modeOf: map[string][2]string{"m": {"p2", "edit"}}}
	cases := []struct {
		name string
		live *node
		l    *listing
		want []string
	}{
		{"nothing", live(``), &listing{}, nil},
		{"description", live(`"description":"New",`), &listing{}, []string{`changed  m: description "D" -> "New"`}},
		{"category", live(`"category":"image-to-image",`), &listing{}, []string{`changed  m: category "text-to-image" -> "image-to-image"`}},
		{"mode", live(`"mode":"fast",`), &listing{}, []string{`changed  m: mode "m" -> "fast"`}},
		{"output type", live(`"output_type":"video",`), &listing{}, []string{`changed  m: output_type "image" -> "video"`}},
		{"product", live(`"product":"q",`), &listing{}, []string{`changed  m: product "p" -> "q"`}},
		{"grouped listing", live(``), grouped, []string{`changed  m: product "p" -> "p2"`, `changed  m: mode "m" -> "edit"`}},
		{"empty live field", live(`"description":"","mode":"",`), &listing{}, nil},
	}
	for _, c := range cases {
		ds, err := compareModel(context.Background(), nil, c.l, m, c.live, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, d := range ds {
			got = append(got, d.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestCompareProducts checks that product names and descriptions, which only the grouped
// listing shows, are compared, and only for products of the models compared.
func TestCompareProducts(t *testing.T) {
	t.Parallel()
	cat := &catalog.Catalog{
		Products: []*catalog.Product{{ID: "p", Name: "P", Description: "D"}, {ID: "q", Name: "Q"}, {ID: "gone", Name: "G"}},
		Models:   []*catalog.Model{{ID: "a", Product: "p"}, {ID: "b", Product: "q"}, {ID: "c", Product: "gone"}},
	}
	groups := func(s string) *listing {
		return &listing{products: mustParse(t, s).vals}
	}
	all := map[string]bool{"a": true, "b": true, "c": true}
	cases := []struct {
		name   string
		l      *listing
		inFile map[string]bool
		want   []string
	}{
		{"same", groups(`[{"product":"p","name":"P","description":"D"},{"product":"q","name":"Q"}]`), all, nil},
		{"renamed", groups(`[{"product":"p","name":"P2","description":"D"}]`), all, []string{`product  p: name "P" -> "P2"`}},
		{"described", groups(`[{"product":"p","name":"P","description":"D2"},{"product":"q","name":"Q","description":"new"}]`), all,
			[]string{`product  p: description "D" -> "D2"`, `product  q: description "" -> "new"`}},
		{"no name is the id", groups(`[{"product":"q"}]`), all, []string{`product  q: name "Q" -> "q"`}},
		{"model not compared", groups(`[{"product":"p","name":"P2"}]`), map[string]bool{"b": true}, nil},
		{"not grouped", &listing{}, all, nil},
	}
	for _, c := range cases {
		var got []string
		for _, d := range compareProducts(cat, c.l, c.inFile) {
			got = append(got, d.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestReportCountsInWords(t *testing.T) {
	t.Parallel()
	one := []Difference{{Kind: "removed", Model: "a"}}
	if r := Report(one); !strings.HasSuffix(r, "\n1 difference\n") {
		t.Errorf("report of one: %q", r)
	}
	if r := Report(append(one, one...)); !strings.HasSuffix(r, "\n2 differences\n") {
		t.Errorf("report of two: %q", r)
	}
	for n, want := range map[int64]string{0: "0 credits", 1: "1 credit", 2: "2 credits", -1: "-1 credits"} {
		if got := credits(n); got != want {
			t.Errorf("credits(%d) = %q, want %q", n, got, want)
		}
	}
}
