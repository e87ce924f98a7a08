package catalog_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
)

// TestGoldenPrices prices every example of every default-catalog model and compares the credits
// with testdata/golden/prices.json (model id → credits per example). The contract promises the
// same credits for the same input on every run and machine, so any change in pricing — of the
// formula or of the catalog — fails here until it is reviewed and the file is rewritten with
// -update.
func TestGoldenPrices(t *testing.T) {
	t.Parallel()
	c := parseDefaultCatalog(t)
	got := map[string][]int64{}
	for _, m := range c.Models {
		for _, ex := range m.Examples {
			got[m.ID] = append(got[m.ID], pricing.Credits(m, catalogtest.Input(t, ex)))
		}
	}
	checkGolden(t, "prices.json", got)

	// Pricing the same inputs again, decoded afresh, gives the same credits.
	for _, m := range c.Models {
		for i, ex := range m.Examples {
			if again := pricing.Credits(m, catalogtest.Input(t, ex)); again != got[m.ID][i] {
				t.Errorf("%s example %d: credits %d, then %d", m.ID, i, got[m.ID][i], again)
			}
		}
	}
}

// TestDefaultPricesPlausible: every example of the default catalog costs what its kind of output
// plausibly costs. The ranges are the product's expectation; a model outside them is a catalog
// problem to report, not a reason to widen the range.
func TestDefaultPricesPlausible(t *testing.T) {
	t.Parallel()
	ranges := map[string][2]int64{
		"image": {1, 60},
		"video": {5, 2000},
		"audio": {1, 300},
	}
	c := parseDefaultCatalog(t)
	var outside []string
	for _, m := range c.Models {
		r, ok := ranges[m.OutputType]
		if !ok {
			t.Errorf("%s: output type %q has no plausible range", m.ID, m.OutputType)
			continue
		}
		for i, ex := range m.Examples {
			credits := pricing.Credits(m, catalogtest.Input(t, ex))
			if credits < r[0] || credits > r[1] {
				outside = append(outside, fmt.Sprintf("%s (%s) example %d %s: %d credits; want %d..%d",
					m.ID, m.OutputType, i, ex, credits, r[0], r[1]))
			}
		}
	}
	sort.Strings(outside)
	if len(outside) > 0 {
		t.Errorf("default-catalog examples priced outside their plausible range:\n%s", strings.Join(outside, "\n"))
	}
}
