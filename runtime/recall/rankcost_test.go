package recall

import (
	"context"
	"testing"
)

// countingSource counts the postings a ranking materializes per term.
type countingSource struct {
	*memSource
	got map[string]int
}

func (c *countingSource) postings(ctx context.Context, t string, want func(uint64) bool) ([]posting, error) {
	ps, err := c.memSource.postings(ctx, t, want)
	c.got[t] += len(ps)
	return ps, err
}

// A term in more than max(insertDF, N/50) passages only adds to passages a
// rarer term found, so only those of its postings are materialized: the
// first search after opening a 25K-event store spent most of its CPU
// growing the lists of such words (42–76 ms → 14–23 ms, bench/context
// -quick -only recall -sizes 25000).
func TestCommonTermsOnlyForFoundPassages(t *testing.T) {
	src := &memSource{post: map[string][]posting{}, lens: map[uint64]int{}}
	const n = 5000
	for id := uint64(0); id < n; id++ {
		src.lens[id] = 10
		src.total += 10
		src.post["inventory"] = append(src.post["inventory"], posting{doc: id, tf: 1, dl: 10})
		if id%1000 == 7 {
			src.post["orion"] = append(src.post["orion"], posting{doc: id, tf: 1, dl: 10})
		}
	}
	c := &countingSource{memSource: src, got: map[string]int{}}
	res, err := rank(context.Background(), c, parseQuery("orion inventory"), nil, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 {
		t.Fatalf("%d results, want the 5 passages with orion", len(res))
	}
	if c.got["orion"] != 5 || c.got["inventory"] != 5 {
		t.Fatalf("postings materialized = %v, want orion 5 and inventory only where orion is (5)", c.got)
	}
}
