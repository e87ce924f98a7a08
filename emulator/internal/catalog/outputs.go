package catalog

import (
	"math"
	"strconv"
	"strings"
)

// OutputSpec is what one output of a job is: the kind and shape of the file to serve.
type OutputSpec struct {
	Type     string  // image, video or audio
	Format   string  // png, jpeg, wav or mp4
	Width    int     // images and videos
	Height   int     // images and videos
	Duration float64 // seconds; audio and video
}

// speechCharsPerSecond approximates how fast synthetic speech reads text.
const speechCharsPerSecond = 15.0

// PlanOutputs derives the outputs a succeeded job produces from its validated input.
func (m *Model) PlanOutputs(input map[string]any) []OutputSpec {
	o := &m.Output
	spec := OutputSpec{Type: m.OutputType, Format: o.Format}
	if o.FormatField != "" {
		if v, ok := m.InputValue(input, o.FormatField); ok {
			if s, ok := v.(string); ok && s != "" {
				spec.Format = s
			}
		}
	}
	if spec.Format == "jpg" {
		spec.Format = "jpeg"
	}
	if m.OutputType != OutputAudio {
		spec.Width, spec.Height = m.outputSize(input)
	}
	if m.OutputType != OutputImage {
		spec.Duration = m.outputDuration(input)
	}
	count := o.Count
	if o.CountField != "" {
		if v, ok := m.InputValue(input, o.CountField); ok {
			if n, ok := NumberOf(v); ok && n >= 1 {
				count = int(math.Min(n, 16))
			}
		}
	}
	out := make([]OutputSpec, count)
	for i := range out {
		out[i] = spec
	}
	return out
}

// InputValue is the input's value for a field, or the schema default when absent: what the
// model's price and outputs read.
func (m *Model) InputValue(input map[string]any, field string) (any, bool) {
	if v, ok := input[field]; ok && v != nil {
		return v, true
	}
	if p, ok := m.Properties[field]; ok && p.Default != nil {
		return p.Default, true
	}
	return nil, false
}

func (m *Model) outputSize(input map[string]any) (w, h int) {
	o := &m.Output
	w, h = o.Width, o.Height
	switch {
	case o.WidthField != "" && m.hasNumber(input, o.WidthField) && m.hasNumber(input, o.HeightField):
		fw, _ := m.InputValue(input, o.WidthField)
		fh, _ := m.InputValue(input, o.HeightField)
		nw, _ := NumberOf(fw)
		nh, _ := NumberOf(fh)
		w, h = int(min(nw, 8192)), int(min(nh, 8192))
	case o.SizeField != "" && m.sizeFrom(input, &w, &h):
	case o.AspectRatioField != "":
		ratio, ok := 0.0, false
		if v, found := m.InputValue(input, o.AspectRatioField); found {
			ratio, ok = parseRatio(v)
		}
		if !ok {
			break
		}
		short := 0
		if o.ResolutionField != "" {
			if v, found := m.InputValue(input, o.ResolutionField); found {
				short = parseResolution(v)
			}
		}
		if short > 0 {
			if ratio >= 1 {
				h, w = short, int(math.Round(float64(short)*ratio))
			} else {
				w, h = short, int(math.Round(float64(short)/ratio))
			}
		} else {
			area := float64(o.Width * o.Height)
			w = int(math.Round(math.Sqrt(area * ratio)))
			h = int(math.Round(math.Sqrt(area / ratio)))
		}
	case o.ResolutionField != "":
		if v, found := m.InputValue(input, o.ResolutionField); found {
			if short := parseResolution(v); short > 0 {
				ratio := float64(o.Width) / float64(o.Height)
				if ratio >= 1 {
					h, w = short, int(math.Round(float64(short)*ratio))
				} else {
					w, h = short, int(math.Round(float64(short)/ratio))
				}
			}
		}
	}
	step := 8
	if m.OutputType == OutputVideo {
		step = 2
	}
	return roundTo(w, step), roundTo(h, step)
}

// sizeFrom reads a size field that is either a named size or an object {width, height}.
func (m *Model) sizeFrom(input map[string]any, w, h *int) bool {
	v, ok := m.InputValue(input, m.Output.SizeField)
	if !ok {
		return false
	}
	switch x := v.(type) {
	case string:
		if sw, sh, ok := m.Output.SizeNamed(x); ok {
			*w, *h = sw, sh
			return true
		}
	case map[string]any:
		fw, ok1 := NumberOf(x["width"])
		fh, ok2 := NumberOf(x["height"])
		if ok1 && ok2 && fw >= 1 && fh >= 1 {
			*w, *h = int(fw), int(fh)
			return true
		}
	}
	return false
}

func (m *Model) outputDuration(input map[string]any) float64 {
	o := &m.Output
	if o.DurationField != "" {
		if v, ok := m.InputValue(input, o.DurationField); ok {
			if d, ok := NumberOf(v); ok && d > 0 {
				return math.Min(d, 600)
			}
		}
	}
	if o.DurationFromText != "" {
		if s, ok := input[o.DurationFromText].(string); ok {
			chars := float64(len([]rune(s)))
			return math.Min(600, math.Max(1, math.Round(chars/speechCharsPerSecond*10)/10))
		}
	}
	return o.Duration
}

func (m *Model) hasNumber(input map[string]any, field string) bool {
	v, ok := m.InputValue(input, field)
	if !ok {
		return false
	}
	_, ok = NumberOf(v)
	return ok
}

// parseRatio reads "16:9" (or a number) as width over height.
func parseRatio(v any) (float64, bool) {
	s, ok := v.(string)
	if !ok {
		return NumberOf(v)
	}
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, false
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil || x <= 0 || y <= 0 {
		return 0, false
	}
	return x / y, true
}

// parseResolution reads "720p" (or 720) as a short side in pixels; "4k" is 2160.
func parseResolution(v any) int {
	s := strings.ToLower(EnumKey(v))
	switch s {
	case "4k":
		return 2160
	case "2k":
		return 1440
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "p"))
	if err != nil || n < 1 || n > 4320 {
		return 0
	}
	return n
}

func roundTo(n, step int) int {
	r := int(math.Round(float64(n)/float64(step))) * step
	if r < step {
		r = step
	}
	return min(r, 8192)
}
