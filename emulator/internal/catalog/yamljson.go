package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
	"gopkg.in/yaml.v3"
)

// maxAliasDepth and maxSchemaBytes bound alias expansion, so that a few hundred bytes of YAML
// cannot expand into a huge schema ("billion laughs").
const (
	maxAliasDepth  = 32
	maxSchemaBytes = 256 << 10
)

// jsonDoc is a YAML tree turned into JSON text. It can tell the line each JSON Pointer came
// from, so a schema problem found in the JSON can be reported at its place in the YAML file;
// those lines are worked out only when a problem asks, since most schemas have none.
type jsonDoc struct {
	Raw   json.RawMessage
	Lines map[string]int
	node  *yaml.Node
}

// LineOf returns the line of the deepest known node on the way to ptr.
func (d *jsonDoc) LineOf(ptr string) int {
	if d.Lines == nil {
		c := converter{r: &Reporter{}, doc: &jsonDoc{Lines: map[string]int{}}, track: true}
		c.value(d.node, "", 0)
		d.Lines = c.doc.Lines
	}
	for {
		if line, ok := d.Lines[ptr]; ok {
			return line
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return d.Lines[""]
		}
		ptr = ptr[:i]
	}
}

// yamlToJSON converts a YAML node to JSON, keeping mapping order. Keys must be strings,
// timestamps stay text, and numbers keep their value exactly (integers in full, floats in
// their shortest form), so the JSON means what the YAML said.
func yamlToJSON(r *Reporter, n *yaml.Node) *jsonDoc {
	return yamlToJSONRewriting(r, n, nil)
}

// YAMLToJSON converts a YAML file holding one mapping to JSON text, as yamlToJSON converts the
// catalog's schemas. Its error lists every problem as FILE:LINE: message.
func YAMLToJSON(file string, data []byte) (json.RawMessage, error) {
	r := &Reporter{File: file}
	doc := ParseDocument(r, data)
	if doc == nil {
		return nil, r.Problems
	}
	j := yamlToJSON(r, doc.Content[0])
	if j == nil {
		return nil, r.Problems
	}
	return j.Raw, nil
}

// yamlToJSONRewriting converts like yamlToJSON, writing the given strings in place of the
// scalars at the given JSON Pointers.
func yamlToJSONRewriting(r *Reporter, n *yaml.Node, rewrite map[string]string) *jsonDoc {
	c := converter{r: r, doc: &jsonDoc{node: n}, rewrite: rewrite, track: rewrite != nil}
	before := len(r.Problems)
	c.value(n, "", 0)
	if len(r.Problems) > before {
		return nil
	}
	c.doc.Raw = json.RawMessage(bytes.Clone(c.buf.Bytes()))
	return c.doc
}

type converter struct {
	r       *Reporter
	doc     *jsonDoc
	buf     bytes.Buffer
	tooBig  bool
	rewrite map[string]string
	track   bool // build JSON Pointers, for lines or rewrites; plain conversion skips them
}

func (c *converter) value(n *yaml.Node, ptr string, depth int) {
	if c.buf.Len() > maxSchemaBytes {
		if !c.tooBig {
			c.tooBig = true
			c.r.Node(n, "this expands to more than %d KiB of JSON; a schema that large, or aliases that multiply, are refused", maxSchemaBytes>>10)
		}
		return
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for n.Kind == yaml.AliasNode {
		depth++
		if depth > maxAliasDepth || n.Alias == nil {
			c.r.Node(n, "aliases nest too deeply")
			c.buf.WriteString("null")
			return
		}
		n = n.Alias
	}
	if c.doc.Lines != nil {
		if _, ok := c.doc.Lines[ptr]; !ok {
			c.doc.Lines[ptr] = n.Line
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		c.buf.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				c.r.Node(k, "keys must be strings; quote %q", k.Value)
				continue
			}
			if seen[k.Value] {
				c.r.Node(k, "duplicate key %q", k.Value)
				continue
			}
			seen[k.Value] = true
			if i > 0 {
				c.buf.WriteByte(',')
			}
			appendJSONString(&c.buf, k.Value)
			c.buf.WriteByte(':')
			var child string
			if c.track {
				child = ptr + "/" + schema.EscapePointer(k.Value)
				if c.doc.Lines != nil {
					c.doc.Lines[child] = k.Line
				}
			}
			c.value(n.Content[i+1], child, depth)
		}
		c.buf.WriteByte('}')
	case yaml.SequenceNode:
		c.buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				c.buf.WriteByte(',')
			}
			var child string
			if c.track {
				child = ptr + "/" + strconv.Itoa(i)
			}
			c.value(item, child, depth)
		}
		c.buf.WriteByte(']')
	case yaml.ScalarNode:
		if v, ok := c.rewrite[ptr]; ok {
			appendJSONString(&c.buf, v)
			return
		}
		c.scalar(n)
	default:
		c.r.Node(n, "unsupported YAML node")
		c.buf.WriteString("null")
	}
}

func (c *converter) scalar(n *yaml.Node) {
	switch n.ShortTag() {
	case "!!null":
		c.buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.r.Node(n, "invalid boolean %q", n.Value)
		}
		c.buf.WriteString(strconv.FormatBool(b))
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			c.r.Node(n, "integer %q is out of range", n.Value)
		}
		c.buf.WriteString(strconv.FormatInt(i, 10))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			c.r.Node(n, "number %q has no JSON form", n.Value)
			c.buf.WriteString("0")
			return
		}
		c.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default: // strings, timestamps and anything else stay text
		appendJSONString(&c.buf, n.Value)
	}
}

// appendJSONString writes s as a JSON string. YAML text is valid UTF-8, so only quotes,
// backslashes and control characters need escaping; <, > and & stay as they are.
func appendJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
