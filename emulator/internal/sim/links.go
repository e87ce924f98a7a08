package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// Signed output links, as storage services hand them out: when the scenario in force gives a
// model's downloads a url_ttl, each job read names its outputs by a link that carries its
// expiry and an HMAC of the file's path (tenant, job and file) and that expiry, so a stored
// link stops working while the file is still kept, and reading the job again gives a fresh one.
// The link is checked against the scenario in force when it is fetched; with no url_ttl a file
// is served at its plain path, whatever the query says, as before.

// The query parameters of a signed link.
const (
	linkExpires   = "expires"
	linkSignature = "signature"
)

// linkSecret names the run's secret for signing links (ids.Generator.Secret): under a seed the
// same seed gives the same links. Every tenant signs with it and names itself in the path it
// signs, so a restored snapshot's links verify within the run, and across runs of the same seed.
const linkSecret = "output-links"

// signer is an HMAC with the run's secret, to sign one read's links with.
func (w *World) signer() hash.Hash { return hmac.New(sha256.New, w.cfg.linkKey) }

// sign is the signature of a link to path valid until expires (Unix seconds), made with m
// (from signer).
func sign(m hash.Hash, path string, expires int64) string {
	m.Reset()
	m.Write([]byte(path))
	var buf [32]byte
	m.Write(strconv.AppendInt(append(buf[:0], '\n'), expires, 10))
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0]))
}

// urlTTL is how long the links to a model's outputs live under the scenario in force; 0 when
// they are not signed.
func (w *World) urlTTL(model string) time.Duration {
	m, _ := w.cfg.Catalog.Model(model)
	if d := w.inForce().Effective(m).Download; d != nil {
		return time.Duration(d.URLTTL)
	}
	return 0
}

// OutputLink is an output's address as a job read shows it now.
type OutputLink struct {
	Path string // the path, and the query of a signed link
	// ExpiresAt is when a signed link stops working: url_ttl from now on the tenant's clock,
	// cut to the second and never past the file's own expiry. Zero for a plain link.
	ExpiresAt time.Time
}

// OutputLinks gives each output of a job its link as of now.
func (w *World) OutputLinks(v jobs.View) []OutputLink {
	out := make([]OutputLink, len(v.Outputs))
	ttl := time.Duration(0)
	if len(v.Outputs) > 0 {
		ttl = w.urlTTL(v.Model)
	}
	var exp time.Time
	var m hash.Hash
	if ttl > 0 {
		m = w.signer()
		exp = w.clock.Now().Add(ttl)
		if exp.After(v.OutputsExpireAt) {
			exp = v.OutputsExpireAt
		}
		exp = time.Unix(exp.Unix(), 0).UTC() // the link names whole seconds
	}
	for i, o := range v.Outputs {
		out[i].Path = o.Path
		if ttl > 0 {
			// Digits and hex need no escaping: the query is written as it is.
			q := linkExpires + "=" + strconv.FormatInt(exp.Unix(), 10) + "&" + linkSignature + "=" + sign(m, o.Path, exp.Unix())
			out[i] = OutputLink{Path: o.Path + "?" + q, ExpiresAt: exp}
		}
	}
	return out
}

// Link refusals, in the words of S3, whose answers real clients meet.
const (
	StorageAccessDenied     = "AccessDenied"
	StorageSignatureInvalid = "SignatureDoesNotMatch"
	StorageInvalidArgument  = "InvalidArgument"
)

// LinkRefusal is why a file was not served at the link asked for: the storage service's status,
// code and message (not the API's problem, since storage is not the API).
type LinkRefusal struct {
	Status  int
	Code    string
	Message string
	// Expired says the link was sound but past its expiry, Expires; Now is the tenant's clock.
	Expired      bool
	Expires, Now time.Time
}

// Error says the storage code and message.
func (e *LinkRefusal) Error() string { return e.Code + ": " + e.Message }

// LinkFacts are what a download's note keeps of the link it used.
type LinkFacts struct {
	Expires time.Time // the expiry a signed link named; zero when it named none
	Expired bool      // refused for being past it
}

// CheckLink admits a request for a file found by File, given its query and whether it carried
// an Authorization header: a model whose links the scenario in force signs is served only at a
// link signed by this run and not yet expired. The error is a *LinkRefusal.
func (w *World) CheckLink(f File, query url.Values, authorization bool) (LinkFacts, error) {
	var facts LinkFacts
	if f.Download == nil || f.Download.URLTTL == 0 {
		return facts, nil
	}
	sig, expText := query.Get(linkSignature), query.Get(linkExpires)
	if authorization && f.Download.RejectAuthorization && (sig != "" || expText != "") {
		if exp, err := strconv.ParseInt(expText, 10, 64); err == nil && exp >= 0 {
			facts.Expires = time.Unix(exp, 0).UTC() // what the refused link named, for its note
		}
		return facts, &LinkRefusal{Status: 400, Code: StorageInvalidArgument,
			Message: "Only one auth mechanism allowed; only the signature query string parameter or the Authorization header should be specified"}
	}
	exp, err := strconv.ParseInt(expText, 10, 64)
	if sig == "" || err != nil || exp < 0 {
		return facts, &LinkRefusal{Status: 403, Code: StorageAccessDenied, Message: "Access Denied"}
	}
	if !hmac.Equal([]byte(sig), []byte(sign(w.signer(), f.Output.Path, exp))) {
		return facts, &LinkRefusal{Status: 403, Code: StorageSignatureInvalid,
			Message: "The request signature we calculated does not match the signature you provided."}
	}
	facts.Expires = time.Unix(exp, 0).UTC()
	if !f.Now.Before(facts.Expires) {
		facts.Expired = true
		w.stale.add(f.Output.Path)
		w.coverage.Hit(evidence.LinkExpired)
		return facts, &LinkRefusal{Status: 403, Code: StorageAccessDenied, Message: "Request has expired",
			Expired: true, Expires: facts.Expires, Now: f.Now}
	}
	if w.stale.remove(f.Output.Path) {
		w.coverage.Hit(evidence.LinkRefreshed)
	}
	return facts, nil
}

// maxStale bounds the files a world remembers were asked for at an expired link, until a fresh
// link fetches them; past it the oldest is forgotten (its refresh then goes uncounted).
const maxStale = 1024

// staleFiles are the paths of files last asked for at an expired link: a later fetch of one
// at a sound link is a link refreshed, which coverage counts.
type staleFiles struct {
	mu    sync.Mutex
	order []string
	set   map[string]bool
}

func (s *staleFiles) add(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	if s.set[path] {
		return
	}
	if len(s.order) >= maxStale {
		delete(s.set, s.order[0])
		s.order = s.order[1:]
	}
	s.order = append(s.order, path)
	s.set[path] = true
}

func (s *staleFiles) remove(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set[path] {
		return false
	}
	delete(s.set, path)
	for i, p := range s.order {
		if p == path {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	return true
}
