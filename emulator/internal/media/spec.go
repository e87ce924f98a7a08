package media

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// Spec describes any output file. Format decides what it is and which fields matter: images
// ("png", "jpeg" or "jpg") use Width, Height, Seed and Label; audio ("wav") uses Duration,
// SampleRate and Seed; video ("mp4") uses Width, Height and Duration. A job can record a Spec
// when it is created, state its size with Maker.Size, and make the bytes with Maker.Render
// when they are downloaded.
type Spec struct {
	// Format is "png", "jpeg", "jpg", "wav" or "mp4", in any case.
	Format string
	// Width and Height are the pixel size of an image (each 1 to MaxImageSide) or a video (one
	// of VideoSizes).
	Width, Height int
	// Duration is the length of audio (up to MaxAudioDuration) or video (up to
	// MaxVideoDuration).
	Duration time.Duration
	// SampleRate is the audio's rate in Hz; 0 means DefaultSampleRate.
	SampleRate int
	// Seed chooses what an image or audio file contains.
	Seed uint64
	// Label is drawn into an image (see ImageSpec.Label).
	Label string
	// Opening is the raster a video opens on (VideoSpec.Opening), or "".
	Opening string
}

// Image returns the image part of s.
func (s Spec) Image() ImageSpec {
	return ImageSpec{Width: s.Width, Height: s.Height, Format: s.Format, Seed: s.Seed, Label: s.Label}
}

// Audio returns the audio part of s.
func (s Spec) Audio() AudioSpec {
	return AudioSpec{Duration: s.Duration, SampleRate: s.SampleRate, Seed: s.Seed}
}

// Video returns the video part of s.
func (s Spec) Video() VideoSpec {
	return VideoSpec{Width: s.Width, Height: s.Height, Duration: s.Duration, Seed: s.Seed, Opening: s.Opening}
}

// Maker sizes and renders files of every format. It keeps the video fixtures it has parsed, so
// sizing a video costs microseconds after the first. It is safe for concurrent use.
type Maker struct {
	fixtures fs.FS

	mu   sync.Mutex
	gops map[[2]int]*gop // parsed fixtures by size; a failed parse is not kept
}

// NewMaker returns a Maker that reads video fixtures from fixtures (media/video/WxH.h264).
func NewMaker(fixtures fs.FS) *Maker {
	return &Maker{fixtures: fixtures, gops: map[[2]int]*gop{}}
}

// Size returns the exact length Render(spec) has, without rendering. It fails, with an error
// wrapping ErrInvalidSpec, for exactly the specs Render refuses, or when a video fixture cannot
// be read.
func (m *Maker) Size(spec Spec) (int64, error) {
	switch format := strings.ToLower(spec.Format); format {
	case "png", "jpeg", "jpg":
		return ImageSize(spec.Image())
	case "wav":
		return WAVSize(spec.Audio())
	case "mp4":
		g, ticks, err := m.video(spec.Video())
		if err != nil {
			return 0, err
		}
		return mp4Size(g, ticks, opening(g, spec.Opening, false)), nil
	}
	return 0, unknownFormat(spec.Format)
}

// Render makes the file spec describes. The same spec always gives the same bytes, exactly
// Size(spec) of them, in a slice whose capacity is its length.
func (m *Maker) Render(spec Spec) ([]byte, error) {
	switch format := strings.ToLower(spec.Format); format {
	case "png", "jpeg", "jpg":
		return RenderImage(spec.Image())
	case "wav":
		return RenderWAV(spec.Audio())
	case "mp4":
		g, ticks, err := m.video(spec.Video())
		if err != nil {
			return nil, err
		}
		return renderMP4(g, ticks, opening(g, spec.Opening, true)), nil
	}
	return nil, unknownFormat(spec.Format)
}

// video checks a video spec and returns the fixture for its size, parsed on first use, and its
// duration in ticks.
func (m *Maker) video(spec VideoSpec) (*gop, int, error) {
	ticks, err := videoTicks(spec)
	if err != nil {
		return nil, 0, err
	}
	if err := checkOpening(spec.Opening, spec.Width, spec.Height); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	size := [2]int{spec.Width, spec.Height}
	if g, ok := m.gops[size]; ok {
		return g, ticks, nil
	}
	g, err := loadGOP(m.fixtures, spec.Width, spec.Height)
	if err != nil {
		return nil, 0, err
	}
	m.gops[size] = g
	return g, ticks, nil
}

// unknownFormat is the error for a format no writer handles.
func unknownFormat(format string) error {
	return fmt.Errorf("%w: format %q is not png, jpeg, wav or mp4", ErrInvalidSpec, format)
}
