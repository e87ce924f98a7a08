package importer

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

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
		for _, d := range compareProducts(cat, c.l, c.inFile, func(*catalog.Product) bool { return true }) {
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

// TestTimingDiffs checks the range a live job's times must fall in: half to twice the
// catalog's, a second wider either way, with the run time per unit of input counted.
func TestTimingDiffs(t *testing.T) {
	t.Parallel()
	m := &catalog.Model{ID: "m", Timing: catalog.Timing{Queue: 0, Run: 10 * time.Second,
		RunPerUnit: &catalog.UnitTime{Field: "seconds", Each: time.Second}},
		Properties: map[string]catalog.Property{"seconds": {Default: 5}}}
	job := func(started, finished string) *node {
		return mustParse(t, `{"created_at":"2026-01-01T00:00:00Z","started_at":"2026-01-01T00:`+started+
			`Z","finished_at":"2026-01-01T00:`+finished+`Z"}`)
	}
	// Without input, 15 s expected (10 s, and 5 s for the default of seconds): 6.5 s to 31 s.
	cases := []struct {
		input, queued, ran string
		want               []string
	}{
		{`{}`, "00:01", "00:20", nil},
		{`{}`, "00:01", "00:40", []string{`timing   m: ran 39s live; the catalog says 15s (6.5s to 31s)`}},
		{`{}`, "00:01", "00:06", []string{`timing   m: ran 5s live; the catalog says 15s (6.5s to 31s)`}},
		{`{"seconds": 50}`, "00:00", "01:00", nil}, // 60 s expected
		{`{}`, "00:02", "00:17", []string{`timing   m: queued 2s live; the catalog says 0s (0s to 1s)`}},
	}
	for _, c := range cases {
		var got []string
		for _, d := range timingDiffs(&candidate{model: m, input: mustParse(t, c.input)}, job(c.queued, c.ran)) {
			got = append(got, d.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s queued %s ran to %s:\n got %q\nwant %q", c.input, c.queued, c.ran, got, c.want)
		}
	}
	if ds := timingDiffs(&candidate{model: m, input: mustParse(t, `{}`)}, mustParse(t, `{"created":"x"}`)); ds != nil {
		t.Errorf("a job without timestamps: %v", ds)
	}
}

// TestCompareSides checks what counts as a difference of shape: fields on one side only, and
// types that differ, where null (a field not set yet) matches any type.
func TestCompareSides(t *testing.T) {
	t.Parallel()
	sideOf := func(status int, ctype string, headers []string, docs ...string) *side {
		s := &side{shapes: map[string]Shape{}, heads: map[string]seenHeaders{}, status: map[string]int{}}
		for _, d := range docs {
			h := http.Header{"Content-Type": {ctype}}
			for _, n := range headers {
				h.Set(n, "1")
			}
			s.answered("job", "GET /v1/jobs/{id}", &answer{status: status, header: h, doc: mustParse(t, d)})
		}
		return s
	}
	live := sideOf(200, "application/json", []string{"X-Request-Id", "Date", "X-Emulator-Version"},
		`{"id":"a","started_at":null,"outputs":[{"url":"u","width":1}],"progress":"1"}`)
	ref := sideOf(200, "application/json; charset=utf-8", []string{"X-Request-Id", "Location"},
		`{"id":"b","started_at":"t","outputs":[{"url":"v","height":2}],"progress":1}`)
	var got []string
	for _, d := range compareSides(live, ref) {
		got = append(got, d.String())
	}
	want := []string{
		"shape    job: /outputs/*/height on the emulator, not live (number)",
		"shape    job: /outputs/*/width live, not on the emulator (number)",
		"shape    job: /progress is string live, number on the emulator",
		"header   job: Location sent by the emulator, not live (GET /v1/jobs/{id} (200))",
	}
	if !slices.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	live.status["error"], ref.status["error"] = 400, 422
	if ds := compareSides(live, ref); len(ds) != len(want)+1 || ds[0].String() != "status   error: POST /v1/quotes with an invalid input: 400 live, 422 on the emulator" {
		t.Errorf("a different error status: %v", ds)
	}
}
