package media

import (
	"image/color"
	"math/bits"
)

// The JPEG writer is a baseline (sequential, Huffman) encoder built so that every block costs
// the same number of bits, which makes a file's length a formula of its width and height.
//
// Every one of a block's 64 coefficients is coded explicitly (no end-of-block, no zero runs)
// with a symbol of exactly C bits, C fixed per table: a Huffman code of length C-s followed by
// the s magnitude bits. The tables hold one symbol per length, so their canonical codes are
//
//	length 1: 0    length 2: 10    length 3: 110    …    length l: 1…10 (l-1 ones, then 0)
//
// and the Kraft sum is 1-2^-C, leaving the all-ones code unused as JPEG requires. An AC table
// of cost C codes the magnitude categories 1..C-1 (run 0); a DC table codes categories
// 0..C-1, so a DC difference may be zero. An AC coefficient, though, can never be zero: a
// zero needs a run or end-of-block symbol, whose cost would depend on the data. A coefficient
// that quantises to zero is sent as ±1 instead (the sign of the true value, or seeded when
// that is nearly zero), which shows as a faint film grain, and the quantisation steps are kept
// small so that grain stays faint while the ±(2^(C-1)-1) range still holds sharp text edges.
//
// No byte of the scan is ever 0xFF, so no byte is stuffed and the length stays exact:
//
//  1. Every code is 1^k 0 with k ≤ 7: its ones end at its own final 0.
//  2. Every magnitude field has at most 7 bits (C ≤ 8).
//  3. So a run of one-bits lies inside one magnitude field (≤ 7), inside one code (≤ 7), or
//     is the trailing ones t of a symbol's magnitude followed by the k leading ones of the
//     next symbol's code, which end at that code's 0. Before a symbol is written, the encoder
//     looks at the next symbol's code (the next block's DC symbol for a block's last
//     coefficient) and, if t+k ≥ 8, clears the last magnitude bit. That moves the value by
//     one step within its category, so neither code changes, and leaves t = 0.
//  4. Each MCU is a whole number of bytes (jpegMCUBits is a multiple of 8), so the scan needs
//     no fill bits.
//
// With no run of eight ones anywhere, no aligned byte can be 0xFF. The tests also scan many
// rendered files for 0xFF.

// Bit costs per coefficient symbol: luma (Y) and chroma (Cb, Cr), DC and AC.
const (
	jpegYDC = 8 // DC differences of ±127 steps: one block reaches any level
	jpegYAC = 7 // AC values of ±63 steps
	jpegCDC = 8
	jpegCAC = 6 // AC values of ±31 steps: chroma is smooth, even at the label
)

// jpegMCUBits is the cost of one 16×16 MCU of 4:2:0 YCbCr: four Y blocks, one Cb, one Cr.
const jpegMCUBits = 4*(jpegYDC+63*jpegYAC) + 2*(jpegCDC+63*jpegCAC)

// jpegMCUBytes is the length of one MCU in the scan.
const jpegMCUBytes = jpegMCUBits / 8

// jpegHeaderLen is everything but the scan: SOI, APP0 (JFIF), DQT with two tables, SOF0, DHT
// with four tables of one symbol per code length, SOS, and EOI after the scan.
const jpegHeaderLen = 2 + 18 + (4 + 2*65) + (4 + 6 + 3*3) +
	(4 + 4*17 + jpegYDC + (jpegYAC - 1) + jpegCDC + (jpegCAC - 1)) + (4 + 1 + 3*2 + 3) + 2

// jpegSize returns the exact length of the JPEG renderJPEG writes for a w×h picture.
func jpegSize(w, h int) int64 {
	mcus := int64((w+15)/16) * int64((h+15)/16)
	return jpegHeaderLen + mcus*jpegMCUBytes
}

// zigzag maps a coefficient's position in the scan to its index in the 8×8 block (row-major,
// row v and column u).
var zigzag = [64]uint8{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
}

// jpegQuant returns a component's quantisation steps in block order. The DC step is 8, one
// level of the block's mean. AC steps fall with frequency, as a sharp edge's coefficients do,
// so the ±range of each holds the label's edges; the noise a forced ±1 adds in a flat area is
// about 2.5 levels for luma.
func jpegQuant(luma bool) [64]int32 {
	var q [64]int32
	scale := int32(20)
	if !luma {
		scale = 24
	}
	for i := range q {
		f := int32(i/8 + i%8)
		if f == 0 {
			q[i] = 8
			continue
		}
		q[i] = max(1, (scale+f)/(2*f)) // scale/(2f), rounded
	}
	return q
}

