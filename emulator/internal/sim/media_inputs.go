package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	"image/png"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

// CheckInputSettings refuses --inputs and --inputs-allow values that do not parse.
func CheckInputSettings(s config.Settings) error {
	if s.Inputs != "" && s.Inputs != scenario.InputsFetch && s.Inputs != scenario.InputsOff {
		return fmt.Errorf("--inputs %q must be fetch or off", s.Inputs)
	}
	_, err := inputs.ParseAllow(s.InputsAllow)
	return err
}

// Fetching reports whether media inputs are fetched under a scenario: its inputs: when it
// says, else --inputs.
func (w *World) Fetching(sc *scenario.Scenario) bool {
	switch sc.InputsMode() {
	case scenario.InputsFetch:
		return true
	case scenario.InputsOff:
		return false
	}
	return w.cfg.Inputs == scenario.InputsFetch
}

// FetchingNow reports whether media inputs are fetched under the scenario in force, which is
// when POST /v1/uploads answers.
func (w *World) FetchingNow() bool { return w.Fetching(w.scenario.Load()) }

// mediaInputs is what a generation's media inputs were found to be, read under the rules.
type mediaInputs struct {
	infos map[string]inputs.Info // by member name; a list's first item
	fail  *inputs.Failure        // the first input that fails the job when it starts
	// expires is the earliest instant an input read from the emulator's own stores (an
	// upload, an output) stops being readable; zero when none is.
	expires time.Time
	// frame is the picture an image-to-video model's video opens on: its primary image's,
	// decoded, or the stand-in's; nil for other models, or when that image was not read.
	frame image.Image
	// wantsFrame says the model's primary image is wanted as pixels, not only its shape.
	wantsFrame bool
}

// inputScenario is the scenario a generation runs under, as directives will find it; a name
// it does not know is directives' to refuse, so it is taken as the one in force here.
func (w *World) inputScenario(g Generation) *scenario.Scenario {
	sc := w.scenario.Load()
	if g.Scenario != "" {
		if named, ok := w.cfg.Scenarios[g.Scenario]; ok {
			sc = named
		}
	}
	return sc
}

// readInputs applies a hosted service's input rules to a generation when inputs are fetched
// (nil, nil otherwise): a rule broken answers 422 at the member's pointer, before anything is
// held; an input read now (a data: URI, an upload, an output, an allowed host's file) that
// will not do fails the job when it starts, as the service's fetch at the job's start would.
func (w *World) readInputs(ctx context.Context, g Generation, m *catalog.Model) (*mediaInputs, error) {
	sc := w.inputScenario(g)
	if !w.Fetching(sc) {
		return nil, nil
	}
	members := inputs.Members(m.SchemaJSON, m.MediaMarks())
	if len(members) == 0 {
		return nil, nil
	}
	rules := sc.InputRulesFor(m)
	allow, _ := inputs.ParseAllow(w.cfg.InputsAllow) // checked when the server was made
	// One generation's fetches of allowed hosts share one deadline: a list member of many
	// URLs does not hold its request for a fetch's timeout each.
	ctx, cancel := context.WithTimeout(ctx, MaxInputsFetch)
	defer cancel()
	mi := &mediaInputs{infos: map[string]inputs.Info{}, wantsFrame: opensOnInput(m)}
	var refused *problem.Error
	for _, mem := range members {
		var urls []string
		switch v := g.Input[mem.Name].(type) {
		case string:
			urls = []string{v}
		case []any:
			for _, item := range v {
				if s, ok := item.(string); ok {
					urls = append(urls, s)
				}
			}
		}
		for i, raw := range urls {
			ptr := "/input/" + mem.Name
			if mem.List {
				ptr += "/" + strconv.Itoa(i)
			}
			info, data, fail, ref := w.readInput(ctx, raw, mem.Kind, rules, allow, g.Base, mi)
			if ref != nil {
				code := problem.InputURLRefused
				if ref.Rule == inputs.RuleInlineTooBig {
					code = problem.InputTooLarge
				}
				if refused == nil {
					refused = &problem.Error{Code: code, Detail: mem.Name + ": " + ref.Message, Extra: map[string]any{"rule": ref.Rule}}
				}
				refused.Errors = append(refused.Errors, problem.FieldError{Pointer: ptr, Message: ref.Message})
				continue
			}
			if fail != nil && mi.fail == nil {
				mi.fail = &inputs.Failure{Code: fail.Code, Message: mem.Name + ": " + fail.Message}
			}
			if _, seen := mi.infos[mem.Name]; !seen && fail == nil {
				mi.infos[mem.Name] = info
				if mem.Image && opensOnInput(m) {
					mi.frame = openingImage(raw, info, data)
				}
			}
		}
	}
	if refused != nil {
		if len(refused.Errors) > 1 {
			refused.Detail = strconv.Itoa(len(refused.Errors)) + " inputs the service would not fetch; see errors"
		}
		return nil, refused
	}
	if err := maskMatches(members, mi); err != nil {
		return nil, err
	}
	return mi, nil
}

