// Package ids makes the emulator's identifiers: random by default, and under a seed derived
// from the seed and stable inputs, so the same requests give the same ids even when concurrent
// requests interleave differently.
package ids

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

// Generator makes ids. It is safe for concurrent use.
type Generator struct {
	seeded bool
	ns     uuid.UUID
	seed   int64
	seq    atomic.Uint64
}

// NewRandom returns a generator of random ids.
func NewRandom() *Generator { return &Generator{} }

// NewSeeded returns a generator whose ids are a function of seed and the parts each call names.
func NewSeeded(seed int64) *Generator {
	return &Generator{seeded: true, seed: seed, ns: uuid.NewSHA1(uuid.NameSpaceOID, []byte("mediagen-emulator/"+strconv.FormatInt(seed, 10)))}
}

// Seeded reports whether ids are reproducible.
func (g *Generator) Seeded() bool { return g.seeded }

// UUID returns a UUID for an entity named by parts (e.g. "job", account, idempotency key).
// Under a seed the same parts give the same UUID; callers make parts unique.
func (g *Generator) UUID(parts ...string) string {
	if !g.seeded {
		return uuid.NewString()
	}
	// Each part is length-prefixed, so no two lists of parts name the same entity.
	var name strings.Builder
	for _, p := range parts {
		name.WriteString(strconv.Itoa(len(p)))
		name.WriteByte(':')
		name.WriteString(p)
	}
	return uuid.NewSHA1(g.ns, []byte(name.String())).String()
}

// RequestID returns an id for a request that arrived without one: random, or under a seed the
// seed's n-th request id.
func (g *Generator) RequestID() string {
	var b [12]byte
	if g.seeded {
		n := g.seq.Add(1)
		h := fnv.New64a()
		var buf [16]byte
		binary.LittleEndian.PutUint64(buf[:8], uint64(g.seed))
		binary.LittleEndian.PutUint64(buf[8:], n)
		h.Write(buf[:])
		binary.BigEndian.PutUint64(b[:8], h.Sum64())
		binary.BigEndian.PutUint32(b[8:], uint32(n))
	} else {
		// Request ids need to be unique, not secret: the fast generator will do.
		binary.BigEndian.PutUint64(b[:8], rand.Uint64())
		binary.BigEndian.PutUint32(b[8:], rand.Uint32())
	}
	return "req_" + hex.EncodeToString(b[:])
}