// jpegComponent is how one colour component is coded.
type jpegComponent struct {
	dc, ac uint // symbol costs in bits
	q      [64]int32
	pred   int32 // the decoder's DC value so far, in quantisation steps

	// Precomputed from the above: reciprocals for quantising, and every symbol each table
	// can send, indexed by value plus the table's largest value.
	recip        [64]uint32
	dcMax, acMax int32
	dcSyms       []uint32
	acSyms       []uint32
}

// newJPEGComponent prepares a component with symbol costs dc and ac and steps q.
func newJPEGComponent(dc, ac uint, q [64]int32) *jpegComponent {
	c := &jpegComponent{dc: dc, ac: ac, q: q,
		dcMax: int32(1)<<(dc-1) - 1, acMax: int32(1)<<(ac-1) - 1}
	for i, s := range q {
		c.recip[i] = (1<<quantShift + uint32(s) - 1) / uint32(s)
	}
	c.dcSyms = make([]uint32, 2*c.dcMax+1)
	for v := -c.dcMax; v <= c.dcMax; v++ {
		c.dcSyms[v+c.dcMax] = symbol(v, dc)
	}
	c.acSyms = make([]uint32, 2*c.acMax+1)
	for v := -c.acMax; v <= c.acMax; v++ {
		if v != 0 {
			c.acSyms[v+c.acMax] = symbol(v, ac)
		}
	}
	return c
}

// renderJPEG draws spec's picture and writes it as a 4:2:0 baseline JPEG of exactly jpegSize
// bytes.
func renderJPEG(spec ImageSpec) []byte {
	w, h := spec.Width, spec.Height
	mw, mh := (w+15)/16, (h+15)/16
	// Draw into a plane padded to whole MCUs, then repeat the last column and row into the
	// padding, as encoders do so that the cropped-off edge does not ring.
	pw, ph := 16*mw, 16*mh
	pix := make([]byte, pw*ph)
	pic := drawPicture(spec, pix, pw, false)
	for y := range h {
		row := pix[y*pw : (y+1)*pw]
		fill(row[w:], row[w-1])
	}
	for y := h; y < ph; y++ {
		copy(pix[y*pw:(y+1)*pw], pix[(h-1)*pw:h*pw])
	}

	var ys, cbs, crs [256]int32
	for i, c := range pic.pal {
		y, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
		ys[i], cbs[i], crs[i] = int32(y)-128, int32(cb)-128, int32(cr)-128
	}

	out := make([]byte, 0, jpegSize(w, h))
	comps := [3]*jpegComponent{
		newJPEGComponent(jpegYDC, jpegYAC, jpegQuant(true)),
		newJPEGComponent(jpegCDC, jpegCAC, jpegQuant(false)),
		newJPEGComponent(jpegCDC, jpegCAC, jpegQuant(false)),
	}
	out = appendJPEGHeader(out, w, h, &comps[0].q, &comps[1].q)

	e := jpegEncoder{out: out, grain: splitmix64{state: spec.Seed ^ 0x6a09e667f3bcc908}}
	var blk [64]int32
	for my := range mh {
		for mx := range mw {
			base := my*16*pw + mx*16
			for i := range 4 {
				at := base + (i/2)*8*pw + (i%2)*8
				for y := range 8 {
					row := pix[at+y*pw : at+y*pw+8]
					for x, idx := range row {
						blk[y*8+x] = ys[idx]
					}
				}
				e.block(&blk, comps[0])
			}
			for c, lut := range [2]*[256]int32{&cbs, &crs} {
				// Each chroma sample is the mean of a 2×2 square of pixels.
				for y := range 8 {
					r0 := pix[base+2*y*pw : base+2*y*pw+16]
					r1 := pix[base+(2*y+1)*pw : base+(2*y+1)*pw+16]
					for x := range 8 {
						s := lut[r0[2*x]] + lut[r0[2*x+1]] + lut[r1[2*x]] + lut[r1[2*x+1]]
						blk[y*8+x] = (s + 2) >> 2
					}
				}
				e.block(&blk, comps[1+c])
			}
		}
	}
	e.flush()
	return append(e.out, 0xff, 0xd9) // EOI
}

