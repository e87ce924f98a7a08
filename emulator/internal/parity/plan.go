// Package parity compares the error answers of a live Media Generation Service with the
// emulator's, without spending: for each error case of the coverage list that a request can
// provoke before any credit is held, it sends the same request to both and compares the answers'
// shapes (status, problem code, member names and JSON types, errors[] pointers and parameters,
// and the headers clients read), never their values.
//
// What makes a request free is decided here, once: no request names a quote that was issued, so
// no request can start a generation whatever order the live service checks things in. Every
// POST /v1/generate carries a freshly made quote id no service has seen; every case that needs a
// real quote on POST /v1/generate (a mismatch, an expired or used quote, too few credits) is not
// provokable, nor is any case that needs an earlier generation, another account's key, an
// outage, or going past the service's rate limit.
package parity

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
)

// BodyLimit is the request body size the contract refuses past (1 MiB); the too-large case
// sends one byte more.
const BodyLimit = 1 << 20

// Request is one request a case sends, the same to both services but for the key.
type Request struct {
	Method string `json:"method"`
	// Path is the request's path under the service's base URL, escaped as sent.
	Path  string `json:"path"`
	Query string `json:"query,omitempty"`
	// Header holds the request's headers besides Authorization.
	Header map[string]string `json:"header,omitempty"`
	// Auth is whether the request carries the key (as Authorization: Bearer).
	Auth bool   `json:"auth"`
	Body string `json:"body,omitempty"`
	// Padding is how many spaces follow Body, so a body over the size limit is still JSON and
	// a recording of it stays small.
	Padding int `json:"padding,omitempty"`
	// Permission is what the key must hold for the request to get past the permission check:
	// the emulator picks its catalog's key by it.
	Permission catalog.Permission `json:"permission,omitempty"`
	// Lacking says the request is sent with a key that lacks Permission (the run's
	// --read-only-key or --generate-only-key), not with the key that holds both.
	Lacking bool `json:"lacking,omitempty"`
}

// EmulatorKey is the key of the catalog the emulator is called with for this request: the
// first that holds the permission it needs, or, for a request meant to lack it, the first
// that does not.
func (r *Request) EmulatorKey(cat *catalog.Catalog) string {
	for i := range cat.Keys {
		if cat.Keys[i].Can(r.Permission) != r.Lacking {
			return cat.Keys[i].Key
		}
	}
	return ""
}

// body is the request's body as sent.
func (r *Request) body() []byte {
	if r.Body == "" && r.Padding == 0 {
		return nil
	}
	return append([]byte(r.Body), strings.Repeat(" ", r.Padding)...)
}

