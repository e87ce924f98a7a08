package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// snapshotReserve is the most set aside for a snapshot's body before it arrives, on the word of
// its Content-Length: enough for a tenant of 10,000 jobs in one allocation, instead of a copy
// at each doubling, and well below the route's bound.
const snapshotReserve = 16 << 20

// getSnapshot answers the tenant's whole world as one document; ?journal=true adds the journal.
func (s *Server) getSnapshot() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		withJournal, err := parseBool(r, "journal")
		if err != nil {
			return reply{}, err
		}
		doc := s.snapshotOf(infoOf(r).tenant, withJournal)
		return reply{status: http.StatusOK, body: doc}, nil
	}
}

// snapshotOf is a tenant's snapshot, named by this emulator.
func (s *Server) snapshotOf(t *sim.Tenant, withJournal bool) api.Snapshot {
	doc := t.World().Snapshot(withJournal)
	doc.Emulator, doc.Tenant = Version, t.Name()
	return doc
}

// putSnapshot replaces the tenant's world with the snapshot sent, at once, or changes nothing.
func (s *Server) putSnapshot() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if err := jsonContent(r, "the snapshot"); err != nil {
			return reply{}, err
		}
		limit := s.cfg.MaxSnapshotBytes
		// The body's bytes are reserved while they are read, decoded and restored, so uploads
		// at once hold a bounded total.
		rr := s.tenants.Uploads().Reader(http.MaxBytesReader(w, r.Body, limit), min(r.ContentLength, limit))
		defer rr.Release()
		// The gate is asked before any buffer is set aside on the word of the Content-Length,
		// so refused uploads cost nothing while they wait for their answer.
		if !rr.Reserve() {
			return reply{}, s.uploadsFull(w)
		}
		body, err := readAll(rr, r.ContentLength, limit, snapshotReserve)
		if err != nil {
			if errors.Is(err, sim.ErrUploadsFull) {
				return reply{}, s.uploadsFull(w)
			}
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				return reply{}, problem.New(problem.PayloadTooLarge, "the snapshot is over the limit of %d bytes for this route", limit)
			}
			return reply{}, problem.New(problem.InvalidJSON, "the body could not be read to its end")
		}
		doc, err := sim.DecodeSnapshot(body)
		if err != nil {
			return reply{}, err
		}
		t := infoOf(r).tenant
		world, err := t.Restore(doc)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: api.SnapshotResult{Status: "restored", Tenant: t.Name(), Now: sim.Timestamp(world.Now()),
			Jobs: world.Jobs(), Quotes: world.Quotes()}}, nil
	}
}

// uploadsFull refuses an upload the gate has no room for, and closes the connection after the
// answer: the body is left unread, and a client still sending it then reads the answer instead
// of a broken pipe.
func (s *Server) uploadsFull(w http.ResponseWriter) error {
	w.Header().Set("Connection", "close")
	return s.tenants.Uploads().Full()
}

// Snapshot returns a tenant's snapshot document ("" names the default tenant), as GET
// /_emulator/snapshot answers it; --state-on-exit writes it.
func (s *Server) Snapshot(tenant string, withJournal bool) ([]byte, error) {
	<-s.ready
	if s.tenants == nil {
		return nil, errors.New("the catalog failed to load")
	}
	t, err := s.tenants.Get(tenant)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s.snapshotOf(t, withJournal))
}

// Restore replaces a tenant's world with a snapshot document ("" names the default tenant), as
// PUT /_emulator/snapshot does; --state loads it. A document that does not hold changes nothing
// and the error names every problem with its JSON Pointer.
func (s *Server) Restore(tenant string, data []byte) error {
	<-s.ready
	if s.tenants == nil {
		return errors.New("the catalog failed to load")
	}
	if int64(len(data)) > s.cfg.MaxSnapshotBytes {
		return fmt.Errorf("the snapshot is %d bytes, over the limit of %d", len(data), s.cfg.MaxSnapshotBytes)
	}
	t, err := s.tenants.Get(tenant)
	if err != nil {
		return err
	}
	doc, err := sim.DecodeSnapshot(data)
	if err == nil {
		_, err = t.Restore(doc)
	}
	if pe := problem.As(err); pe != nil && len(pe.Errors) > 1 {
		var b strings.Builder
		b.WriteString(pe.Detail)
		for _, e := range pe.Errors {
			b.WriteString("\n  " + e.Pointer + ": " + e.Message)
		}
		return errors.New(b.String())
	}
	if pe := problem.As(err); pe != nil {
		return errors.New(pe.Detail)
	}
	return err
}
