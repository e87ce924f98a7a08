package parity

import (
	"strings"
	"testing"
)

// FuzzCompare: whatever the live service answers, comparing never fails, an answer never
// differs from itself, and every difference is at a JSON path.
func FuzzCompare(f *testing.F) {
	f.Add(404, "application/problem+json", `{"code":"x","errors":[{"pointer":"/a"}]}`, `{"code":"y"}`)
	f.Add(200, "text/html", `<html>`, `[1,2]`)
	f.Add(422, "application/json; charset=", `{"a":{"b":[{"c":null}]},"a/b~c":1}`, `{"errors":"not a list"}`)
	f.Add(0, "", `{}{}`, `"`)
	f.Fuzz(func(t *testing.T, status int, ctype, live, emu string) {
		a := Answer{Status: status, Header: map[string]string{"Content-Type": ctype, "WWW-Authenticate": ctype}, Body: live}
		b := Answer{Status: status, Header: map[string]string{"Retry-After": ctype}, Body: emu}
		if ds := Compare(a, a); len(ds) != 0 {
			t.Fatalf("an answer differs from itself: %+v", ds)
		}
		for _, d := range Compare(a, b) {
			if !strings.HasPrefix(d.Path, "/") || d.Live == d.Emulator {
				t.Fatalf("difference %+v", d)
			}
		}
	})
}

// FuzzParseKnown: a --known file either reads, each entry with a case and a path, or is
// refused with a message; it never fails otherwise.
func FuzzParseKnown(f *testing.F) {
	f.Add([]byte(`{"accept":[{"case":"** 401 unauthenticated","path":"/headers/**","why":"w"}]}`))
	f.Add([]byte(`{"accept":[{"case":""}]}`))
	f.Add([]byte(`{"accept":null,"extra":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKnown(data)
		if err != nil {
			return
		}
		for _, e := range k.Accept {
			if e.Case == "" || e.Path == "" {
				t.Fatalf("entry %+v read", e)
			}
		}
		k.Accepts("GET /v1/models 401 unauthenticated", []Difference{{Path: "/status"}})
	})
}