// Target is the request's path and query, as the summary shows it.
func (r *Request) Target() string {
	if r.Query == "" {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query
}

// Planned is one error case of the coverage list and how it is provoked: a request, or the
// reason none is sent.
type Planned struct {
	Case    string
	Route   string // "POST /v1/generate"
	Status  int
	Code    string
	Request *Request // nil when not provokable
	Reason  string   // why not provokable
}

// Models are the catalog's models the requests name: Ready is ready both in the catalog and
// live, Unready ready in neither, each with an example input of the catalog's. NoReady and
// NoUnready say why there is none, when there is none. Invalid says the Ready model's input
// requires a member, so that an empty input is invalid.
type Models struct {
	Ready, Unready               string
	ReadyExample, UnreadyExample json.RawMessage
	NoReady, NoUnready           string
	Invalid                      bool
}

// Reasons a case is not provokable, by problem code.
var unprovokable = map[string]string{
	"rate_limited":           "needs going past the live service's rate limit, which a polite run never does",
	"concurrency_limited":    "needs as many running jobs as the account's concurrency limit, which would spend",
	"service_unavailable":    "only an outage answers it",
	"idempotency_key_reused": "needs an earlier generation that was accepted, which would spend",
	"quote_mismatch":         "needs a quote actually issued, sent to POST /v1/generate: a service that checked in another order would hold credits",
	"quote_expired":          "needs a quote actually issued, sent to POST /v1/generate after its expiry: a service that checked in another order would hold credits",
	"quote_already_used":     "needs a quote that already bought a generation, which would spend",
	"insufficient_credits":   "needs a quote actually issued and an account short of credits, sent to POST /v1/generate",
	"job_not_cancelable":     "needs a finished job of the account; the run makes none and touches no job it did not make",
}

// Lacking says which keys lacking a permission a run has: ReadOnly may read models but not
// generate (--read-only-key), GenerateOnly may generate but not read models
// (--generate-only-key).
type Lacking struct {
	ReadOnly, GenerateOnly bool
}

// Plan decides, for every error case of the coverage list, the request that provokes it without
// spending, or why there is none. fresh makes the ids no service has issued (a quote, a job, a
// model); each call must return a new one.
func Plan(models Models, lacking Lacking, fresh func() string) []Planned {
	var out []Planned
	for _, c := range evidence.Cases() {
		if c.Group != evidence.GroupErrors {
			continue
		}
		p, ok := parseCase(c.ID)
		if !ok {
			out = append(out, Planned{Case: c.ID, Reason: "parity cannot read this case's route, status and code"})
			continue
		}
		p.Request, p.Reason = plan(p, models, lacking, fresh)
		out = append(out, p)
	}
	return out
}

// parseCase reads an error case id, "METHOD PATH STATUS CODE".
func parseCase(id string) (Planned, bool) {
	f := strings.Fields(id)
	if len(f) != 4 {
		return Planned{}, false
	}
	status, err := strconv.Atoi(f[2])
	if err != nil {
		return Planned{}, false
	}
	return Planned{Case: id, Route: f[0] + " " + f[1], Status: status, Code: f[3]}, true
}

// plan builds one case's request.
func plan(p Planned, m Models, lacking Lacking, fresh func() string) (*Request, string) {
	if why, ok := unprovokable[p.Code]; ok {
		return nil, why
	}
	method, template, _ := strings.Cut(p.Route, " ")
	r := &Request{Method: method, Auth: true, Permission: catalog.PermGenerate}
	if strings.HasPrefix(template, "/v1/models") {
		r.Permission = catalog.PermModelsRead
	}
	// The model the body or path names, and the input; Ready unless the case says otherwise.
	model, input := m.Ready, string(m.ReadyExample)
	switch p.Code {
	case "unauthenticated":
		r.Auth = false
		if model == "" {
			model, input = "parity-model-"+fresh(), "{}"
		}
	case "permission_denied":
		// The route's plain request, which is free whatever the key may do: a listing, a
		// quote, a generation naming a made-up quote, a made-up job.
		r.Lacking = true
		switch {
		case r.Permission == catalog.PermGenerate && !lacking.ReadOnly:
			return nil, "needs a key without the generate permission: give --read-only-key"
		case r.Permission == catalog.PermModelsRead && !lacking.GenerateOnly:
			return nil, "needs a key without the models:read permission: give --generate-only-key"
		}
	case "invalid_parameter":
		switch template {
		case "/v1/models", "/v1/jobs":
			r.Query = "limit=0"
		case "/v1/generate":
			r.Query = "wait=maybe"
		default:
			return nil, "parity knows no query parameter this route refuses"
		}
	case "model_not_found":
		model, input = "parity-missing-"+fresh(), "{}"
	case "model_unavailable":
		if template != "/v1/quotes" {
			return nil, "needs a quote made while the model was ready, sent to POST /v1/generate: a service that checked in another order would hold credits"
		}
		if m.Unready == "" {
			return nil, m.NoUnready
		}
		model, input = m.Unready, string(m.UnreadyExample)
	case "invalid_input":
		if !m.Invalid {
			return nil, "no model ready in the catalog and live requires an input member, so no input is sure to be invalid"
		}
		input = "{}"
	case "unsupported_media_type", "payload_too_large", "invalid_json", "invalid_request",
		"missing_idempotency_key", "quote_not_found", "job_not_found":
	default:
		return nil, "parity knows no request that provokes this code for free"
	}
	if model == "" && (template == "/v1/models/{model}" || template == "/v1/quotes" || template == "/v1/generate") {
		return nil, m.NoReady
	}
	switch template {
	case "/v1/models", "/v1/models/categories", "/v1/jobs":
		r.Path = template
	case "/v1/models/{model}":
		r.Path = importer.ModelPath(model)
	case "/v1/jobs/{id}":
		r.Path = "/v1/jobs/" + url.PathEscape(fresh())
	case "/v1/jobs/{id}/cancel":
		r.Path = "/v1/jobs/" + url.PathEscape(fresh()) + "/cancel"
	case "/v1/quotes", "/v1/generate":
		r.Path = template
		r.Header = map[string]string{"Content-Type": "application/json"}
		env := []any{"model", model, "input", json.RawMessage(input)}
		if template == "/v1/generate" {
			// A quote id no service issued: whatever else the request gets past, it cannot start
			// a generation.
			env = append(env, "quote_id", fresh())
			if p.Code != "missing_idempotency_key" {
				r.Header["Idempotency-Key"] = "parity-" + fresh()
			}
		}
		switch p.Code {
		case "unsupported_media_type":
			r.Header["Content-Type"] = "text/plain"
			r.Body = "model=" + model
		case "invalid_json":
			r.Body = "this is not JSON"
		case "invalid_request":
			env[1] = 42 // the model's id as a number
			r.Body = object(env...)
		case "payload_too_large":
			r.Body = object(env...)
			r.Padding = BodyLimit + 1 - len(r.Body)
		default:
			r.Body = object(env...)
		}
	default:
		return nil, "parity knows no request for this route"
	}
	if method == http.MethodPost && r.Body == "" && template != "/v1/jobs/{id}/cancel" {
		return nil, "parity knows no body for this route"
	}
	return r, ""
}

// object writes the keys and values as one JSON object, in order.
func object(kv ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// Fresh makes random ids, as UUIDs, that no service has issued.
func Fresh() string { return uuid.NewString() }
