package media

import (
	"encoding/binary"
	"fmt"
	"image/color"
	"slices"
	"strings"
)

// MaxImageSide is the largest width or height RenderImage draws.
const MaxImageSide = 4096

// ImageSpec describes one image output.
type ImageSpec struct {
	// Width and Height are the exact pixel size, each 1 to MaxImageSide.
	Width, Height int
	// Format is "png" or "jpeg" ("jpg" is accepted too).
	Format string
	// Seed chooses the colours, gradient and shapes.
	Seed uint64
	// Label is drawn across the bottom of the picture, typically the model name and the start of
	// the prompt, so a person looking at an output can tell which job made it. Non-ASCII
	// characters are drawn as '?'; text that does not fit in three lines is cut with "...".
	Label string
}

// The palette: rampLen entries of a smooth colour ramp, then the label's band and text colours.
// Drawing in palette indices keeps the raster at one byte per pixel, which is exactly the
// PNG's uncompressed row format and a table lookup from the JPEG's YCbCr.
const (
	rampLen       = 240
	phaseCycle    = 2 * rampLen // a phase walks up the ramp and back down, so it wraps seamlessly
	bandIndex     = rampLen
	textIndex     = rampLen + 1
	paletteLen    = rampLen + 2
	maxLabelLines = 3
)

// RenderImage draws the picture for spec and encodes it as PNG or JPEG. The result depends only
// on spec, and its length is exactly what ImageSize reports.
func RenderImage(spec ImageSpec) ([]byte, error) {
	format, err := checkImage(spec)
	if err != nil {
		return nil, err
	}
	if format == "png" {
		return renderPNG(spec), nil
	}
	return renderJPEG(spec), nil
}

// ImageSize returns the exact length of RenderImage(spec) without drawing anything: both
// encoders write a fixed number of bytes per pixel row or per block, so the size is a formula of
// the width and height.
func ImageSize(spec ImageSpec) (int64, error) {
	format, err := checkImage(spec)
	if err != nil {
		return 0, err
	}
	if format == "png" {
		return pngSize(spec.Width, spec.Height), nil
	}
	return jpegSize(spec.Width, spec.Height), nil
}

// checkImage validates spec and returns its format as "png" or "jpeg".
func checkImage(spec ImageSpec) (string, error) {
	if spec.Width < 1 || spec.Height < 1 || spec.Width > MaxImageSide || spec.Height > MaxImageSide {
		return "", fmt.Errorf("%w: image size %dx%d is outside 1x1 to %dx%d",
			ErrInvalidSpec, spec.Width, spec.Height, MaxImageSide, MaxImageSide)
	}
	switch strings.ToLower(spec.Format) {
	case "png":
		return "png", nil
	case "jpeg", "jpg":
		return "jpeg", nil
	}
	return "", fmt.Errorf("%w: image format %q is not png or jpeg", ErrInvalidSpec, spec.Format)
}

// picture is a drawn image: one palette index per pixel, rows stride bytes apart. The stride
// may exceed the width so that the PNG writer can draw straight into its filtered-row layout.
type picture struct {
	w, h, stride int
	pix          []byte
	pal          [paletteLen]color.RGBA
}

// row returns the pixels of row y.
func (p *picture) row(y int) []byte {
	return p.pix[y*p.stride : y*p.stride+p.w]
}

// grainRows is how many different grain patterns a picture's rows draw from.
const grainRows = 1024

