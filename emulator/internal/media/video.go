package media

import (
	"fmt"
	"io/fs"
	"time"
)

// MaxVideoDuration is the longest video RenderMP4 produces.
const MaxVideoDuration = 60 * time.Second

// VideoSpec describes one video output.
type VideoSpec struct {
	// Width and Height must be one of VideoSizes.
	Width, Height int
	// Duration is the exact length, to 1/24000 s; 0 < Duration <= MaxVideoDuration.
	Duration time.Duration
	// Seed is accepted for symmetry with the other specs; there is one fixture per size, so it
	// does not change the video.
	Seed uint64
}

// Video timing: the fixtures are encoded at 24 fps, and every frame but the last lasts exactly
// one frame period; the last is shortened so the track ends at the requested duration.
const (
	videoFPS       = 24
	videoTimescale = 24000 // ticks per second of the video track
	frameTicks     = videoTimescale / videoFPS
)

// videoFixtureDir is where RenderMP4 looks for fixtures, relative to the fixtures root.
const videoFixtureDir = "media/video"

// VideoSizes lists every width×height RenderMP4 supports: the aspect ratios 21:9, 16:9, 4:3,
// 1:1, 3:4, 9:16 and 9:21 with a short side of 480, 720 or 1080, the long side rounded to the
// nearest even number (16:9 at 480 is 854×480). The fixtures cover exactly these sizes.
func VideoSizes() [][2]int {
	ratios := [...][2]int{{21, 9}, {16, 9}, {4, 3}, {1, 1}, {3, 4}, {9, 16}, {9, 21}}
	sides := [...]int{480, 720, 1080}
	sizes := make([][2]int, 0, len(ratios)*len(sides))
	for _, s := range sides {
		for _, r := range ratios {
			n, d := r[0], r[1]
			if n >= d {
				sizes = append(sizes, [2]int{evenRound(s*n, d), s})
			} else {
				sizes = append(sizes, [2]int{s, evenRound(s*d, n)})
			}
		}
	}
	return sizes
}

// evenRound returns num/den rounded to the nearest even integer.
func evenRound(num, den int) int {
	return (num + den) / (2 * den) * 2
}

// RenderMP4 builds an H.264 MP4 of spec's size and duration from the fixture for that size
// (media/video/WIDTHxHEIGHT.h264 under fixtures, a one-second 24 fps GOP): the GOP is repeated
// as often as needed and cut at the requested duration, and a fresh MP4 (moov before mdat) is
// written around it. The result depends only on spec and the fixture.
func RenderMP4(fixtures fs.FS, spec VideoSpec) ([]byte, error) {
	if !isVideoSize(spec.Width, spec.Height) {
		return nil, fmt.Errorf("%w: video size %dx%d is not supported (see VideoSizes: 21:9, 16:9, 4:3, 1:1, 3:4, 9:16 or 9:21 at 480, 720 or 1080)",
			ErrInvalidSpec, spec.Width, spec.Height)
	}
	if spec.Duration <= 0 || spec.Duration > MaxVideoDuration {
		return nil, fmt.Errorf("%w: video duration %s is outside (0, %s]",
			ErrInvalidSpec, spec.Duration, MaxVideoDuration)
	}
	ticks := int((int64(spec.Duration)*videoTimescale + int64(time.Second)/2) / int64(time.Second))
	if ticks < 1 {
		return nil, fmt.Errorf("%w: video duration %s is too short", ErrInvalidSpec, spec.Duration)
	}

	name := fmt.Sprintf("%s/%dx%d.h264", videoFixtureDir, spec.Width, spec.Height)
	stream, err := fs.ReadFile(fixtures, name)
	if err != nil {
		return nil, fmt.Errorf("media: video fixture: %w", err)
	}
	g, err := parseAnnexB(stream)
	if err != nil {
		return nil, fmt.Errorf("media: video fixture %s: %w", name, err)
	}
	if g.width != spec.Width || g.height != spec.Height {
		return nil, fmt.Errorf("media: video fixture %s is %dx%d", name, g.width, g.height)
	}

	frames := (ticks + frameTicks - 1) / frameTicks
	t := &mp4Track{
		width: spec.Width, height: spec.Height,
		sps: g.sps, pps: g.pps,
		timescale: videoTimescale,
		durations: make([]uint32, frames),
		sizes:     make([]uint32, frames),
		sync:      make([]bool, frames),
		chunk:     len(g.frames),
	}
	for i := range frames {
		t.durations[i] = frameTicks
		t.sizes[i] = uint32(len(g.frames[i%len(g.frames)]))
		t.sync[i] = g.sync[i%len(g.frames)]
	}
	t.durations[frames-1] = uint32(ticks - (frames-1)*frameTicks)
	return writeMP4(t, func(b []byte) []byte {
		for i := range frames {
			b = append(b, g.frames[i%len(g.frames)]...)
		}
		return b
	}), nil
}

// isVideoSize reports whether w×h is one of VideoSizes.
func isVideoSize(w, h int) bool {
	for _, s := range VideoSizes() {
		if s == [2]int{w, h} {
			return true
		}
	}
	return false
}
