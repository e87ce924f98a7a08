package jsonvalue

import (
	"strconv"
	"testing"
)

// TestCanonicalIntMatchesTheGeneralForm: the integer shortcut spells every integer it accepts
// exactly as the general form does, and leaves every other number to it.
func TestCanonicalIntMatchesTheGeneralForm(t *testing.T) {
	t.Parallel()
	cases := []string{"0", "-0", "7", "-7", "10", "1200", "-1200", "100000", "999999999999999999", "-100000000000000000"}
	for n := int64(1); n < 1e17; n = n*7 + 3 { // and 10n: up to 18 digits
		cases = append(cases, strconv.FormatInt(n, 10), strconv.FormatInt(-n, 10)+"0")
	}
	for _, s := range cases {
		got, ok := canonicalInt(s)
		if !ok {
			t.Errorf("canonicalInt(%s) refused an integer", s)
			continue
		}
		if want := canonicalAny(s); got != want {
			t.Errorf("canonicalInt(%s) = %s; the general form is %s", s, got, want)
		}
	}
	for _, s := range []string{"", "-", "1.0", "1e3", "1E3", "0.5", "01", "-01", "1000000000000000000", "12a", "+1"} {
		if got, ok := canonicalInt(s); ok {
			t.Errorf("canonicalInt(%q) = %s; want it left to the general form", s, got)
		}
	}
}