// appendJPEGHeader appends every marker segment before the scan.
func appendJPEGHeader(b []byte, w, h int, qY, qC *[64]int32) []byte {
	b = append(b, 0xff, 0xd8) // SOI
	// APP0: JFIF 1.01, no units, 1:1 pixel aspect, no thumbnail.
	b = append(b, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0)

	b = append(b, 0xff, 0xdb, 0, 2+2*65)
	for t, q := range [2]*[64]int32{qY, qC} {
		b = append(b, byte(t)) // 8-bit steps, table t
		for _, i := range zigzag {
			b = append(b, byte(q[i]))
		}
	}

	// SOF0: 8-bit samples, three components; Y sampled 2×2, Cb and Cr 1×1 (4:2:0).
	b = append(b, 0xff, 0xc0, 0, 17, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3,
		1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1)

	dhtLen := jpegHeaderLen - 2 - 18 - (4 + 2*65) - (4 + 6 + 3*3) - (4 + 1 + 3*2 + 3) - 2 - 2
	b = append(b, 0xff, 0xc4, byte(dhtLen>>8), byte(dhtLen))
	for _, t := range [4]struct {
		class byte // 0x00 DC, 0x10 AC, plus the table number
		cost  int
		min   int // the smallest category coded
	}{{0x00, jpegYDC, 0}, {0x10, jpegYAC, 1}, {0x01, jpegCDC, 0}, {0x11, jpegCAC, 1}} {
		b = append(b, t.class)
		// One code of each length 1..cost-min; length l codes category cost-l.
		for l := 1; l <= 16; l++ {
			b = append(b, byte(b2i(l <= t.cost-t.min)))
		}
		for l := 1; l <= t.cost-t.min; l++ {
			b = append(b, byte(t.cost-l)) // for AC: run 0, size cost-l
		}
	}

	// SOS: all three components interleaved; Y uses tables 0, Cb and Cr tables 1; the whole
	// spectrum, no successive approximation.
	return append(b, 0xff, 0xda, 0, 12, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0)
}

// jpegEncoder writes the scan: fixed-cost symbols, one block behind, so that a block's last
// symbol can be checked against the next block's first (see the proof at the top of the file).
type jpegEncoder struct {
	out   []byte
	acc   uint64 // pending bits, the newest in the low nacc bits
	nacc  uint
	grain splitmix64 // signs for coefficients that quantise to nothing

	pending    bool
	pendSym    [64]uint32
	pendCost   uint
	pendACCost uint
}

// symbol is a coded coefficient: the Huffman code of category s in a table of cost c, then
// the magnitude bits of v.
func symbol(v int32, c uint) uint32 {
	a := v
	if a < 0 {
		a = -a
	}
	s := uint(bits.Len32(uint32(a)))
	mag := uint32(v)
	if v < 0 {
		mag = uint32(v + 1<<s - 1)
	}
	code := uint32(1)<<(c-s) - 2
	return code<<s | mag&(1<<s-1)
}

// leadingOnes returns how many one-bits a c-bit symbol starts with: its code's.
func leadingOnes(sym uint32, c uint) uint {
	return uint(bits.LeadingZeros32(^(sym << (32 - c))))
}

// trailingOnes returns how many one-bits a symbol ends with (they are all magnitude bits, since
// every code ends in a 0).
func trailingOnes(sym uint32) uint {
	return uint(bits.TrailingZeros32(^sym))
}

// breakRun clears the last bit of sym when its trailing ones and the next symbol's leading ones
// would make a run of eight.
func breakRun(sym uint32, nextLeading uint) uint32 {
	if trailingOnes(sym)+nextLeading >= 8 {
		return sym &^ 1
	}
	return sym
}

// magnitude decodes the value a symbol of cost c carries.
func magnitude(sym uint32, c uint) int32 {
	s := c - leadingOnes(sym, c) - 1
	if s == 0 {
		return 0
	}
	mag := int32(sym & (1<<s - 1))
	if mag>>(s-1) == 0 {
		return mag - (1<<s - 1)
	}
	return mag
}

// block transforms, quantises and codes one 8×8 block of level-shifted samples for comp.
func (e *jpegEncoder) block(blk *[64]int32, comp *jpegComponent) {
	flat := fdct(blk)
	var sym [64]uint32

	diff := min(comp.dcMax, max(-comp.dcMax, quantise(blk[0], comp.recip[0])-comp.pred))
	sym[0] = comp.dcSyms[diff+comp.dcMax]

	signs := e.grain.next()
	// A coefficient known to be zero is sent as a seeded ±1.
	plusMinus := [2]uint32{comp.acSyms[comp.acMax-1], comp.acSyms[comp.acMax+1]}
	for k := 1; k < 64; k++ {
		i := zigzag[k]
		if flat && i%8 != 0 {
			sym[k] = plusMinus[signs>>k&1]
			continue
		}
		f := blk[i]
		v := min(comp.acMax, max(-comp.acMax, quantise(f, comp.recip[i])))
		if v == 0 {
			switch q := comp.q[i]; {
			case 4*f >= q:
				v = 1
			case 4*f <= -q:
				v = -1
			default:
				v = int32(signs>>k&1)*2 - 1
			}
		}
		sym[k] = comp.acSyms[v+comp.acMax]
	}

	for k := range 63 {
		sym[k] = breakRun(sym[k], leadingOnes(sym[k+1], comp.ac))
	}
	comp.pred += magnitude(sym[0], comp.dc)

	if e.pending {
		e.pendSym[63] = breakRun(e.pendSym[63], leadingOnes(sym[0], comp.dc))
		e.emit()
	}
	e.pendSym, e.pendCost, e.pendACCost, e.pending = sym, comp.dc, comp.ac, true
}

