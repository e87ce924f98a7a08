package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// extension names an output file by its format.
func extension(format string) string {
	if format == "jpeg" {
		return "jpg"
	}
	return format
}

// label is the text drawn into a job's images: the model and what was asked of it.
func label(m *catalog.Model, input map[string]any) string {
	l := m.Name
	if prompt, ok := input["prompt"].(string); ok && prompt != "" {
		l += ": " + prompt
	} else if text, ok := input["text"].(string); ok && text != "" {
		l += ": " + text
	}
	return l
}

// describeOutputs says what files a job will produce: their kind, format, shape, seed and exact
// size, which follows from the rest without making the file. So finishing a job costs the same
// whatever its outputs are; the bytes are made when first downloaded.
func (w *World) describeOutputs(m *catalog.Model, input map[string]any, jobID string) ([]jobs.Output, error) {
	specs := m.PlanOutputs(input)
	text := label(m, input)
	out := make([]jobs.Output, len(specs))
	for i, spec := range specs {
		o := jobs.Output{
			Output: api.Output{
				Type:        spec.Type,
				ContentType: media.ContentType(spec.Format),
				Width:       spec.Width,
				Height:      spec.Height,
				Duration:    spec.Duration,
			},
			Path:   w.path + jobID + "/" + strconv.Itoa(i) + "." + extension(spec.Format),
			Format: spec.Format,
			Seed:   w.ids.Uint64("media", jobID, strconv.Itoa(i)),
			Label:  text,
		}
		// The job shows what the file really is: sizes and lengths past the media's limits are
		// held to them, and videos take the nearest size the fixtures have.
		switch o.Type {
		case catalog.OutputImage:
			o.Width, o.Height = min(o.Width, media.MaxImageSide), min(o.Height, media.MaxImageSide)
		case catalog.OutputAudio:
			o.Duration = min(o.Duration, media.MaxAudioDuration.Seconds())
		case catalog.OutputVideo:
			o.Width, o.Height = nearestVideoSize(o.Width, o.Height)
			o.Duration = min(o.Duration, media.MaxVideoDuration.Seconds())
		}
		size, err := w.cfg.maker.Size(mediaSpec(o))
		if err != nil {
			w.cfg.Logger.Error("cannot describe output", "job", jobID, "model", m.ID, "error", err)
			return nil, fmt.Errorf("output %d of %s: %w", i, m.ID, err)
		}
		o.SizeBytes = size
		out[i] = o
	}
	return out, nil
}

// mediaSpec is what the media writers need to make an output, byte for byte.
func mediaSpec(o jobs.Output) media.Spec {
	return media.Spec{Format: o.Format, Width: o.Width, Height: o.Height, Seed: o.Seed, Label: o.Label,
		Duration: time.Duration(o.Duration * float64(time.Second)), Opening: o.Opening}
}

// render makes an output's bytes; the same output always gives the same bytes, exactly
// SizeBytes long.
func (w *World) render(o jobs.Output) ([]byte, error) { return w.cfg.maker.Render(mediaSpec(o)) }

// nearestVideoSize picks the supported video size closest in shape, then in size, to w×h, so a
// catalog asking for a size the fixtures lack still gets a real video.
func nearestVideoSize(w, h int) (int, int) {
	best, bestScore := [2]int{w, h}, math.Inf(1)
	for _, size := range media.VideoSizes() {
		if size[0] == w && size[1] == h {
			return w, h
		}
		shape := math.Abs(math.Log(float64(size[0])/float64(size[1])) - math.Log(float64(w)/float64(h)))
		scale := math.Abs(math.Log(float64(size[0]*size[1]) / float64(w*h)))
		if score := shape*10 + scale; score < bestScore {
			best, bestScore = size, score
		}
	}
	return best[0], best[1]
}

// File is one output as a download serves it.
type File struct {
	Output    jobs.Output
	Data      []byte
	Finished  time.Time // when the job finished: the file's modification time
	ExpiresAt time.Time
	Now       time.Time
	// Download is how the scenario in force has the job's files served; nil serves them plainly.
	Download *scenario.Download
}

// File finds the output named by a job id and a file name such as "0.png" and returns its bytes,
// made again if the cache dropped them. Not found and expired are coded problems.
func (w *World) File(jobID, name string) (File, error) {
	notFound := problem.New(problem.NotFound, "no file %s%s/%s", w.path, jobID, name)
	stem, ext, _ := strings.Cut(name, ".")
	index, err := strconv.Atoi(stem)
	if err != nil || index < 0 || strconv.Itoa(index) != stem {
		return File{}, notFound
	}
	v, ok := w.jobs.Get("", jobID)
	if !ok || v.Status != jobs.Succeeded || index >= len(v.Outputs) {
		return File{}, notFound
	}
	o := v.Outputs[index]
	if extension(o.Format) != ext {
		return File{}, notFound
	}
	now := w.clock.Now()
	if !now.Before(v.OutputsExpireAt) {
		return File{}, problem.New(problem.OutputExpired, "this output expired at %s", Timestamp(v.OutputsExpireAt))
	}
	// Made once however many clients ask at the same time, and kept within the cache's bytes.
	data, err := w.files.Do(w.cacheKey+o.Path, func() ([]byte, error) { return w.render(o) })
	if err != nil {
		return File{}, err
	}
	m, _ := w.cfg.Catalog.Model(v.Model)
	return File{Output: o, Data: data, Finished: v.FinishedAt, ExpiresAt: v.OutputsExpireAt, Now: now,
		Download: w.inForce().Effective(m).Download}, nil
}

// Timestamp formats an instant as the API does: RFC 3339, UTC, Z.
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
