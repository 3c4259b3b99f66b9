package recall

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
)

// Ranking (spec/recall.md, "Ranking"). One implementation serves the session
// index (postings in Docs) and the memory service (postings built in memory
// from the user's memories):
//
//  1. Okapi BM25 with k1 = 1.2 and b = 0.75 and the non-negative idf
//     ln(1 + (N − df + 0.5)/(df + 0.5)), divided by Σ idf(t), the score of
//     an ideal match (each query term once, at average length): x. A
//     compound query is scored three ways — whole (weight 1), by clause
//     (0.9), by each of the 4 rarest keywords alone (0.75 · its idf over the
//     rarest's) — merged by document identity, each document keeping its
//     best weighted x.
//  2. The best candidates are re-ranked by proximity p: the largest share
//     of the query's terms that occur together inside one window of the
//     document's terms. The score is 1 − exp(−2 · x · (0.4 + 0.6 · p)), in
//     [0, 1): an ideal match whose terms stand together scores 0.86.
const (
	bm25K1 = 1.2
	bm25B  = 0.75

	maxClauses  = 4 // clauses of a compound query that are searched
	maxKeywords = 4 // rarest terms searched alone

	weightWhole   = 1.0
	weightClause  = 0.9
	weightKeyword = 0.75

	// Proximity re-ranking: candidates re-ranked (at least minCandidates,
	// or candidatesPerHit per hit asked for), and the window's size.
	minCandidates    = 30
	candidatesPerHit = 6
	maxCandidates    = 150
	nearShare        = 0.75
	proxFloor        = 0.4
)

// posting says that a term occurs tf times in a document of dl terms.
type posting struct {
	doc    uint64 // identity of the document
	tf, dl int
	class  uint8 // length class: dl is normalized by its class's average
}

// source is a corpus the ranker reads: its size and average length, and
// the postings of a term (every document of the corpus; the filter keeps
// those in scope).
type source interface {
	stats() (n int, avgdl [numClasses]float64)
	// df returns the term's document frequency in the whole corpus.
	df(ctx context.Context, term string) (int, error)
	// postings returns the term's postings in scope for which want (nil:
	// every one) holds, in document order.
	postings(ctx context.Context, term string, want func(doc uint64) bool) ([]posting, error)
}

// scored is a ranked document.
type scored struct {
	doc   uint64
	score float64 // in [0, 1]
	raw   float64 // the whole query's BM25 score (tie-break)
}

// insertDF: a query term whose postings exceed this many (and max(N/50,
// that)) only adds to documents a rarer term found — a document holding
// none of the query's selective terms is never a candidate — so that a
// word in every tool result costs a lookup per posting, not a candidate.
const insertDF = 2000

