package runtime

import (
	"sync"
	"time"

	"github.com/agentc/agentc/vm"
)

// ulidGen makes ULIDs (https://github.com/ulid/spec): 48 bits of Unix
// milliseconds from the injected clock, then 80 bits from the injected
// entropy, in Crockford's base32 (26 characters, so that ids sort by time).
// Within one millisecond the random part is incremented instead of drawn
// again, so the ids of one generator strictly increase. It is safe for
// concurrent use.
type ulidGen struct {
	clock vm.Clock
	ent   vm.Entropy

	mu     sync.Mutex
	lastMs uint64
	hi     uint16 // top 16 bits of the random part
	lo     uint64 // low 64 bits of the random part
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func newULIDGen(clock vm.Clock, ent vm.Entropy) *ulidGen {
	return &ulidGen{clock: clock, ent: ent}
}

// next returns a new ULID.
func (g *ulidGen) next() string { return g.nextAt(g.clock.Now()) }

// nextAt returns a new ULID for time t (a time the caller read from the
// clock).
func (g *ulidGen) nextAt(t time.Time) string {
	var b [26]byte
	g.fill(&b, t)
	return string(b[:])
}

// nextWithPrefix returns prefix followed by a new ULID (run_…, inv_…).
func (g *ulidGen) nextWithPrefix(prefix string) string {
	var b [26]byte
	g.fill(&b, g.clock.Now())
	return prefix + string(b[:])
}

func (g *ulidGen) fill(b *[26]byte, t time.Time) {
	ms := uint64(0)
	if t.UnixMilli() > 0 {
		ms = uint64(t.UnixMilli()) & (1<<48 - 1)
	}
	g.mu.Lock()
	if ms > g.lastMs || (g.lastMs == 0 && g.lo == 0 && g.hi == 0) {
		g.lastMs = ms
		g.lo = g.ent.Uint64()
		g.hi = uint16(g.ent.Uint64())
	} else {
		// The same millisecond (or a clock that went back): keep the last
		// time and increment the random part, carrying into hi.
		ms = g.lastMs
		g.lo++
		if g.lo == 0 {
			g.hi++
		}
	}
	hi, lo := g.hi, g.lo
	g.mu.Unlock()
	encodeULID(b, ms, hi, lo)
}

// encodeULID writes the 128-bit value ms(48) · hi(16) · lo(64) as 26
// base32 digits, most significant first (the first digit holds 3 bits).
func encodeULID(b *[26]byte, ms uint64, hi uint16, lo uint64) {
	// As two 64-bit halves: top = ms<<16 | hi, bottom = lo.
	top := ms<<16 | uint64(hi)
	bottom := lo
	for i := 25; i >= 0; i-- {
		b[i] = crockford[bottom&31]
		bottom = bottom>>5 | top<<59
		top >>= 5
	}
}
