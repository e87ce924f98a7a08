package evolve

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestKitIsTheSeeds(t *testing.T) {
	a, b := New(7), New(7)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 7 drew %+v and %+v", a, b)
	}
	if c := New(8); c.MemberName == a.MemberName && c.MemberValue == a.MemberValue && c.HeaderName == a.HeaderName {
		t.Errorf("seeds 7 and 8 drew the same kit %+v", c)
	}
	for seed := int64(-50); seed < 50; seed++ {
		k := New(seed)
		if !strings.HasPrefix(k.MemberName, "x_mg_") || !strings.HasPrefix(k.HeaderName, "X-Mediagen-") || !strings.HasSuffix(k.ModelID, "-3d") {
			t.Fatalf("seed %d drew %+v", seed, k)
		}
		if strings.TrimPrefix(k.MemberName, "x_mg_") == strings.TrimPrefix(strings.ToLower(k.HeaderName), "x-mediagen-") {
			t.Errorf("seed %d: member and header share a word: %+v", seed, k)
		}
	}
}

func TestAddMembersReachesEveryObjectButTheSkippedOnes(t *testing.T) {
	k := New(1)
	src := `{"id":"j","input":{"prompt":"a {b} \"c\"","n":{"x":1}},"outputs":[{"url":"u"},{}],` +
		`"error":null,"input_schema":{"type":"object","properties":{"p":{}}},"examples":[{"p":1}],` +
		`"openapi":{"paths":{}},"e":[],"s":"}{","o":{"p":{"q":{}}}}` + "\n"
	out := k.AddMembers(nil, []byte(src))
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if out[len(out)-1] != '\n' {
		t.Errorf("the newline was lost: %q", out)
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(src), &want)
	m := func(v map[string]any) map[string]any { v[k.MemberName] = k.MemberValue; return v }
	m(want)
	for _, o := range want["outputs"].([]any) {
		m(o.(map[string]any))
	}
	o := m(want["o"].(map[string]any))
	p := m(o["p"].(map[string]any))
	m(p["q"].(map[string]any))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %s\nwant %v", out, want)
	}
}

func TestAddMembersLeavesOtherValuesAlone(t *testing.T) {
	k := New(1)
	for _, src := range []string{`[]`, `"x"`, `12`, `null`, `[1,"{",[]]`} {
		if got := string(k.AddMembers(nil, []byte(src))); got != src {
			t.Errorf("%s became %s", src, got)
		}
	}
}

func TestPrepareIsShortAndBounded(t *testing.T) {
	for run, want := range map[time.Duration]time.Duration{0: 0, 4 * time.Second: time.Second, time.Minute: MaxPrepare} {
		if got := Prepare(run); got != want {
			t.Errorf("Prepare(%s) = %s, want %s", run, got, want)
		}
	}
}

// FuzzAddMembers: whatever valid JSON goes in, valid JSON comes out, and taking the member out
// of every object outside the skipped values gives back what went in.
func FuzzAddMembers(f *testing.F) {
	for _, seed := range []string{`{}`, `[]`, `{"a":{"b":[{},{"c":"}{\""}]}}`, `{"input":{"a":{}},"openapi":[{}],"x":{"input":1}}`,
		` { "a" : [ { } , 1 ] } `, `"\\"`, `[{"input_schema":{"examples":[{}]}}]`} {
		f.Add(seed)
	}
	k := New(3)
	f.Fuzz(func(t *testing.T, src string) {
		if !json.Valid([]byte(src)) || strings.Contains(src, "x_mg_") {
			return
		}
		out := k.AddMembers(nil, []byte(src))
		if !json.Valid(out) {
			t.Fatalf("%s became %s, not JSON", src, out)
		}
		var got, want any
		_ = json.Unmarshal(out, &got)
		_ = json.Unmarshal([]byte(src), &want)
		var strip func(v any, skip bool)
		strip = func(v any, skip bool) {
			switch n := v.(type) {
			case map[string]any:
				if _, has := n[k.MemberName]; has == skip {
					t.Fatalf("%s became %s: member present %v where skipped %v", src, out, has, skip)
				}
				delete(n, k.MemberName)
				for key, x := range n {
					strip(x, skip || skipped([]byte(key)))
				}
			case []any:
				for _, x := range n {
					strip(x, skip)
				}
			}
		}
		strip(got, false)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s became %s", src, out)
		}
	})
}
