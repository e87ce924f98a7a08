package catalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
	"github.com/mediagen/mediagen-emulator/emulator/internal/golden"
)

// The golden files of this package (prices.json, outputs.json) are rewritten with
//
//	go test ./emulator/internal/catalog -run Golden -update

// defaultCatalogPath is the embedded default catalog, read from the source tree.
const defaultCatalogPath = "../../../fixtures/catalog/default.yaml"

func parseDefaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	data, err := os.ReadFile(defaultCatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse("default.yaml", data)
	if err != nil {
		t.Fatalf("Parse(default.yaml):\n%v", err)
	}
	return c
}

// checkGolden compares got, encoded as indented JSON, with testdata/golden/name, or rewrites the
// file under -update. On a mismatch it names the models whose entries differ.
func checkGolden[V any](t *testing.T, name string, got map[string]V) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	enc := encodeGolden(t, got)
	want, ok := golden.Check(t, path, enc)
	if ok {
		return
	}
	var wantMap, gotMap map[string]json.RawMessage
	if err := json.Unmarshal(want, &wantMap); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(enc, &gotMap); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range wantMap {
		ids = append(ids, id)
	}
	for id := range gotMap {
		if _, ok := wantMap[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		w, g := compactJSON(wantMap[id]), compactJSON(gotMap[id])
		if w != g {
			t.Errorf("%s: %s\n  got  %s\n  want %s", path, id, g, w)
		}
	}
	t.Errorf("%s differs (run with -update after checking the change is intended)", path)
}

