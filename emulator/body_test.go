package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonbody"
)

// TestReadAllReadsEveryBody: readAll returns exactly the body whatever length was announced
// (none, the true one, too little, too much), and hands back what it read with an error.
func TestReadAllReadsEveryBody(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 2000) // 20,000 bytes, read a few at a time below
	for _, announced := range []int64{-1, 0, 1, 170, 20_000, 20_001, 1 << 30} {
		got, err := readAll(iotest.HalfReader(strings.NewReader(body)), announced, 1<<20, 64<<10)
		if err != nil || string(got) != body {
			t.Errorf("announced %d: read %d bytes, %v; want all %d", announced, len(got), err, len(body))
		}
		if announced >= 0 && cap(got) > 64<<10+1 && cap(got) > 2*len(body) {
			t.Errorf("announced %d: set aside %d bytes for a %d-byte body", announced, cap(got), len(body))
		}
	}
	broken := errors.New("connection reset")
	got, err := readAll(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(broken)), 100, 1<<20, 64<<10)
	if !errors.Is(err, broken) || !bytes.Equal(got, []byte("partial")) {
		t.Errorf("a body cut short: %q, %v; want what arrived and the error", got, err)
	}
}

// TestParseObjectNamesWhatIsWrong: each way a body fails to be one JSON object has its own
// detail, as clients see it.
func TestParseObjectNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		` `:                                      "the body is empty; send a JSON object",
		`{"a":1} {}`:                             "the body holds more than one JSON value",
		`{"a":1} x`:                              "the body holds more than one JSON value",
		`{"a":1}}`:                               "the body holds more than one JSON value",
		`{"a":tx}`:                               "the body is not valid JSON: invalid character 'x' in literal true (expecting 'r') (at byte 7)",
		`{"a":1`:                                 "the body is not valid JSON: it ends too early",
		`[1]`:                                    "the body must be a JSON object, not an array",
		strings.Repeat("[", jsonbody.MaxDepth+1): "the body nests deeper than 64 levels",
	} {
		_, err := parseObject([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
	if obj, err := parseObject([]byte(" {\"n\":1.50} \n")); err != nil || obj["n"] != json.Number("1.50") {
		t.Errorf("a valid body: %v, %v; want n = 1.50 exactly", obj, err)
	}
}

// TestSentFactsNeedsOneGeneration: the body of a generation a fault answers names a model,
// quote and input only when it is one JSON value, as the generate handler would take it; with
// something after the object it is not a generation a retry can repeat.
func TestSentFactsNeedsOneGeneration(t *testing.T) {
	t.Parallel()
	const one = `{"model":"m","quote_id":"q_1","input":{"n":1}}`
	if f := sentFacts([]byte(one+"\n"), facts{}); f.model != "m" || f.quoteID != "q_1" || f.inputDigest == "" {
		t.Errorf("one object: model %q quote %q digest %q", f.model, f.quoteID, f.inputDigest)
	}
	if f := sentFacts([]byte(one+` {"model":"other"}`), facts{}); f.model != "" || f.quoteID != "" || f.inputDigest != "" {
		t.Errorf("two values: model %q quote %q digest %q; want none", f.model, f.quoteID, f.inputDigest)
	}
}
