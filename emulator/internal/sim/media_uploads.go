package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// Bounds of a tenant's uploads (POST /v1/uploads), besides the memory budget they count against.
const (
	// MaxUploads is how many live uploads a tenant holds.
	MaxUploads = 100
	// MaxUploadBytes is how many bytes a tenant's live uploads hold together.
	MaxUploadBytes = 256 << 20
	// MaxUploadSize is the longest one upload's body may be; the kind's upload limit
	// (inputs.Limits.Upload) may be lower.
	MaxUploadSize = 100 << 20
)

// UploadsDir is the segment of a world's file path its uploads are served under:
// /files/uploads/{id}, or /files/{tenant}/uploads/{id}.
const UploadsDir = "uploads"

// upload is one file a tenant uploaded, as read when it arrived.
type upload struct {
	id, account string
	data        []byte
	info        inputs.Info
	fail        *inputs.Failure // why a job reading it fails at its start; nil when it decodes
	digest      string
	created     time.Time
	expires     time.Time
}

// uploadStore holds a world's live uploads, in the order they arrived, bounded in count and
// bytes; an expired upload is dropped the next time the store is used.
type uploadStore struct {
	mu    sync.Mutex
	byID  map[string]*upload
	order []*upload
	bytes int64
	seq   uint64 // uploads made, for seeded ids
}

func newUploadStore() *uploadStore { return &uploadStore{byID: map[string]*upload{}} }

// made is how many uploads the store has made, as a snapshot counts them.
func (s *uploadStore) made() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// uploadOverhead is what one upload costs besides its bytes.
const uploadOverhead = 512

// Bytes is what the store holds, as counted against the memory budget.
func (s *uploadStore) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes + int64(len(s.order))*uploadOverhead
}