// rank scores the documents of src that keep passes for q by BM25 and
// returns the best limit of them (limit ≤ 0: all), best first. ident maps a
// posting's document to the identity results merge by (nil: the document
// itself); a merged document keeps its best score.
func rank(ctx context.Context, src source, q query, keep func(doc uint64) bool, ident func(doc uint64) uint64, limit int) ([]scored, error) {
	if len(q.terms) == 0 {
		return nil, nil
	}
	n, avgdl := src.stats()
	if n == 0 {
		return nil, nil
	}
	for c := range avgdl {
		if avgdl[c] <= 0 {
			avgdl[c] = 1
		}
	}
	nt := len(q.terms)
	post := make([][]posting, nt)
	idf := make([]float64, nt)
	dfs := make([]int, nt)
	for i, t := range q.terms {
		dfn, err := src.df(ctx, t)
		if err != nil {
			return nil, err
		}
		df := float64(dfn)
		dfs[i] = dfn
		idf[i] = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	// Per document, each term's BM25 contribution; terms in order of
	// rarity, the common ones adding only to documents already found (so
	// only those of their postings are decoded into a list).
	order := make([]int, nt)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return idf[order[a]] > idf[order[b]] })
	insertCap := max(insertDF, n/50)
	row := map[uint64]int{}
	var contrib []float64 // row-major, nt per document
	var docs []uint64
	found := func(doc uint64) bool {
		_, ok := row[doc]
		return ok && (keep == nil || keep(doc))
	}
	for k, i := range order {
		w := idf[i]
		insert := k == 0 || dfs[i] <= insertCap
		want := keep
		if !insert {
			want = found
		}
		ps, err := src.postings(ctx, q.terms[i], want)
		if err != nil {
			return nil, err
		}
		post[i] = ps
		for _, p := range post[i] {
			r, ok := row[p.doc]
			if !ok {
				if !insert {
					continue
				}
				r = len(docs)
				row[p.doc] = r
				docs = append(docs, p.doc)
				contrib = append(contrib, make([]float64, nt)...)
			}
			tf := float64(p.tf)
			contrib[r*nt+i] += w * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(p.dl)/avgdl[p.class&1]))
		}
	}
	type pass struct {
		terms  []int
		weight float64
		whole  bool
	}
	inQuery := map[string]int{}
	for i, t := range q.terms {
		inQuery[t] = i
	}
	all := make([]int, nt)
	for i := range all {
		all[i] = i
	}
	passes := []pass{{all, weightWhole, true}}
	for _, c := range q.clauses {
		var ct []int
		for _, t := range c {
			if i, ok := inQuery[t]; ok {
				ct = append(ct, i)
			}
		}
		if len(ct) > 0 {
			passes = append(passes, pass{ct, weightClause, false})
		}
	}
	if nt >= 2 {
		kw := slices.Clone(all)
		sort.SliceStable(kw, func(a, b int) bool { return idf[kw[a]] > idf[kw[b]] })
		top := idf[kw[0]]
		for _, i := range kw[:min(nt, maxKeywords)] {
			if len(post[i]) > 0 && top > 0 {
				// A keyword weighs by its rarity against the rarest: an
				// identifier alone finds its event, a common word alone
				// does not.
				passes = append(passes, pass{[]int{i}, weightKeyword * idf[i] / top, false})
			}
		}
	}
	ideal := make([]float64, len(passes))
	for j, ps := range passes {
		for _, i := range ps.terms {
			ideal[j] += idf[i]
		}
	}
	best := map[uint64]int{}
	var out []scored
	for r, doc := range docs {
		c := contrib[r*nt : (r+1)*nt]
		var sc, raw float64
		for j, ps := range passes {
			if ideal[j] <= 0 {
				continue
			}
			sum := 0.0
			for _, i := range ps.terms {
				sum += c[i]
			}
			if sum == 0 {
				continue
			}
			sc = max(sc, sum/ideal[j]*ps.weight)
			if ps.whole {
				raw = sum
			}
		}
		if sc == 0 {
			continue
		}
		if ident != nil {
			doc = ident(doc)
		}
		if k, ok := best[doc]; ok {
			out[k].score = max(out[k].score, sc)
			out[k].raw = max(out[k].raw, raw)
			continue
		}
		best[doc] = len(out)
		out = append(out, scored{doc: doc, score: sc, raw: raw})
	}
	sortScored(out)
	if limit > 0 && len(out) > limit {
		// Near-duplicates crowd the top: keep, beyond limit, the documents
		// within nearShare of the best, up to maxCandidates, so that the
		// one holding the answer among many that only repeat the question's
		// words reaches the re-ranking.
		n := limit
		for n < len(out) && n < maxCandidates && out[n].score >= nearShare*out[0].score {
			n++
		}
		out = out[:n]
	}
	return out, nil
}

func sortScored(out []scored) {
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.raw != b.raw {
			return a.raw > b.raw
		}
		return a.doc > b.doc // later documents first
	})
}

// candidates is how many BM25 candidates a search of k hits re-ranks.
func candidates(k int) int { return max(minCandidates, candidatesPerHit*k) }

