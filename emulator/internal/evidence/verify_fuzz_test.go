package evidence

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzPattern feeds request patterns from outside (the body of POST /_emulator/verify) to
// Parse, and what parses to Misses: neither may panic, a refusal names at least one problem,
// and a pattern that parses matches or misses every entry without error.
func FuzzPattern(f *testing.F) {
	for _, seed := range []string{`{}`, `{"method":"post","path":"/v1/**","status":402}`,
		`{"headers":{"Idempotency-Key":"k1"},"body":{"input":{"n":2.0}}}`, `{"pointers":{"/input/tags/1":"b","":{}}}`,
		`{"pointers":{"/a~2":1}}`, `{"path":"/*/**/*"}`, `{"body":{"model":[1,{"a":null}]}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var obj map[string]any
		if d.Decode(&obj) != nil {
			return
		}
		p, errs := Parse(obj)
		if p == nil {
			if len(errs) == 0 {
				t.Fatalf("%s: refused without a problem", data)
			}
			return
		}
		missesOf(p, &generation)
		entries := journal(3)
		verifyIn(p, entries)
		unexpectedIn([]*Pattern{p}, entries)
	})
}
