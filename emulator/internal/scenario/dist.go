package scenario

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// Dist is a duration drawn per job or per answer: fixed, uniform between bounds, log-normal
// (between bounds, most draws near the geometric middle; or by its median and 99th percentile,
// capped), or a scale applied to the catalog's own timing.
type Dist struct {
	Kind     string // fixed, uniform, lognormal or scale
	Min, Max time.Duration
	// Median and P99 set a log-normal by its percentiles; Max, when set, caps its draws.
	Median, P99 time.Duration
	Factor      float64
	line        int
}

// z99 is the standard normal's 99th percentile: a log-normal's p99 is its median times
// exp(z99·σ).
const z99 = 2.3263478740408408

// UnmarshalYAML reads "2s", {fixed: 2s}, {uniform: {min: 1s, max: 5s}},
// {lognormal: {min: 20s, max: 4m}}, {lognormal: {median: 200ms, p99: 2s, max: 5s}} or
// {scale: 3}.
func (d *Dist) UnmarshalYAML(n *yaml.Node) error {
	d.line = n.Line
	if n.Kind == yaml.ScalarNode {
		v, err := time.ParseDuration(n.Value)
		if err != nil || v < 0 {
			return typeError(n, "%q is not a duration such as 500ms or 2m", n.Value)
		}
		*d = Dist{Kind: "fixed", Min: v, Max: v, line: n.Line}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return typeError(n, "want a duration such as 500ms or 2m, or a mapping with one of fixed, uniform, lognormal or scale, got %s", catalog.Got(n))
	}
	var shape distShape
	r := &catalog.Reporter{}
	if strict().Check(r, n, reflect.TypeOf(shape)); len(r.Problems) > 0 {
		te := &yaml.TypeError{}
		for _, p := range r.Problems {
			te.Errors = append(te.Errors, fmt.Sprintf("line %d: %s", p.Line, p.Message))
		}
		return te
	}
	if err := n.Decode(&shape); err != nil {
		return err
	}
	set := 0
	for _, ok := range []bool{shape.Fixed != nil, shape.Uniform != nil, shape.LogNormal != nil, shape.Scale != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return typeError(n, "give exactly one of fixed, uniform, lognormal or scale")
	}
	switch {
	case shape.Fixed != nil:
		*d = Dist{Kind: "fixed", Min: *shape.Fixed, Max: *shape.Fixed}
	case shape.Uniform != nil:
		*d = Dist{Kind: "uniform", Min: shape.Uniform.Min, Max: shape.Uniform.Max}
	case shape.LogNormal != nil:
		ln := shape.LogNormal
		*d = Dist{Kind: "lognormal", Min: ln.Min, Max: ln.Max, Median: ln.Median, P99: ln.P99}
		if ln.Median != 0 || ln.P99 != 0 {
			switch {
			case ln.Median <= 0 || ln.P99 <= ln.Median:
				return typeError(n, "lognormal needs 0 < median < p99")
			case ln.Min > ln.Median:
				return typeError(n, "lognormal needs min <= median")
			case ln.Max != 0 && ln.Max < ln.P99:
				return typeError(n, "lognormal needs max (the cap) >= p99, or no max")
			}
			d.line = n.Line
			return nil
		}
		if d.Min <= 0 {
			return typeError(n, "lognormal needs min > 0, or a median and a p99")
		}
	default:
		*d = Dist{Kind: "scale", Factor: *shape.Scale}
		if d.Factor < 0 {
			return typeError(n, "scale must be >= 0")
		}
	}
	d.line = n.Line
	if d.Min < 0 || d.Max < d.Min {
		return typeError(n, "need 0 <= min <= max")
	}
	return nil
}

// distShape is the mapping form of a Dist.
type distShape struct {
	Fixed     *time.Duration `yaml:"fixed"`
	Uniform   *bounds        `yaml:"uniform"`
	LogNormal *logNormal     `yaml:"lognormal"`
	Scale     *float64       `yaml:"scale"`
}

