// Package jsonvalue compares JSON documents as values: key order, white space and the spelling
// of numbers (1, 1.0, 1e0) do not matter, so two requests that mean the same thing match.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrMoreValues is Decode's error when data holds something after its one value.
var ErrMoreValues = errors.New("more than one JSON value")

// Decode reads data, which must hold one JSON value and nothing after it but white space, into
// v, with numbers as json.Number so that they stay exact.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrMoreValues
	}
	return nil
}

// ErrTooDeep is Read's error for a value nested deeper than its limit.
var ErrTooDeep = errors.New("nested too deeply")

// Read reads the next JSON value from dec as Decode makes it: objects as map[string]any, arrays
// as []any, numbers as json.Number so that they stay exact. An object or array that takes dec
// deeper than limit levels (counted from dec's top) is ErrTooDeep, so a hostile document cannot
// make Read, or whatever walks its value later, recurse deeply. Duplicate names and invalid
// UTF-8 are refused or allowed as dec's options say; a name given twice keeps its last value.
func Read(dec *jsontext.Decoder, limit int) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil // a number token's String is its text
	case '{':
		if dec.StackDepth() > limit {
			return nil, ErrTooDeep
		}
		obj := make(map[string]any)
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String() // before the next read voids name
			v, err := Read(dec, limit)
			if err != nil {
				return nil, err
			}
			obj[key] = v
		}
		_, err := dec.ReadToken()
		return obj, err
	}
	// An array: a closing token never comes here, as dec refuses one out of place.
	if dec.StackDepth() > limit {
		return nil, ErrTooDeep
	}
	arr := make([]any, 0)
	for dec.PeekKind() != ']' {
		v, err := Read(dec, limit)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	_, err = dec.ReadToken()
	return arr, err
}

// Canonical writes v (as decoded with json.Decoder.UseNumber) in one fixed form: object keys
// sorted, numbers exact in one spelling, strings escaped the same way every time.
func Canonical(v any) []byte {
	var b bytes.Buffer
	b.Grow(256) // most inputs fit, so the buffer is allocated once
	write(&b, v)
	return b.Bytes()
}

func write(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x)) // one allocation, where collecting an iterator grows
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(strconv.AppendQuote(b.AvailableBuffer(), k))
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
		if small, ok := appendCanonicalInt(b.AvailableBuffer(), string(x)); ok {
			b.Write(small)
		} else {
			b.WriteString(canonicalAny(string(x)))
		}
	case float64:
		b.WriteString(canonicalNumber(strconv.FormatFloat(x, 'g', -1, 64)))
	case string:
		b.Write(strconv.AppendQuote(b.AvailableBuffer(), x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	default:
		raw, _ := json.Marshal(x)
		b.Write(raw)
	}
}

// canonicalNumber spells a JSON number exactly and in one way: sign, significant digits without
// leading or trailing zeros, and a power of ten ("-125e-2" for -1.250). It works on the text,
// so 1e999999 costs as little as 1 and stays distinct from 1e999998.
func canonicalNumber(s string) string {
	if small, ok := canonicalInt(s); ok {
		return small
	}
	return canonicalAny(s)
}

// canonicalAny is canonicalNumber for any number, on the text with big exponents.
func canonicalAny(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
	exp := new(big.Int)
	if expText != "" {
		if _, ok := exp.SetString(strings.TrimPrefix(expText, "+"), 10); !ok {
			return s
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp.Sub(exp, big.NewInt(int64(len(frac))))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp.Add(exp, big.NewInt(int64(len(digits)-len(trimmed))))
	out := trimmed + "e" + exp.String()
	if neg {
		out = "-" + out
	}
	return out
}

// canonicalInt is canonicalNumber for the numbers inputs mostly hold, plain integers of up to
// 18 digits, without big arithmetic; ok is false for any other number.
func canonicalInt(s string) (string, bool) {
	b, ok := appendCanonicalInt(nil, s)
	return string(b), ok
}

// appendCanonicalInt appends canonicalInt's form of s to dst.
func appendCanonicalInt(dst []byte, s string) ([]byte, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (len(digits) > 1 && digits[0] == '0') {
		return dst, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return dst, false
		}
	}
	if digits == "0" {
		return append(dst, '0'), true
	}
	trimmed := strings.TrimRight(digits, "0")
	if len(digits) < len(s) {
		dst = append(dst, '-')
	}
	dst = append(dst, trimmed...)
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(len(digits)-len(trimmed)), 10), true
}

// Equal reports whether two decoded JSON values are the same value.
func Equal(a, b any) bool { return bytes.Equal(Canonical(a), Canonical(b)) }

// Type names the JSON type of a value Decode made: null, boolean, number, string, array or
// object.
func Type(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}
