package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
	"gopkg.in/yaml.v3"
)

// Bounds of one document from the live service.
const (
	maxDepth    = 128     // nesting
	maxDocNodes = 500_000 // values, about 100 bytes each once read
)

// Errors of a document that reading again cannot fix.
var (
	errTooDeep  = errors.New("the document nests more than 128 levels deep")
	errTooMany  = fmt.Errorf("the document holds more than %d values", maxDocNodes)
	errTooLarge = fmt.Errorf("the answer is larger than %d MiB", maxBodyBytes>>20)
)

// kind is the JSON type of a node.
type kind int

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// node is one JSON value that keeps the order of its object's members, so a schema written
// back out reads (and is served) in the order the live service wrote it.
type node struct {
	kind  kind
	text  string // a number's spelling, a string's value, "true"/"false"
	keys  []string
	vals  []*node // object member values (parallel to keys) or array items
	index map[string]int
}

// nodeSize estimates what a value holds once read: its text and keys, and about 64 bytes a
// value for the struct and the slices' headers.
func nodeSize(n *node) int {
	size := 64 + len(n.text)
	for _, k := range n.keys {
		size += len(k) + 16
	}
	for _, v := range n.vals {
		size += nodeSize(v)
	}
	return size
}

// parseJSON reads one JSON value, keeping member order. Duplicate keys keep the last value.
func parseJSON(data []byte) (*node, error) {
	n, _, err := decodeJSON(bytes.NewReader(data))
	return n, err
}

// decodeJSON reads one JSON value from r as it arrives, within maxDepth and maxDocNodes, and
// at most maxBodyBytes of it; read is how many bytes it took from r.
func decodeJSON(r io.Reader) (n *node, read int64, err error) {
	lr := &limitedReader{r: r, left: maxBodyBytes}
	dec := json.NewDecoder(lr)
	dec.UseNumber()
	budget := maxDocNodes
	n, err = readNode(dec, 0, &budget)
	if err == nil {
		if _, tail := dec.Token(); tail != io.EOF {
			err = errors.New("trailing data after the JSON value")
		}
	}
	read = maxBodyBytes - lr.left
	if lr.over {
		return nil, read, errTooLarge
	}
	return n, read, err
}

// limitedReader reads at most left bytes and notes when there was more.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

