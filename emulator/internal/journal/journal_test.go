package journal

import (
	"fmt"
	"testing"
)

func TestRingKeepsTheNewestInOrder(t *testing.T) {
	t.Parallel()
	j := New(3)
	for i := range 5 {
		j.Add(Entry{Path: fmt.Sprint("/v1/", i), Status: 200 + i})
	}
	got, total := j.List(Filter{}, 0, 10)
	if total != 3 || len(got) != 3 || got[0].Path != "/v1/2" || got[2].Path != "/v1/4" || got[2].Seq != 5 {
		t.Fatalf("list = %+v (total %d)", got, total)
	}
	got, total = j.List(Filter{}, 1, 1)
	if total != 3 || len(got) != 1 || got[0].Path != "/v1/3" {
		t.Errorf("page = %+v", got)
	}
	j.Clear()
	if _, total := j.List(Filter{}, 0, 10); total != 0 {
		t.Errorf("after clear: %d", total)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	j := New(10)
	j.Add(Entry{Method: "GET", Path: "/v1/models", Status: 200, Account: "a"})
	j.Add(Entry{Method: "POST", Path: "/v1/quotes", Status: 422, Code: "invalid_input", Account: "a", Model: "m"})
	j.Add(Entry{Method: "POST", Path: "/v1/generate", Status: 202, Account: "b", Model: "m"})
	for _, c := range []struct {
		f    Filter
		want int
	}{
		{Filter{}, 3},
		{Filter{Method: "POST"}, 2},
		{Filter{Path: "/v1/quotes"}, 1},
		{Filter{Path: "/v1/*"}, 3},
		{Filter{Path: "/v1/q*"}, 1},
		{Filter{Status: 422}, 1},
		{Filter{Code: "invalid_input"}, 1},
		{Filter{Account: "a"}, 2},
		{Filter{Model: "m", Account: "b"}, 1},
	} {
		if _, total := j.List(c.f, 0, 10); total != c.want {
			t.Errorf("%+v: %d, want %d", c.f, total, c.want)
		}
	}
}
