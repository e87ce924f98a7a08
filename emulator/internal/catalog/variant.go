package catalog

import "strings"

// Variant is a copy of the model under another id, name, description, category and output
// type, with its served bodies built anew; it is a product of its own, takes the model's input
// schema, and the catalog does not hold it. Nil when the bodies cannot be built.
func (m *Model) Variant(id, name, description, category, outputType string) *Model {
	v := *m
	v.ID, v.Name, v.Description, v.Category, v.OutputType = id, name, description, category, outputType
	v.Product, v.Mode, v.Status, v.ownProduct = id, category, "ready", true
	v.searchText = [3]string{strings.ToLower(id), strings.ToLower(name), strings.ToLower(description)}
	if v.encode() != nil {
		return nil
	}
	return &v
}
