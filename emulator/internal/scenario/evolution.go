package scenario

import (
	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Evolution turns on the forward-compatibility mode: answers carry what a later version of the
// API might add. `evolution: true` turns every kind on; a mapping turns on the kinds it names.
// Its kinds are the control API's, declared once in api.
type Evolution api.Evolution

// UnmarshalYAML reads true, false or a mapping of the kinds.
func (e *Evolution) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var on bool
		if err := n.Decode(&on); err != nil {
			return err
		}
		*e = Evolution{on, on, on, on}
		return nil
	}
	type plain Evolution
	return n.Decode((*plain)(e))
}

// Evolves returns the scenario's evolution kinds; all off when it names none.
func (s *Scenario) Evolves() Evolution {
	if s == nil || s.Evolution == nil {
		return Evolution{}
	}
	return *s.Evolution
}

// Any reports whether any kind is on.
func (e Evolution) Any() bool { return e != Evolution{} }
