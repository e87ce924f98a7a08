// Package catalogtest makes catalogs and model inputs for the emulator's tests and benchmarks.
package catalogtest

import (
	"bytes"
	"fmt"
)

// Synthetic writes a valid catalog of n models (images, videos and speech in turn,
// four modes to a product) with schemas like the real ones: enums, bounds, defaults, a $defs
// reference, examples, and pricing, timing and output rules that read those fields. It is a
// generator, not a committed file, so benchmarks can ask for any size.
func Synthetic(n int) []byte {
	styles := []string{"photoreal", "watercolor", "anime", "isometric", "noir", "pastel", "vintage", "neon"}
	var b bytes.Buffer
	b.Grow(n * 1600)
	b.WriteString("products:\n")
	for p := 0; p*4 < n; p++ {
		fmt.Fprintf(&b, "  - {id: family-%05d, name: Family %05d, description: Synthetic product family %d.}\n", p, p, p)
	}
	b.WriteString("models:\n")
	for i := range n {
		style := styles[i%len(styles)]
		status := "ready"
		if i%50 == 49 {
			status = "deprecated"
		}
		fmt.Fprintf(&b, "  - id: synth/%s/m-%05d\n", style, i)
		fmt.Fprintf(&b, "    name: Synth %s %05d\n", style, i)
		fmt.Fprintf(&b, "    description: A synthetic %s model, number %d, for benchmarks.\n", style, i)
		fmt.Fprintf(&b, "    product: family-%05d\n    mode: mode-%d\n    status: %s\n", i/4, i%4, status)
		switch i % 3 {
		case 0:
			b.WriteString(`    category: text-to-image
    output_type: image
    input_schema:
      type: object
      additionalProperties: false
      required: [prompt]
      properties:
        prompt: {type: string, minLength: 1, maxLength: 4000, description: What to draw.}
        negative_prompt: {type: string, maxLength: 2000, default: ""}
        num_images: {type: integer, minimum: 1, maximum: 4, default: 1}
        image_size: {$ref: "#/$defs/size"}
        guidance_scale: {type: number, minimum: 0, maximum: 20, default: 3.5}
        steps: {type: integer, minimum: 1, maximum: 50, default: 28}
        output_format: {type: string, enum: [png, jpeg], default: png}
        seed: {type: integer, minimum: 0, maximum: 2147483647}
      $defs:
        size: {type: string, enum: [square, landscape_16_9, portrait_9_16], default: square}
      examples:
        - {prompt: "a red fox in snow", num_images: 2, image_size: landscape_16_9}
        - {prompt: "a lighthouse at dusk", steps: 30, guidance_scale: 4}
    pricing:
      base: 1
      tables: [{field: image_size, values: {square: 2, landscape_16_9: 3, portrait_9_16: 3}}]
      multiply_by: [num_images]
    timing: {queue: 100ms, run: 2s}
    output:
      format_field: output_format
      count_field: num_images
      size_field: image_size
      sizes: {square: 1024x1024, landscape_16_9: 1344x768, portrait_9_16: 768x1344}
`)
		case 1:
			b.WriteString(`    category: text-to-video
    output_type: video
    input_schema:
      type: object
      additionalProperties: false
      required: [prompt]
      properties:
        prompt: {type: string, minLength: 1, maxLength: 2500}
        duration: {type: string, enum: ["5", "10"], default: "5"}
        aspect_ratio: {type: string, enum: ["16:9", "9:16", "1:1"], default: "16:9"}
        resolution: {type: string, enum: [480p, 720p, 1080p], default: 720p}
        camera_fixed: {type: boolean, default: false}
      examples:
        - {prompt: "waves at dusk", duration: "10", resolution: 1080p}
    pricing:
      per_unit: [{field: duration, credits: 10}]
      multipliers: [{field: resolution, values: {480p: 0.5, 720p: 1, 1080p: 2.25}}]
      minimum: 5
    timing: {queue: 1s, run: 20s, run_per_unit: {field: duration, each: 2s}, queue_timeout: 5m}
    output: {duration_field: duration, aspect_ratio_field: aspect_ratio, resolution_field: resolution}
`)
		default:
			b.WriteString(`    category: text-to-speech
    output_type: audio
    input_schema:
      type: object
      additionalProperties: false
      required: [text]
      properties:
        text: {type: string, minLength: 1, maxLength: 5000}
        voice: {type: string, enum: [alloy, echo, fable, onyx, nova, shimmer], default: alloy}
        speed: {type: number, minimum: 0.25, maximum: 4, default: 1}
      examples:
        - {text: "Hello from the emulator.", voice: nova}
    pricing:
      per_unit: [{field: text, measure: length, credits: 0.01}]
    output: {duration_from_text: text}
`)
		}
	}
	b.WriteString(`accounts:
  - {id: acct_bench, credits: 1000000}
keys:
  - {key: key_bench, account: acct_bench, permissions: [models:read, generate]}
`)
	return b.Bytes()
}
