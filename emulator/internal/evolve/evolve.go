// Package evolve is the forward-compatibility mode: what a later version of the API might add
// to its answers — an undocumented member in every JSON object, an undocumented header, a job
// status between queued and running, a model of an undocumented output type — drawn from the
// run's seed, so the same seed gives the same bytes.
package evolve

import (
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// Status is the undocumented status a job shows first when it starts running.
const Status = "preparing"

// OutputType and Category are the undocumented output type and the category of the model the
// catalog lists in this mode.
const (
	OutputType = "3d"
	Category   = "text-to-3d"
)

// MaxPrepare bounds the preparing phase: a quarter of the job's run, at most this long.
const MaxPrepare = 2 * time.Second

// Prepare is how long a job that runs for run shows Status before running.
func Prepare(run time.Duration) time.Duration { return min(run/4, MaxPrepare) }

// words are what the names and values are drawn from: plain, lower-case, no two alike.
var words = [...]string{
	"aurora", "beacon", "cobalt", "delta", "ember", "fjord", "garnet", "harbor",
	"indigo", "juniper", "kestrel", "lumen", "meadow", "nimbus", "onyx", "prism",
	"quartz", "ripple", "sierra", "tundra", "umber", "vertex", "willow", "zephyr",
}

// Kit is one seed's additions: the member every object gains (MemberName with the text
// MemberValue), the header every answer gains, and the id of the model of OutputType.
type Kit struct {
	MemberName, MemberValue string
	HeaderName, HeaderValue string
	ModelID                 string
	// member is `"name":"value"`, ready to be laid into an object.
	member []byte
}

// New draws a seed's kit. The three words differ from each other, so a client cannot read one
// of them for another.
func New(seed int64) *Kit {
	x := uint64(seed)
	next := func() uint64 { // splitmix64: a good spread from consecutive seeds
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	n := uint64(len(words))
	a := next() % n
	b := (a + 1 + next()%(n-1)) % n
	c := (a + 1 + next()%(n-1)) % n
	if c == b {
		c = (c + 1) % n
		if c == a {
			c = (c + 1) % n
		}
	}
	k := &Kit{
		MemberName:  "x_mg_" + words[a],
		MemberValue: words[b] + "-" + itoa(next()%1000),
		HeaderName:  "X-Mediagen-" + strings.ToUpper(words[c][:1]) + words[c][1:],
		HeaderValue: words[b],
		ModelID:     "x-mg/" + words[c] + "-" + OutputType,
	}
	k.member = []byte(`"` + k.MemberName + `":"` + k.MemberValue + `"`)
	return k
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// Model is the catalog's first ready model remade as one of OutputType, under the kit's id;
// nil when the catalog has no ready model.
func (k *Kit) Model(c *catalog.Catalog) *catalog.Model {
	ready := c.Find("", "")
	if len(ready) == 0 {
		return nil
	}
	return ready[0].Variant(k.ModelID, "Mesh preview",
		"A model of an output type this API version does not document; listed to test that clients tolerate it. It cannot be quoted or generated.",
		Category, OutputType)
}

// skipped are the members whose values are left as they are: a job's input is the client's
// own data, a model's input schema and examples are JSON Schema documents and inputs where an
// extra keyword or property would change their meaning, and its openapi is a document whose
// schemas would too.
func skipped(key []byte) bool {
	switch string(key) {
	case "input", "input_schema", "examples", "openapi":
		return true
	}
	return false
}

// AddMembers returns the JSON text src with the kit's member laid first into every object,
// except inside the values named by skipped, appended to dst. src must be valid JSON (the
// emulator's own answer); what is not an object or array passes through unchanged.
func (k *Kit) AddMembers(dst, src []byte) []byte {
	depth, skipAt := 0, -1 // skipAt is the depth of the skipped value being copied, or -1
	var key []byte         // the last string read, the key when a colon follows
	afterColon := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return append(dst, src[i:]...)
			}
			key = src[i+1 : j]
			dst = append(dst, src[i:j+1]...)
			i = j
			afterColon = false
			continue
		case ':':
			afterColon = true
			dst = append(dst, c)
			continue
		case '{', '[':
			if afterColon && skipAt < 0 && skipped(key) {
				skipAt = depth
			}
			depth++
			dst = append(dst, c)
			if c == '{' && skipAt < 0 {
				dst = append(dst, k.member...)
				if next := nextByte(src, i+1); next != '}' {
					dst = append(dst, ',')
				}
			}
		case '}', ']':
			depth--
			if depth == skipAt {
				skipAt = -1
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				continue
			}
		}
		afterColon = false
	}
	return dst
}

// nextByte is the first byte at or after i that is not white space, or 0.
func nextByte(b []byte, i int) byte {
	for ; i < len(b); i++ {
		if c := b[i]; c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			return c
		}
	}
	return 0
}
