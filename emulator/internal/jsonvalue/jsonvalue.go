// Package jsonvalue compares JSON documents as values: key order, white space and the spelling
// of numbers (1, 1.0, 1e0) do not matter, so two requests that mean the same thing match.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
)

// Canonical writes v (as decoded with json.Decoder.UseNumber) in one fixed form: object keys
// sorted, numbers as exact reduced fractions, strings escaped the same way every time.
func Canonical(v any) []byte {
	var b bytes.Buffer
	write(&b, v)
	return b.Bytes()
}

func write(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			write(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			write(b, item)
		}
		b.WriteByte(']')
	case json.Number:
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			b.WriteString(x.String())
			return
		}
		b.WriteString(r.RatString())
	case float64:
		b.WriteString(new(big.Rat).SetFloat64(x).RatString())
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	default:
		raw, _ := json.Marshal(x)
		b.Write(raw)
	}
}

// Equal reports whether two decoded JSON values are the same value.
func Equal(a, b any) bool { return bytes.Equal(Canonical(a), Canonical(b)) }