type bounds struct {
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// logNormal is a log-normal by its bounds (min and max at ±1.96σ) or by its median and 99th
// percentile (min and max, when given, clamp the draws).
type logNormal struct {
	Min    time.Duration `yaml:"min"`
	Max    time.Duration `yaml:"max"`
	Median time.Duration `yaml:"median"`
	P99    time.Duration `yaml:"p99"`
}

// typeError reports a problem the way yaml.v3 reports its own type errors, so the decoder goes
// on and every such problem in a file is reported at once.
func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// Draw picks a duration with u uniform in [0, 1); base is the catalog's own timing, which a
// scale multiplies.
func (d *Dist) Draw(u float64, base time.Duration) time.Duration {
	switch d.Kind {
	case "uniform":
		return d.Min + time.Duration(u*float64(d.Max-d.Min))
	case "lognormal":
		if d.Median > 0 {
			sigma := math.Log(float64(d.P99)/float64(d.Median)) / z99
			v := Clamp(float64(d.Median) * math.Exp(sigma*normalQuantile(u)))
			if d.Max > 0 {
				v = min(v, d.Max)
			}
			return max(v, d.Min)
		}
		// min and max sit at ±1.96σ around the geometric middle; draws are clamped to them.
		lo, hi := math.Log(float64(d.Min)), math.Log(float64(d.Max))
		mu, sigma := (lo+hi)/2, (hi-lo)/(2*1.96)
		v := math.Exp(mu + sigma*normalQuantile(u))
		return time.Duration(math.Min(math.Max(v, float64(d.Min)), float64(d.Max)))
	case "scale":
		return Clamp(float64(base) * d.Factor)
	}
	return d.Min
}

// MaxDuration bounds any drawn or scaled duration: a job can take a year, not overflow.
const MaxDuration = 366 * 24 * time.Hour

// Clamp turns nanoseconds into a duration between 0 and MaxDuration.
func Clamp(ns float64) time.Duration {
	if math.IsNaN(ns) || ns <= 0 {
		return 0
	}
	if ns >= float64(MaxDuration) {
		return MaxDuration
	}
	return time.Duration(ns)
}

// normalQuantile is the inverse of the standard normal CDF (Acklam's rational approximation,
// relative error below 1.2e-9), so one uniform draw becomes one normal draw.
func normalQuantile(p float64) float64 {
	p = math.Min(math.Max(p, 1e-12), 1-1e-12)
	a := [...]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [...]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [...]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	dd := [...]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	const low = 0.02425
	switch {
	case p < low:
		q := math.Sqrt(-2 * math.Log(p))
		return (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((dd[0]*q+dd[1])*q+dd[2])*q+dd[3])*q + 1)
	case p > 1-low:
		q := math.Sqrt(-2 * math.Log(1-p))
		return -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((dd[0]*q+dd[1])*q+dd[2])*q+dd[3])*q + 1)
	}
	q := p - 0.5
	r := q * q
	return (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
}

// Fraction is a share of a run drawn per job: a number, or [min, max] drawn uniformly.
type Fraction struct {
	Min, Max float64
}

// UnmarshalYAML reads 0.5 or [0.1, 0.9].
func (f *Fraction) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var v float64
		if err := n.Decode(&v); err != nil {
			return typeError(n, "want a number from 0 to 1")
		}
		f.Min, f.Max = v, v
	case yaml.SequenceNode:
		var v []float64
		if err := n.Decode(&v); err != nil || len(v) != 2 {
			return typeError(n, "want [min, max] between 0 and 1")
		}
		f.Min, f.Max = v[0], v[1]
	default:
		return typeError(n, "want a number or [min, max]")
	}
	if f.Min < 0 || f.Max > 1 || f.Min > f.Max {
		return typeError(n, "want 0 <= min <= max <= 1")
	}
	return nil
}

// Draw picks a fraction with u uniform in [0, 1).
func (f Fraction) Draw(u float64) float64 { return f.Min + u*(f.Max-f.Min) }