// drawPicture draws spec's picture into pix, whose rows are stride bytes apart (stride is at
// least the width; the bytes between rows are left alone): horizontal bands of a colour ramp,
// discs in which the ramp is shifted to other colours, if grainy a fine grain over both, and
// the label on a dark band along the bottom. (The JPEG writer makes its own grain.)
//
// The ramp varies only from top to bottom, so every row is a few runs of one colour plus grain,
// which is quick to fill.
func drawPicture(spec ImageSpec, pix []byte, stride int, grainy bool) *picture {
	w, h := spec.Width, spec.Height
	rng := splitmix64{state: spec.Seed}
	p := &picture{w: w, h: h, stride: stride, pix: pix}
	makePalette(&rng, &p.pal)

	// A phase walks up the palette's ramp and back down, so it wraps without a seam. From top
	// to bottom it covers `span` phases from a seeded offset, in a seeded direction.
	span := rng.between(phaseCycle*3/5, phaseCycle*6/5)
	offset := rng.intn(phaseCycle)
	if rng.intn(2) == 0 {
		span = -span
	}
	var ramp [phaseCycle]uint8
	for p := range ramp {
		ramp[p] = uint8(min(p, phaseCycle-1-p))
	}

	type disc struct{ cx, cy, r, shift int }
	minSide := min(w, h)
	discs := make([]disc, rng.between(3, 6))
	for i := range discs {
		discs[i] = disc{
			cx:    rng.intn(w),
			cy:    rng.intn(h),
			r:     rng.between(minSide/12, max(minSide/12, minSide/3)),
			shift: rng.between(phaseCycle/5, phaseCycle*4/5),
		}
	}

	// The grain moves a pixel one step up or down the ramp (a barely visible change, as
	// neighbouring ramp entries are close), a quarter of the time each. Each row reads the
	// pattern from a seeded offset. It is stored as the step plus one (0 to 2), so that eight
	// pixels at a time can be added to the ramp index minus one without a carry between bytes.
	grain := make([]uint8, w+grainRows)
	for i := 0; i < len(grain); i += 32 {
		bits := rng.next()
		for j := i; j < min(i+32, len(grain)); j++ {
			grain[j] = [4]uint8{1, 2, 1, 0}[bits&3]
			bits >>= 2
		}
	}
	rowMix := rng.next()

	// Each row is cut where a disc begins or ends; within a segment the phase shift is the sum
	// of the discs covering it.
	type extent struct{ x0, x1, shift int } // a disc on the current row, x1 inclusive
	extents := make([]extent, 0, len(discs))
	cuts := make([]int, 0, 2*len(discs)+2)
	for y := range h {
		extents, cuts = extents[:0], append(cuts[:0], 0, w)
		for _, d := range discs {
			dy := y - d.cy
			if dy < -d.r || dy > d.r {
				continue
			}
			half := isqrt(d.r*d.r - dy*dy)
			x0, x1 := max(0, d.cx-half), min(w-1, d.cx+half)
			extents = append(extents, extent{x0, x1, d.shift})
			cuts = append(cuts, x0, x1+1)
		}
		slices.Sort(cuts)
		phase := offset + y*span/max(1, h-1)
		row := p.row(y)
		g := grain[(uint64(y)*0x9e3779b97f4a7c15^rowMix)>>54:] // 64-54 = 10 bits: grainRows
		for i := 1; i < len(cuts); i++ {
			x0, x1 := cuts[i-1], min(cuts[i], w)
			if x0 >= x1 {
				continue
			}
			ph := phase
			for _, e := range extents {
				if e.x0 <= x0 && x0 <= e.x1 {
					ph += e.shift
				}
			}
			idx := ramp[(ph%phaseCycle+phaseCycle)%phaseCycle]
			if !grainy || idx == 0 || idx == rampLen-1 {
				// No grain at the ends of the ramp, where a step would leave it.
				fill(row[x0:x1], idx)
				continue
			}
			dst, src := row[x0:x1], g[x0:x1]
			base := idx - 1
			x := 0
			for ; x+8 <= len(dst); x += 8 {
				binary.LittleEndian.PutUint64(dst[x:], uint64(base)*0x0101010101010101+binary.LittleEndian.Uint64(src[x:]))
			}
			for ; x < len(dst); x++ {
				dst[x] = base + src[x]
			}
		}
	}
	drawLabel(p, spec.Label)
	return p
}

// isqrt returns the integer square root of n ≥ 0, exactly, without floating point.
func isqrt(n int) int {
	r := 0
	for bit := 1 << 30; bit > 0; bit >>= 2 {
		if n >= r+bit {
			n -= r + bit
			r = r>>1 + bit
		} else {
			r >>= 1
		}
	}
	return r
}

