package catalog

import (
	"bytes"
	"sync"

	"gopkg.in/yaml.v3"
)

// splitMinBytes is the size from which a catalog's models are parsed in parallel; smaller files
// parse fast enough whole. A variable so tests can split small files.
var splitMinBytes = 512 << 10

// parseSplit parses a large catalog with its models section cut into pieces parsed side by side,
// since YAML parsing is most of the time a big catalog takes to load. It gives the same node
// tree, lines and columns included, as parsing the whole file would, or ok false when the file
// is not one it can cut safely (then the caller parses it whole; it also reports syntax errors).
//
// It cuts only a plain layout: a top-level "models:" line followed by a block sequence whose
// items start with "- " at one indentation, everything else in the section indented deeper or a
// comment, and no anchors, aliases, tabs or document markers in the section.
func parseSplit(data []byte, workers int) (doc *yaml.Node, ok bool) {
	if len(data) < splitMinBytes || workers < 2 {
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
	section := lines[first:end]
	var indent []byte
	var starts []int // indexes into section of the lines that open an item
	for i, l := range section {
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
		case bytes.HasPrefix(t, append(append([]byte{}, indent...), "- "...)):
			starts = append(starts, i)
		case len(t)-len(body) <= len(indent):
			return nil, false // something at or left of the items' indentation: not plain
		}
	}
	if len(starts) < 2*workers {
		return nil, false
	}

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
	pieces := 2 * workers
	type result struct {
		items []*yaml.Node
		ok    bool
	}
	results := make([]result, pieces)
	var wg sync.WaitGroup
	for p := range pieces {
		from := starts[p*len(starts)/pieces]
		to := len(section)
		if p+1 < pieces {
			to = starts[(p+1)*len(starts)/pieces]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := append([]byte("models:\n"), bytes.Join(section[from:to], nil)...)
			var piece yaml.Node
			if yaml.Unmarshal(text, &piece) != nil || len(piece.Content) != 1 || len(piece.Content[0].Content) != 2 {
				return
			}
			seq := piece.Content[0].Content[1]
			if seq.Kind != yaml.SequenceNode {
				return
			}
			// Line 2 of the piece is line first+from+1 of the file.
			shiftLines(seq, first+from-1)
			results[p] = result{seq.Content, true}
		}()
	}
	var whole yaml.Node
	restOK := yaml.Unmarshal(rest.Bytes(), &whole) == nil
	wg.Wait()
	if !restOK || len(whole.Content) != 1 || whole.Content[0].Kind != yaml.MappingNode {
		return nil, false
	}
	var models *yaml.Node
	root := whole.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "models" {
			models = root.Content[i+1]
		}
	}
	if models == nil {
		return nil, false
	}
	models.Content = models.Content[:0]
	for _, res := range results {
		if !res.ok {
			return nil, false
		}
		models.Content = append(models.Content, res.items...)
	}
	models.Style = 0
	models.Line = models.Content[0].Line
	models.Column = len(indent) + 1
	return &whole, true
}

// shiftLines moves a parsed piece's nodes to their lines in the whole file.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}
