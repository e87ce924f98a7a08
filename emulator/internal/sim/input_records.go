package sim

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// What the control API and the dashboard show of media inputs: each job's inputs as its
// generation found them, and the tenant's uploads with the jobs that read them.

// The sources of a media input, as api.MediaInput names them.
const (
	SourceUpload  = "upload"
	SourceOutput  = "output"
	SourceData    = "data"
	SourceFetched = "fetched"
	SourceStandIn = "stand_in"
)

// describeInputs records a generation's media inputs once they were read (mi, nil when inputs
// are not fetched): each member's URL, how it was read and what it decoded to. Nothing is
// fetched again: an allowed host's file is described by what the reading kept of it.
func (w *World) describeInputs(g Generation, m *catalog.Model, mi *mediaInputs) []api.MediaInput {
	if mi == nil {
		return nil
	}
	rules := w.inputScenario(g).InputRulesFor(m)
	allow, _ := inputs.ParseAllow(w.cfg.InputsAllow) // checked when the server was made
	var out []api.MediaInput
	for _, mem := range inputs.Members(m.SchemaJSON, m.MediaMarks()) {
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
			if len(out) == jobs.MaxMediaInputs {
				return out
			}
			rec := api.MediaInput{Member: mem.Name, Pointer: "/input/" + mem.Name, URL: cutURL(raw)}
			if mem.List {
				rec.Pointer += "/" + strconv.Itoa(i)
			}
			var info inputs.Info
			var fail *inputs.Failure
			if own, _, ownFail, ok := w.ownInput(raw, mem.Kind, g.Base, &mediaInputs{}); ok {
				info, fail, rec.Read = own, ownFail, true
				rec.Source, rec.Upload = w.ownSource(raw)
			} else {
				v, ref := rules.Judge(raw, mem.Kind, allow)
				if ref != nil {
					continue // refused: the generation was answered 422 and made no job
				}
				switch v.Way {
				case inputs.Inline:
					rec.Source, rec.Read, rec.URL = SourceData, true, "data:"+v.ContentType
					info, fail = inputs.Decode(v.Data, v.ContentType, mem.Kind)
				case inputs.Allowed:
					rec.Source, rec.Read = SourceFetched, true
					// The reading kept a member's first file that did; a single URL's failure
					// is the member's.
					if len(urls) == 1 {
						info = mi.infos[mem.Name]
						if _, ok := mi.infos[mem.Name]; !ok && mi.fail != nil && strings.HasPrefix(mi.fail.Message, mem.Name+": ") {
							fail = mi.fail
						}
					}
				default:
					rec.Source = SourceStandIn
					info = inputs.StandIn(v.URL, mem.Kind)
				}
			}
			rec.ContentType, rec.SizeBytes = info.ContentType, info.Bytes
			if fail == nil {
				rec.Width, rec.Height, rec.Duration = info.Width, info.Height, info.Duration
			} else {
				rec.Failure = fail.Code
			}
			out = append(out, rec)
		}
	}
	return out
}

// ownSource tells an upload's URL from an output's, and names the upload when the tenant has it.
func (w *World) ownSource(raw string) (source, upload string) {
	u, _ := url.Parse(raw) // ownInput parsed it
	if id, ok := strings.CutPrefix(u.Path, w.path+UploadsDir+"/"); ok {
		if _, found := w.uploads.find(id, w.clock.Now()); found {
			return SourceUpload, id
		}
		return SourceUpload, "" // gone, or never was: its URL answered 404
	}
	if strings.Contains(u.Path, "/"+UploadsDir+"/") {
		return SourceUpload, "" // another tenant's: not one of this tenant's uploads
	}
	return SourceOutput, ""
}

// cutURL bounds a URL a job records (jobs.MaxMediaInputURL), on a character's boundary; a
// data: URI is recorded by its type alone, so only a very long URL is cut.
func cutURL(raw string) string {
	if len(raw) <= jobs.MaxMediaInputURL {
		return raw
	}
	n := jobs.MaxMediaInputURL - len("…")
	for n > 0 && !utf8Start(raw[n]) {
		n--
	}
	return raw[:n] + "…"
}

// utf8Start reports whether b begins a UTF-8 character.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// PresentMediaInputs are a job's media inputs as the control API shows them; nil when inputs
// were not fetched for it.
func PresentMediaInputs(v jobs.View) []api.MediaInput { return slices.Clone(v.Plan.MediaInputs) }

// MaxUploadUsers is how many of the jobs that read an upload its listing names, newest first.
const MaxUploadUsers = 50

// PresentUploads is a page of the tenant's live uploads, newest first, as the control API
// lists them, their URLs on base, each with the jobs that read it, and how many there are.
func (w *World) PresentUploads(base string, offset, limit int) ([]api.ControlUpload, int) {
	s := w.uploads
	s.mu.Lock()
	s.sweep(w.clock.Now())
	total := len(s.order)
	var page []*upload
	for i := total - 1 - offset; i >= 0 && len(page) < limit; i-- {
		page = append(page, s.order[i])
	}
	out := make([]api.ControlUpload, len(page))
	for i, u := range page {
		out[i] = api.ControlUpload{Upload: w.presentUpload(u, base), Account: u.account, Jobs: []string{}}
		if u.fail != nil {
			out[i].Failure = u.fail.Code
		}
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return out, total
	}
	type use struct {
		job string
		seq uint64
	}
	at := make(map[string]int, len(out))
	for i, u := range out {
		at[u.ID] = i
	}
	uses := make([][]use, len(out))
	w.jobs.UsesOf(func(upload, job string, seq uint64) {
		if i, ok := at[upload]; ok {
			uses[i] = append(uses[i], use{job, seq})
		}
	})
	for i, us := range uses {
		slices.SortFunc(us, func(a, b use) int { return cmp.Compare(b.seq, a.seq) })
		out[i].JobCount = len(us)
		for _, u := range us[:min(len(us), MaxUploadUsers)] {
			out[i].Jobs = append(out[i].Jobs, u.job)
		}
	}
	return out, total
}
