package scenario

import (
	"fmt"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
)

// Inputs says whether media inputs are fetched under a hosted service's rules, and which rules:
// `inputs: fetch` (the defaults), `inputs: off`, or a mapping that names the mode and changes
// some rules.
type Inputs struct {
	// Mode is fetch or off; a mapping without it means fetch.
	Mode string `yaml:"mode"`
	// Changes are the rules the scenario changes, laid over the model's (its catalog inputs).
	inputs.Changes `yaml:",inline"`
	UploadTTL      *time.Duration `yaml:"upload_ttl"`
}

// The input modes.
const (
	InputsFetch = "fetch"
	InputsOff   = "off"
)

var inputsType = reflect.TypeOf(Inputs{})

// UnmarshalYAML reads `fetch` or `off`, or a mapping.
func (in *Inputs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*in = Inputs{Mode: n.Value}
		return nil
	}
	type plain Inputs
	return n.Decode((*plain)(in))
}

// readInputs checks the scalar form of inputs for the strict decoder.
func readInputs(n *yaml.Node) (bool, error) {
	if n.Kind != yaml.ScalarNode {
		return false, nil // a mapping, checked as the struct it decodes into
	}
	if n.Value != InputsFetch && n.Value != InputsOff {
		return true, fmt.Errorf("want fetch, off or a mapping of mode, https_only, host_names, max_redirects, upload_ttl and limits, got %s", catalog.Got(n))
	}
	return true, nil
}

// checkInputs reports what the strict decoder cannot: the mode, the kinds and the bounds.
func checkInputs(r *catalog.Reporter, n *yaml.Node, in *Inputs) {
	if in == nil {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	switch in.Mode {
	case "":
		in.Mode = InputsFetch
	case InputsFetch, InputsOff:
	default:
		r.At(line, "inputs.mode %q must be fetch or off", in.Mode)
	}
	if in.UploadTTL != nil && (*in.UploadTTL <= 0 || *in.UploadTTL > 7*24*time.Hour) {
		r.At(line, "inputs.upload_ttl must be a positive duration of at most 168h")
	}
	in.Check("inputs", true, func(format string, args ...any) { r.At(line, format, args...) })
}

// InputsMode is the scenario's input mode: fetch, off, or "" when it says nothing (the
// command line's --inputs then decides).
func (s *Scenario) InputsMode() string {
	if s == nil || s.Inputs == nil {
		return ""
	}
	return s.Inputs.Mode
}

// InputRules are the rules inputs are fetched under when no model is in question (an upload):
// the defaults, changed as the scenario says.
func (s *Scenario) InputRules() inputs.Rules { return s.InputRulesFor(nil) }

// InputRulesFor are the rules a model's inputs are fetched under: the defaults, changed as the
// model's catalog inputs say, then as the scenario says.
func (s *Scenario) InputRulesFor(m *catalog.Model) inputs.Rules {
	r := inputs.Default()
	if m != nil && m.Inputs != nil {
		r = m.Inputs.Apply(r)
	}
	if s == nil || s.Inputs == nil {
		return r
	}
	r = s.Inputs.Apply(r)
	if s.Inputs.UploadTTL != nil {
		r.UploadTTL = *s.Inputs.UploadTTL
	}
	return r
}
