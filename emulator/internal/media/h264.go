package media

import (
	"bytes"
	"errors"
	"fmt"
)

// H.264 NAL unit types this package cares about (ITU-T H.264 table 7-1).
const (
	nalSlice = 1 // coded slice of a non-IDR picture
	nalIDR   = 5 // coded slice of an IDR picture
	nalSPS   = 7
	nalPPS   = 8
)

// gop is a parsed video fixture: its parameter sets and its frames, each frame already in the
// MP4 sample format (every NAL unit preceded by its 4-byte big-endian length).
type gop struct {
	sps, pps      []byte
	frames        [][]byte
	sync          []bool // frame i is an IDR picture
	width, height int    // the display size the SPS declares, after cropping
}

// parseAnnexB reads a raw H.264 elementary stream (Annex B start codes) holding one SPS, one PPS
// and a run of frames starting with an IDR picture. SEI, access unit delimiters and other NAL
// units are dropped: MP4 carries parameter sets in the sample entry, and nothing else is needed
// to decode.
func parseAnnexB(stream []byte) (*gop, error) {
	g := &gop{}
	for _, nal := range splitAnnexB(stream) {
		switch nal[0] & 0x1f {
		case nalSPS:
			if g.sps == nil {
				g.sps = nal
			}
		case nalPPS:
			if g.pps == nil {
				g.pps = nal
			}
		case nalSlice, nalIDR:
			// A slice whose first_mb_in_slice is 0 (ue(v) "1") starts a new picture.
			if len(nal) < 2 {
				return nil, errors.New("truncated slice")
			}
			idr := nal[0]&0x1f == nalIDR
			if nal[1]&0x80 != 0 || len(g.frames) == 0 {
				g.frames = append(g.frames, nil)
				g.sync = append(g.sync, idr)
			}
			last := len(g.frames) - 1
			g.frames[last] = appendLengthPrefixed(g.frames[last], nal)
		}
	}
	switch {
	case g.sps == nil || g.pps == nil:
		return nil, errors.New("no SPS or PPS")
	case len(g.frames) == 0:
		return nil, errors.New("no frames")
	case !g.sync[0]:
		return nil, errors.New("first frame is not an IDR picture")
	}
	var err error
	if g.width, g.height, err = spsSize(g.sps); err != nil {
		return nil, fmt.Errorf("SPS: %w", err)
	}
	return g, nil
}

// splitAnnexB returns the NAL units between start codes (00 00 01 or 00 00 00 01), without
// trailing zero bytes. The slices share stream's memory.
func splitAnnexB(stream []byte) [][]byte {
	var nals [][]byte
	startCode := []byte{0, 0, 1}
	i := bytes.Index(stream, startCode)
	for i >= 0 {
		begin := i + 3
		next := bytes.Index(stream[begin:], startCode)
		end := len(stream)
		if next >= 0 {
			end = begin + next
		}
		nal := bytes.TrimRight(stream[begin:end], "\x00")
		if len(nal) > 0 {
			nals = append(nals, nal)
		}
		if next < 0 {
			break
		}
		i = begin + next
	}
	return nals
}

// appendLengthPrefixed appends nal preceded by its length as 4 big-endian bytes.
func appendLengthPrefixed(b, nal []byte) []byte {
	n := len(nal)
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, nal...)
}

// bitReader reads the exp-Golomb coded fields of an H.264 RBSP (emulation prevention removed).
type bitReader struct {
	b   []byte
	pos int // in bits
	err error
}

// u reads an n-bit unsigned field.
func (r *bitReader) u(n int) uint32 {
	var v uint32
	for range n {
		if r.pos >= 8*len(r.b) {
			r.err = errors.New("truncated")
			return 0
		}
		v = v<<1 | uint32(r.b[r.pos/8]>>(7-r.pos%8))&1
		r.pos++
	}
	return v
}

