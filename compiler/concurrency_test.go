package compiler

import (
	"math/rand/v2"
	"testing"
)

// TestConflictCandidatesCoverMHP checks that writeConflicts' pruning keeps
// every pair of writers mhp holds for, in the order of the full scan: on
// random tag sets over a few forks, the candidates filtered by mhp equal
// the pairs a full pairwise scan finds.
func TestConflictCandidatesCoverMHP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		nw := 2 + r.IntN(12)
		tags := make([][]tag, nw)
		ws := make([]*Node, nw)
		for w := range nw {
			ws[w] = &Node{Index: w}
			var ts []tag
			for range r.IntN(4) {
				var atoms []uint32
				for range 1 + r.IntN(2) {
					atoms = append(atoms, uint32(r.IntN(3)))
				}
				ts = append(ts, tag{fork: int32(r.IntN(3)), atoms: atomsOf(atoms...)})
			}
			tags[w] = normTags(ts)
		}
		var want, got [][2]int
		for i := range nw {
			for j := i + 1; j < nw; j++ {
				if mhp(tags[i], tags[j]) {
					want = append(want, [2]int{i, j})
				}
			}
		}
		for _, p := range conflictCandidates(tags, ws) {
			if mhp(tags[p[0]], tags[p[1]]) {
				got = append(got, p)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: tags %v: pairs %v, want %v", round, tags, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: tags %v: pairs %v, want %v", round, tags, got, want)
			}
		}
	}
}

// TestChainWritersAreNotPaired: the writers of a chain carry no tags and
// are never candidates (the quadratic scan issue 21 measured).
func TestChainWritersAreNotPaired(t *testing.T) {
	tags := make([][]tag, 100)
	ws := make([]*Node, 100)
	for i := range ws {
		ws[i] = &Node{Index: i}
	}
	if ps := conflictCandidates(tags, ws); len(ps) != 0 {
		t.Errorf("%d candidate pairs among untagged writers", len(ps))
	}
	// One branch of a fork: the same tag everywhere, no pairs either.
	for i := range tags {
		tags[i] = []tag{{fork: 7, atoms: atomsOf(1)}}
	}
	if ps := conflictCandidates(tags, ws); len(ps) != 0 {
		t.Errorf("%d candidate pairs within one branch", len(ps))
	}
}
