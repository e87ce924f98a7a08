package importer

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestShapeBounded: a body of many members or deep nesting is walked only so far.
func TestShapeBounded(t *testing.T) {
	t.Parallel()
	shapeOf := func(body string) Shape {
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		s := Shape{}
		s.Add(doc)
		return s
	}
	wide := []byte(`{`)
	for i := range 5000 {
		if i > 0 {
			wide = append(wide, ',')
		}
		wide = append(wide, `"m`...)
		wide = append(wide, []byte(time.Duration(i).String())...)
		wide = append(wide, `":1`...)
	}
	wide = append(wide, '}')
	if n := len(shapeOf(string(wide))); n != MaxShapePaths {
		t.Errorf("%d member paths kept, want the bound %d", n, MaxShapePaths)
	}
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	if n := len(shapeOf(deep)); n != MaxShapeDepth {
		t.Errorf("%d member paths kept, want one per level down to %d", n, MaxShapeDepth)
	}
}
