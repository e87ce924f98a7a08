package catalog

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

var (
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// DecodeStrict decodes a YAML node into v, reporting every unknown or duplicate field (with its
// line) as well as every type mismatch. yaml.v3 can refuse unknown fields only through a
// Decoder over the whole document; this walk does the same for any node and reports all fields
// rather than stopping at the first.
func DecodeStrict(r *Reporter, n *yaml.Node, v any) bool {
	before := len(r.Problems)
	checkFields(r, n, reflect.TypeOf(v).Elem(), "")
	if len(r.Problems) > before {
		return false
	}
	if err := n.Decode(v); err != nil {
		r.YAMLError(err)
		return false
	}
	return true
}

func checkFields(r *Reporter, n *yaml.Node, t reflect.Type, where string) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nodeType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // decodes itself and reports its own problems
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return
			}
			r.Node(n, "%s must be a mapping", describe(where))
			return
		}
		fields := yamlFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
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
			checkFields(r, val, f.Type, k.Value)
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for _, item := range n.Content {
				checkFields(r, item, t.Elem(), where)
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			seen := map[string]bool{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if seen[n.Content[i].Value] {
					r.Node(n.Content[i], "duplicate key %q%s", n.Content[i].Value, in(where))
				}
				seen[n.Content[i].Value] = true
				checkFields(r, n.Content[i+1], t.Elem(), where)
			}
		}
	}
}

// YAMLFields maps a struct's YAML field names to its fields, inline structs flattened: what a
// strict decoder of that struct accepts.
func YAMLFields(t reflect.Type) map[string]reflect.StructField { return yamlFields(t) }

// fieldCache holds yamlFields by type: the same few struct types are walked for every model.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

func yamlFields(t reflect.Type) map[string]reflect.StructField {
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
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
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

func describe(where string) string {
	if where == "" {
		return "this"
	}
	return where
}

func in(where string) string {
	if where == "" {
		return ""
	}
	return " in " + where
}
