package scenario

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

var (
	durationType    = reflect.TypeOf(time.Duration(0))
	apiDurationType = reflect.TypeOf(api.Duration(0))
	distType        = reflect.TypeOf(Dist{})
	fractionType    = reflect.TypeOf(Fraction{})
	evolutionType   = reflect.TypeOf(Evolution{})
)

// checkTypes walks a YAML node against the Go type it will decode into and reports, in the
// emulator's words, every field that is unknown, repeated or of the wrong kind: the field's
// path, what it wants and what it got, at its line. Decoding goes ahead only when it finds
// nothing, so the YAML library's own messages ("cannot unmarshal !!str ...") never reach a user.
func checkTypes(r *catalog.Reporter, n *yaml.Node, t reflect.Type, where string) {
	c := &typeChecker{r: r}
	c.check(n, t, where)
}

// maxVisits bounds the nodes one check visits: aliases can make a small document expand into
// billions of nodes.
const maxVisits = 100_000

type typeChecker struct {
	r      *catalog.Reporter
	visits int
}

func (c *typeChecker) check(n *yaml.Node, t reflect.Type, where string) {
	r := c.r
	if c.visits++; c.visits > maxVisits {
		if c.visits == maxVisits+1 {
			r.Node(n, "the document is too large once its aliases are expanded (over %d values)", maxVisits)
		}
		return
	}
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return // absent: the field keeps its default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == evolutionType && n.Kind == yaml.ScalarNode:
		if n.Tag != "!!bool" {
			r.Node(n, "%swant true, false or a mapping of members, headers, status and output_type, got %s", field(where), got(n))
		}
		return
	case t == durationType || t == apiDurationType:
		d, err := time.ParseDuration(n.Value)
		switch {
		case n.Kind != yaml.ScalarNode || err != nil:
			r.Node(n, "%swant a duration such as 500ms or 2s, got %s", field(where), got(n))
		case n.ShortTag() != "!!str":
			// A bare 0 parses as a duration, but the decoder reads durations from text only.
			r.Node(n, "%swant a duration with a unit such as 0s or 500ms, got %s", field(where), got(n))
		case d < 0:
			r.Node(n, "%swant a duration of 0 or more, got %s", field(where), got(n))
		}
		return
	case t == distType || t == fractionType:
		// Both read themselves; their problems are given this field's path.
		var err error
		if t == distType {
			err = new(Dist).UnmarshalYAML(n)
		} else {
			err = new(Fraction).UnmarshalYAML(n)
		}
		if te, ok := err.(*yaml.TypeError); ok {
			for _, m := range te.Errors {
				line, msg := n.Line, m
				if sub := linePrefix.FindStringSubmatch(m); sub != nil {
					line, _ = strconv.Atoi(sub[1])
					msg = sub[2]
				}
				r.At(line, "%s%s", field(where), msg)
			}
		} else if err != nil {
			r.Node(n, "%s%s", field(where), err)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			r.Node(n, "%s must be a mapping of fields, got %s", describe(where), got(n))
			return
		}
		fields := catalog.YAMLFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				r.Node(k, "duplicate field %q%s", k.Value, in(where))
				continue
			}
			seen[k.Value] = true
			ft, ok := fields[k.Value]
			if !ok {
				r.Node(k, "unknown field %q%s (known: %s)", k.Value, in(where), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
				continue
			}
			c.check(v, ft.Type, join(where, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			r.Node(n, "%swant a list, got %s", field(where), got(n))
			return
		}
		for i, item := range n.Content {
			c.check(item, t.Elem(), fmt.Sprintf("%s[%d]", where, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			r.Node(n, "%swant a mapping, got %s", field(where), got(n))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				r.Node(k, "%swant text keys, got %s", field(where), got(k))
				continue
			}
			if seen[k.Value] {
				r.Node(k, "duplicate key %q%s", k.Value, in(where))
			}
			seen[k.Value] = true
			c.check(n.Content[i+1], t.Elem(), join(where, k.Value))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			r.Node(n, "%swant text, got %s", field(where), got(n))
		}
	case reflect.Int:
		var v int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			r.Node(n, "%swant a whole number, got %s", field(where), got(n))
		} else if n.Decode(&v) != nil || v > math.MaxInt32 || v < math.MinInt32 {
			r.Node(n, "%swant a whole number from %d to %d, got %s", field(where), math.MinInt32, math.MaxInt32, got(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			r.Node(n, "%swant true or false, got %s", field(where), got(n))
		}
	case reflect.Float64:
		var v float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
			r.Node(n, "%swant a number, got %s", field(where), got(n))
		} else if math.IsNaN(v) || math.IsInf(v, 0) {
			r.Node(n, "%swant a finite number, got %s", field(where), got(n))
		}
	}
}

var linePrefix = regexp.MustCompile(`^line (\d+): (.*)$`)

// got describes what a node holds, for "want X, got Y".
func got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return strconv.Quote(v)
}

func describe(where string) string {
	if where == "" {
		return "this"
	}
	return where
}

func field(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func in(where string) string {
	if where == "" {
		return ""
	}
	return " in " + where
}

func join(where, name string) string {
	if where == "" {
		return name
	}
	return where + "." + name
}

var problemPath = regexp.MustCompile(`^([a-z_0-9]+(?:\[\d+\]|\.[A-Za-z_0-9-]+)*)[: ]`)

// Pointer turns the field path a problem begins with ("download.cut_after must be...",
// "rate_limits[0].per: want...") into a JSON Pointer (/download/cut_after), for a problem about
// a fault (fault true) or a scenario sent in a request body; "" when the problem names no field.
func Pointer(message string, fault bool) string {
	m := problemPath.FindStringSubmatch(message)
	if m == nil {
		return ""
	}
	t := reflect.TypeOf(Scenario{})
	if fault {
		t = reflect.TypeOf(Fault{})
	}
	parts := strings.FieldsFunc(strings.ReplaceAll(m[1], "]", ""), func(r rune) bool { return r == '.' || r == '[' })
	if _, ok := catalog.YAMLFields(t)[parts[0]]; !ok {
		return ""
	}
	return "/" + strings.Join(parts, "/")
}