// rerank scores each candidate by its BM25 share x, its proximity p (the
// largest share of the query's distinct terms inside one window of the
// document's terms, termsOf), its coverage c (the share of the query's
// distinct terms it holds at all) and whether that window holds a value:
//
//	score = 1 − exp(−2 · x · (proxFloor + (1 − proxFloor) · p) · (coverFloor + (1 − coverFloor) · c) · (1 + valueBonus · v))
//
// then keeps the best k (k ≤ 0: all) with a score ≥ minScore, rounded to 4
// places. termsOf also weighs the document: its score is multiplied by the
// weight (0 drops it).
func rerank(cands []scored, q query, termsOf func(doc uint64) ([]string, float64, error), k int, minScore float64) ([]scored, error) {
	out := cands[:0:0]
	for _, c := range cands {
		terms, w, err := termsOf(c.doc)
		if err != nil {
			return nil, err
		}
		if w <= 0 {
			continue
		}
		m := match(terms, q)
		f := (proxFloor + (1-proxFloor)*m.proximity) * (coverFloor + (1-coverFloor)*m.coverage)
		if m.value {
			f *= 1 + valueBonus
		}
		c.score = math.Round(w*(1-math.Exp(-2*c.score*f))*1e4) / 1e4
		if c.score > 0 && c.score >= minScore {
			out = append(out, c)
		}
	}
	sortScored(out)
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// Re-ranking features: coverage (coverFloor) and the value bonus.
const (
	coverFloor = 0.5
	valueBonus = 0.25
)

// matchInfo is how a document's terms meet a query's.
type matchInfo struct {
	proximity float64 // largest share of the query's terms in one window
	coverage  float64 // share of the query's (or of its best clause's) terms in the document
	// value: the best window also holds a value — a joined term with a
	// digit that is not a query term (a serial, a date, a tag, a version,
	// an address: SN-4471-AX, 2027-03-14, AT-02189, v2.3.1): the
	// answer a question asks for stands next to its words; the question
	// asked again, or chatter about the same thing, does not.
	value bool
}

// match computes proximity (windows of 2·|query| + 2 consecutive terms of
// doc; 1 for a one-term query the document contains), coverage (of the
// whole query or of its best-covered clause) and the value flag.
func match(doc []string, q query) matchInfo {
	query := q.terms
	if len(query) == 0 {
		return matchInfo{}
	}
	want := make(map[string]int, len(query))
	for i, t := range query {
		want[t] = i
	}
	isValue := func(t string) bool {
		if _, q := want[t]; q {
			return false
		}
		return strings.ContainsAny(t, "0123456789") && strings.ContainsAny(t, "-_.:/#")
	}
	win := 2*len(query) + 2
	count := make([]int, len(query))
	seen := make([]bool, len(query))
	have, best, values, covered := 0, 0, 0, 0
	bestValue := false
	for i, t := range doc {
		if j, ok := want[t]; ok {
			if count[j] == 0 {
				have++
			}
			count[j]++
			if !seen[j] {
				seen[j] = true
				covered++
			}
		} else if isValue(t) {
			values++
		}
		if i >= win {
			old := doc[i-win]
			if j, ok := want[old]; ok {
				if count[j]--; count[j] == 0 {
					have--
				}
			} else if isValue(old) {
				values--
			}
		}
		if have > best || have == best && have > 0 && values > 0 && !bestValue {
			best, bestValue = have, values > 0
		}
	}
	cover := float64(covered) / float64(len(query))
	for _, c := range q.clauses {
		in := 0
		for _, t := range c {
			if j, ok := want[t]; ok && seen[j] {
				in++
			}
		}
		if len(c) > 0 {
			cover = max(cover, float64(in)/float64(len(c)))
		}
	}
	return matchInfo{proximity: float64(best) / float64(len(query)), coverage: cover, value: bestValue}
}

// Doc is a text ranked by Rank.
type Doc struct {
	Key  string
	Text string
}

// Ranked is a document's score in [0, 1].
type Ranked struct {
	Key   string
	Score float64
}

// Rank ranks docs against query with the same tokenizer, query parser and
// BM25 scoring as session_search: the best k (k ≤ 0: all) with score ≥
// minScore, best first. Documents with equal keys are one document (the
// last wins).
func Rank(query string, docs []Doc, k int, minScore float64) []Ranked {
	src := &memSource{post: map[string][]posting{}, lens: map[uint64]int{}}
	ids := map[string]uint64{}
	var keys []string
	terms := map[uint64][]string{}
	for _, d := range docs {
		id, dup := ids[d.Key]
		if dup {
			src.remove(id)
		} else {
			id = uint64(len(keys))
			ids[d.Key] = id
			keys = append(keys, d.Key)
		}
		ts := Terms(d.Text)
		terms[id] = ts
		tf := map[string]int{}
		for _, t := range ts {
			tf[t]++
		}
		src.lens[id] = len(ts)
		src.total += len(ts)
		for t, c := range tf {
			src.post[t] = append(src.post[t], posting{doc: id, tf: c, dl: len(ts)})
		}
	}
	q := parseQuery(query)
	cands, _ := rank(context.Background(), src, q, nil, nil, candidates(k))
	res, _ := rerank(cands, q, func(doc uint64) ([]string, float64, error) { return terms[doc], 1, nil }, k, minScore)
	out := make([]Ranked, len(res))
	for i, r := range res {
		out[i] = Ranked{Key: keys[r.doc], Score: r.score}
	}
	return out
}

// memSource is a corpus held in memory (Rank).
type memSource struct {
	post  map[string][]posting
	lens  map[uint64]int
	total int
}

func (m *memSource) remove(id uint64) {
	m.total -= m.lens[id]
	delete(m.lens, id)
	for t, ps := range m.post {
		m.post[t] = slices.DeleteFunc(ps, func(p posting) bool { return p.doc == id })
	}
}

func (m *memSource) stats() (int, [numClasses]float64) {
	if len(m.lens) == 0 {
		return 0, [numClasses]float64{}
	}
	avg := float64(m.total) / float64(len(m.lens))
	return len(m.lens), [numClasses]float64{avg, avg}
}

func (m *memSource) df(_ context.Context, t string) (int, error) { return len(m.post[t]), nil }

func (m *memSource) postings(_ context.Context, t string, want func(uint64) bool) ([]posting, error) {
	if want == nil {
		return m.post[t], nil
	}
	var out []posting
	for _, p := range m.post[t] {
		if want(p.doc) {
			out = append(out, p)
		}
	}
	return out, nil
}
