package media

import (
	"math"
	"testing"
)

func TestQuantiseMatchesDivision(t *testing.T) {
	t.Parallel()
	for q := int32(1); q < 256; q++ {
		recip := (1<<quantShift + uint32(q) - 1) / uint32(q)
		for f := int32(-1100); f <= 1100; f++ {
			want := (abs32(f) + q/2) / q
			if f < 0 {
				want = -want
			}
			if got := quantise(f, recip); got != want {
				t.Fatalf("quantise(%d) by %d = %d, want %d", f, q, got, want)
			}
		}
	}
}

// fdct, shortcuts included, is the orthonormal DCT-II to within rounding.
func TestFDCTMatchesReference(t *testing.T) {
	t.Parallel()
	rng := splitmix64{state: 1}
	for n := range 2000 {
		var blk [64]int32
		for y := range 8 {
			for x := range 8 {
				blk[y*8+x] = int32(rng.between(-128, 127))
				if n%3 == 0 && x > 0 { // rows of one value take the shortcut
					blk[y*8+x] = blk[y*8]
				}
				if n%3 == 1 && y < 4 && x > 0 { // and so do some rows of a block
					blk[y*8+x] = blk[y*8]
				}
			}
		}
		want := referenceDCT(&blk)
		fdct(&blk)
		for i := range blk {
			if d := math.Abs(float64(blk[i]) - want[i]); d > 1.01 {
				t.Fatalf("block %d coefficient %d: %d, want %.2f", n, i, blk[i], want[i])
			}
		}
	}
}

// referenceDCT is the textbook 2-D DCT of JPEG (ITU T.81 A.3.3) in floating point.
func referenceDCT(b *[64]int32) [64]float64 {
	var out [64]float64
	c := func(u int) float64 {
		if u == 0 {
			return 1 / math.Sqrt2
		}
		return 1
	}
	for v := range 8 {
		for u := range 8 {
			var sum float64
			for y := range 8 {
				for x := range 8 {
					sum += float64(b[y*8+x]) *
						math.Cos(float64(2*x+1)*float64(u)*math.Pi/16) *
						math.Cos(float64(2*y+1)*float64(v)*math.Pi/16)
				}
			}
			out[v*8+u] = sum * c(u) * c(v) / 4
		}
	}
	return out
}

// The symbols and their helpers agree: every value of every table round-trips, and clearing
// the last bit keeps a symbol's code (its category).
func TestJPEGSymbols(t *testing.T) {
	t.Parallel()
	for _, c := range []uint{jpegYDC, jpegYAC, jpegCDC, jpegCAC} {
		most := int32(1)<<(c-1) - 1
		for v := -most; v <= most; v++ {
			sym := symbol(v, c)
			if got := magnitude(sym, c); got != v {
				t.Errorf("cost %d: value %d comes back as %d", c, v, got)
			}
			if sym >= 1<<c {
				t.Errorf("cost %d: value %d's symbol %b is longer than %d bits", c, v, sym, c)
			}
			if v != 0 && leadingOnes(sym&^1, c) != leadingOnes(sym, c) {
				t.Errorf("cost %d: clearing the last bit of value %d's symbol changes its code", c, v)
			}
		}
	}
	if jpegMCUBits%8 != 0 {
		t.Errorf("an MCU is %d bits, not whole bytes", jpegMCUBits)
	}
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
