package catalog

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

// runs is how many pieces the models section is loaded in.
func (p *splitPlan) runs() int { return (len(p.starts) + splitRun - 1) / splitRun }

// parseSplit parses a cut file into the tree parsing it whole gives, lines and columns included.
func parseSplit(data []byte) (doc *yaml.Node, ok bool) {
	plan, ok := planSplit(data)
	if !ok {
		return nil, false
	}
	whole := plan.parseRest()
	if whole == nil {
		return nil, false
	}
	models := sectionNode(whole.Content[0], "models")
	if models == nil {
		return nil, false
	}
	models.Content = models.Content[:0]
	for k := range plan.runs() {
		items, ok := plan.parseRun(k)
		if !ok {
			return nil, false
		}
		models.Content = append(models.Content, items...)
	}
	models.Style = 0
	models.Line = models.Content[0].Line
	models.Column = plan.indent + 1
	return whole, true
}

// sectionNode returns the value of a top-level field, or nil.
func sectionNode(root *yaml.Node, name string) *yaml.Node {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == name {
			return root.Content[i+1]
		}
	}
	return nil
}

// sameTree compares two node trees by everything the loader reads: kind, tag, value, line and
// column (comments may attach differently at the cuts and are not read).
func sameTree(t *testing.T, a, b *yaml.Node, path string) {
	t.Helper()
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Line != b.Line || a.Column != b.Column || len(a.Content) != len(b.Content) {
		t.Fatalf("%s: split %v %s %q %d:%d (%d children), whole %v %s %q %d:%d (%d children)", path,
			a.Kind, a.Tag, a.Value, a.Line, a.Column, len(a.Content), b.Kind, b.Tag, b.Value, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		sameTree(t, a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i))
	}
}

func TestSplitParseGivesTheWholeParse(t *testing.T) {
	saved := splitMinBytes
	splitMinBytes = 0
	defer func() { splitMinBytes = saved }()
	defaultCatalog, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	small, _ := os.ReadFile("../../../testdata/catalogs/small.yaml")
	for name, data := range map[string][]byte{
		"default":   defaultCatalog,
		"synthetic": catalogtest.Synthetic(300),
		"small":     small,
	} {
		split, ok := parseSplit(data)
		if !ok {
			t.Errorf("%s: not split", name)
			continue
		}
		var whole yaml.Node
		if err := yaml.Unmarshal(data, &whole); err != nil {
			t.Fatal(err)
		}
		sameTree(t, split, &whole, name)
	}
}

func TestSplitParseDeclinesWhatItCannotCut(t *testing.T) {
	saved := splitMinBytes
	splitMinBytes = 0
	defer func() { splitMinBytes = saved }()
	base := string(catalogtest.Synthetic(40))
	for name, data := range map[string]string{
		"anchor":          strings.Replace(base, "models:\n", "models:\n  - &m {id: x}\n", 1),
		"second document": base + "---\na: 1\n",
		"flow models":     strings.Replace(base, "models:\n", "models: []\nother:\n", 1),
		"tab":             strings.Replace(base, "    name:", "\tname:", 1),
		"broken item":     strings.Replace(base, "    name: Synth", "    name: [Synth", 1),
		"no models":       strings.Replace(base, "models:", "modelz:", 1),
	} {
		if _, ok := parseSplit([]byte(data)); ok {
			t.Errorf("%s: split", name)
		}
	}
}
