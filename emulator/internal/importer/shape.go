package importer

import (
	"maps"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// Bounds of a Shape, so that a hostile document costs a bounded amount to take in and compare:
// paths past MaxShapePaths are not recorded, nor members deeper than MaxShapeDepth.
const (
	MaxShapePaths = 512
	MaxShapeDepth = 32
)

// Shape maps each member path of the JSON documents added to it (a JSON Pointer, array items
// as *) to the JSON types seen there. drift --spend and parity both compare answers by it.
type Shape map[string]map[string]bool

// Add records the member paths and JSON types of a document decoded with UseNumber.
func (s Shape) Add(doc any) { s.add(doc, "", 0) }

func (s Shape) add(v any, ptr string, depth int) {
	if ptr != "" {
		if s[ptr] == nil {
			if len(s) >= MaxShapePaths {
				return
			}
			s[ptr] = map[string]bool{}
		}
		s[ptr][jsonvalue.Type(v)] = true
	}
	if depth >= MaxShapeDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, m := range v {
			s.add(m, ptr+"/"+schema.EscapePointer(k), depth+1)
		}
	case []any:
		for _, m := range v {
			s.add(m, ptr+"/*", depth+1)
		}
	}
}

// Types names the JSON types seen at ptr, sorted and joined, such as "number" or
// "null|string"; without null unless withNull. It is "" for a path never seen.
func (s Shape) Types(ptr string, withNull bool) string {
	var names []string
	for t := range s[ptr] {
		if t != "null" || withNull {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	return strings.Join(names, "|")
}

// ShapePaths is every path of a and b, sorted.
func ShapePaths(a, b Shape) []string {
	paths := slices.AppendSeq(slices.Collect(maps.Keys(a)), maps.Keys(b))
	slices.Sort(paths)
	return slices.Compact(paths)
}
