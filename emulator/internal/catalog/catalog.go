// Package catalog loads and holds the emulator's configuration of products, models, accounts
// and API keys, with each model's compiled input schema and the documents served about it.
package catalog

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
)

// Permission names an action a key may take.
type Permission string

// The permissions of the contract.
const (
	PermModelsRead Permission = "models:read"
	PermGenerate   Permission = "generate"
)

// MaxAccountCredits bounds a balance (10^15), far below where sums of credits could overflow.
const MaxAccountCredits = 1_000_000_000_000_000

// StatusReady is the one model status under which a model is listed and generates.
const StatusReady = "ready"

// Output types a model produces.
const (
	OutputImage = "image"
	OutputVideo = "video"
	OutputAudio = "audio"
)

// Formats are the file formats each output type is made in, its default first.
var Formats = map[string][]string{
	OutputImage: {"png", "jpeg"},
	OutputVideo: {"mp4"},
	OutputAudio: {"wav"},
}

// DefaultDuration is how many seconds a video or audio output lasts when its model says nothing.
const DefaultDuration = 5.0

// DefaultSize is the width and height of an image or video output when its model says nothing.
func DefaultSize(outputType string) (w, h int) {
	if outputType == OutputVideo {
		return 1280, 720
	}
	return 1024, 1024
}

// Catalog is a loaded, validated configuration. It is immutable after loading and safe to share.
type Catalog struct {
	Products []*Product
	Models   []*Model
	Accounts []Account
	Keys     []Key

	modelByID   map[string]*Model
	productByID map[string]*Product
	keyByToken  map[string]*Key
	finder      *finder
}