// sweep drops the uploads expired at now. Callers hold s.mu.
func (s *uploadStore) sweep(now time.Time) {
	kept := s.order[:0]
	for _, u := range s.order {
		if now.After(u.expires) {
			delete(s.byID, u.id)
			s.bytes -= int64(len(u.data))
			continue
		}
		kept = append(kept, u)
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// find returns a live upload.
func (s *uploadStore) find(id string, now time.Time) (*upload, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	u, ok := s.byID[id]
	return u, ok
}

// Upload keeps a file a client sent for use as a media input: its type as declared (sniffed
// when it declares none), decoded as a service would decode it, for the rules' upload TTL.
// A file of no media kind answers 415, one over its kind's limit 413, and past the tenant's
// bounds or the memory budget 503.
func (w *World) Upload(account string, data []byte, ctype string) (api.Upload, error) {
	// No type, a generic one, or the form type curl and urllib send by default: the bytes say.
	if t := strings.TrimSpace(ctype); t == "" || strings.HasPrefix(t, "application/octet-stream") || strings.HasPrefix(t, "multipart/") ||
		strings.HasPrefix(t, "application/x-www-form-urlencoded") {
		ctype = inputs.Sniff(data)
	}
	kind := inputs.KindOfType(ctype)
	if kind == "" {
		return api.Upload{}, problem.New(problem.UnsupportedMediaType, "an upload is an image, audio or video file; this one is %s", ctype)
	}
	sc := w.scenario.Load()
	rules := sc.InputRules()
	if limit := rules.Limits[kind].Upload; int64(len(data)) > limit {
		return api.Upload{}, problem.New(problem.PayloadTooLarge, "the %s is %d bytes; an upload of %s takes at most %d", kind, len(data), kind, limit)
	}
	if len(data) == 0 {
		return api.Upload{}, problem.New(problem.InvalidRequest, "the upload is empty; send the file's bytes as the body, or as the file part of a multipart form")
	}
	info, fail := inputs.Decode(data, ctype, kind)
	info.ContentType = ctype
	if t, _, ok := strings.Cut(ctype, ";"); ok {
		info.ContentType = strings.TrimSpace(t)
	}
	w.gate.RLock()
	defer w.gate.RUnlock()
	if err := w.admit(int64(len(data)) + uploadOverhead); err != nil {
		return api.Upload{}, err
	}
	now := w.clock.Now()
	s := w.uploads
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	if len(s.order) >= MaxUploads || s.bytes+int64(len(data)) > MaxUploadBytes {
		retry := 1
		if len(s.order) > 0 {
			retry = max(1, int(s.order[0].expires.Sub(now).Seconds())+1)
		}
		return api.Upload{}, &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: retry,
			Detail: fmt.Sprintf("the tenant holds %d uploads of %d bytes, the most it may (%d uploads, %d bytes); reuse an upload's URL, or wait until the oldest expires", len(s.order), s.bytes, MaxUploads, MaxUploadBytes)}
	}
	s.seq++
	sum := sha256.Sum256(data)
	u := &upload{id: w.ids.UUID("upload", strconv.FormatUint(s.seq, 10)), account: account, data: data, info: info, fail: fail,
		digest: "sha256:" + hex.EncodeToString(sum[:]), created: now, expires: now.Add(rules.UploadTTL)}
	s.byID[u.id] = u
	s.order = append(s.order, u)
	s.bytes += int64(len(data))
	return w.presentUpload(u, ""), nil
}

// presentUpload is an upload as the API shows it, its URL on base.
func (w *World) presentUpload(u *upload, base string) api.Upload {
	a := api.Upload{ID: u.id, URL: base + w.UploadPath(u.id), ContentType: u.info.ContentType, SizeBytes: int64(len(u.data)),
		CreatedAt: Timestamp(u.created), ExpiresAt: Timestamp(u.expires)}
	if u.fail == nil {
		a.Width, a.Height = u.info.Width, u.info.Height
		a.Duration = u.info.Duration
	}
	return a
}

// UploadPath is where an upload is served: the world's file path, then uploads/{id}.
func (w *World) UploadPath(id string) string { return w.path + UploadsDir + "/" + id }

// UploadFile is an upload's bytes as GET on its URL serves them.
type UploadFile struct {
	Data        []byte
	ContentType string
	Digest      string
	Created     time.Time
	ExpiresAt   time.Time
	Now         time.Time
}

// UploadFile finds a live upload by its id.
func (w *World) UploadFile(id string) (UploadFile, error) {
	now := w.clock.Now()
	u, ok := w.uploads.find(id, now)
	if !ok {
		return UploadFile{}, problem.New(problem.NotFound, "no file %s", w.UploadPath(id)) // as for a file that never was: an upload gone is gone
	}
	return UploadFile{Data: u.data, ContentType: u.info.ContentType, Digest: u.digest, Created: u.created, ExpiresAt: u.expires, Now: now}, nil
}

// exportUploads is the live uploads as a snapshot carries them.
func (w *World) exportUploads() []api.SnapshotUpload {
	s := w.uploads
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(w.clock.Now())
	var out []api.SnapshotUpload
	for _, u := range s.order {
		out = append(out, api.SnapshotUpload{ID: u.id, Account: u.account, ContentType: u.info.ContentType, Data: slices.Clone(u.data),
			CreatedAt: Timestamp(u.created), ExpiresAt: Timestamp(u.expires)})
	}
	return out
}

// restoreUploads reads a snapshot's uploads into the store, checking each as a restore checks
// every part; the first problem is returned with its pointer.
func (w *World) restoreUploads(list []api.SnapshotUpload, seq uint64) (string, string) {
	s := newUploadStore()
	s.seq = seq
	for i, su := range list {
		at := "/uploads/" + strconv.Itoa(i)
		created, err1 := time.Parse(time.RFC3339Nano, su.CreatedAt)
		expires, err2 := time.Parse(time.RFC3339Nano, su.ExpiresAt)
		kind := inputs.KindOfType(su.ContentType)
		switch {
		case su.ID == "" || su.Account == "":
			return at + "/id", "an upload needs an id and an account"
		case s.byID[su.ID] != nil:
			return at + "/id", "two uploads have this id"
		case err1 != nil || err2 != nil || expires.Before(created):
			return at + "/expires_at", "created_at and expires_at are RFC 3339 times, expires_at not before created_at"
		case kind == "":
			return at + "/content_type", "an upload is an image, audio or video file"
		case len(s.order) >= MaxUploads || s.bytes+int64(len(su.Data)) > MaxUploadBytes:
			return at, fmt.Sprintf("a tenant holds at most %d uploads of %d bytes", MaxUploads, MaxUploadBytes)
		}
		info, fail := inputs.Decode(su.Data, su.ContentType, kind)
		info.ContentType = su.ContentType
		sum := sha256.Sum256(su.Data)
		u := &upload{id: su.ID, account: su.Account, data: slices.Clone(su.Data), info: info, fail: fail,
			digest: "sha256:" + hex.EncodeToString(sum[:]), created: created.UTC(), expires: expires.UTC()}
		s.byID[u.id] = u
		s.order = append(s.order, u)
		s.bytes += int64(len(u.data))
	}
	if s.seq < uint64(len(s.order)) {
		s.seq = uint64(len(s.order))
	}
	w.uploads = s
	return "", ""
}

// CanHold reports, as the memory budget's problem, whether an upload of n bytes would fit the
// budget now: checked before its body is read.
func (w *World) CanHold(n int64) error { return w.admit(n + uploadOverhead) }

// UploadDigest is the digest of a live upload's bytes ("sha256:..."), or "".
func (w *World) UploadDigest(id string) string {
	if u, ok := w.uploads.find(id, w.clock.Now()); ok {
		return u.digest
	}
	return ""
}
