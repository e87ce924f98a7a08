package evidence

import (
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
)

// What happens outside /v1, which the journal's listing does not show: downloads of outputs,
// balance changes through the control API (a test topping an account up) and the webhook's
// attempts to reach the client's receiver. They are notes in the same log as the requests, under
// its bounds.
const (
	// maxNoteText bounds each text field of a note, and an attempt's texts together, so a note
	// costs at most noteBytes: its texts, its struct and an attempt's.
	maxNoteText = 128
	noteBytes   = 3*maxNoteText + 320
)

// NoteKind says what a note records.
type NoteKind uint8

// The kinds of note.
const (
	Download       NoteKind = iota + 1 // a GET of an output file
	CreditsSet                         // PUT /_emulator/accounts/{account}
	WebhookAttempt                     // one attempt of a webhook delivery
)

// Note is one thing the client did outside the journal's listing, on the tenant's clock.
type Note struct {
	Kind   NoteKind
	Time   time.Time // when the request arrived
	Job    string    // Download: the job whose output was fetched
	File   string    // Download: the path fetched
	Status int       // Download: the status answered (200, 206, 304, 410, ...)
	Ranged bool      // Download: a Range was asked for
	// Download: the bytes of the file the answer held (from Start, Sent of them reached the
	// connection) and the file's whole size; Size 0 when not known (a note from an older
	// snapshot), which counts a 2xx as whole.
	Start, Sent, Size int64
	Account           string // CreditsSet: the account whose balance was set
	// Download: Authorized says the request carried an Authorization header (the API key, sent
	// to storage); LinkExpires is the expiry a signed link named, and LinkExpired says the link
	// was refused for being past it (403).
	Authorized  bool
	LinkExpires time.Time
	LinkExpired bool
	// WebhookAttempt: the attempt as GET /_emulator/webhooks/deliveries lists it, its Seq the
	// number it took among the journal's entries, so findings can cite it; Audited says the
	// receiver audit was on, so the report judges the receiver by it.
	Webhook *api.WebhookAttempt
	Audited bool
}

// clip cuts a note's text to maxNoteText bytes (a cut id matches nothing, which is the aim),
// copied so that the note does not keep the request it came from.
func clip(s string) string {
	return strings.Clone(s[:min(len(s), maxNoteText)])
}

// The kinds of note as a snapshot names them.
var kindNames = map[NoteKind]string{Download: "download", CreditsSet: "credits_set", WebhookAttempt: "webhook_attempt"}

func (n *Note) export() api.SnapshotNote {
	out := api.SnapshotNote{Kind: kindNames[n.Kind], Time: stamp(n.Time), Job: n.Job, File: n.File, Status: n.Status,
		Ranged: n.Ranged, Start: n.Start, Sent: n.Sent, Size: n.Size, Account: n.Account,
		Authorized: n.Authorized, LinkExpired: n.LinkExpired, Webhook: n.Webhook, Audited: n.Audited}
	if !n.LinkExpires.IsZero() {
		out.LinkExpires = stamp(n.LinkExpires)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// importNotes checks a snapshot's notes: at most max of them, each well formed. Each problem is
// reported with a JSON Pointer relative to the notes, and that note is left out.
func importNotes(in api.SnapshotNotes, max int, report func(ptr, msg string)) ([]Note, time.Time) {
	var dropped time.Time
	if in.Dropped != "" {
		t, err := time.Parse(time.RFC3339Nano, in.Dropped)
		if err != nil {
			report("/dropped", "not an RFC 3339 time")
		}
		dropped = t
	}
	if len(in.Entries) > max {
		report("/entries", "holds "+strconv.Itoa(len(in.Entries))+" notes, more than the bound of "+strconv.Itoa(max))
		return nil, dropped
	}
	out := make([]Note, 0, len(in.Entries))
	for i, e := range in.Entries {
		at := "/entries/" + strconv.Itoa(i)
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		var linkExpires time.Time
		var linkErr error
		if e.LinkExpires != "" {
			linkExpires, linkErr = time.Parse(time.RFC3339Nano, e.LinkExpires)
		}
		kind := NoteKind(0)
		for k, name := range kindNames {
			if name == e.Kind {
				kind = k
			}
		}
		switch {
		case kind == 0:
			report(at+"/kind", "download, credits_set or webhook_attempt")
		case err != nil:
			report(at+"/time", "not an RFC 3339 time")
		case linkErr != nil:
			report(at+"/link_expires", "not an RFC 3339 time")
		case len(e.Job) > maxNoteText || len(e.File) > maxNoteText || len(e.Account) > maxNoteText:
			report(at, "a note's job, file and account are at most "+strconv.Itoa(maxNoteText)+" bytes each")
		case e.Status < 0 || e.Status > 999:
			report(at+"/status", "an HTTP status")
		case e.Start < 0 || e.Sent < 0 || e.Size < 0:
			report(at, "a note's start, sent and size are not negative")
		case (kind == WebhookAttempt) != (e.Webhook != nil):
			report(at+"/webhook", "a webhook_attempt note, and only one, holds the attempt")
		case e.Webhook != nil && !attemptFits(e.Webhook):
			report(at+"/webhook", "an attempt numbered from 1 whose texts are at most "+strconv.Itoa(3*maxNoteText)+" bytes together")
		default:
			out = append(out, Note{Kind: kind, Time: t, Job: e.Job, File: e.File, Status: e.Status, Ranged: e.Ranged,
				Start: e.Start, Sent: e.Sent, Size: e.Size, Account: e.Account,
				Authorized: e.Authorized, LinkExpires: linkExpires, LinkExpired: e.LinkExpired, Webhook: e.Webhook, Audited: e.Audited})
		}
	}
	return out, dropped
}

// attemptFits reports whether a restored attempt holds no more than one made here would: a
// number, and texts of at most 3*maxNoteText bytes together.
func attemptFits(a *api.WebhookAttempt) bool {
	n := 0
	for _, s := range [...]string{a.ID, a.Event, a.Job, a.Kind, a.At, a.Error, a.Outcome, a.Next} {
		n += len(s)
	}
	return a.Seq > 0 && n <= 3*maxNoteText
}
