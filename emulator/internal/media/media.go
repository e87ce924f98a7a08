// Package media renders the files a succeeded job serves: PNG and JPEG images, WAV audio and MP4
// (H.264) video. Every file is real and decodable, has exactly the size or duration asked for, and
// is a pure function of its spec, so the same seed yields the same bytes on every run and machine
// (all arithmetic is integer, and every encoder is the package's own).
//
// A file's length follows from its spec without making it (Size), so a job can state
// size_bytes when it is created and make the bytes only when they are downloaded: PNGs are
// stored uncompressed, JPEGs are coded with a fixed number of bits per block, WAV is PCM, and
// an MP4's tables and samples are counted from its fixture. Rendering is cheap enough to do on
// demand: images are drawn into an 8-bit paletted raster with integer arithmetic, audio is
// synthesised with a fixed-point oscillator, and video is assembled from tiny pre-encoded H.264
// fixtures that are repeated and re-timed into a new MP4. Cache keeps made files within a
// byte budget and makes each at most once at a time.
package media

import (
	"errors"
	"strings"
)

// ErrInvalidSpec is wrapped by every error about a spec the package cannot render (a size,
// format or duration out of range). Callers normally validate input before it gets here, so
// such an error means the two disagree.
var ErrInvalidSpec = errors.New("media: invalid spec")

// ContentType returns the MIME type served for an output format ("png", "jpeg" or "jpg", "wav",
// "mp4"), or "application/octet-stream" for a format this package does not produce.
func ContentType(format string) string {
	switch strings.ToLower(format) {
	case "png":
		return "image/png"
	case "jpeg", "jpg":
		return "image/jpeg"
	case "wav":
		return "audio/wav"
	case "mp4":
		return "video/mp4"
	default:
		return "application/octet-stream"
	}
}

// splitmix64 is a tiny, well-mixed generator: it turns a job's seed into the stream of choices
// (colours, shapes, notes) that make each output distinct. It is written out here rather than
// taken from math/rand so the sequence can never change under us between Go releases.
type splitmix64 struct{ state uint64 }

// next returns the next 64 pseudo-random bits.
func (r *splitmix64) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n); n must be positive. The modulo bias is irrelevant for picking
// colours and notes.
func (r *splitmix64) intn(n int) int {
	return int(r.next() % uint64(n))
}

// between returns a number in [lo, hi].
func (r *splitmix64) between(lo, hi int) int {
	return lo + r.intn(hi-lo+1)
}

// isin approximates sin(2π·phase/2³²) in Q15 fixed point (±32767), using a parabola with one
// correction step (error below 0.1 %). It is integer-only so that audio and image bytes are
// identical on every architecture: Go may fuse floating-point multiply-adds on some of them.
func isin(phase uint32) int32 {
	// x in Q15 over [-1, 1) stands for [-π, π).
	x := int32(phase) >> 16
	ax := x
	if ax < 0 {
		ax = -ax
	}
	// y = 4x(1-|x|), the parabola through the sine's zeros and extremes.
	y := (4 * x * (32768 - ax)) >> 15
	ay := y
	if ay < 0 {
		ay = -ay
	}
	// y += 0.225 (y|y| - y) pulls the parabola onto the sine; 14746/65536 is 0.225.
	y += int32((int64(14746) * int64((y*ay)>>15-y)) >> 16)
	if y > 32767 {
		y = 32767
	} else if y < -32767 {
		y = -32767
	}
	return y
}