// readInput reads one input URL: from the world's own uploads and outputs, from a data: URI,
// from an allowed host, or as the rules' stand-in; data is the file, when one was read.
func (w *World) readInput(ctx context.Context, raw string, kind inputs.Kind, rules inputs.Rules, allow *inputs.Allow, base string, mi *mediaInputs) (inputs.Info, []byte, *inputs.Failure, *inputs.Refusal) {
	if info, data, fail, ok := w.ownInput(raw, kind, base, mi); ok {
		return info, data, fail, nil
	}
	v, ref := rules.Judge(raw, kind, allow)
	if ref != nil {
		return inputs.Info{}, nil, nil, ref
	}
	switch v.Way {
	case inputs.Inline:
		info, fail := inputs.Decode(v.Data, v.ContentType, kind)
		return info, v.Data, fail, nil
	case inputs.Allowed:
		data, ctype, fail := w.cfg.fetcher.Fetch(ctx, v.URL, rules.MaxRedirects, rules.Limits[kind].URL)
		if fail != nil {
			return inputs.Info{}, nil, fail, nil
		}
		info, fail := inputs.Decode(data, ctype, kind)
		return info, data, fail, nil
	}
	return inputs.StandIn(v.URL, kind), nil, nil, nil
}

// ownInput reads an input that names the world's own upload or output file: by its path when
// the upload or job is one the world has, or on the address the client reached the emulator
// by (base) when it is not, which the service's own storage would answer 404. An image
// output's bytes are made only for a caller that wants them (an opening frame).
func (w *World) ownInput(raw string, kind inputs.Kind, base string, mi *mediaInputs) (inputs.Info, []byte, *inputs.Failure, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return inputs.Info{}, nil, nil, false
	}
	b, _ := url.Parse(base)
	ours := b != nil && strings.EqualFold(b.Host, u.Host)
	rest, ok := strings.CutPrefix(u.Path, w.path)
	if !ok {
		if ours && strings.HasPrefix(u.Path, "/files/") {
			// Another tenant's file: tenants are services of their own, whose storage this
			// one's jobs do not read.
			return inputs.Info{}, nil, &inputs.Failure{Code: inputs.FailFetch, Message: "the emulator's file URL answered 404 (it is another tenant's)"}, true
		}
		return inputs.Info{}, nil, nil, false
	}
	now := w.clock.Now()
	if id, ok := strings.CutPrefix(rest, UploadsDir+"/"); ok {
		up, found := w.uploads.find(id, now)
		switch {
		case found && up.fail != nil:
			return up.info, nil, up.fail, true
		case found && up.info.Kind != kind:
			return up.info, nil, &inputs.Failure{Code: inputs.FailType, Message: "the upload is " + up.info.ContentType + ", not " + string(kind) + "/*"}, true
		case found:
			mi.expire(up.expires)
			return up.info, up.data, nil, true
		case ours:
			return inputs.Info{}, nil, &inputs.Failure{Code: inputs.FailFetch, Message: "the upload's URL answered 404: it never was, or it expired; upload the file again"}, true
		}
		return inputs.Info{}, nil, nil, false
	}
	job, name, ok := strings.Cut(rest, "/")
	if !ok {
		return inputs.Info{}, nil, nil, false
	}
	v, found := w.jobs.Get("", job)
	stem, _, _ := strings.Cut(name, ".")
	index, err := strconv.Atoi(stem)
	switch {
	case found && v.Status == jobs.Succeeded && err == nil && index >= 0 && index < len(v.Outputs):
		o := v.Outputs[index]
		if !now.Before(v.OutputsExpireAt) {
			return inputs.Info{}, nil, &inputs.Failure{Code: inputs.FailExpired, Message: "the output expired at " + Timestamp(v.OutputsExpireAt)}, true
		}
		info := inputs.Info{Kind: inputs.Kind(o.Type), ContentType: o.ContentType, Width: o.Width, Height: o.Height, Duration: o.Duration, Bytes: o.SizeBytes}
		if info.Kind != kind {
			return info, nil, &inputs.Failure{Code: inputs.FailType, Message: "the output is " + o.ContentType + ", not " + string(kind) + "/*"}, true
		}
		// An output is read when the job starts, until its expiry: a link that expires sooner
		// than a queue ends fails the job, as an upload does.
		mi.expire(v.OutputsExpireAt.Add(-time.Nanosecond))
		var data []byte
		if o.Type == catalog.OutputImage && mi.wantsFrame {
			data, _ = w.files.Do(w.cacheKey+o.Path, func() ([]byte, error) { return w.render(o) })
		}
		return info, data, nil, true
	case found || ours:
		return inputs.Info{}, nil, &inputs.Failure{Code: inputs.FailFetch, Message: "the emulator's file URL answered 404"}, true
	}
	return inputs.Info{}, nil, nil, false
}

