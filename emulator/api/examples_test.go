package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// schemaTypes names the api type each schema of docs/openapi.json decodes into. A schema with
// examples must be here, and each type here must have examples in the document.
var schemaTypes = map[string]reflect.Type{
	"Quote":               reflect.TypeFor[api.Quote](),
	"Job":                 reflect.TypeFor[api.Job](),
	"JobPage":             reflect.TypeFor[api.Page[api.Job]](),
	"ModelPage":           reflect.TypeFor[api.Page[api.ModelSummary]](),
	"ProductPage":         reflect.TypeFor[api.Page[api.Product]](),
	"JournalPage":         reflect.TypeFor[api.Page[api.JournalEntry]](),
	"UnexpectedErrorList": reflect.TypeFor[api.UnexpectedErrors](),
	"Category":            reflect.TypeFor[api.Category](),
	"CategoryList":        reflect.TypeFor[api.List[api.Category]](),
	"Perturbation":        reflect.TypeFor[api.Perturbation](),
	"Upload":              reflect.TypeFor[api.Upload](),
	"ControlUpload":       reflect.TypeFor[api.ControlUpload](),
	"ControlUploadPage":   reflect.TypeFor[api.Page[api.ControlUpload]](),
	"MediaInput":          reflect.TypeFor[api.MediaInput](),
	"Fault":               reflect.TypeFor[api.Fault](),
	"Plan":                reflect.TypeFor[api.Plan](),
	"PlanInForce":         reflect.TypeFor[api.PlanInForce](),
	"Knobs":               reflect.TypeFor[api.Knobs](),
	"FaultList":           reflect.TypeFor[api.List[api.Fault]](),
	"Balance":             reflect.TypeFor[api.Balance](),
	"BalanceList":         reflect.TypeFor[api.List[api.Balance]](),
	"Tenant":              reflect.TypeFor[api.Tenant](),
	"TenantList":          reflect.TypeFor[api.List[api.Tenant]](),
	"Clock":               reflect.TypeFor[api.Clock](),
	"Health":              reflect.TypeFor[api.Health](),
	"Problem":             reflect.TypeFor[api.Problem](),
	"Waiting":             reflect.TypeFor[api.Waiting](),
	"CreditsChange":       reflect.TypeFor[api.CreditsChange](),
	"ProblemCode":         reflect.TypeFor[string](),
	"Scenario":            reflect.TypeFor[api.Scenario](),
	"StreamEvent":         reflect.TypeFor[api.StreamEvent](),
	"ControlJob":          reflect.TypeFor[api.ControlJob](),
	"ControlJobPage":      reflect.TypeFor[api.Page[api.ControlJob]](),
	"JobPlan":             reflect.TypeFor[api.JobPlan](),
	"QuoteRequest":        reflect.TypeFor[api.QuoteRequest](),
	"GenerateRequest":     reflect.TypeFor[api.GenerateRequest](),
	"ModelSummary":        reflect.TypeFor[api.ModelSummary](),
	"ModelDetail":         reflect.TypeFor[api.ModelDetail](),
	"RequestMatch":        reflect.TypeFor[api.FaultMatch](),
	"Verification":        reflect.TypeFor[api.Verification](),
	"ExpectedErrorList":   reflect.TypeFor[api.ExpectedErrors](),
	"Report":              reflect.TypeFor[api.Report](),
	"Coverage":            reflect.TypeFor[api.Coverage](),
	"HomeIndex":           reflect.TypeFor[api.HomeIndex](),
	"Webhooks":            reflect.TypeFor[api.Webhooks](),
	"ResetResult":         reflect.TypeFor[api.ResetResult](),
	"ClockChange":         reflect.TypeFor[api.ClockChange](),
	"ScenarioChange":      reflect.TypeFor[api.ScenarioChange](),
	"JobFailure":          reflect.TypeFor[api.JobFailure](),
	"Verdict":             reflect.TypeFor[api.Verdict](),
	"VerdictFailure":      reflect.TypeFor[api.VerdictFailure](),
	"Bundle":              reflect.TypeFor[api.Bundle](),
	"DrawRequest":         reflect.TypeFor[api.DrawRequest](),
	"Drawn":               reflect.TypeFor[api.Drawn](),
	"ShrinkRequest":       reflect.TypeFor[api.ShrinkRequest](),
	"Shrunk":              reflect.TypeFor[api.Shrunk](),
}

// TestOpenAPIExamplesAreTheAPITypes: every example of a schema in docs/openapi.json is valid
// against its schema, decodes into its api type with no member unknown to it, and encodes back
// to the same JSON value, so the document and the Go wire types cannot drift apart.
func TestOpenAPIExamplesAreTheAPITypes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Examples []json.RawMessage `json:"examples"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := schema.NewCompiler()
	const base = "https://mediagen-emulator.invalid/openapi.json"
	if err := c.AddResource(base, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Components.Schemas {
		typ, ok := schemaTypes[name]
		switch {
		case !ok && len(s.Examples) > 0:
			t.Errorf("schema %s has examples but no api type in schemaTypes", name)
			continue
		case !ok:
			continue
		case len(s.Examples) == 0:
			t.Errorf("schema %s has no examples to check %v against", name, typ)
			continue
		}
		sch, err := c.Compile(base + "#/components/schemas/" + name)
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		for i, ex := range s.Examples {
			var generic any
			dec := json.NewDecoder(bytes.NewReader(ex))
			dec.UseNumber()
			if err := dec.Decode(&generic); err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(generic); err != nil {
				t.Errorf("%s example %d does not hold to its schema: %v", name, i, err)
			}
			v := reflect.New(typ)
			dec = json.NewDecoder(bytes.NewReader(ex))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v.Interface()); err != nil {
				t.Errorf("%s example %d does not decode into %v: %v", name, i, typ, err)
				continue
			}
			back, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			var again any
			dec = json.NewDecoder(bytes.NewReader(back))
			dec.UseNumber()
			if err := dec.Decode(&again); err != nil {
				t.Fatal(err)
			}
			if !jsonvalue.Equal(generic, again) {
				t.Errorf("%s example %d comes back from %v as\n%s\nnot\n%s", name, i, typ, back, strings.TrimSpace(string(ex)))
			}
		}
	}
	for name := range schemaTypes {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("schemaTypes names %s, which docs/openapi.json does not have", name)
		}
	}
}
