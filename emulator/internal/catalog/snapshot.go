package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// A snapshot is a catalog as loading leaves it, written at build time (go generate) so that the
// embedded catalog starts without parsing YAML, converting schemas or encoding bodies. It names
// the SHA-256 of the YAML it came from: a snapshot is only ever used with that exact text, so the
// full check of the YAML, done when the snapshot is made, still stands.
//
// Its layout: one line of JSON describing the catalog, then the bodies (schemas, examples,
// served bodies) back to back, which the JSON names by offset and length. Loading decodes only
// the small description and slices the bodies out, rather than scanning them as JSON again.

// snapshotVersion changes whenever the snapshot's shape or the loader's output does, so that an
// old snapshot is refused rather than misread.
const snapshotVersion = 2

// ErrStaleSnapshot is LoadSnapshot's answer when the snapshot was not made from the given
// catalog text, or by this version of the loader: parse the text instead.
var ErrStaleSnapshot = errors.New("the catalog snapshot is stale; run go generate ./fixtures")

type snapshotFile struct {
	Version  int               `json:"version"`
	Source   string            `json:"source_sha256"`
	Products []snapshotProduct `json:"products"`
	Schemas  []snapshotSchema  `json:"schemas"`
	Models   []snapshotModel   `json:"models"`
	Accounts []Account         `json:"accounts"`
	Keys     []Key             `json:"keys"`
}

type snapshotProduct struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// snapshotSchema is one input schema, written once however many models share it.
type snapshotSchema struct {
	Raw        blobRef             `json:"schema"`
	Properties map[string]Property `json:"properties"`
	Examples   []blobRef           `json:"examples"`
}

// blobRef is where one body lies among a snapshot's bodies: offset and length.
type blobRef [2]int

type snapshotModel struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Category    string       `json:"category"`
	Product     string       `json:"product"`
	Mode        string       `json:"mode"`
	OutputType  string       `json:"output_type"`
	Status      string       `json:"status"`
	Schema      int          `json:"schema"`
	Pricing     Pricing      `json:"pricing"`
	Timing      Timing       `json:"timing"`
	Output      Output       `json:"output"`
	Inputs      *ModelInputs `json:"inputs,omitempty"`
	ListItem    blobRef      `json:"list_item"`
	Detail      blobRef      `json:"detail"`
}

// BuildSnapshot loads catalog text fully checked and returns its snapshot; the error is the
// text's Problems, if any. `go generate ./fixtures` writes the embedded catalog's snapshot with it.
func BuildSnapshot(name string, source []byte) ([]byte, error) {
	c, err := Parse(name, source)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(source)
	f := snapshotFile{Version: snapshotVersion, Source: hex.EncodeToString(sum[:]), Accounts: c.Accounts, Keys: c.Keys}
	for _, p := range c.Products {
		f.Products = append(f.Products, snapshotProduct{p.ID, p.Name, p.Description})
	}
	var blob bytes.Buffer
	put := func(raw []byte) blobRef {
		ref := blobRef{blob.Len(), len(raw)}
		blob.Write(raw)
		return ref
	}
	schemaIndex := map[*compiledSchema]int{}
	for _, m := range c.Models {
		i, ok := schemaIndex[m.input]
		if !ok {
			i = len(f.Schemas)
			schemaIndex[m.input] = i
			s := snapshotSchema{Raw: put(m.input.raw), Properties: m.input.properties}
			for _, ex := range m.input.examples {
				s.Examples = append(s.Examples, put(ex))
			}
			f.Schemas = append(f.Schemas, s)
		}
		f.Models = append(f.Models, snapshotModel{
			ID: m.ID, Name: m.Name, Description: m.Description, Category: m.Category, Product: m.Product,
			Mode: m.Mode, OutputType: m.OutputType, Status: m.Status, Schema: i,
			Pricing: m.Pricing, Timing: m.Timing, Output: m.Output, Inputs: m.Inputs, ListItem: put(m.ListItem), Detail: put(m.Detail),
		})
	}
	head, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(append(head, '\n'), blob.Bytes()...), nil
}

