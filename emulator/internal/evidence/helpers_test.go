package evidence

import (
	"context"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// logOf is a journal holding entries, numbered from 1 in order.
func logOf(entries []api.JournalEntry) *Journal {
	j := NewBounded(len(entries)+1, 1<<40)
	for _, e := range entries {
		j.Add(e)
	}
	return j
}

func verifyIn(p *Pattern, entries []api.JournalEntry) api.Verification {
	v, _ := logOf(entries).Verify(context.Background(), p)
	return v
}

func unexpectedIn(expected []*Pattern, entries []api.JournalEntry) api.UnexpectedErrors {
	u, _ := logOf(entries).Unexpected(context.Background(), expected, 0, 100)
	return u
}

func missesOf(p *Pattern, e *Entry) []api.Miss { return p.misses(&subject{e: e}) }

// listAll lists a journal's entries through the filter f (nil: all).
func listAll(j *Journal, f *Pattern, offset, limit int) ([]Entry, int) {
	out, total, _ := j.List(context.Background(), f, offset, limit)
	return out, total
}
