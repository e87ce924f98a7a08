package emulator

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// fileCacheBytes bounds the memory that made output files occupy; past it the least recently
// used are dropped and made again, identically, when next requested.
const fileCacheBytes = 256 << 20

// extension names an output file by its format.
func extension(format string) string {
	if format == "jpeg" {
		return "jpg"
	}
	return format
}

// outputMaker returns the function that makes a succeeded job's outputs. Each file is made once
// here, so its size is known, and kept in the cache for the downloads that follow.
func (s *Server) outputMaker(m *catalog.Model, input map[string]any, specs []catalog.OutputSpec) func(string) ([]jobs.Output, *jobs.Error) {
	label := m.Name
	if prompt, ok := input["prompt"].(string); ok && prompt != "" {
		label += ": " + prompt
	} else if text, ok := input["text"].(string); ok && text != "" {
		label += ": " + text
	}
	return func(id string) ([]jobs.Output, *jobs.Error) {
		out := make([]jobs.Output, len(specs))
		errs := make([]error, len(specs))
		// A job's outputs are made side by side: a four-image JPEG job takes one image's time
		// per core, and a manual-clock advance that finishes it returns that much sooner.
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, spec := range specs {
			o := jobs.Output{
				Type:        spec.Type,
				Path:        fmt.Sprintf("/files/%s/%d.%s", id, i, extension(spec.Format)),
				ContentType: media.ContentType(spec.Format),
				Width:       spec.Width,
				Height:      spec.Height,
				Duration:    spec.Duration,
				Format:      spec.Format,
				Seed:        s.mediaSeed(id, i),
				Label:       label,
			}
			if o.Type == catalog.OutputVideo {
				o.Width, o.Height = nearestVideoSize(o.Width, o.Height)
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				data, err := s.render(o)
				if err != nil {
					errs[i] = err
					return
				}
				o.SizeBytes = int64(len(data))
				s.files.put(o.Path, data)
				out[i] = o
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			s.log.Error("cannot make output", "job", id, "model", m.ID, "error", err)
			return nil, &jobs.Error{Code: "generation_failed", Message: "the emulator could not make this output"}
		}
		return out, nil
	}
}

// mediaSeed derives an output's seed from the job id (itself seeded under --seed) and its index.
func (s *Server) mediaSeed(jobID string, index int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", jobID, index)
	return h.Sum64()
}

// render makes an output's bytes; the same output always gives the same bytes.
func (s *Server) render(o jobs.Output) ([]byte, error) {
	switch o.Type {
	case catalog.OutputImage:
		return media.RenderImage(media.ImageSpec{Width: min(o.Width, media.MaxImageSide), Height: min(o.Height, media.MaxImageSide), Format: o.Format, Seed: o.Seed, Label: o.Label})
	case catalog.OutputAudio:
		return media.RenderWAV(media.AudioSpec{Duration: seconds(o.Duration, media.MaxAudioDuration), Seed: o.Seed})
	case catalog.OutputVideo:
		return media.RenderMP4(s.fixtures, media.VideoSpec{Width: o.Width, Height: o.Height, Duration: seconds(o.Duration, media.MaxVideoDuration), Seed: o.Seed})
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

// serveFile serves an output without authentication, as the service's file URLs are: the job
// id in the path is the secret. Ranges, HEAD and conditional requests come from ServeContent.
func (s *Server) serveFile() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		vars := mux.Vars(r)
		id, name := vars["job"], vars["name"]
		stem, ext, _ := strings.Cut(name, ".")
		index, err := strconv.Atoi(stem)
		notFound := problem.New(problem.NotFound, "no file %s", r.URL.Path)
		if err != nil || index < 0 || strconv.Itoa(index) != stem {
			return notFound
		}
		v, ok := st.jobs.Get("", id)
		if !ok || v.Status != jobs.Succeeded || index >= len(v.Outputs) {
			return notFound
		}
		o := v.Outputs[index]
		if extension(o.Format) != ext {
			return notFound
		}
		expires := v.OutputsExpireAt
		if !st.clock.Now().Before(expires) {
			return problem.New(problem.OutputExpired, "this output expired at %s", timestamp(expires))
		}
		data, ok := s.files.get(o.Path)
		if !ok {
			if data, err = s.render(o); err != nil {
				return err
			}
			s.files.put(o.Path, data)
		}
		h := w.Header()
		h.Set("Content-Type", o.ContentType)
		h.Set("ETag", fmt.Sprintf(`"%016x-%d"`, o.Seed, len(data)))
		h.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(expires.Sub(st.clock.Now()).Seconds())))
		http.ServeContent(w, r, "", v.FinishedAt, bytes.NewReader(data))
		return nil
	}
}

// fileCache keeps made files, least recently used dropped first, within a byte budget.
type fileCache struct {
	mu     sync.Mutex
	budget int
	size   int
	order  *list.List // front: most recent
	items  map[string]*list.Element
}

type cachedFile struct {
	path string
	data []byte
}

func newFileCache(budget int) *fileCache {
	return &fileCache{budget: budget, order: list.New(), items: map[string]*list.Element{}}
}

func (c *fileCache) get(path string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[path]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedFile).data, true
}

func (c *fileCache) put(path string, data []byte) {
	if len(data) > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[path]; ok {
		c.size -= len(el.Value.(*cachedFile).data)
		c.order.Remove(el)
	}
	c.items[path] = c.order.PushFront(&cachedFile{path, data})
	c.size += len(data)
	for c.size > c.budget {
		el := c.order.Back()
		f := el.Value.(*cachedFile)
		c.order.Remove(el)
		delete(c.items, f.path)
		c.size -= len(f.data)
	}
}

func (c *fileCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	c.items = map[string]*list.Element{}
	c.size = 0
}