// emit writes the pending block.
func (e *jpegEncoder) emit() {
	e.put(e.pendSym[0], e.pendCost)
	for _, s := range e.pendSym[1:] {
		e.put(s, e.pendACCost)
	}
	e.pending = false
}

// put appends a c-bit symbol, writing whole bytes out as they fill.
func (e *jpegEncoder) put(sym uint32, c uint) {
	e.acc = e.acc<<c | uint64(sym)
	e.nacc += c
	if e.nacc >= 32 {
		e.nacc -= 32
		v := uint32(e.acc >> e.nacc)
		e.out = append(e.out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
}

// flush writes the last block and the bytes still in the accumulator; every MCU being whole
// bytes, no fill bits are needed.
func (e *jpegEncoder) flush() {
	if e.pending {
		e.emit()
	}
	for e.nacc >= 8 {
		e.nacc -= 8
		e.out = append(e.out, byte(e.acc>>e.nacc))
	}
}

// quantShift is the fixed-point precision of the quantisation reciprocals.
const quantShift = 20

// quantise returns f/q rounded half away from zero, given recip = ⌈2^20/q⌉: a multiply, as a
// division per coefficient costs more than the rest of coding it. |f|·recip/2^20 exceeds
// |f|/q by less than |f|/2^20 < 0.002, while a fraction j/q (q < 256) that is not exactly ½
// is at least 1/512 away from it, so rounding the product rounds |f|/q. (The tests compare
// it with division.)
func quantise(f int32, recip uint32) int32 {
	a := f
	if f < 0 {
		a = -f
	}
	v := int32((uint64(a)*uint64(recip) + 1<<(quantShift-1)) >> quantShift)
	if f < 0 {
		return -v
	}
	return v
}

// dctCos[u][x] is 4096 · ½c(u) · cos((2x+1)uπ/16), c(0) = 1/√2 and otherwise 1: the
// orthonormal 8-point DCT-II in fixed point, for x < 4 (the other half mirrors it).
var dctCos = [8][4]int32{
	{1448, 1448, 1448, 1448},
	{2009, 1703, 1138, 400},
	{1892, 784, -784, -1892},
	{1703, -400, -2009, -1138},
	{1448, -1448, -1448, 1448},
	{1138, -2009, 400, 1703},
	{784, -1892, 1892, -784},
	{400, -1138, 1703, -2009},
}

// fdct replaces a block of samples with its 2-D DCT (JPEG's scaling, integers only). Rows
// first, kept with two fraction bits, then columns. A row of one value (most rows of these
// pictures, whose colour changes from top to bottom) has only a DC term, and when every row is
// like that only the first column needs the second pass; the shortcuts give the same numbers
// as the full transform.
func fdct(b *[64]int32) (flat bool) {
	var s, d [4]int32
	flat = true
	for y := range 8 {
		r := (*[8]int32)(b[y*8 : y*8+8])
		if r[0] == r[1] && r[0] == r[2] && r[0] == r[3] && r[0] == r[4] && r[0] == r[5] && r[0] == r[6] && r[0] == r[7] {
			*r = [8]int32{(8*r[0]*dctCos[0][0] + 1<<9) >> 10}
			continue
		}
		flat = false
		for x := range 4 {
			s[x], d[x] = r[x]+r[7-x], r[x]-r[7-x]
		}
		for u := 0; u < 8; u += 2 {
			c, o := &dctCos[u], &dctCos[u+1]
			r[u] = (s[0]*c[0] + s[1]*c[1] + s[2]*c[2] + s[3]*c[3] + 1<<9) >> 10
			r[u+1] = (d[0]*o[0] + d[1]*o[1] + d[2]*o[2] + d[3]*o[3] + 1<<9) >> 10
		}
	}
	cols := 8
	if flat {
		cols = 1 // the other columns are zero, and so is their transform
	}
	for x := range cols {
		for y := range 4 {
			s[y], d[y] = b[y*8+x]+b[(7-y)*8+x], b[y*8+x]-b[(7-y)*8+x]
		}
		for v := 0; v < 8; v += 2 {
			c, o := &dctCos[v], &dctCos[v+1]
			b[v*8+x] = (s[0]*c[0] + s[1]*c[1] + s[2]*c[2] + s[3]*c[3] + 1<<13) >> 14
			b[(v+1)*8+x] = (d[0]*o[0] + d[1]*o[1] + d[2]*o[2] + d[3]*o[3] + 1<<13) >> 14
		}
	}
	return flat
}
