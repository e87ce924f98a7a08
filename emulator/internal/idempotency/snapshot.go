package idempotency

import (
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// Export lists the finished keys as of now, in the order they are forgotten. Keys whose first
// request is still under way are left out: that request is not part of the world until it ends.
func (s *Store) Export() []api.SnapshotKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	out := make([]api.SnapshotKey, 0, len(s.order)-s.head)
	for _, f := range s.order[s.head:] {
		if s.entries[f.key] != f.entry {
			continue
		}
		out = append(out, api.SnapshotKey{Account: f.key.account, Key: f.key.key, Digest: hex.EncodeToString(f.entry.digest[:]),
			JobID: f.entry.JobID, Until: f.until.UTC().Format(time.RFC3339Nano)})
	}
	return out
}

// Import puts exported keys into an empty store, in their order. Each problem is reported with
// a JSON Pointer relative to the list; the store's bound applies.
func (s *Store) Import(keys []api.SnapshotKey, report func(ptr, msg string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(keys) > s.limit {
		report("", "holds "+strconv.Itoa(len(keys))+" keys, more than the bound of "+strconv.Itoa(s.limit))
		return
	}
	// The keys' records come in one allocation and share one closed channel: each is finished,
	// and only the request that began a key closes its channel.
	if len(s.entries) == 0 {
		s.entries = make(map[key]*Entry, len(keys))
	}
	s.order = slices.Grow(s.order, len(keys))
	records := make([]Entry, len(keys))
	finishedDone := make(chan struct{})
	close(finishedDone)
	for i, k := range keys {
		at := "/" + strconv.Itoa(i)
		digest, err := hex.DecodeString(k.Digest)
		until, err2 := time.Parse(time.RFC3339Nano, k.Until)
		switch {
		case k.Account == "" || k.Key == "" || k.JobID == "":
			report(at, "a key needs an account, a key and a job_id")
			continue
		case err != nil || len(digest) != len(Entry{}.digest):
			report(at+"/digest", "not a hex SHA-256 digest")
			continue
		case err2 != nil:
			report(at+"/until", "not an RFC 3339 time")
			continue
		}
		kk := key{k.Account, k.Key}
		if _, dup := s.entries[kk]; dup {
			report(at+"/key", "this account's key appears twice")
			continue
		}
		e := &records[i]
		*e = Entry{digest: [len(Entry{}.digest)]byte(digest), done: finishedDone, JobID: k.JobID}
		s.entries[kk] = e
		s.bytes += entrySize(kk)
		s.order = append(s.order, finished{kk, e, until.UTC()})
	}
	s.pruneLocked()
}