// ue reads an unsigned exp-Golomb field.
func (r *bitReader) ue() uint32 {
	zeros := 0
	for r.u(1) == 0 {
		if r.err != nil || zeros > 31 {
			r.err = errors.New("bad exp-Golomb code")
			return 0
		}
		zeros++
	}
	return (1<<zeros - 1) + r.u(zeros)
}

// se reads a signed exp-Golomb field.
func (r *bitReader) se() int32 {
	k := r.ue()
	if k%2 == 1 {
		return int32((k + 1) / 2)
	}
	return -int32(k / 2)
}

// unescapeRBSP removes the emulation prevention bytes (the 03 in 00 00 03).
func unescapeRBSP(nal []byte) []byte {
	out := make([]byte, 0, len(nal))
	zeros := 0
	for _, c := range nal {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		out = append(out, c)
	}
	return out
}

// spsSize decodes the picture size from a sequence parameter set NAL unit (H.264 7.3.2.1.1),
// applying the frame cropping that lets a stream of whole macroblocks show, say, 1080 lines.
func spsSize(sps []byte) (width, height int, err error) {
	r := &bitReader{b: unescapeRBSP(sps[1:])}
	profile := r.u(8)
	r.u(16) // constraint flags, level_idc
	r.ue()  // seq_parameter_set_id
	chromaFormat := uint32(1)
	switch profile {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		chromaFormat = r.ue()
		if chromaFormat == 3 {
			r.u(1) // separate_colour_plane_flag
		}
		r.ue()           // bit_depth_luma_minus8
		r.ue()           // bit_depth_chroma_minus8
		r.u(1)           // qpprime_y_zero_transform_bypass_flag
		if r.u(1) == 1 { // seq_scaling_matrix_present_flag
			lists := 8
			if chromaFormat == 3 {
				lists = 12
			}
			for i := range lists {
				if r.u(1) == 1 {
					size := 16
					if i >= 6 {
						size = 64
					}
					skipScalingList(r, size)
				}
			}
		}
	}
	r.ue()          // log2_max_frame_num_minus4
	switch r.ue() { // pic_order_cnt_type
	case 0:
		r.ue() // log2_max_pic_order_cnt_lsb_minus4
	case 1:
		r.u(1) // delta_pic_order_always_zero_flag
		r.se() // offset_for_non_ref_pic
		r.se() // offset_for_top_to_bottom_field
		cycle := r.ue()
		for range min(cycle, 255) {
			r.se()
		}
	}
	r.ue() // max_num_ref_frames
	r.u(1) // gaps_in_frame_num_value_allowed_flag
	widthMBs := int(r.ue()) + 1
	heightMapUnits := int(r.ue()) + 1
	frameMBsOnly := int(r.u(1))
	if frameMBsOnly == 0 {
		r.u(1) // mb_adaptive_frame_field_flag
	}
	r.u(1) // direct_8x8_inference_flag
	var cropL, cropR, cropT, cropB int
	if r.u(1) == 1 {
		cropL, cropR, cropT, cropB = int(r.ue()), int(r.ue()), int(r.ue()), int(r.ue())
	}
	if r.err != nil {
		return 0, 0, r.err
	}
	// Crop units (H.264 equations 7-19 to 7-22).
	unitX, unitY := 1, 2-frameMBsOnly
	switch chromaFormat {
	case 1:
		unitX, unitY = 2, 2*(2-frameMBsOnly)
	case 2:
		unitX = 2
	}
	width = widthMBs*16 - unitX*(cropL+cropR)
	height = (2-frameMBsOnly)*heightMapUnits*16 - unitY*(cropT+cropB)
	if width <= 0 || height <= 0 {
		return 0, 0, fmt.Errorf("bad size %dx%d", width, height)
	}
	return width, height, nil
}

// skipScalingList reads past one scaling_list() of the given size (H.264 7.3.2.1.1.1).
func skipScalingList(r *bitReader, size int) {
	last, next := int32(8), int32(8)
	for range size {
		if next != 0 {
			next = (last + r.se() + 256) % 256
		}
		if next != 0 {
			last = next
		}
	}
}
