package scenario

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

var (
	distType      = reflect.TypeOf(Dist{})
	fractionType  = reflect.TypeOf(Fraction{})
	evolutionType = reflect.TypeOf(Evolution{})
)

// strict checks a scenario's YAML against the Go type it decodes into and reports, in the
// emulator's words, every field that is unknown, repeated or of the wrong kind: the field's
// path, what it wants and what it got, at its line. Decoding goes ahead only when it finds
// nothing, so the YAML library's own messages ("cannot unmarshal !!str ...") never reach a user.
func strict() catalog.Strict { return catalog.Strict{Kinds: true, Self: readsItself} }

// readsItself checks the types that read themselves; their problems are given the field's path.
func readsItself(n *yaml.Node, t reflect.Type) (bool, error) {
	switch t {
	case evolutionType:
		if n.Kind != yaml.ScalarNode {
			return false, nil // a mapping of kinds, checked as the struct it decodes into
		}
		if n.Tag != "!!bool" {
			return true, fmt.Errorf("want true, false or a mapping of members, headers, status and output_type, got %s", catalog.Got(n))
		}
		return true, nil
	case distType:
		return true, new(Dist).UnmarshalYAML(n)
	case fractionType:
		return true, new(Fraction).UnmarshalYAML(n)
	case inputsType:
		return readInputs(n)
	}
	return false, nil
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
