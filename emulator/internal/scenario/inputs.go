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
	Mode         string                 `yaml:"mode"`
	HTTPSOnly    *bool                  `yaml:"https_only"`
	HostNames    *bool                  `yaml:"host_names"`
	MaxRedirects *int                   `yaml:"max_redirects"`
	UploadTTL    *time.Duration         `yaml:"upload_ttl"`
	Limits       map[string]InputLimits `yaml:"limits"`
}

// InputLimits change the byte limits of one media kind (image, audio or video).
type InputLimits struct {
	Inline *int64 `yaml:"inline"`
	URL    *int64 `yaml:"url"`
	Upload *int64 `yaml:"upload"`
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
	if in.MaxRedirects != nil && (*in.MaxRedirects < 0 || *in.MaxRedirects > 10) {
		r.At(line, "inputs.max_redirects must be 0 to 10")
	}
	if in.UploadTTL != nil && (*in.UploadTTL <= 0 || *in.UploadTTL > 7*24*time.Hour) {
		r.At(line, "inputs.upload_ttl must be a positive duration of at most 168h")
	}
	for kind, l := range in.Limits {
		if inputs.Kind(kind) != inputs.Image && inputs.Kind(kind) != inputs.Audio && inputs.Kind(kind) != inputs.Video {
			r.At(line, "inputs.limits: %q must be image, audio or video", kind)
		}
		for name, v := range map[string]*int64{"inline": l.Inline, "url": l.URL, "upload": l.Upload} {
			if v != nil && (*v < 1 || *v > 1<<30) {
				r.At(line, "inputs.limits.%s.%s must be 1 to %d bytes", kind, name, int64(1<<30))
			}
		}
	}
}

// InputsMode is the scenario's input mode: fetch, off, or "" when it says nothing (the
// command line's --inputs then decides).
func (s *Scenario) InputsMode() string {
	if s == nil || s.Inputs == nil {
		return ""
	}
	return s.Inputs.Mode
}

// InputRules are the rules inputs are fetched under: the defaults, changed as the scenario says.
func (s *Scenario) InputRules() inputs.Rules {
	r := inputs.Default()
	if s == nil || s.Inputs == nil {
		return r
	}
	in := s.Inputs
	if in.HTTPSOnly != nil {
		r.HTTPSOnly = *in.HTTPSOnly
	}
	if in.HostNames != nil {
		r.HostNames = *in.HostNames
	}
	if in.MaxRedirects != nil {
		r.MaxRedirects = *in.MaxRedirects
	}
	if in.UploadTTL != nil {
		r.UploadTTL = *in.UploadTTL
	}
	limits := make(map[inputs.Kind]inputs.Limits, len(r.Limits))
	for k, l := range r.Limits {
		if o, ok := in.Limits[string(k)]; ok {
			if o.Inline != nil {
				l.Inline = *o.Inline
			}
			if o.URL != nil {
				l.URL = *o.URL
			}
			if o.Upload != nil {
				l.Upload = *o.Upload
			}
		}
		limits[k] = l
	}
	r.Limits = limits
	return r
}