// Read reads up to what is left of the limit, and notes when the source has more.
func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.over = true
		return 0, errTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func readNode(dec *json.Decoder, depth int, budget *int) (*node, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	if *budget--; *budget < 0 {
		return nil, errTooMany
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readNode(dec, depth+1, budget)
				if err != nil {
					return nil, err
				}
				n.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: kArray}
			for dec.More() {
				v, err := readNode(dec, depth+1, budget)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	case string:
		return &node{kind: kString, text: t}, nil
	case json.Number:
		return &node{kind: kNumber, text: t.String()}, nil
	case bool:
		return &node{kind: kBool, text: strconv.FormatBool(t)}, nil
	case nil:
		return &node{kind: kNull}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// get returns an object's member, or nil.
func (n *node) get(k string) *node {
	if n == nil || n.kind != kObject {
		return nil
	}
	if n.index == nil {
		n.reindex()
	}
	if i, ok := n.index[k]; ok {
		return n.vals[i]
	}
	return nil
}

func (n *node) reindex() {
	n.index = make(map[string]int, len(n.keys))
	for i, k := range n.keys {
		n.index[k] = i
	}
}

// set adds or replaces an object's member, keeping the place of a member it replaces.
func (n *node) set(k string, v *node) {
	if n.index == nil {
		n.reindex()
	}
	if i, ok := n.index[k]; ok {
		n.vals[i] = v
		return
	}
	n.index[k] = len(n.keys)
	n.keys = append(n.keys, k)
	n.vals = append(n.vals, v)
}

// remove drops an object's member.
func (n *node) remove(k string) {
	if n.get(k) == nil {
		return
	}
	i := n.index[k]
	n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
	n.vals = append(n.vals[:i:i], n.vals[i+1:]...)
	n.reindex()
}

// str returns a string member's value, or "".
func (n *node) str(k string) string {
	if v := n.get(k); v != nil && v.kind == kString {
		return v.text
	}
	return ""
}

// clone copies a node deeply.
func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := &node{kind: n.kind, text: n.text, keys: append([]string(nil), n.keys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

// count is how many nodes the value holds, itself included.
func (n *node) count() int {
	c := 1
	for _, v := range n.vals {
		c += v.count()
	}
	return c
}

// pointer follows a JSON Pointer ("" or "/a/0/b"); nil when it names nothing.
func (n *node) pointer(ptr string) *node {
	tokens, err := schema.ParsePointer(ptr)
	if err != nil {
		return nil
	}
	cur := n
	for _, tok := range tokens {
		switch {
		case cur == nil:
			return nil
		case cur.kind == kObject:
			cur = cur.get(tok)
		case cur.kind == kArray:
			i, ok := schema.ArrayIndex(tok, len(cur.vals))
			if !ok {
				return nil
			}
			cur = cur.vals[i]
		default:
			return nil
		}
	}
	return cur
}

// marshal writes the node as compact JSON in its own member order.
func (n *node) marshal() []byte {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case kNull:
		b.WriteString("null")
	case kBool, kNumber:
		b.WriteString(n.text)
	case kString:
		s, _ := json.Marshal(n.text)
		b.Write(s)
	case kArray:
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	case kObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	}
}

// value decodes the node into plain Go values with json.Number numbers, as the emulator holds
// inputs.
func (n *node) value() any {
	var v any
	_ = jsonvalue.Decode(n.marshal(), &v)
	return v
}

// toYAML turns the node into a YAML tree that the catalog loader reads back as the same JSON.
func (n *node) toYAML() *yaml.Node {
	switch n.kind {
	case kNull:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case kBool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: n.text}
	case kNumber:
		if strings.ContainsAny(n.text, ".eE") {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: yaml11Float(n.text)}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: n.text}
	case kString:
		return strNode(n.text)
	case kArray:
		y := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, v := range n.vals {
			y.Content = append(y.Content, v.toYAML())
		}
		if n.flat() {
			y.Style = yaml.FlowStyle
		}
		return y
	default:
		y := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i, k := range n.keys {
			y.Content = append(y.Content, strNode(k), n.vals[i].toYAML())
		}
		if n.flat() {
			y.Style = yaml.FlowStyle
		}
		return y
	}
}

// flat reports whether a list of scalars, or an object of scalars and such lists, is short
// and on one line: it then reads best as one line of YAML.
func (n *node) flat() bool {
	for _, v := range n.vals {
		if v.kind == kObject || strings.ContainsAny(v.text, "\n\r") || (v.kind == kArray && (n.kind == kArray || !v.flat())) {
			return false
		}
	}
	return len(n.marshal()) <= 100
}

// obj is an object of the given keys and values (nodes, strings or numbers), in order.
func obj(kv ...any) *node {
	n := &node{kind: kObject}
	for i := 0; i+1 < len(kv); i += 2 {
		n.set(kv[i].(string), jsonOf(kv[i+1]))
	}
	return n
}

// arr is an array of the given items.
func arr(items ...*node) *node { return &node{kind: kArray, vals: items} }

// jsonOf is a node for a node, a string or a number.
func jsonOf(v any) *node {
	switch x := v.(type) {
	case *node:
		return x
	case string:
		return &node{kind: kString, text: x}
	case int:
		return &node{kind: kNumber, text: strconv.Itoa(x)}
	case int64:
		return &node{kind: kNumber, text: strconv.FormatInt(x, 10)}
	case float64:
		return &node{kind: kNumber, text: strconv.FormatFloat(x, 'f', -1, 64)}
	}
	panic(fmt.Sprintf("jsonOf(%T)", v))
}

// strNode is a YAML string scalar, quoted when any reader could take it for something else.
// The encoder already quotes what YAML 1.2 would misread; YAML 1.1 readers (PyYAML among them)
// also read yes/no/on/off, 16:9 (base 60), 0755 (octal), 1_000 and dates as other types.
func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.ContainsAny(s, "\n\r\t") || strings.TrimSpace(s) != s || yaml11NonString(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

var (
	// yaml11Words are the plain scalars YAML 1.1 reads as booleans, nulls, merge keys, values,
	// infinities and not-a-numbers (compared in lower case).
	yaml11Words = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
		"true": true, "false": true, "null": true, "~": true, "<<": true, "=": true,
		".inf": true, "-.inf": true, "+.inf": true, ".nan": true}
	// yaml11Numberish is every spelling of YAML 1.1 integers and floats (decimal, 0b, 0o, 0x,
	// 0-led octal, base 60, underscores, exponents), and more: quoting too much costs nothing.
	yaml11Numberish = regexp.MustCompile(`^[-+]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|\.?[0-9][0-9_:.]*([eE][-+]?[0-9]+)?)$`)
	// yaml11Time is the start of a YAML 1.1 timestamp.
	yaml11Time = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`)
)

// yaml11NonString reports whether a plain scalar s would not read as a string in YAML 1.1.
func yaml11NonString(s string) bool {
	return s == "" || yaml11Words[strings.ToLower(s)] || yaml11Numberish.MatchString(s) || yaml11Time.MatchString(s)
}

// yaml11Float spells a JSON number so that YAML 1.1 and 1.2 readers both read a float: 1.0e+5,
// never 1e5 (a string to YAML 1.1).
func yaml11Float(text string) string {
	mant, exp, ok := strings.Cut(strings.ToLower(text), "e")
	if !ok {
		return text
	}
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	if exp != "" && exp[0] != '-' && exp[0] != '+' {
		exp = "+" + exp
	}
	return mant + "e" + exp
}

// change is one difference between two JSON documents, at a JSON Pointer.
type change struct {
	Pointer string
	What    string // added, removed or changed
	Old     string // compact JSON, shortened
	New     string
}

// diffJSON lists where b differs from a, at most limit differences (0 means no limit).
func diffJSON(a, b *node, ptr string, limit int) []change {
	var out []change
	var walk func(a, b *node, ptr string)
	walk = func(a, b *node, ptr string) {
		if limit > 0 && len(out) >= limit {
			return
		}
		switch {
		case a == nil && b == nil:
		case a == nil:
			out = append(out, change{ptr, "added", "", short(b)})
		case b == nil:
			out = append(out, change{ptr, "removed", short(a), ""})
		case a.kind != b.kind:
			out = append(out, change{ptr, "changed", short(a), short(b)})
		case a.kind == kObject:
			for _, k := range a.keys {
				walk(a.get(k), b.get(k), ptr+"/"+schema.EscapePointer(k))
			}
			for _, k := range b.keys {
				if a.get(k) == nil {
					walk(nil, b.get(k), ptr+"/"+schema.EscapePointer(k))
				}
			}
		case a.kind == kArray:
			for i := 0; i < max(len(a.vals), len(b.vals)); i++ {
				var x, y *node
				if i < len(a.vals) {
					x = a.vals[i]
				}
				if i < len(b.vals) {
					y = b.vals[i]
				}
				walk(x, y, ptr+"/"+strconv.Itoa(i))
			}
		case a.kind == kNumber:
			if !sameNumber(a.text, b.text) {
				out = append(out, change{ptr, "changed", a.text, b.text})
			}
		case a.text != b.text:
			out = append(out, change{ptr, "changed", short(a), short(b)})
		}
	}
	walk(a, b, ptr)
	return out
}

func sameNumber(x, y string) bool {
	if x == y {
		return true
	}
	fx, err1 := strconv.ParseFloat(x, 64)
	fy, err2 := strconv.ParseFloat(y, 64)
	return err1 == nil && err2 == nil && fx == fy
}

// short is a node's compact JSON, cut to a readable length.
func short(n *node) string {
	s := []rune(string(n.marshal()))
	if len(s) > 80 {
		return string(s[:77]) + "..."
	}
	return string(s)
}
