package media

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strings"
	"sync"
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
// Drawing in palette indices keeps the raster at one byte per pixel, and an 8-bit PNG of a
// smooth ramp compresses to little at zlib's fastest level.
const (
	rampLen       = 240
	phaseCycle    = 2 * rampLen // a phase walks up the ramp and back down, so it wraps seamlessly
	bandIndex     = rampLen
	textIndex     = rampLen + 1
	paletteLen    = rampLen + 2
	maxLabelLines = 3
)

// RenderImage draws the picture for spec and encodes it as PNG or JPEG. The result depends only
// on spec.
func RenderImage(spec ImageSpec) ([]byte, error) {
	if spec.Width < 1 || spec.Height < 1 || spec.Width > MaxImageSide || spec.Height > MaxImageSide {
		return nil, fmt.Errorf("%w: image size %dx%d is outside 1x1 to %dx%d",
			ErrInvalidSpec, spec.Width, spec.Height, MaxImageSide, MaxImageSide)
	}
	format := strings.ToLower(spec.Format)
	if format != "png" && format != "jpeg" && format != "jpg" {
		return nil, fmt.Errorf("%w: image format %q is not png or jpeg", ErrInvalidSpec, spec.Format)
	}
	img := drawPicture(spec)
	var buf bytes.Buffer
	if format == "png" {
		// A smooth paletted picture deflates to about a tenth of a byte per pixel.
		buf.Grow(spec.Width*spec.Height/8 + 1024)
		enc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: pngBuffers}
		if err := enc.Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("media: encode png: %w", err)
		}
		return buf.Bytes(), nil
	}
	buf.Grow(spec.Width*spec.Height/4 + 1024)
	// image/jpeg has a fast path for *image.YCbCr; anything else goes pixel by pixel through
	// the color.Color interface, several times slower.
	if err := jpeg.Encode(&buf, toYCbCr(img), &jpeg.Options{Quality: 85}); err != nil {
		return nil, fmt.Errorf("media: encode jpeg: %w", err)
	}
	return buf.Bytes(), nil
}

// pngBuffers recycles the PNG encoder's zlib writer and row buffers (about a megabyte per
// encode) between renders. It is the package's only mutable package-level variable, on purpose:
// a sync.Pool is safe for concurrent use and holds nothing a caller can observe, so it does not
// make results depend on what ran before.
var pngBuffers = &pngBufferPool{}

// pngBufferPool adapts a sync.Pool to png.EncoderBufferPool.
type pngBufferPool struct{ pool sync.Pool }

// Get returns a recycled buffer, or nil to have the encoder allocate one.
func (p *pngBufferPool) Get() *png.EncoderBuffer {
	b, _ := p.pool.Get().(*png.EncoderBuffer)
	return b
}

// Put hands a buffer back for reuse.
func (p *pngBufferPool) Put(b *png.EncoderBuffer) { p.pool.Put(b) }

// drawPicture renders spec's picture: horizontal bands of a colour ramp, discs in which the ramp
// is shifted to other colours, and the label on a dark band along the bottom.
//
// The ramp varies only from top to bottom, so every row is a few runs of one colour. Besides
// being quick to fill, that is what keeps PNG encoding fast: zlib's fastest level finds only the
// nearest earlier match, so short runs (as a tilted gradient has) cost it a token every few
// bytes, while long runs cost one per 258.
func drawPicture(spec ImageSpec) *image.Paletted {
	w, h := spec.Width, spec.Height
	rng := splitmix64{state: spec.Seed}
	img := image.NewPaletted(image.Rect(0, 0, w, h), makePalette(&rng))

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
			half := int(math.Sqrt(float64(d.r*d.r - dy*dy)))
			x0, x1 := max(0, d.cx-half), min(w-1, d.cx+half)
			extents = append(extents, extent{x0, x1, d.shift})
			cuts = append(cuts, x0, x1+1)
		}
		slices.Sort(cuts)
		phase := offset + y*span/max(1, h-1)
		row := img.Pix[y*img.Stride : y*img.Stride+w]
		for i := 1; i < len(cuts); i++ {
			x0, x1 := cuts[i-1], min(cuts[i], w)
			if x0 >= x1 {
				continue
			}
			p := phase
			for _, e := range extents {
				if e.x0 <= x0 && x0 <= e.x1 {
					p += e.shift
				}
			}
			idx := ramp[(p%phaseCycle+phaseCycle)%phaseCycle]
			for x := x0; x < x1; x++ {
				row[x] = idx
			}
		}
	}
	drawLabel(img, spec.Label)
	return img
}

