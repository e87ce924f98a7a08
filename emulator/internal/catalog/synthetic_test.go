package catalog

import (
	"os"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

func TestSyntheticCatalog(t *testing.T) {
	t.Parallel()
	c, err := Parse("synthetic.yaml", catalogtest.Synthetic(40))
	if err != nil {
		t.Fatalf("the synthetic catalog does not load:\n%v", err)
	}
	if len(c.Models) != 40 || len(c.Products) != 10 {
		t.Errorf("%d models, %d products; want 40, 10", len(c.Models), len(c.Products))
	}
	ready := 0
	for _, m := range c.Models {
		if m.Ready() {
			ready++
		}
	}
	if ready != 40 {
		t.Errorf("%d ready of 40", ready)
	}
	c, err = Parse("synthetic.yaml", catalogtest.Synthetic(100))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := c.Model("synth/watercolor/m-00049"); m == nil || m.Ready() {
		t.Errorf("every 50th model is deprecated; got %+v", m)
	}
}

func BenchmarkParse10000(b *testing.B) {
	data := catalogtest.Synthetic(10_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("synthetic.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSmall(b *testing.B) {
	data := readCatalogFile(b, "small.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("small.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseDefault parses the embedded default catalog, the emulator's one-time cost
// before it answers its first request.
func BenchmarkParseDefault(b *testing.B) {
	data, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("default.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
