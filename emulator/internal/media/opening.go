package media

import (
	"fmt"
	"image"
)

// An opening frame is the picture an image-to-video output opens on: the input image scaled to
// the video's size. It is kept at a quarter of the video's side (OpeningScale), in the video's
// own colour space: a luma plane of OpeningSide(w)×OpeningSide(h) samples, then the Cb and Cr
// planes at half that, rounded up, every sample in the video range (16 to 235, 16 to 240). So
// the video's file follows from its spec, and a job keeps some 86 KiB for a 720p opening
// rather than the 1.3 MiB of the whole picture. The first frame of the video is that raster
// drawn back at full size, coded losslessly (H.264 I_PCM macroblocks), before the fixture's
// frames.

// OpeningScale is how much smaller than its video an opening frame is kept, in each side.
const OpeningScale = 4

// OpeningSide is the side of an opening raster's luma plane for a video side of n pixels.
func OpeningSide(n int) int { return (n + OpeningScale - 1) / OpeningScale }

// OpeningLen is the length of the opening raster of a w×h video.
func OpeningLen(w, h int) int {
	cw, ch := OpeningSide(w), OpeningSide(h)
	return cw*ch + 2*((cw+1)/2)*((ch+1)/2)
}

// NewOpening scales img to the opening raster of a w×h video (stretched to fill it, as a
// service's first frame fills the video), sampling each raster cell at four points.
func NewOpening(img image.Image, w, h int) string {
	b := img.Bounds()
	cw, ch := OpeningSide(w), OpeningSide(h)
	sw, sh := b.Dx(), b.Dy()
	if sw < 1 || sh < 1 {
		return ""
	}
	rgb := make([][3]int32, cw*ch) // the cells' colours, averaged, kept for the chroma planes
	out := make([]byte, OpeningLen(w, h))
	for y := range ch {
		for x := range cw {
			var sum [3]int32
			for _, p := range [4][2]int{{1, 1}, {3, 1}, {1, 3}, {3, 3}} {
				// The point at p quarters of the cell, in the source's pixels.
				px := b.Min.X + min(sw-1, ((4*x+p[0])*sw)/(4*cw))
				py := b.Min.Y + min(sh-1, ((4*y+p[1])*sh)/(4*ch))
				r, g, bl := rgbAt(img, px, py)
				sum[0] += r
				sum[1] += g
				sum[2] += bl
			}
			c := [3]int32{(sum[0] + 2) / 4, (sum[1] + 2) / 4, (sum[2] + 2) / 4}
			rgb[y*cw+x] = c
			out[y*cw+x] = byte(16 + (66*c[0]+129*c[1]+25*c[2]+128)>>8) // BT.601, video range
		}
	}
	cbw, cbh := (cw+1)/2, (ch+1)/2
	cb, cr := out[cw*ch:cw*ch+cbw*cbh], out[cw*ch+cbw*cbh:]
	for y := range cbh {
		for x := range cbw {
			var sum [3]int32
			n := int32(0)
			for _, d := range [4][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				if xx, yy := 2*x+d[0], 2*y+d[1]; xx < cw && yy < ch {
					c := rgb[yy*cw+xx]
					sum[0], sum[1], sum[2] = sum[0]+c[0], sum[1]+c[1], sum[2]+c[2]
					n++
				}
			}
			r, g, bl := sum[0]/n, sum[1]/n, sum[2]/n
			cb[y*cbw+x] = byte(128 + (-38*r-74*g+112*bl+128)>>8)
			cr[y*cbw+x] = byte(128 + (112*r-94*g-18*bl+128)>>8)
		}
	}
	return string(out)
}

// rgbAt is the 8-bit colour of a pixel, read straight from the decoders' usual image types
// (without the allocation At's colour costs) and through At for the others.
func rgbAt(img image.Image, x, y int) (r, g, b int32) {
	switch m := img.(type) {
	case *image.NRGBA:
		p := m.Pix[m.PixOffset(x, y):]
		a := int32(p[3]) // premultiplied here, as At's RGBA would be
		return int32(p[0]) * a / 255, int32(p[1]) * a / 255, int32(p[2]) * a / 255
	case *image.RGBA:
		p := m.Pix[m.PixOffset(x, y):]
		return int32(p[0]), int32(p[1]), int32(p[2])
	case *image.Paletted:
		if i := int(m.Pix[m.PixOffset(x, y)]); i < len(m.Palette) {
			cr, cg, cb, _ := m.Palette[i].RGBA()
			return int32(cr >> 8), int32(cg >> 8), int32(cb >> 8)
		}
		return 0, 0, 0
	}
	cr, cg, cb, _ := img.At(x, y).RGBA()
	return int32(cr >> 8), int32(cg >> 8), int32(cb >> 8)
}

