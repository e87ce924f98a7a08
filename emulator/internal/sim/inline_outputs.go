package sim

import (
	"encoding/base64"
	"encoding/json"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// MaxInlineOutput is the largest file a job carries inline, as a data: URI in its url; a
// larger one keeps its URL, as services that answer inline fall back to storage.
const MaxInlineOutput = 1 << 20

// inlineDelivery reports whether a model delivers a job's files inline: its catalog output says
// delivery: inline, or its delivery_field is true in the job's input.
func inlineDelivery(m *catalog.Model, input json.RawMessage) bool {
	o := &m.Output
	if o.Delivery == "inline" {
		return true
	}
	if o.DeliveryField == "" {
		return false
	}
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	v, ok := m.InputValue(in, o.DeliveryField)
	on, _ := v.(bool)
	return ok && on
}

// inlineOutputs puts a succeeded job's files of at most MaxInlineOutput bytes into their url
// as data: URIs, when the job's model delivers inline: the bytes are those the file URL would
// serve, made through the same cache.
func (w *World) inlineOutputs(v jobs.View, outputs []api.Output) {
	if v.Status != jobs.Succeeded || len(outputs) == 0 {
		return
	}
	m, ok := w.cfg.Catalog.Model(v.Model)
	if !ok || !inlineDelivery(m, v.Input) {
		return
	}
	for i, o := range v.Outputs {
		if o.SizeBytes > MaxInlineOutput || i >= len(outputs) {
			continue
		}
		data, err := w.files.Do(w.cacheKey+o.Path, func() ([]byte, error) { return w.render(o) })
		if err != nil {
			continue // the URL still serves it, or says why not
		}
		outputs[i].URL = "data:" + o.ContentType + ";base64," + base64.StdEncoding.EncodeToString(data)
		outputs[i].URLExpiresAt = ""
	}
}
