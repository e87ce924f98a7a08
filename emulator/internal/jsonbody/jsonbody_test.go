package jsonbody_test

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonbody"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// TestDecodeAnswers: each way a body fails is coded and worded for the client, a control body
// refusing what a /v1 request takes.
func TestDecodeAnswers(t *testing.T) {
	t.Parallel()
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		body    string
		control bool
		code    problem.Code // "" when the body is read
		detail  string
	}{
		{`{"match":{"path":"/v1/**"},"status":503}`, true, "", ""},
		{`{"model":"m","input":{"x":` + arrays(jsonbody.MaxDepth-1) + `}}`, false, problem.InvalidJSON, "the body nests deeper than 64 levels"},
		{`{"model":"m","input":{"x":` + arrays(jsonbody.MaxDepth-2) + `}}`, false, "", ""}, // 64 levels in all
		{`{"scenario":{"x":` + arrays(jsonbody.MaxDepth-1) + `}}`, true, problem.InvalidJSON, "the body nests deeper than 64 levels"},
		{`{"status":503,"status":502}`, true, problem.InvalidRequest, `the body does not hold at "/status": given twice`},
		{`{"model":"a","model":"b","input":{}}`, false, "", ""},
		{"{\"model\":\"\xff\",\"input\":{}}", false, "", ""},
		{"{\"code\":\"\xff\"}", true, problem.InvalidJSON, "the body is not valid JSON: invalid UTF-8 (at byte 10)"},
		{`{"status":"503","match":{"path":"/v1/**"}`, true, problem.InvalidJSON, "the body is not valid JSON: it ends too early"},
		{`{"status":"503","match":{"path":"/v1/**"}}`, true, problem.InvalidRequest, `the body does not hold at "/status": want a whole number, got a JSON string`},
		{`{"match":{"x":[1,{"y":{}}],"path":"/v1/**"},"status":503}`, true, problem.InvalidRequest, `the body does not hold at "/match/x": unknown field "x"`},
		{`{"model":"m","input":[1,2]}`, false, problem.InvalidRequest, `the body does not hold at "/input": want an object, got a JSON array`},
		{`{"model":"m","input":{}} []`, false, problem.InvalidJSON, "the body holds more than one JSON value"},
		{`"model"`, false, problem.InvalidJSON, "the body must be a JSON object, not a string"},
		{"\n", false, problem.InvalidJSON, "the body is empty; send a JSON object"},
	} {
		var err error
		if tc.control && strings.HasPrefix(tc.body, `{"scenario"`) {
			err = jsonbody.Decode([]byte(tc.body), new(api.ScenarioChange), jsonbody.Control)
		} else if tc.control {
			err = jsonbody.Decode([]byte(tc.body), new(api.Perturbation), jsonbody.Control)
		} else {
			err = jsonbody.Decode([]byte(tc.body), new(api.GenerateRequest), jsonbody.Request)
		}
		if p := problem.As(err); (tc.code == "" && err != nil) || (tc.code != "" && (p == nil || p.Code != tc.code || p.Detail != tc.detail)) {
			t.Errorf("%.60q: %v; want %s %q", tc.body, err, tc.code, tc.detail)
		}
	}
}

// FuzzDecode: whatever a body holds, Decode answers with a coded problem or reads it, and a
// body that is not one JSON value is invalid_json however far into it the fault lies.
//
//	go test ./emulator/internal/jsonbody -run '^$' -fuzz FuzzDecode -fuzztime 1m
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","input":{"a":[1,{"b":null}]},"quote_id":"q"}`, `{"model":1,"input":{"a":tx}}`,
		`{"match":{"path":7,"x":[{"y":1}]},"status":503,}`, `{"x":{"y":[[[]]]},"z":1`, `[1]`, `{} {}`,
		`{"match":{"headers":{"a":"b","a":"c"}},"delay":"1s"}`, "{\"message\":\"\xff\"}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, opts := range []jsontext.Options{jsonbody.Control, jsonbody.Request} {
			targets := []any{new(api.GenerateRequest), new(api.Perturbation), new(api.ScenarioChange), new(map[string]any)}
			for _, v := range targets {
				err := jsonbody.Decode([]byte(body), v, opts)
				p := problem.As(err)
				if err != nil && (p == nil || p.Code != problem.InvalidJSON && p.Code != problem.InvalidRequest) {
					t.Fatalf("%q into %T: %v, not a coded problem", body, v, err)
				}
				one := jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
				if !one && (p == nil || p.Code != problem.InvalidJSON) {
					t.Fatalf("%q into %T: %v; it is not one JSON value", body, v, err)
				}
			}
		}
	})
}