// encodeGolden writes a map as a JSON object with sorted keys and one compact entry per line, so
// a change to one model is a one-line diff.
func encodeGolden[V any](t *testing.T, m map[string]V) []byte {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range keys {
		key, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		val, err := json.Marshal(m[k])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("  ")
		b.Write(key)
		b.WriteString(": ")
		b.Write(val)
		if i < len(keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func compactJSON(raw json.RawMessage) string {
	if raw == nil {
		return "(absent)"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// outputsCatalog holds hand-made models, one per way PlanOutputs derives an output's shape.
const outputsCatalog = `
products:
  - {id: p, name: P, description: Output test models.}
models:
  - id: o/fields
    name: Width and height fields
    description: The size comes straight from two numeric fields.
    category: text-to-image
    product: p
    mode: fields
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        width: {type: integer, minimum: 64, maximum: 4096}
        height: {type: integer, minimum: 64, maximum: 4096}
        image_size: {type: string, enum: [square, wide], default: wide}
      examples: [{width: 512, height: 512}]
    output:
      width: 1024
      height: 768
      width_field: width
      height_field: height
      size_field: image_size
      sizes: {square: 512x512, wide: 1344x768}

  - id: o/named
    name: Named sizes
    description: The size comes from a named size, with odd sides to round.
    category: text-to-image
    product: p
    mode: named
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        image_size: {type: string, enum: [square, landscape_16_9, portrait_9_16, odd], default: square}
      examples: [{image_size: square}]
    output:
      width: 640
      height: 480
      size_field: image_size
      sizes: {square: 1024x1024, landscape_16_9: 1344x768, portrait_9_16: 768x1344, odd: 1001x750}

  - id: o/object
    name: Object size
    description: The size is a named size or an object {width, height}.
    category: text-to-image
    product: p
    mode: object
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        image_size:
          anyOf:
            - {type: string, enum: [square, landscape_4_3]}
            - type: object
              required: [width, height]
              additionalProperties: false
              properties:
                width: {type: integer, minimum: 1, maximum: 8192}
                height: {type: integer, minimum: 1, maximum: 8192}
          default: landscape_4_3
      examples: [{image_size: {width: 800, height: 600}}]
    output:
      size_field: image_size
      sizes: {square: 1024x1024, landscape_4_3: 1024x768}

  - id: o/video
    name: Aspect ratio and resolution
    description: A video shaped by an aspect ratio and a short side.
    category: text-to-video
    product: p
    mode: video
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        aspect_ratio: {type: string, enum: ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "9:21"], default: "16:9"}
        resolution: {type: string, enum: [480p, 720p, 1080p], default: 720p}
        duration: {type: string, enum: ["5", "10", 6s], default: "5"}
      examples: [{aspect_ratio: "16:9", resolution: 480p}]
    output:
      width: 1920
      height: 1080
      aspect_ratio_field: aspect_ratio
      resolution_field: resolution
      duration: 8
      duration_field: duration

  - id: o/ratio-only
    name: Aspect ratio alone
    description: An aspect ratio without a resolution keeps the default area.
    category: text-to-image
    product: p
    mode: ratio-only
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        aspect_ratio: {type: string, enum: ["1:1", "16:9", "9:16", "4:3"]}
      examples: [{aspect_ratio: "16:9"}]
    output:
      width: 1024
      height: 1024
      aspect_ratio_field: aspect_ratio

  - id: o/video-ratio-only
    name: Video aspect ratio alone
    description: A video with an aspect ratio but no resolution field.
    category: text-to-video
    product: p
    mode: video-ratio-only
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        aspect_ratio: {type: string, enum: ["16:9", "9:16", "1:1"], default: "16:9"}
        duration: {type: integer, minimum: 1, maximum: 20}
      examples: [{aspect_ratio: "9:16"}]
    output:
      width: 1280
      height: 720
      aspect_ratio_field: aspect_ratio
      duration_field: duration

  - id: o/count
    name: Count and format
    description: Several images in a chosen format.
    category: text-to-image
    product: p
    mode: count
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        num_images: {type: integer, minimum: 1, maximum: 4, default: 2}
        output_format: {type: string, enum: [png, jpeg], default: jpeg}
      examples: [{num_images: 1}]
    output:
      format: png
      format_field: output_format
      count_field: num_images
      width: 512
      height: 512

  - id: o/fixed
    name: Fixed
    description: Nothing in the input shapes the output.
    category: text-to-image
    product: p
    mode: fixed
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: x}]
    output: {count: 3, format: jpeg, width: 1000, height: 1003}

  - id: o/defaults
    name: Defaults
    description: No output section at all.
    category: text-to-video
    product: p
    mode: defaults
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: x}]

  - id: o/speech
    name: Speech
    description: Speech lasts as long as its text takes to read.
    category: text-to-speech
    product: p
    mode: speech
    output_type: audio
    status: ready
    input_schema:
      type: object
      properties:
        text: {type: string}
      examples: [{text: hello}]
    output: {duration: 7, duration_from_text: text}

  - id: o/music
    name: Music
    description: Audio whose length is a number of seconds.
    category: text-to-audio
    product: p
    mode: music
    output_type: audio
    status: ready
    input_schema:
      type: object
      properties:
        seconds: {type: number, minimum: 1, maximum: 190, default: 30}
      examples: [{seconds: 10}]
    output: {duration_field: seconds}
`

func TestPlanOutputs(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse("outputs.yaml", []byte(outputsCatalog))
	if err != nil {
		t.Fatalf("Parse(outputs.yaml):\n%v", err)
	}
	img := func(format string, w, h int) catalog.OutputSpec {
		return catalog.OutputSpec{Type: "image", Format: format, Width: w, Height: h}
	}
	vid := func(w, h int, d float64) catalog.OutputSpec {
		return catalog.OutputSpec{Type: "video", Format: "mp4", Width: w, Height: h, Duration: d}
	}
	aud := func(d float64) catalog.OutputSpec {
		return catalog.OutputSpec{Type: "audio", Format: "wav", Duration: d}
	}
	times := func(n int, s catalog.OutputSpec) []catalog.OutputSpec {
		out := make([]catalog.OutputSpec, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		model string
		input string
		want  []catalog.OutputSpec
	}{
		{"width and height fields", "o/fields", `{"width": 512, "height": 768}`, times(1, img("png", 512, 768))},
		{"width and height fields round to multiples of 8", "o/fields", `{"width": 1001, "height": 777}`, times(1, img("png", 1000, 776))},
		{"width and height fields win over the size field", "o/fields", `{"width": 640, "height": 480, "image_size": "square"}`, times(1, img("png", 640, 480))},
		{"one of width and height falls back to the size field", "o/fields", `{"width": 640}`, times(1, img("png", 1344, 768))},
		{"no width and height uses the size field's default", "o/fields", `{}`, times(1, img("png", 1344, 768))},

		{"named size", "o/named", `{"image_size": "landscape_16_9"}`, times(1, img("png", 1344, 768))},
		{"named portrait size", "o/named", `{"image_size": "portrait_9_16"}`, times(1, img("png", 768, 1344))},
		{"named size from the schema default", "o/named", `{}`, times(1, img("png", 1024, 1024))},
		{"named size rounds to multiples of 8", "o/named", `{"image_size": "odd"}`, times(1, img("png", 1000, 752))},

		{"object size", "o/object", `{"image_size": {"width": 800, "height": 600}}`, times(1, img("png", 800, 600))},
		{"object size rounds to multiples of 8", "o/object", `{"image_size": {"width": 1001, "height": 999}}`, times(1, img("png", 1000, 1000))},
		{"object size is at least 8", "o/object", `{"image_size": {"width": 1, "height": 3}}`, times(1, img("png", 8, 8))},
		{"named size beside object sizes", "o/object", `{"image_size": "square"}`, times(1, img("png", 1024, 1024))},
		{"named size default beside object sizes", "o/object", `{}`, times(1, img("png", 1024, 768))},

		{"16:9 480p", "o/video", `{"aspect_ratio": "16:9", "resolution": "480p"}`, times(1, vid(854, 480, 5))},
		{"16:9 720p", "o/video", `{"aspect_ratio": "16:9", "resolution": "720p"}`, times(1, vid(1280, 720, 5))},
		{"16:9 1080p", "o/video", `{"aspect_ratio": "16:9", "resolution": "1080p"}`, times(1, vid(1920, 1080, 5))},
		{"9:16 720p", "o/video", `{"aspect_ratio": "9:16", "resolution": "720p"}`, times(1, vid(720, 1280, 5))},
		{"9:16 480p", "o/video", `{"aspect_ratio": "9:16", "resolution": "480p"}`, times(1, vid(480, 854, 5))},
		{"21:9 1080p", "o/video", `{"aspect_ratio": "21:9", "resolution": "1080p"}`, times(1, vid(2520, 1080, 5))},
		{"21:9 480p", "o/video", `{"aspect_ratio": "21:9", "resolution": "480p"}`, times(1, vid(1120, 480, 5))},
		{"9:21 720p", "o/video", `{"aspect_ratio": "9:21", "resolution": "720p"}`, times(1, vid(720, 1680, 5))},
		{"4:3 720p", "o/video", `{"aspect_ratio": "4:3", "resolution": "720p"}`, times(1, vid(960, 720, 5))},
		{"3:4 1080p", "o/video", `{"aspect_ratio": "3:4", "resolution": "1080p"}`, times(1, vid(1080, 1440, 5))},
		{"1:1 1080p", "o/video", `{"aspect_ratio": "1:1", "resolution": "1080p"}`, times(1, vid(1080, 1080, 5))},
		{"aspect ratio and resolution from defaults", "o/video", `{}`, times(1, vid(1280, 720, 5))},
		{"duration from a numeric string", "o/video", `{"duration": "10"}`, times(1, vid(1280, 720, 10))},
		{"duration from a numeric string with a unit", "o/video", `{"duration": "6s"}`, times(1, vid(1280, 720, 6))},

		{"aspect ratio without resolution keeps the default area (16:9)", "o/ratio-only", `{"aspect_ratio": "16:9"}`, times(1, img("png", 1368, 768))},
		{"aspect ratio without resolution keeps the default area (9:16)", "o/ratio-only", `{"aspect_ratio": "9:16"}`, times(1, img("png", 768, 1368))},
		{"aspect ratio without resolution keeps the default area (4:3)", "o/ratio-only", `{"aspect_ratio": "4:3"}`, times(1, img("png", 1184, 888))},
		{"aspect ratio 1:1 without resolution is the default size", "o/ratio-only", `{"aspect_ratio": "1:1"}`, times(1, img("png", 1024, 1024))},
		{"no aspect ratio is the default size", "o/ratio-only", `{}`, times(1, img("png", 1024, 1024))},
		{"video aspect ratio without resolution keeps 1280×720's area", "o/video-ratio-only", `{"aspect_ratio": "9:16"}`, times(1, vid(720, 1280, 5))},
		{"video 1:1 without resolution keeps 1280×720's area", "o/video-ratio-only", `{"aspect_ratio": "1:1", "duration": 12}`, times(1, vid(960, 960, 12))},

		{"count from count_field", "o/count", `{"num_images": 3, "output_format": "png"}`, times(3, img("png", 512, 512))},
		{"count from count_field's default", "o/count", `{"output_format": "png"}`, times(2, img("png", 512, 512))},
		{"count spelled 4.0", "o/count", `{"num_images": 4.0}`, times(4, img("jpeg", 512, 512))},
		{"format from format_field", "o/count", `{"num_images": 1, "output_format": "jpeg"}`, times(1, img("jpeg", 512, 512))},
		{"format from format_field's default", "o/count", `{"num_images": 1}`, times(1, img("jpeg", 512, 512))},
		{"fixed count, format and rounded size", "o/fixed", `{"prompt": "x"}`, times(3, img("jpeg", 1000, 1000))},
		{"a model without an output section: one mp4 of 1280×720, 5 s", "o/defaults", `{}`, times(1, vid(1280, 720, 5))},

		{"duration from text length", "o/speech", `{"text": "` + strings.Repeat("a", 45) + `"}`, times(1, aud(3))},
		{"duration from text counts characters, not bytes", "o/speech", `{"text": "` + strings.Repeat("é", 45) + `"}`, times(1, aud(3))},
		{"duration from text of CJK characters", "o/speech", `{"text": "` + strings.Repeat("日本語", 10) + `"}`, times(1, aud(2))},
		{"duration from text in tenths", "o/speech", `{"text": "` + strings.Repeat("a", 50) + `"}`, times(1, aud(3.3))},
		{"duration from short text is at least 1 s", "o/speech", `{"text": "hi"}`, times(1, aud(1))},
		{"duration without text is the default", "o/speech", `{}`, times(1, aud(7))},
		{"audio duration from a number", "o/music", `{"seconds": 12.5}`, times(1, aud(12.5))},
		{"audio duration from the schema default", "o/music", `{}`, times(1, aud(30))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ok := c.Model(tc.model)
			if !ok {
				t.Fatalf("no model %q", tc.model)
			}
			input := catalogtest.Input(t, []byte(tc.input))
			if err := m.Validate(input); err != nil {
				t.Fatalf("the test input %s is not valid for %s: %v", tc.input, tc.model, err)
			}
			if got := m.PlanOutputs(input); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PlanOutputs(%s, %s) =\n  %+v\nwant\n  %+v", tc.model, tc.input, got, tc.want)
			}
		})
	}
}

// TestPlanOutputsKeepsArea: an aspect ratio without a resolution keeps the default area (within
// what rounding the sides to multiples of 8 changes) and gives the asked ratio.
func TestPlanOutputsKeepsArea(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse("outputs.yaml", []byte(outputsCatalog))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Model("o/ratio-only")
	for _, ratio := range []string{"1:1", "16:9", "9:16", "4:3"} {
		var rw, rh float64
		fmt.Sscanf(ratio, "%g:%g", &rw, &rh)
		out := m.PlanOutputs(map[string]any{"aspect_ratio": ratio})
		w, h := float64(out[0].Width), float64(out[0].Height)
		if area := w * h; area < 1024*1024*0.98 || area > 1024*1024*1.02 {
			t.Errorf("%s: %v×%v has area %v; want about 1024×1024", ratio, w, h, area)
		}
		if got := w / h; got < rw/rh*0.98 || got > rw/rh*1.02 {
			t.Errorf("%s: %v×%v has ratio %.3f; want %.3f", ratio, w, h, got, rw/rh)
		}
	}
}

// goldenOutput is one planned output as written to outputs.json.
type goldenOutput struct {
	Type     string  `json:"type"`
	Format   string  `json:"format"`
	Width    int     `json:"width,omitempty"`
	Height   int     `json:"height,omitempty"`
	Duration float64 `json:"duration_seconds,omitempty"`
}

// videoFixtureSizes lists the WIDTHxHEIGHT of the video fixtures outputs are assembled from.
func videoFixtureSizes(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("../../../fixtures/media/video")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".h264"); ok {
			sizes[name] = true
		}
	}
	return sizes
}

// TestGoldenOutputs plans the outputs of every example of every default-catalog model and
// compares them with testdata/golden/outputs.json (model id → per example, the outputs), so a
// change in how outputs are derived shows up in review. It also checks that every planned
// output is one the emulator can serve: image sides multiples of 8, video sizes among the video
// fixtures, durations within 0..600 s.
func TestGoldenOutputs(t *testing.T) {
	t.Parallel()
	c := parseDefaultCatalog(t)
	videoSizes := videoFixtureSizes(t)
	formats := map[string][]string{"image": {"png", "jpeg"}, "video": {"mp4"}, "audio": {"wav"}}
	got := map[string][][]goldenOutput{}
	for _, m := range c.Models {
		if len(m.Examples) == 0 {
			t.Errorf("%s has no examples", m.ID)
		}
		for i, ex := range m.Examples {
			specs := m.PlanOutputs(catalogtest.Input(t, ex))
			outs := make([]goldenOutput, len(specs))
			for j, s := range specs {
				outs[j] = goldenOutput(s)
			}
			got[m.ID] = append(got[m.ID], outs)

			where := fmt.Sprintf("%s example %d %s", m.ID, i, ex)
			if len(specs) < 1 || len(specs) > 16 {
				t.Errorf("%s: %d outputs; want 1..16", where, len(specs))
			}
			for _, s := range specs {
				if s.Type != m.OutputType {
					t.Errorf("%s: output type %q; want %q", where, s.Type, m.OutputType)
				}
				if !slicesContains(formats[m.OutputType], s.Format) {
					t.Errorf("%s: format %q; want one of %q", where, s.Format, formats[m.OutputType])
				}
				switch m.OutputType {
				case "image":
					if s.Width < 8 || s.Height < 8 || s.Width > 8192 || s.Height > 8192 || s.Width%8 != 0 || s.Height%8 != 0 {
						t.Errorf("%s: image %d×%d; want sides multiples of 8 within 8..8192", where, s.Width, s.Height)
					}
					if s.Duration != 0 {
						t.Errorf("%s: image with a duration %v", where, s.Duration)
					}
				case "video":
					if size := fmt.Sprintf("%dx%d", s.Width, s.Height); !videoSizes[size] {
						t.Errorf("%s: video %s has no fixture under fixtures/media/video", where, size)
					}
					if s.Duration <= 0 || s.Duration > 600 {
						t.Errorf("%s: video duration %v s; want within (0, 600]", where, s.Duration)
					}
				case "audio":
					if s.Width != 0 || s.Height != 0 {
						t.Errorf("%s: audio with a size %d×%d", where, s.Width, s.Height)
					}
					if s.Duration <= 0 || s.Duration > 600 {
						t.Errorf("%s: audio duration %v s; want within (0, 600]", where, s.Duration)
					}
				}
			}
		}
	}
	checkGolden(t, "outputs.json", got)
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
