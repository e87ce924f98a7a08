package schema_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// BenchmarkValidate validates fal-ai/flux/dev's first example, as a quote does.
func BenchmarkValidate(b *testing.B) {
	data, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	c, err := catalog.Parse("default.yaml", data)
	if err != nil {
		b.Fatalf("Parse(default.yaml):\n%v", err)
	}
	m, ok := c.Model("fal-ai/flux/dev")
	if !ok {
		b.Fatal("no model fal-ai/flux/dev")
	}
	dec := json.NewDecoder(strings.NewReader(string(m.Examples[0])))
	dec.UseNumber()
	var input any
	if err := dec.Decode(&input); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Validate(input); err != nil {
			b.Fatal(err)
		}
	}
}
