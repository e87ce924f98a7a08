package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// Cache keeps made output files, shared by every world; a file dropped from it is made again,
// identically, when next asked for.
type Cache interface {
	Get(key string) ([]byte, bool)
	Put(key string, data []byte)
}

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

// describeOutputs says what files a job will produce: their kind, format, shape, seed and size,
// so finishing the job costs nothing whatever its outputs are.
func (w *World) describeOutputs(m *catalog.Model, input map[string]any, jobID string) ([]jobs.Output, error) {
	specs := m.PlanOutputs(input)
	text := label(m, input)
	out := make([]jobs.Output, len(specs))
	for i, spec := range specs {
		o := jobs.Output{
			Type:        spec.Type,
			Path:        w.path + jobID + "/" + strconv.Itoa(i) + "." + extension(spec.Format),
			ContentType: media.ContentType(spec.Format),
			Width:       spec.Width,
			Height:      spec.Height,
			Duration:    spec.Duration,
			Format:      spec.Format,
			Seed:        w.ids.Uint64("media", jobID, strconv.Itoa(i)),
			Label:       text,
		}
		if o.Type == catalog.OutputVideo {
			o.Width, o.Height = nearestVideoSize(o.Width, o.Height)
		}
		size, err := w.size(o)
		if err != nil {
			w.cfg.Logger.Error("cannot make output", "job", jobID, "model", m.ID, "error", err)
			return nil, fmt.Errorf("output %d of %s: %w", i, m.ID, err)
		}
		o.SizeBytes = size
		out[i] = o
	}
	return out, nil
}

// size is the exact length of an output's file.
func (w *World) size(o jobs.Output) (int64, error) {
	data, err := w.Render(o)
	if err != nil {
		return 0, err
	}
	w.files.Put(o.Path, data)
	return int64(len(data)), nil
}

// Render makes an output's bytes; the same output always gives the same bytes.
func (w *World) Render(o jobs.Output) ([]byte, error) {
	switch o.Type {
	case catalog.OutputImage:
		return media.RenderImage(media.ImageSpec{Width: min(o.Width, media.MaxImageSide), Height: min(o.Height, media.MaxImageSide), Format: o.Format, Seed: o.Seed, Label: o.Label})
	case catalog.OutputAudio:
		return media.RenderWAV(media.AudioSpec{Duration: seconds(o.Duration, media.MaxAudioDuration), Seed: o.Seed})
	case catalog.OutputVideo:
		return media.RenderMP4(w.cfg.Media, media.VideoSpec{Width: o.Width, Height: o.Height, Duration: seconds(o.Duration, media.MaxVideoDuration), Seed: o.Seed})
	}
	return nil, fmt.Errorf("unknown output type %q", o.Type)
}

func seconds(f float64, most time.Duration) time.Duration {
	return min(time.Duration(f*float64(time.Second)), most)
}

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
	data, ok := w.files.Get(o.Path)
	if !ok {
		if data, err = w.Render(o); err != nil {
			return File{}, err
		}
		w.files.Put(o.Path, data)
	}
	return File{Output: o, Data: data, Finished: v.FinishedAt, ExpiresAt: v.OutputsExpireAt, Now: now}, nil
}

// Timestamp formats an instant as the API does: RFC 3339, UTC, Z.
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
