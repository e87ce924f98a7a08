package importer

import (
	"testing"
)

// FuzzExtractSchema feeds arbitrary model documents to what reads them: whatever the live
// service sends, reading it neither panics nor yields a schema that cannot be written back.
func FuzzExtractSchema(f *testing.F) {
	f.Add([]byte(componentsDoc))
	f.Add([]byte(`{"paths":{"/x":{"post":{"requestBody":{"$ref":"#/components/requestBodies/B"}}}},"components":{"requestBodies":{"B":{"content":{"application/json":{"schema":{"$ref":"#"}}}}}}}`))
	f.Add([]byte(`{"paths":{"/x":{"post":{"requestBody":{"content":{"application/json":{"schema":{"properties":{"a":{"$ref":"#/paths"}}}}}}}}}}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseJSON(data)
		if err != nil {
			return
		}
		s, err := extractSchema(doc)
		if err != nil {
			return
		}
		again, err := parseJSON(s.root.marshal())
		if err != nil {
			t.Fatalf("the extracted schema is not JSON: %v", err)
		}
		if y := again.toYAML(); y == nil {
			t.Fatal("no YAML")
		}
		properties(s.root)
		synthesizeExample(s.root)
		inferOutput("image", properties(s.root))
	})
}
