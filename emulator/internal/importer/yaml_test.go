package importer_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// ambiguousModel has names, modes, enums, defaults and numbers that a YAML 1.1 reader would
// take for booleans, base-60 and octal numbers, dates, nulls and merge keys if left plain.
const ambiguousModel = `
  - id: acme/yes
    name: "on"
    description: "yes"
    category: text-to-image
    product: pix
    mode: "16:9"
    output_type: image
    status: ready
    input_schema:
      type: object
      required: [prompt]
      properties:
        prompt: {type: string, default: "0o17"}
        aspect_ratio: {type: string, enum: ["16:9", "4:3", "1:1"], default: "16:9"}
        "on": {type: string, enum: ["y", "N", "Yes", "no", "OFF", "True", "~", "null", "", "<<", "=",
          "0755", "0x1F", "0b101", "1_000", "+12", ".5", "1e3", "6.02E+23", ".inf", "-.Inf", ".NaN",
          "2024-01-02", "2001-12-14t21:59:43.10-05:00", "190:20:30", "-1:30"]}
        "no": {type: number, maximum: 1e300, minimum: -2.5E-3}
      examples:
        - {prompt: "a fox"}
    pricing: {base: 2}
`

// TestImportedFileReadsTheSameInYAML11 loads an imported catalog with PyYAML (a YAML 1.1
// reader) and with the Go reader, and wants the same document from both.
func TestImportedFileReadsTheSameInYAML11(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-c", "import yaml").Run(); err != nil {
		t.Skip("python3 with PyYAML is not installed (Debian: python3-yaml)")
	}
	data, err := os.ReadFile("testdata/source.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "\n# The live service's own key"
	src := strings.Replace(string(data), marker, ambiguousModel+marker, 1)
	srcPath := filepath.Join(t.TempDir(), "source.yaml")
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := startService(t, srcPath)
	o := importer.Options{From: svc.URL, Key: liveKey, Grouped: true, Models: []string{"acme/yes", "acme/pix/v1"}, Sleep: (&sleeps{}).sleep}
	res, err := importer.Import(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "imported.yaml")
	if err := os.WriteFile(path, res.YAML, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-c",
		"import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding='utf-8'))))", path).CombinedOutput()
	if err != nil {
		t.Fatalf("PyYAML cannot load the imported file: %v\n%s", err, out)
	}
	var py any
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("PyYAML's reading: %v", err)
	}
	var goDoc any
	if err := yaml.Unmarshal(res.YAML, &goDoc); err != nil {
		t.Fatal(err)
	}
	goJSON, err := json.Marshal(goDoc)
	if err != nil {
		t.Fatal(err)
	}
	var gv any
	if err := json.Unmarshal(goJSON, &gv); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(py, gv) {
		t.Errorf("PyYAML and Go read the imported file differently:\nPyYAML %s\n    Go %s", out, goJSON)
	}
	if !strings.Contains(string(res.YAML), `"16:9"`) {
		t.Errorf("16:9 is not quoted in:\n%s", res.YAML)
	}
}