// fill sets every byte of b to v.
func fill(b []byte, v uint8) {
	for i := range b {
		b[i] = v
	}
}

// makePalette builds the ramp from three seeded colours, dark to light so text and shapes stay
// visible, then the label colours.
func makePalette(rng *splitmix64, pal *[paletteLen]color.RGBA) {
	h0 := rng.intn(1536)
	h1 := h0 + rng.between(256, 640)
	h2 := h1 + rng.between(256, 640)
	stops := [3]color.RGBA{
		hsv(h0, rng.between(150, 230), rng.between(50, 110)),
		hsv(h1, rng.between(150, 230), rng.between(160, 230)),
		hsv(h2, rng.between(60, 160), rng.between(220, 255)),
	}
	const half = rampLen / 2
	for i := range rampLen {
		a, b, t := stops[0], stops[1], i
		if i >= half {
			a, b, t = stops[1], stops[2], i-half
		}
		pal[i] = color.RGBA{
			R: lerp8(a.R, b.R, t, half-1),
			G: lerp8(a.G, b.G, t, half-1),
			B: lerp8(a.B, b.B, t, half-1),
			A: 0xff,
		}
	}
	pal[bandIndex] = color.RGBA{R: 16, G: 16, B: 20, A: 0xff}
	pal[textIndex] = color.RGBA{R: 250, G: 250, B: 240, A: 0xff}
}

// drawLabel writes label in the built-in font, scaled with the picture, on a dark band across
// the bottom. Pictures too small for one line of text are left without it.
func drawLabel(p *picture, label string) {
	text := toASCII(strings.TrimSpace(label))
	if len(text) == 0 {
		return
	}
	w, h := p.w, p.h
	scale := max(1, min(w, h)/256)
	pad := 2 * scale
	perLine := (w - 2*pad) / (cellW * scale)
	// Lines fit if the band (text plus padding) takes at most a third of the height.
	fitLines := (h/3 - 2*pad + scale) / (cellH * scale)
	lines := wrapText(text, perLine, min(maxLabelLines, fitLines))
	if len(lines) == 0 {
		return
	}
	bandH := len(lines)*cellH*scale - scale + 2*pad
	top := h - bandH
	for y := top; y < h; y++ {
		fill(p.row(y), bandIndex)
	}
	for li, line := range lines {
		y0 := top + pad + li*cellH*scale
		for ci, c := range line {
			x0 := pad + ci*cellW*scale
			for r := range glyphH {
				bits := glyphRow(c, r)
				if bits == 0 {
					continue
				}
				for col := range glyphW {
					if bits&(1<<(glyphW-1-col)) == 0 {
						continue
					}
					p.fillSquare(x0+col*scale, y0+r*scale, scale, textIndex)
				}
			}
		}
	}
}

// fillSquare paints a size×size square at (x, y) with palette index idx, clipped to the picture.
func (p *picture) fillSquare(x, y, size int, idx uint8) {
	x1, y1 := min(x+size, p.w), min(y+size, p.h)
	if x >= x1 {
		return
	}
	for yy := y; yy < y1; yy++ {
		fill(p.pix[yy*p.stride+x:yy*p.stride+x1], idx)
	}
}

// hsv converts a hue in [0, 1536) (six sectors of 256, wrapping), saturation and value in
// [0, 255] to an opaque colour, with integers only.
func hsv(h, s, v int) color.RGBA {
	h %= 1536
	sector, f := h/256, h%256
	p := v * (255 - s) / 255
	q := v * (255 - s*f/255) / 255
	t := v * (255 - s*(255-f)/255) / 255
	var r, g, b int
	switch sector {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return color.RGBA{R: uint8(r), G: uint8(g), B: uint8(b), A: 0xff}
}

// lerp8 interpolates from a (t = 0) to b (t = n).
func lerp8(a, b uint8, t, n int) uint8 {
	return uint8(int(a) + (int(b)-int(a))*t/n)
}