// Product gathers models that are modes of one offering, for grouped listings.
type Product struct {
	ID          string `yaml:"id" json:"product"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	index       int    // its place in Catalog.Products
}

// Account owns credits, quotes, jobs and idempotency keys.
type Account struct {
	ID      string `yaml:"id"`
	Credits int64  `yaml:"credits"`
}

// Key is a bearer token belonging to an account, with what it may do.
type Key struct {
	Key         string       `yaml:"key"`
	Account     string       `yaml:"account"`
	Permissions []Permission `yaml:"permissions"`
}

// Can reports whether the key holds a permission.
func (k *Key) Can(p Permission) bool {
	for _, have := range k.Permissions {
		if have == p {
			return true
		}
	}
	return false
}

// Model is one generation model with everything needed to validate, price, run and describe it.
type Model struct {
	ID          string
	Name        string
	Description string
	Category    string
	Product     string
	Mode        string
	OutputType  string
	Status      string

	// SchemaJSON is the input schema as JSON, in the order the file wrote it.
	SchemaJSON json.RawMessage
	// Properties describes the schema's top-level properties that pricing and outputs read.
	Properties map[string]Property
	Examples   []json.RawMessage

	Pricing Pricing
	Timing  Timing
	Output  Output
	// Inputs are the model's own rules for its media inputs (inputs: in the file), or nil.
	Inputs *ModelInputs

	// ListItem and Detail are the encoded bodies served for this model, built once at load.
	// Detail ends in the newline every answer ends in, so it goes out in one write, uncopied.
	ListItem json.RawMessage
	Detail   json.RawMessage

	input         *compiledSchema // validates inputs; shared by models with the same schema
	searchText    [3]string       // id, name and description, lower-cased
	productIndex  int             // its product's place in Catalog.Products
	ownProduct    bool            // the file named no product: the model is a product of its own
	openAPISchema json.RawMessage // SchemaJSON with its references relocated into the OpenAPI document
}

// Validate checks an input against the model's schema, as schema.Schema.Validate does. It is
// safe for concurrent use; a trusted catalog compiles the schema on first use.
func (m *Model) Validate(input any) error {
	s, err := m.input.get()
	if err != nil {
		return err
	}
	return s.Validate(input)
}

// Compile compiles every model's schema now rather than on first use.
func (c *Catalog) Compile() error {
	for _, m := range c.Models {
		if _, err := m.input.get(); err != nil {
			return fmt.Errorf("model %q: %w", m.ID, err)
		}
	}
	return nil
}

// Ready reports whether the model is listed and accepts quotes and generations.
func (m *Model) Ready() bool { return m.Status == StatusReady }

// Property is what the emulator reads of one top-level input property.
type Property struct {
	Type    string
	Default any
	Enum    []any
}

// Pricing turns an input into credits; see the README, Pricing.
type Pricing struct {
	Base        float64      `yaml:"base"`
	PerUnit     []UnitPrice  `yaml:"per_unit"`
	Tables      []ValueTable `yaml:"tables"`
	Multipliers []ValueTable `yaml:"multipliers"`
	MultiplyBy  []string     `yaml:"multiply_by"`
	Minimum     *float64     `yaml:"minimum"`
}

// UnitPrice adds Credits for each unit of a numeric field, or of a string's or array's length.
type UnitPrice struct {
	Field   string  `yaml:"field"`
	Credits float64 `yaml:"credits"`
	Measure string  `yaml:"measure"`
}

// ValueTable maps each value of an enum field to a number.
type ValueTable struct {
	Field  string             `yaml:"field"`
	Values map[string]float64 `yaml:"values"`
}

// Timing is how long a job spends queued and running, before scenarios adjust it.
type Timing struct {
	Queue        time.Duration `yaml:"queue"`
	Run          time.Duration `yaml:"run"`
	RunPerUnit   *UnitTime     `yaml:"run_per_unit"`
	QueueTimeout time.Duration `yaml:"queue_timeout"`
}

// UnitTime adds Each for every unit of a numeric field.
type UnitTime struct {
	Field string        `yaml:"field"`
	Each  time.Duration `yaml:"each"`
}

// Output says what a succeeded job produces and how the input shapes it.
type Output struct {
	Format           string            `yaml:"format"`
	FormatField      string            `yaml:"format_field"`
	Count            int               `yaml:"count"`
	CountField       string            `yaml:"count_field"`
	Width            int               `yaml:"width"`
	Height           int               `yaml:"height"`
	SizeField        string            `yaml:"size_field"`
	Sizes            map[string]string `yaml:"sizes"`
	WidthField       string            `yaml:"width_field"`
	HeightField      string            `yaml:"height_field"`
	AspectRatioField string            `yaml:"aspect_ratio_field"`
	ResolutionField  string            `yaml:"resolution_field"`
	Duration         float64           `yaml:"duration"`
	DurationField    string            `yaml:"duration_field"`
	DurationFromText string            `yaml:"duration_from_text"`
	// Delivery is how a succeeded job carries its files: "url" (the default) or "inline", a
	// data: URI in place of each URL (sim/inline_outputs.go). DeliveryField names a boolean
	// input member (such as sync_mode) that asks for inline when true.
	Delivery      string `yaml:"delivery" json:",omitempty"`
	DeliveryField string `yaml:"delivery_field" json:",omitempty"`

	sizes map[string][2]int
}

// ModelInputs are a model's own rules for its media inputs, read when inputs are fetched: the
// hosted service's rules it changes (laid over the defaults, and under a scenario's inputs),
// and, in Media, which members are media and of what kind, in place of what their names say.
type ModelInputs struct {
	inputs.Changes `yaml:",inline"`
	// Media maps a top-level format: uri member (or array of them) to image, mask, audio or
	// video; when set, the members it leaves out are not media.
	Media map[string]string `yaml:"media" json:"media,omitempty"`
}

// MediaMarks are the members the catalog marks as media (inputs.media), or nil when it leaves
// them to their names.
func (m *Model) MediaMarks() map[string]string {
	if m.Inputs == nil {
		return nil
	}
	return m.Inputs.Media
}

// Model returns the model with an id, whether or not it is ready.
func (c *Catalog) Model(id string) (*Model, bool) {
	m, ok := c.modelByID[id]
	return m, ok
}

// Product returns the product with an id.
func (c *Catalog) Product(id string) (*Product, bool) {
	p, ok := c.productByID[id]
	return p, ok
}

// Key returns the key with a bearer token.
func (c *Catalog) Key(token string) (*Key, bool) {
	k, ok := c.keyByToken[token]
	return k, ok
}
