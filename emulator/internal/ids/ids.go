// Package ids is the emulator's one source of randomness: identifiers and labelled draws, random
// by default, and under a seed derived from the seed and stable inputs, so the same requests give
// the same ids, draws and media even when concurrent requests interleave differently.
package ids

import (
	crand "crypto/rand"
	"crypto/sha256"
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

// For returns the generator of one tenant: under a seed its ids and draws depend on the seed and
// the tenant's name alone, so each tenant is reproducible whatever the others do.
func (g *Generator) For(tenant string) *Generator {
	if !g.seeded {
		return NewRandom()
	}
	return &Generator{seeded: true, seed: g.seed, ns: uuid.NewSHA1(g.ns, []byte("tenant/"+tenant))}
}

// Uint64 returns a draw named by parts: under a seed the same parts give the same number.
func (g *Generator) Uint64(parts ...string) uint64 {
	if !g.seeded {
		return rand.Uint64()
	}
	h := fnv.New64a()
	h.Write(g.ns[:])
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 returns a draw named by parts in [0, 1).
func (g *Generator) Float64(parts ...string) float64 {
	return float64(g.Uint64(parts...)>>11) / (1 << 53)
}

// Secret returns a 32-byte key for purpose: under a seed a function of the seed and purpose,
// so runs of the same seed share it; otherwise random and unguessable.
func (g *Generator) Secret(purpose string) []byte {
	if g.seeded {
		sum := sha256.Sum256([]byte("mediagen-emulator/" + purpose + "/" + strconv.FormatInt(g.seed, 10)))
		return sum[:]
	}
	key := make([]byte, sha256.Size)
	_, _ = crand.Read(key) // crypto/rand.Read never fails
	return key
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
	var out [4 + 2*len(b)]byte
	copy(out[:], "req_")
	hex.Encode(out[4:], b[:])
	return string(out[:])
}

// State is where a generator stands: what it is seeded with, and the request ids it has drawn.
type State struct {
	Seeded    bool
	Seed      int64
	Namespace string
	Requests  uint64
}

// State reports where the generator stands. Seeded draws are named by stable inputs, so this
// is all a generator needs to go on exactly as it would have.
func (g *Generator) State() State {
	s := State{Seeded: g.seeded, Requests: g.seq.Load()}
	if g.seeded {
		s.Seed, s.Namespace = g.seed, g.ns.String()
	}
	return s
}

// Restore returns a generator that goes on from a state State reported.
func Restore(s State) (*Generator, error) {
	if !s.Seeded {
		return NewRandom(), nil
	}
	ns, err := uuid.Parse(s.Namespace)
	if err != nil {
		return nil, err
	}
	g := &Generator{seeded: true, seed: s.Seed, ns: ns}
	g.seq.Store(s.Requests)
	return g, nil
}
