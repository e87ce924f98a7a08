package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

// FuzzParse: any input either loads or yields Problems, each located in the file; it never
// panics or returns another kind of error. Seeds: every catalog under testdata/catalogs and
// the seed files under testdata/fuzz/FuzzParse, plus a few shapes written here.
//
//	go test ./emulator/internal/catalog -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{
		filepath.Join(catalogsDir, "*.yaml"),
		filepath.Join("../../../testdata/fuzz/FuzzParse", "*"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(modelYAML))
	f.Add([]byte(""))
	f.Add([]byte("---\n"))
	f.Add([]byte("models: [{id: m, input_schema: {type: object, properties: {a: {$ref: '#/$defs/x'}}}}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte(aliasBomb(3)))
	f.Add(catalogtest.Synthetic(3))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err == nil {
			if c == nil || len(c.Models) == 0 {
				t.Fatalf("Parse returned no catalog and no error")
			}
			if err := c.Compile(); err != nil {
				t.Fatalf("a loaded catalog's schema does not compile: %v", err)
			}
			for _, m := range c.Models {
				if len(m.Detail) == 0 || len(m.ListItem) == 0 {
					t.Fatalf("model %q loaded half-built", m.ID)
				}
			}
			return
		}
		if c != nil {
			t.Fatalf("Parse returned a catalog along with %v", err)
		}
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Fatalf("Parse error %T %q is not a non-empty Problems", err, err)
		}
		for _, p := range ps {
			if p.File != "fuzz.yaml" || p.Message == "" || strings.Contains(p.Message, "panic") {
				t.Fatalf("bad problem %#v", p)
			}
		}
	})
}
