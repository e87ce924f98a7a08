package scenario

import "gopkg.in/yaml.v3"

// Evolution turns on the forward-compatibility mode: answers carry what a later version of the
// API might add. `evolution: true` turns every kind on; a mapping turns on the kinds it names.
type Evolution struct {
	// Members adds an undocumented member to every JSON object a /v1 answer holds.
	Members bool `yaml:"members" json:"members"`
	// Headers adds an undocumented header to every /v1 answer.
	Headers bool `yaml:"headers" json:"headers"`
	// Status passes running jobs through an undocumented status first.
	Status bool `yaml:"status" json:"status"`
	// OutputType lists a model of an undocumented output type.
	OutputType bool `yaml:"output_type" json:"output_type"`
}

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
