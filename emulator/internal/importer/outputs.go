package importer

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// namedSizes are the image sizes that named size enums conventionally stand for.
var namedSizes = map[string]string{
	"square_hd": "1024x1024", "square": "512x512",
	"portrait_4_3": "768x1024", "portrait_16_9": "576x1024",
	"landscape_4_3": "1024x768", "landscape_16_9": "1024x576",
}

var (
	sizeName   = regexp.MustCompile(`^([1-9][0-9]{0,3})[x*×]([1-9][0-9]{0,3})$`)
	ratioValue = regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*$`)
	resValue   = regexp.MustCompile(`^(?i)([1-9][0-9]{2,3}p|[248]k)$`)
)

// inferOutput derives the output block from the input schema: what kind of file, how many, what
// size and how long — all inferred, since observing outputs would mean spending credits.
func inferOutput(outputType string, props []prop) *node {
	byName := map[string]prop{}
	for _, p := range props {
		byName[p.name] = p
	}
	find := func(test func(prop) bool, names ...string) (prop, bool) {
		for _, n := range names {
			if p, ok := byName[n]; ok && test(p) {
				return p, true
			}
		}
		return prop{}, false
	}
	numeric := func(p prop) bool {
		if p.typ == "integer" || p.typ == "number" {
			return true
		}
		if p.typ != "string" || len(p.enum) == 0 {
			return false
		}
		for _, e := range p.enum {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(e.text, "s"), 64); err != nil {
				return false
			}
		}
		return true
	}
	enumOf := func(p prop, ok func(string) bool) bool {
		if len(p.enum) == 0 {
			return false
		}
		for _, e := range p.enum {
			if e.kind != kString || !ok(e.text) {
				return false
			}
		}
		return true
	}
	out := &node{kind: kObject}
	add := func(k string, v any) { out.set(k, jsonOf(v)) }
	formats := catalog.Formats[outputType]
	format := formats[0]
	if p, ok := find(func(p prop) bool {
		return outputType == "image" && enumOf(p, func(s string) bool { return slices.Contains(formats, s) })
	}, "output_format", "format", "image_format"); ok {
		if p.def != nil && slices.Contains(formats, p.def.text) {
			format = p.def.text
		}
		add("format", format)
		add("format_field", p.name)
	} else {
		add("format", format)
	}
	if outputType == "image" {
		if p, ok := find(func(p prop) bool { return p.typ == "integer" }, "num_images", "num_outputs", "n", "num_samples", "count", "batch_size"); ok {
			add("count_field", p.name)
		}
	}
	if outputType != "audio" {
		w, h := catalog.DefaultSize(outputType)
		sizeFields := &node{kind: kObject}
		if pw, ok := find(func(p prop) bool { return p.typ == "integer" || p.typ == "number" }, "width"); ok {
			if ph, ok := find(func(p prop) bool { return p.typ == "integer" || p.typ == "number" }, "height"); ok {
				sizeFields.set("width_field", jsonOf(pw.name))
				sizeFields.set("height_field", jsonOf(ph.name))
			}
		}
		if p, ok := find(func(prop) bool { return true }, "image_size", "size", "video_size"); ok {
			sizes, known := sizesOf(p)
			switch {
			case len(p.enum) > 0 && known:
				sizeFields.set("size_field", jsonOf(p.name))
				sizeFields.set("sizes", sizes)
				if p.def != nil {
					if m := sizeName.FindStringSubmatch(sizeOf(p.def.text)); m != nil {
						w, _ = strconv.Atoi(m[1])
						h, _ = strconv.Atoi(m[2])
					}
				}
			case len(p.enum) == 0 && (p.typ == "object" || p.schema.get("anyOf") != nil || p.schema.get("oneOf") != nil):
				sizeFields.set("size_field", jsonOf(p.name))
				if len(sizes.keys) > 0 {
					sizeFields.set("sizes", sizes)
				}
			}
		}
		if p, ok := find(func(p prop) bool { return len(p.enum) == 0 || enumOf(p, ratioValue.MatchString) }, "aspect_ratio"); ok && (p.typ == "string" || len(p.enum) > 0) {
			sizeFields.set("aspect_ratio_field", jsonOf(p.name))
		}
		if p, ok := find(func(p prop) bool { return enumOf(p, resValue.MatchString) }, "resolution"); ok {
			sizeFields.set("resolution_field", jsonOf(p.name))
		}
		add("width", w)
		add("height", h)
		for i, k := range sizeFields.keys {
			out.set(k, sizeFields.vals[i])
		}
	}
	if outputType != "image" {
		d := catalog.DefaultDuration
		if p, ok := find(numeric, "duration", "duration_seconds", "seconds", "length", "num_seconds", "seconds_total"); ok {
			if p.def != nil {
				if f, err := strconv.ParseFloat(strings.TrimSuffix(p.def.text, "s"), 64); err == nil && f > 0 && f <= 600 {
					d = f
				}
			}
			add("duration", d)
			add("duration_field", p.name)
		} else if p, ok := find(func(p prop) bool { return p.typ == "string" && len(p.enum) == 0 }, "text", "input", "script"); ok && outputType == "audio" {
			add("duration", d)
			add("duration_from_text", p.name)
		} else {
			add("duration", d)
		}
	}
	return out
}

// sizeOf is the WIDTHxHEIGHT a size name stands for, or "".
func sizeOf(name string) string {
	if s, ok := namedSizes[name]; ok {
		return s
	}
	if m := sizeName.FindStringSubmatch(name); m != nil {
		return m[1] + "x" + m[2]
	}
	return ""
}

// sizesOf maps the size names a property offers (in its enum, or in the enums of its anyOf or
// oneOf branches) to sizes; known is false when some name stands for no size the importer
// knows.
func sizesOf(p prop) (*node, bool) {
	names := p.enum
	for _, k := range []string{"anyOf", "oneOf"} {
		if list := p.schema.get(k); list != nil && list.kind == kArray {
			for _, b := range list.vals {
				if e := b.get("enum"); e != nil && e.kind == kArray {
					names = append(names, e.vals...)
				}
			}
		}
	}
	m := &node{kind: kObject}
	known := true
	seen := map[string]bool{}
	for _, n := range names {
		if n.kind != kString || seen[n.text] {
			continue
		}
		seen[n.text] = true
		s := sizeOf(n.text)
		if _, _, ok := catalog.ParseSize(s); !ok {
			known = false
			continue
		}
		m.set(n.text, jsonOf(s))
	}
	return m, known
}