// LoadSnapshot returns the catalog a snapshot holds, provided it was made from source (the
// catalog's YAML text) by this version of the loader; otherwise it returns ErrStaleSnapshot.
// Schemas compile on first use, as for a trusted catalog. The catalog keeps slices of snapshot,
// which must not change afterwards.
func LoadSnapshot(snapshot, source []byte) (*Catalog, error) {
	head, blob, found := bytes.Cut(snapshot, []byte("\n"))
	if !found {
		return nil, errors.New("the catalog snapshot is cut short")
	}
	var f snapshotFile
	// Defaults and enums keep their numbers exactly, as the YAML loader keeps them.
	if err := jsonvalue.Decode(head, &f); err != nil {
		return nil, fmt.Errorf("the catalog snapshot does not decode: %w", err)
	}
	sum := sha256.Sum256(source)
	if f.Version != snapshotVersion || f.Source != hex.EncodeToString(sum[:]) {
		return nil, ErrStaleSnapshot
	}
	bad := false
	get := func(ref blobRef) json.RawMessage {
		if ref[0] < 0 || ref[1] < 0 || ref[0] > len(blob)-ref[1] {
			bad = true
			return nil
		}
		return blob[ref[0] : ref[0]+ref[1] : ref[0]+ref[1]]
	}
	c := &Catalog{
		Accounts:    f.Accounts,
		Keys:        f.Keys,
		modelByID:   make(map[string]*Model, len(f.Models)),
		productByID: make(map[string]*Product, len(f.Products)),
		keyByToken:  make(map[string]*Key, len(f.Keys)),
	}
	for i, sp := range f.Products {
		p := &Product{ID: sp.ID, Name: sp.Name, Description: sp.Description, index: i}
		c.Products = append(c.Products, p)
		c.productByID[p.ID] = p
	}
	schemas := make([]*compiledSchema, len(f.Schemas))
	for i, s := range f.Schemas {
		cs := &compiledSchema{raw: get(s.Raw), properties: s.Properties}
		for _, ex := range s.Examples {
			cs.examples = append(cs.examples, get(ex))
		}
		schemas[i] = cs
	}
	models := make([]Model, len(f.Models))
	for i, sm := range f.Models {
		p, ok := c.productByID[sm.Product]
		if !ok || sm.Schema < 0 || sm.Schema >= len(schemas) || c.modelByID[sm.ID] != nil {
			return nil, fmt.Errorf("the catalog snapshot is inconsistent at model %q", sm.ID)
		}
		s := schemas[sm.Schema]
		m := &models[i]
		*m = Model{
			ID: sm.ID, Name: sm.Name, Description: sm.Description, Category: sm.Category, Product: sm.Product,
			Mode: sm.Mode, OutputType: sm.OutputType, Status: sm.Status,
			SchemaJSON: s.raw, Properties: s.properties, Examples: s.examples,
			Pricing: sm.Pricing, Timing: sm.Timing, Output: sm.Output, Inputs: sm.Inputs, ListItem: get(sm.ListItem), Detail: get(sm.Detail),
			input:        s,
			searchText:   [3]string{strings.ToLower(sm.ID), strings.ToLower(sm.Name), strings.ToLower(sm.Description)},
			productIndex: p.index,
		}
		m.Output.sizes = make(map[string][2]int, len(m.Output.Sizes))
		for name, size := range m.Output.Sizes {
			w, h, ok := ParseSize(size)
			if !ok {
				return nil, fmt.Errorf("the catalog snapshot is inconsistent at model %q", sm.ID)
			}
			m.Output.sizes[name] = [2]int{w, h}
		}
		c.modelByID[m.ID] = m
		c.Models = append(c.Models, m)
	}
	if bad {
		return nil, errors.New("the catalog snapshot names bodies it does not hold")
	}
	for i := range c.Keys {
		c.keyByToken[c.Keys[i].Key] = &c.Keys[i]
	}
	c.finder = newFinder(c.Models)
	return c, nil
}
