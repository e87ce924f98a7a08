package catalog

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// splitMinBytes is the size from which a catalog's models are parsed in parallel; smaller files
// parse fast enough whole. A variable so tests can split small files.
var splitMinBytes = 512 << 10

// splitPlan is a large catalog cut for loading in pieces: the file with its models section
// emptied, which parses on its own and keeps its line numbers, and the section's items in runs
// that each parse on their own. Loading parses a run, builds its models and lets its nodes go,
// so a catalog of any size holds only a few runs' node trees at once, and runs load side by side.
//
// It cuts only a plain layout: a top-level "models:" line followed by a block sequence whose
// items start with "- " at one indentation, everything else in the section indented deeper or a
// comment, and no anchors, aliases, tabs or document markers in the section.
type splitPlan struct {
	rest    []byte
	section [][]byte // the lines of the models section
	first   int      // the index in the file of the section's first line
	indent  int      // the items' indentation
	starts  []int    // indexes into section of the lines that open an item
}

// splitRun is how many models one piece holds: enough that parsing the piece costs far more than
// starting it, few enough that the pieces in flight hold little memory.
const splitRun = 64

// planSplit cuts data as splitPlan says, or returns ok false when the file is not one it can cut
// safely (then the caller parses it whole, which also reports syntax errors).
func planSplit(data []byte) (plan *splitPlan, ok bool) {
	if len(data) < splitMinBytes {
		return nil, false
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for _, l := range lines {
		if bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("...")) || bytes.HasPrefix(l, []byte("%")) {
			return nil, false // documents and directives: leave them to the whole parse
		}
	}
	first, end := -1, len(lines)
	for i, l := range lines {
		t := bytes.TrimRight(l, "\r\n")
		if first < 0 {
			if bytes.Equal(bytes.TrimRight(t, " "), []byte("models:")) {
				first = i + 1
			}
			continue
		}
		if len(t) > 0 && t[0] != ' ' && t[0] != '#' {
			end = i
			break
		}
	}
	if first < 0 {
		return nil, false
	}
	plan = &splitPlan{section: lines[first:end], first: first}
	var indent []byte
	for i, l := range plan.section {
		t := bytes.TrimRight(l, "\r\n")
		body := bytes.TrimLeft(t, " ")
		if len(body) == 0 || body[0] == '#' {
			continue
		}
		if bytes.ContainsAny(t, "&*\t") {
			return nil, false // perhaps an anchor or alias, which must not be cut apart
		}
		if indent == nil {
			if !bytes.HasPrefix(body, []byte("- ")) {
				return nil, false
			}
			indent = t[:len(t)-len(body)]
		}
		switch {
		case bytes.HasPrefix(t, indent) && bytes.HasPrefix(t[len(indent):], []byte("- ")):
			plan.starts = append(plan.starts, i)
		case len(t)-len(body) <= len(indent):
			return nil, false // something at or left of the items' indentation: not plain
		}
	}
	if len(plan.starts) < 2 {
		return nil, false
	}
	plan.indent = len(indent)

	// The rest of the file, with the section emptied, parses on its own; its line numbers stay.
	var rest bytes.Buffer
	for i, l := range lines {
		switch {
		case i == first-1:
			rest.WriteString("models: []\n")
		case i >= first && i < end:
			rest.WriteByte('\n')
		default:
			rest.Write(l)
		}
	}
	plan.rest = rest.Bytes()
	return plan, true
}

// items is how many models the section holds.
func (p *splitPlan) items() int { return len(p.starts) }

// parseRest parses the file without its models; it returns the top-level mapping, or nil.
func (p *splitPlan) parseRest() *yaml.Node {
	var whole yaml.Node
	if yaml.Unmarshal(p.rest, &whole) != nil || len(whole.Content) != 1 || whole.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	return &whole
}

// parseRun parses the k-th run of items, with the lines they have in the whole file; ok is false
// when the run does not parse into exactly its items.
func (p *splitPlan) parseRun(k int) (items []*yaml.Node, ok bool) {
	from := p.starts[k*splitRun]
	to, want := len(p.section), len(p.starts)-k*splitRun
	if (k+1)*splitRun < len(p.starts) {
		to, want = p.starts[(k+1)*splitRun], splitRun
	}
	text := append([]byte("models:\n"), bytes.Join(p.section[from:to], nil)...)
	var piece yaml.Node
	if yaml.Unmarshal(text, &piece) != nil || len(piece.Content) != 1 || len(piece.Content[0].Content) != 2 {
		return nil, false
	}
	seq := piece.Content[0].Content[1]
	if seq.Kind != yaml.SequenceNode || len(seq.Content) != want {
		return nil, false
	}
	// Line 2 of the piece is line first+from+1 of the file.
	shiftLines(seq, p.first+from-1)
	return seq.Content, true
}

// shiftLines moves a parsed piece's nodes to their lines in the whole file.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}