// primaryImage is what the model's primary image was read as (image_url, or prompt_image).
func (mi *mediaInputs) primaryImage() inputs.Info {
	if in, ok := mi.infos["image_url"]; ok {
		return in
	}
	return mi.infos["prompt_image"]
}

// expire keeps the earliest expiry of the inputs read from the world's stores.
func (mi *mediaInputs) expire(at time.Time) {
	if mi.expires.IsZero() || at.Before(mi.expires) {
		mi.expires = at
	}
}

// maskMatches refuses a mask whose size is not the image's, as inpainting services do.
func maskMatches(members []inputs.Member, mi *mediaInputs) error {
	img, ok := mi.infos["image_url"]
	if !ok || img.Width == 0 {
		return nil
	}
	for _, mem := range members {
		mask, ok := mi.infos[mem.Name]
		if !mem.Mask || !ok || mask.Width == 0 || mask.Width == img.Width && mask.Height == img.Height {
			continue
		}
		msg := fmt.Sprintf("the mask is %d×%d and the image %d×%d; a mask must have the image's size", mask.Width, mask.Height, img.Width, img.Height)
		return &problem.Error{Code: problem.InvalidInput, Detail: mem.Name + ": " + msg,
			Errors: []problem.FieldError{{Pointer: "/input/" + mem.Name, Message: msg}}}
	}
	return nil
}

// followsInput reports the models whose images keep their input image's size: image-to-image,
// inpainting and background removal.
func followsInput(m *catalog.Model) bool {
	switch m.Category {
	case "image-to-image", "inpainting", "background-removal":
		return m.OutputType == catalog.OutputImage
	}
	return false
}

// opensOnInput reports the models whose videos open on their input image: image-to-video.
func opensOnInput(m *catalog.Model) bool {
	return m.Category == "image-to-video" && m.OutputType == catalog.OutputVideo
}

// MaxInputsFetch bounds the time one generation spends fetching its inputs from allowed hosts,
// every member and item together; a fetch still going then fails as a fetch that timed out.
const MaxInputsFetch = 3 * inputs.FetchTimeout

// MaxOpeningPixels bounds the input images decoded for an opening frame: 2 megapixels (a
// 1080p picture), at most 16 MiB decoded even at 16 bits a channel, held while its generation
// is decided — a small data: URI may hold a large picture, and the decoded pixels are not
// counted against the memory budget. A larger image opens on the stand-in's frame, as one
// never read does.
const MaxOpeningPixels = 1920 * 1088

// StandInFrameSide is the side of the stand-in's frame as drawn: a seeded picture of the
// emulator's own (the URL its seed), taken as the 1024×1024 stand-in image and kept, like
// every opening, at a quarter of its side.
const StandInFrameSide = inputs.StandInWidth / media.OpeningScale

