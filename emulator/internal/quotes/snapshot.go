package quotes

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// Export lists every quote and marker the store knows as of now, in the order they were made
// or last marked, which is the order Import puts them back in.
func (s *Store) Export() []api.SnapshotQuote {
	s.mu.Lock()
	defer s.mu.Unlock()
	type held struct {
		account string
		r       *record
	}
	var all []held
	for id := range s.accounts {
		if a := s.touch(id); a != nil {
			for _, r := range a.known {
				all = append(all, held{id, r})
			}
		}
	}
	slices.SortFunc(all, func(x, y held) int { return cmp.Compare(x.r.e.Seq, y.r.e.Seq) })
	out := make([]api.SnapshotQuote, len(all))
	for i, h := range all {
		r := h.r
		out[i] = api.SnapshotQuote{ID: r.id, Account: h.account, Model: r.model, Credits: r.credits,
			CreatedAt: stamp(r.created), ExpiresAt: stamp(r.expires),
			InputDigest: hex.EncodeToString(r.digest[:]), UsedBy: r.usedBy}
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Import puts exported quotes into an empty store, in their order: a quote with used_by is a
// marker, any other is live until its expiry passes. Each problem is reported with a JSON
// Pointer relative to the list (such as /3/expires_at); nothing is stored for a quote with one.
// Bounds on live quotes per account apply, as they do to new quotes.
func (s *Store) Import(qs []api.SnapshotQuote, report func(ptr, msg string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := clock.Nanos(s.clock.Now())
	for i, q := range qs {
		at := "/" + strconv.Itoa(i)
		bad := func(field, msg string) { report(at+"/"+field, msg) }
		created, err1 := time.Parse(time.RFC3339Nano, q.CreatedAt)
		expires, err2 := time.Parse(time.RFC3339Nano, q.ExpiresAt)
		digest, err3 := hex.DecodeString(q.InputDigest)
		switch {
		case q.ID == "" || q.Account == "":
			bad("id", "a quote needs an id and an account")
			continue
		case err1 != nil:
			bad("created_at", "not an RFC 3339 time")
			continue
		case err2 != nil:
			bad("expires_at", "not an RFC 3339 time")
			continue
		case err3 != nil || len(digest) < digestSize:
			bad("input_digest", "not the hex digest of the input")
			continue
		case q.Credits < 0:
			bad("credits", "credits cannot be negative")
			continue
		}
		r := &record{id: q.ID, model: q.Model, digest: [digestSize]byte(digest[:digestSize]), expires: expires.UTC(),
			credits: q.Credits, created: created.UTC(), usedBy: q.UsedBy}
		if len(q.Input) > 0 && !bytes.Equal(q.Input, []byte("null")) {
			var v any
			if err := jsonvalue.Decode(q.Input, &v); err != nil {
				bad("input", "not JSON")
				continue
			}
			// A document may carry the input (older ones did): it must match the digest, which is
			// all that is kept.
			if digestOf(jsonvalue.Canonical(v)) != r.digest {
				bad("input_digest", "does not match the input: the document was edited")
				continue
			}
		}
		a := s.accounts[q.Account]
		if a == nil {
			a = &account{known: map[string]*record{}}
			s.accounts[q.Account] = a
		}
		if a.known[q.ID] != nil {
			bad("id", "quote "+q.ID+" appears twice")
			continue
		}
		a.known[q.ID] = r
		s.seq++
		r.e.Seq, r.e.Value = s.seq, r
		if q.UsedBy != "" {
			r.marker = true
			r.size = markerSize(r)
			r.e.At = s.forgetAt(r)
			a.marks.Push(&r.e)
			a.markBytes += r.size
			continue
		}
		r.size = Size(Quote{ID: r.id, Account: q.Account, Model: r.model})
		r.e.At = expiryOf(r.expires)
		a.live.Push(&r.e)
		a.liveBytes += r.size
		if r.e.At > now && (a.live.Len() > s.limits.PerAccount || a.liveBytes > s.limits.PerAccountBytes) {
			bad("id", "account "+q.Account+" holds more live quotes than its bound ("+strconv.Itoa(s.limits.PerAccount)+" quotes, "+strconv.FormatInt(s.limits.PerAccountBytes, 10)+" bytes)")
		}
	}
	for id, a := range s.accounts {
		s.settle(a, now)
		s.dropIfEmpty(id, a)
	}
}