// checkOpening refuses an opening raster that is not a w×h video's.
func checkOpening(opening string, w, h int) error {
	if opening != "" && len(opening) != OpeningLen(w, h) {
		return fmt.Errorf("%w: an opening frame of %d bytes for a %dx%d video, which needs %d", ErrInvalidSpec, len(opening), w, h, OpeningLen(w, h))
	}
	return nil
}

// bitWriter writes the fields of an H.264 RBSP, most significant bit first.
type bitWriter struct {
	b    []byte
	bits int // bits used of the last byte, 0 to 7; 0 when byte-aligned
}

// u writes the n low bits of v.
func (w *bitWriter) u(n int, v uint32) {
	for i := n - 1; i >= 0; i-- {
		if w.bits == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (7 - w.bits)
		w.bits = (w.bits + 1) % 8
	}
}

// ue writes an unsigned exp-Golomb code.
func (w *bitWriter) ue(v uint32) {
	n := 0
	for (v+1)>>n > 1 {
		n++
	}
	w.u(n, 0)
	w.u(n+1, v+1)
}

// align writes zero bits up to the next byte.
func (w *bitWriter) align() {
	w.bits = 0
}

// trailing writes rbsp_trailing_bits: a one, then zeros to the byte.
func (w *bitWriter) trailing() {
	w.u(1, 1)
	w.align()
}

// The parameter sets of an opening frame: ids of their own, so the fixture's, which its frames
// name, stay as they are.
const (
	openingSPSID = 1
	openingPPSID = 1
	mbPCM        = 25 // mb_type I_PCM in an I slice (H.264 table 7-11)
)

// openingSPS is the sequence parameter set of a w×h opening frame: the fixture's profile and
// level, so one sample entry holds both, and the frame cropped to the video's size.
func openingSPS(fixtureSPS []byte, w, h int) []byte {
	bw := &bitWriter{b: []byte{0x67, fixtureSPS[1], fixtureSPS[2], fixtureSPS[3]}} // nal_ref_idc 3, SPS
	bw.ue(openingSPSID)
	switch fixtureSPS[1] {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		bw.ue(1)   // chroma_format_idc: 4:2:0
		bw.ue(0)   // bit_depth_luma_minus8
		bw.ue(0)   // bit_depth_chroma_minus8
		bw.u(1, 0) // qpprime_y_zero_transform_bypass_flag
		bw.u(1, 0) // seq_scaling_matrix_present_flag
	}
	bw.ue(0)   // log2_max_frame_num_minus4
	bw.ue(2)   // pic_order_cnt_type: output order is decoding order
	bw.ue(1)   // max_num_ref_frames
	bw.u(1, 0) // gaps_in_frame_num_value_allowed_flag
	mbw, mbh := (w+15)/16, (h+15)/16
	bw.ue(uint32(mbw - 1))
	bw.ue(uint32(mbh - 1))
	bw.u(1, 1) // frame_mbs_only_flag
	bw.u(1, 1) // direct_8x8_inference_flag
	if cropR, cropB := (mbw*16-w)/2, (mbh*16-h)/2; cropR > 0 || cropB > 0 {
		bw.u(1, 1) // frame_cropping_flag, in 4:2:0 units of two pixels
		bw.ue(0)
		bw.ue(uint32(cropR))
		bw.ue(0)
		bw.ue(uint32(cropB))
	} else {
		bw.u(1, 0)
	}
	bw.u(1, 0) // vui_parameters_present_flag
	bw.trailing()
	return escapeRBSP(bw.b)
}

// openingPPS is the picture parameter set of an opening frame: CAVLC, which I_PCM needs no
// more than, and deblocking controlled by the slice (which turns it off).
func openingPPS() []byte {
	bw := &bitWriter{b: []byte{0x68}} // nal_ref_idc 3, PPS
	bw.ue(openingPPSID)
	bw.ue(openingSPSID)
	bw.u(1, 0) // entropy_coding_mode_flag: CAVLC
	bw.u(1, 0) // bottom_field_pic_order_in_frame_present_flag
	bw.ue(0)   // num_slice_groups_minus1
	bw.ue(0)   // num_ref_idx_l0_default_active_minus1
	bw.ue(0)   // num_ref_idx_l1_default_active_minus1
	bw.u(1, 0) // weighted_pred_flag
	bw.u(2, 0) // weighted_bipred_idc
	bw.ue(0)   // pic_init_qp_minus26 (se 0)
	bw.ue(0)   // pic_init_qs_minus26 (se 0)
	bw.ue(0)   // chroma_qp_index_offset (se 0)
	bw.u(1, 1) // deblocking_filter_control_present_flag
	bw.u(1, 0) // constrained_intra_pred_flag
	bw.u(1, 0) // redundant_pic_cnt_present_flag
	bw.trailing()
	return escapeRBSP(bw.b)
}

