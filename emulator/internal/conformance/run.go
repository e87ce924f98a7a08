package conformance

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/observe"
)

// maxBody bounds what is kept of one answer's body; JSON bodies are far smaller, and media
// bodies are not read.
const maxBody = 8 << 20

// maxReported bounds how many failures are printed in full.
const maxReported = 30

// Run runs a test binary's tests (from its TestMain) with every answer any emulator in the
// process gives checked against the OpenAPI document, and returns the exit code: failing when
// the tests fail or when an answer does not conform. Benchmarks and fuzzing run unchecked, so
// the check costs them nothing.
func Run(m *testing.M, doc string) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	d, err := Load([]byte(doc))
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: the OpenAPI document does not load: %v\n", err)
		return 1
	}
	c := &collector{doc: d, repeats: map[string]int{}, examples: map[string]string{}, reached: map[string]bool{}}
	observe.Hook = c.watch // left in place after the run: a late request still gets checked, not raced
	return c.report(os.Stderr, m.Run())
}

// collector checks answers as they complete and keeps the failures.
type collector struct {
	doc *Document

	mu       sync.Mutex
	checked  int
	failed   int
	failures []string          // one example of each distinct failure, in the order first seen
	repeats  map[string]int    // how often each distinct failure was seen
	examples map[string]string // the first request that showed it
	reached  map[string]bool   // the operations answers came from, by operationId
}

func (c *collector) watch(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func(string, bool)) {
	cw := &capture{ResponseWriter: w}
	method, path, target := r.Method, r.URL.Path, r.URL.RequestURI()
	preflight := method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	return cw, func(fault string, evolved bool) {
		err := c.doc.Check(Answer{Method: method, Path: path, Status: cw.status, Header: cw.header, Body: cw.body.Bytes(), Fault: fault, Preflight: preflight, Evolved: evolved})
		if mt, _, _ := mime.ParseMediaType(cw.header.Get("Content-Type")); err == nil && cw.cut && isJSON(mt) {
			err = fmt.Errorf("%s %s: a JSON body over %d bytes was not checked", method, path, maxBody)
		}
		op, _ := c.doc.find(method, path)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.checked++
		if op != nil {
			c.reached[op.id] = true
		}
		if err == nil {
			return
		}
		c.failed++
		key := err.Error()
		if c.repeats[key]++; c.repeats[key] > 1 || len(c.failures) >= maxReported {
			return
		}
		body := cw.body.Bytes()
		if len(body) > 600 {
			body = append(body[:600:600], "…"...)
		}
		c.failures = append(c.failures, key)
		c.examples[key] = fmt.Sprintf("%s %s → %d (X-Request-Id %s)\nbody: %s", method, target, cw.status, cw.header.Get("X-Request-Id"), body)
	}
}

// report prints the failures and turns them into a failing exit code.
func (c *collector) report(w io.Writer, code int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if testing.Verbose() {
		var missed []string
		for _, p := range c.doc.paths {
			for _, op := range p.ops {
				if !c.reached[op.id] {
					missed = append(missed, op.id)
				}
			}
		}
		slices.Sort(missed)
		fmt.Fprintf(w, "conformance: checked %d answers against the OpenAPI document; operations no test reached: %v\n", c.checked, missed)
	}
	if c.failed == 0 {
		return code
	}
	fmt.Fprintf(w, "\nconformance: %d of %d answers do not conform to docs/openapi.json:\n", c.failed, c.checked)
	shown := 0
	for _, f := range c.failures {
		fmt.Fprintf(w, "\n%s\n  seen %d time(s); first in %s\n", f, c.repeats[f], c.examples[f])
		shown += c.repeats[f]
	}
	if c.failed > shown {
		fmt.Fprintf(w, "\n… and %d more, of other kinds\n", c.failed-shown)
	}
	fmt.Fprintln(w, "FAIL: answers that do not conform to the OpenAPI document")
	return max(code, 1)
}

// capture passes an answer on and keeps its status, its headers as sent and its body.
type capture struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
	cut    bool
}

// WriteHeader notes the status and the headers as they go out.
func (c *capture) WriteHeader(status int) {
	if c.status == 0 && status >= 200 {
		c.status = status
		c.header = c.ResponseWriter.Header().Clone()
	}
	c.ResponseWriter.WriteHeader(status)
}

// Write keeps a bounded copy of the body.
func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if room := maxBody - c.body.Len(); room > 0 {
		c.body.Write(b[:min(len(b), room)])
		c.cut = c.cut || len(b) > room
	} else if len(b) > 0 {
		c.cut = true
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines, hijack).
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