// openingImage is the picture a video opens on, from its primary image as read: the file
// decoded, or, for a stand-in, an image too large to decode or a file that will not, the
// stand-in's seeded frame.
func openingImage(raw string, info inputs.Info, data []byte) image.Image {
	if data != nil && info.Width > 0 && info.Width*info.Height <= MaxOpeningPixels {
		if img, _, err := image.Decode(bytes.NewReader(data)); err == nil {
			return img
		}
	}
	h := fnv.New64a()
	h.Write([]byte(raw))
	b, err := media.RenderImage(media.ImageSpec{Width: StandInFrameSide, Height: StandInFrameSide, Format: "png", Seed: h.Sum64(), Label: "stand-in input"})
	if err != nil {
		return nil
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	return img
}

// openingSize is the size of a video that follows its input image's shape: the video size
// nearest the image's aspect ratio with the short side the catalog gives the video.
func openingSize(planW, planH int, img inputs.Info) (int, int) {
	if img.Width < 1 || img.Height < 1 {
		return planW, planH
	}
	short, ratio := min(planW, planH), float64(img.Width)/float64(img.Height)
	if ratio >= 1 {
		return nearestVideoSize(int(math.Round(float64(short)*ratio)), short)
	}
	return nearestVideoSize(short, int(math.Round(float64(short)/ratio)))
}

// asksSize reports whether the input names the output's size itself, which then wins over
// the input image's.
func asksSize(m *catalog.Model, input map[string]any) bool {
	for _, f := range []string{m.Output.SizeField, m.Output.WidthField, m.Output.AspectRatioField, m.Output.ResolutionField} {
		if _, ok := input[f]; f != "" && ok {
			return true
		}
	}
	return false
}

// applyInputs shapes a new job by what its inputs were found to be: a failing input fails it
// as it starts, an input read from the world's stores must still be there then, and the images
// of a model that follows its input take the input image's size.
func (w *World) applyInputs(m *catalog.Model, input map[string]any, mi *mediaInputs, outputs []jobs.Output, plan *jobs.Plan) ([]jobs.Output, error) {
	if mi == nil {
		return outputs, nil
	}
	if mi.fail != nil {
		plan.Ending = jobs.Ending{Status: jobs.Failed, Code: mi.fail.Code, Message: mi.fail.Message, InQueue: true}
	}
	plan.InputsExpireAt = mi.expires
	changed := false
	if img, ok := mi.infos["image_url"]; ok && img.Width > 0 && followsInput(m) && !asksSize(m, input) {
		for i := range outputs {
			if o := &outputs[i]; o.Type == catalog.OutputImage {
				o.Width, o.Height = min(img.Width, media.MaxImageSide), min(img.Height, media.MaxImageSide)
				changed = true
			}
		}
	}
	if mi.frame != nil {
		img := mi.primaryImage()
		for i := range outputs {
			o := &outputs[i]
			if o.Type != catalog.OutputVideo {
				continue
			}
			if !asksSize(m, input) {
				o.Width, o.Height = openingSize(o.Width, o.Height, img)
			}
			o.Opening, changed = media.NewOpening(mi.frame, o.Width, o.Height), true
		}
	}
	if d, ok := followedDuration(m, input, mi); ok {
		for i := range outputs {
			switch o := &outputs[i]; o.Type {
			case catalog.OutputAudio:
				o.Duration, changed = min(d, media.MaxAudioDuration.Seconds()), true
			case catalog.OutputVideo:
				o.Duration, changed = min(d, media.MaxVideoDuration.Seconds()), true
			}
		}
	}
	if !changed {
		return outputs, nil
	}
	for i := range outputs {
		size, err := w.cfg.maker.Size(mediaSpec(outputs[i]))
		if err != nil {
			return nil, fmt.Errorf("output %d of %s shaped by its inputs: %w", i, m.ID, err)
		}
		outputs[i].SizeBytes = size
	}
	return outputs, nil
}

// followedDuration is the length the audio or video outputs of a model take from its input
// audio: the first audio member read (by name) that has a duration, held to the bounds of the
// model's duration member (its schema's minimum and maximum) and to the catalog's 600 s. An
// input that names the duration itself keeps it, as one naming the size keeps its size.
func followedDuration(m *catalog.Model, input map[string]any, mi *mediaInputs) (float64, bool) {
	if m.OutputType == catalog.OutputImage {
		return 0, false
	}
	if f := m.Output.DurationField; f != "" {
		if _, asked := input[f]; asked {
			return 0, false
		}
	}
	var audio inputs.Info
	for _, name := range slices.Sorted(maps.Keys(mi.infos)) {
		if in := mi.infos[name]; in.Kind == inputs.Audio && in.Duration > 0 {
			audio = in
			break
		}
	}
	if audio.Duration <= 0 {
		return 0, false
	}
	lo, hi := durationBounds(m)
	d := math.Round(audio.Duration*1000) / 1000 // to the millisecond, as a WAV's samples give it
	return max(lo, min(d, hi)), true
}

// durationBounds are the shortest and longest outputs a model makes: its duration member's
// minimum and maximum when its schema gives them, within (0, 600] seconds.
func durationBounds(m *catalog.Model) (lo, hi float64) {
	lo, hi = 0.001, 600
	if m.Output.DurationField == "" {
		return lo, hi
	}
	var s struct {
		Properties map[string]struct {
			Minimum *float64 `json:"minimum"`
			Maximum *float64 `json:"maximum"`
		} `json:"properties"`
	}
	if json.Unmarshal(m.SchemaJSON, &s) != nil {
		return lo, hi
	}
	p := s.Properties[m.Output.DurationField]
	if p.Minimum != nil && *p.Minimum > lo {
		lo = min(*p.Minimum, hi)
	}
	if p.Maximum != nil && *p.Maximum < hi {
		hi = max(*p.Maximum, lo)
	}
	return lo, hi
}
