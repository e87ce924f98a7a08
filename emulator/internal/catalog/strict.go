package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	durationType    = reflect.TypeOf(time.Duration(0))
	apiDurationType = reflect.TypeOf(api.Duration(0))
)

// Strict checks a YAML node against the Go type it will decode into, and reports every field
// that is unknown or repeated at its line, rather than stopping at the first as yaml.v3 does
// (which refuses unknown fields only through a Decoder over a whole document). The catalog and
// the scenarios both read their files through it.
type Strict struct {
	// Kinds also checks every value against its type and reports it in the emulator's words,
	// with the field's whole path ("rate_limits[0].per: want text, got a list"), so the YAML
	// library's own messages never reach a user. Without it, values of the wrong kind are left
	// to the decoder, and a field is named by its key alone.
	Kinds bool
	// Self checks the values of types the walk cannot read by their kind (types that read
	// themselves); handled false walks the value by its kind after all. The error's messages,
	// one per line of a *yaml.TypeError and each may begin "line N: ", are reported under the
	// field's path.
	Self func(n *yaml.Node, t reflect.Type) (handled bool, err error)
}

// maxVisits bounds the nodes one check visits: aliases can make a small document expand into
// billions of nodes.
const maxVisits = 100_000

// Decode checks n as a value of v's type and, when that finds nothing wrong, decodes it into v;
// it reports whether v holds the value.
func (s Strict) Decode(r *Reporter, n *yaml.Node, v any) bool {
	before := len(r.Problems)
	s.Check(r, n, reflect.TypeOf(v).Elem())
	if len(r.Problems) > before {
		return false
	}
	if err := n.Decode(v); err != nil {
		r.YAMLError(err)
		return false
	}
	return true
}

// DecodeStrict decodes n into v as the catalog reads its sections: fields checked, values of the
// wrong kind left to the decoder's messages.
func DecodeStrict(r *Reporter, n *yaml.Node, v any) bool { return Strict{}.Decode(r, n, v) }

// Check reports every problem with n as a value of type t.
func (s Strict) Check(r *Reporter, n *yaml.Node, t reflect.Type) {
	(&walk{Strict: s, r: r}).check(n, t, "")
}

type walk struct {
	Strict
	r      *Reporter
	visits int
}

func (w *walk) check(n *yaml.Node, t reflect.Type, where string) {
	r := w.r
	if w.visits++; w.visits > maxVisits {
		if w.visits == maxVisits+1 {
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
	if t == nodeType {
		return // read later, by whoever wants the node
	}
	if w.Self != nil {
		if handled, err := w.Self(n, t); handled {
			w.report(n, where, err)
			return
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if w.Kinds {
				r.Node(n, "%s must be a mapping of fields, got %s", cmp.Or(where, "this"), Got(n))
			} else {
				r.Node(n, "%s must be a mapping", cmp.Or(where, "this"))
			}
			return
		}
		fields := YAMLFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				r.Node(k, "duplicate field %q%s", k.Value, in(where))
				continue
			}
			seen[k.Value] = true
			f, ok := fields[k.Value]
			if !ok {
				r.Node(k, "unknown field %q%s (known: %s)", k.Value, in(where), strings.Join(sortedKeys(fields), ", "))
				continue
			}
			w.check(v, f.Type, w.under(join(where, k.Value), k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.want(n, where, "a list")
			return
		}
		for i, item := range n.Content {
			w.check(item, t.Elem(), w.under(where+"["+strconv.Itoa(i)+"]", where))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.want(n, where, "a mapping")
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode && w.Kinds {
				w.want(k, where, "text keys")
				continue
			}
			if seen[k.Value] {
				r.Node(k, "duplicate key %q%s", k.Value, in(where))
			}
			seen[k.Value] = true
			w.check(n.Content[i+1], t.Elem(), w.under(join(where, k.Value), where))
		}
	default:
		if w.Kinds {
			w.scalar(n, t, where)
		}
	}
}

// scalar checks a value that decodes into a scalar type.
func (w *walk) scalar(n *yaml.Node, t reflect.Type, where string) {
	var i int64
	var f float64
	switch {
	case t == durationType || t == apiDurationType:
		d, err := time.ParseDuration(n.Value)
		switch {
		case n.Kind != yaml.ScalarNode || err != nil:
			w.want(n, where, "a duration such as 500ms or 2s")
		case n.ShortTag() != "!!str":
			// A bare 0 parses as a duration, but the decoder reads durations from text only.
			w.want(n, where, "a duration with a unit such as 0s or 500ms")
		case d < 0:
			w.want(n, where, "a duration of 0 or more")
		}
	case t.Kind() == reflect.String && n.Kind != yaml.ScalarNode:
		w.want(n, where, "text")
	case t.Kind() == reflect.Int && (n.Kind != yaml.ScalarNode || n.Tag != "!!int"):
		w.want(n, where, "a whole number")
	case t.Kind() == reflect.Int && (n.Decode(&i) != nil || i > math.MaxInt32 || i < math.MinInt32):
		w.want(n, where, fmt.Sprintf("a whole number from %d to %d", math.MinInt32, math.MaxInt32))
	case t.Kind() == reflect.Bool && (n.Kind != yaml.ScalarNode || n.Tag != "!!bool"):
		w.want(n, where, "true or false")
	case t.Kind() == reflect.Float64 && (n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil):
		w.want(n, where, "a number")
	case t.Kind() == reflect.Float64 && (math.IsNaN(f) || math.IsInf(f, 0)):
		w.want(n, where, "a finite number")
	}
}

// want reports, when kinds are checked, that a value is not what its field wants.
func (w *walk) want(n *yaml.Node, where, what string) {
	if w.Kinds {
		w.r.Node(n, "%swant %s, got %s", field(where), what, Got(n))
	}
}

// report files the problems Self found under the field's path.
func (w *walk) report(n *yaml.Node, where string, err error) {
	if err == nil {
		return
	}
	msgs := []string{err.Error()}
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	}
	for _, m := range msgs {
		line := n.Line
		if sub := yamlLine.FindStringSubmatch(m); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			m = sub[2]
		}
		w.r.At(line, "%s%s", field(where), m)
	}
}

// Got describes what a node holds, for "want X, got Y".
func Got(n *yaml.Node) string {
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

// fieldCache holds YAMLFields by type: the same few struct types are walked for every model.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// YAMLFields maps a struct's YAML field names to its fields, inline structs flattened: what a
// strict decoder of that struct accepts.
func YAMLFields(t reflect.Type) map[string]reflect.StructField {
	if cached, ok := fieldCache.Load(t); ok {
		return cached.(map[string]reflect.StructField)
	}
	out := map[string]reflect.StructField{}
	defer fieldCache.Store(t, out)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, YAMLFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

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

// under names a member: when kinds are checked, by its whole path; else as the catalog's
// messages have always named it (a field by its key, an item or entry by its parent's).
func (w *walk) under(path, plain string) string {
	if w.Kinds {
		return path
	}
	return plain
}

func join(where, name string) string {
	if where == "" {
		return name
	}
	return where + "." + name
}