// makePalette builds the ramp from three seeded colours, dark to light so text and shapes stay
// visible, then the label colours.
func makePalette(rng *splitmix64) color.Palette {
	h0 := rng.intn(1536)
	h1 := h0 + rng.between(256, 640)
	h2 := h1 + rng.between(256, 640)
	stops := [3]color.RGBA{
		hsv(h0, rng.between(150, 230), rng.between(50, 110)),
		hsv(h1, rng.between(150, 230), rng.between(160, 230)),
		hsv(h2, rng.between(60, 160), rng.between(220, 255)),
	}
	// The palette holds pointers into one array: storing color.RGBA values in the interface
	// slice would allocate once per entry.
	colours := make([]color.RGBA, paletteLen)
	const half = rampLen / 2
	for i := range rampLen {
		a, b, t := stops[0], stops[1], i
		if i >= half {
			a, b, t = stops[1], stops[2], i-half
		}
		colours[i] = color.RGBA{
			R: lerp8(a.R, b.R, t, half-1),
			G: lerp8(a.G, b.G, t, half-1),
			B: lerp8(a.B, b.B, t, half-1),
			A: 0xff,
		}
	}
	colours[bandIndex] = color.RGBA{R: 16, G: 16, B: 20, A: 0xff}
	colours[textIndex] = color.RGBA{R: 250, G: 250, B: 240, A: 0xff}
	pal := make(color.Palette, paletteLen)
	for i := range colours {
		pal[i] = &colours[i]
	}
	return pal
}

// drawLabel writes label in the built-in font, scaled with the picture, on a dark band across
// the bottom. Pictures too small for one line of text are left without it.
func drawLabel(img *image.Paletted, label string) {
	text := toASCII(strings.TrimSpace(label))
	if len(text) == 0 {
		return
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
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
		row := img.Pix[y*img.Stride : y*img.Stride+w]
		for x := range row {
			row[x] = bandIndex
		}
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
					fillRect(img, x0+col*scale, y0+r*scale, scale, textIndex)
				}
			}
		}
	}
}

// fillRect paints a size×size square at (x, y) with palette index idx, clipped to the picture.
func fillRect(img *image.Paletted, x, y, size int, idx uint8) {
	x1, y1 := min(x+size, img.Rect.Dx()), min(y+size, img.Rect.Dy())
	for yy := y; yy < y1; yy++ {
		row := img.Pix[yy*img.Stride:]
		for xx := x; xx < x1; xx++ {
			row[xx] = idx
		}
	}
}

// toYCbCr converts the paletted picture to 4:2:0 YCbCr for the JPEG encoder, taking each 2×2
// block's chroma from its top-left pixel (the picture is smooth, and the label has no chroma).
func toYCbCr(img *image.Paletted) *image.YCbCr {
	var ys, cbs, crs [256]uint8
	for i, c := range img.Palette {
		r, g, b, _ := c.RGBA()
		ys[i], cbs[i], crs[i] = color.RGBToYCbCr(uint8(r>>8), uint8(g>>8), uint8(b>>8))
	}
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewYCbCr(img.Rect, image.YCbCrSubsampleRatio420)
	for y := range h {
		src := img.Pix[y*img.Stride : y*img.Stride+w]
		dst := out.Y[y*out.YStride : y*out.YStride+w]
		for x, idx := range src {
			dst[x] = ys[idx]
		}
		if y%2 != 0 {
			continue
		}
		cy := y / 2
		cb := out.Cb[cy*out.CStride:]
		cr := out.Cr[cy*out.CStride:]
		for x := 0; x < w; x += 2 {
			idx := src[x]
			cb[x/2], cr[x/2] = cbs[idx], crs[idx]
		}
	}
	return out
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