// openingHeader is the opening slice's NAL header, slice header and first macroblock's type,
// escaped and byte-aligned: what comes before the first PCM sample. It depends on nothing but
// the fixed fields, so the slice's length follows from the frame's size alone.
func openingHeader() []byte {
	bw := &bitWriter{b: []byte{0x65}} // nal_ref_idc 3, IDR slice
	bw.ue(0)                          // first_mb_in_slice
	bw.ue(7)                          // slice_type: I, and every slice of the picture is
	bw.ue(openingPPSID)
	bw.u(4, 0) // frame_num
	// idr_pic_id differs from the fixture's (0), whose IDR picture follows this one.
	bw.ue(1)
	bw.u(1, 0) // no_output_of_prior_pics_flag
	bw.u(1, 0) // long_term_reference_flag
	bw.ue(0)   // slice_qp_delta (se 0)
	bw.ue(1)   // disable_deblocking_filter_idc: off, so the picture is exactly the raster
	bw.ue(mbPCM)
	bw.align() // pcm_alignment_zero_bits
	return escapeRBSP(bw.b)
}

// mbPCMPrefix is every macroblock's but the first: mb_type I_PCM, then the alignment zeros.
// The samples are 16 or more, so neither this nor they ever need an emulation prevention byte.
var mbPCMPrefix = [2]byte{0x0d, 0x00}

// openingSliceLen is the length of the opening slice of a w×h video, as openingSample writes it
// after its 4-byte length.
func openingSliceLen(w, h int) int {
	mbs := ((w + 15) / 16) * ((h + 15) / 16)
	return len(openingHeader()) + mbs*384 + (mbs-1)*len(mbPCMPrefix) + 1
}

// openingSampleLen is the length of the opening frame's MP4 sample.
func openingSampleLen(w, h int) int { return 4 + openingSliceLen(w, h) }

// openingSample codes the opening raster of a w×h video as one IDR picture of I_PCM
// macroblocks, in the MP4 sample format: the raster drawn at full size, each raster sample
// covering OpeningScale×OpeningScale luma pixels (its chroma sample as many chroma pixels).
func openingSample(opening string, w, h int) []byte {
	cw, ch := OpeningSide(w), OpeningSide(h)
	cbw, cbh := (cw+1)/2, (ch+1)/2
	luma := func(x, y int) byte { return opening[min(y/OpeningScale, ch-1)*cw+min(x/OpeningScale, cw-1)] }
	chroma := func(plane, x, y int) byte {
		return opening[cw*ch+plane*cbw*cbh+min(y/OpeningScale, cbh-1)*cbw+min(x/OpeningScale, cbw-1)]
	}
	n := openingSliceLen(w, h)
	out := make([]byte, 0, 4+n)
	out = append(out, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	out = append(out, openingHeader()...)
	mbw, mbh := (w+15)/16, (h+15)/16
	for my := range mbh {
		for mx := range mbw {
			if mx > 0 || my > 0 {
				out = append(out, mbPCMPrefix[:]...)
			}
			for y := range 16 {
				for x := range 16 {
					out = append(out, luma(min(mx*16+x, w-1), min(my*16+y, h-1)))
				}
			}
			for plane := range 2 {
				for y := range 8 {
					for x := range 8 {
						out = append(out, chroma(plane, min(mx*8+x, (w-1)/2), min(my*8+y, (h-1)/2)))
					}
				}
			}
		}
	}
	return append(out, 0x80) // rbsp_slice_trailing_bits
}

// escapeRBSP inserts the emulation prevention bytes a NAL unit needs (a 03 after 00 00 before
// a byte of 03 or less).
func escapeRBSP(rbsp []byte) []byte {
	out := make([]byte, 0, len(rbsp)+len(rbsp)/64)
	zeros := 0
	for _, c := range rbsp {
		if zeros >= 2 && c <= 3 {
			out = append(out, 3)
			zeros = 0
		}
		out = append(out, c)
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
	}
	return out
}
