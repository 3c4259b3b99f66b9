package recall

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

func TestBlockRoundTrip(t *testing.T) {
	b := block{
		"serial":     {{seq: 3, passage: 0, tf: 1, dl: 12}, {seq: 9, passage: 2, tf: 3, dl: 128}},
		"sn-4471-ax": {{seq: 9, passage: 2, tf: 1, dl: 128}},
	}
	got, err := decodeBlock(encodeBlock(b))
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Merging keeps each list in order, also when the new postings are
	// older (a rebuilt range).
	got.merge(block{"serial": {{seq: 5, tf: 1, dl: 4}}, "new": {{seq: 10, tf: 1, dl: 1}}})
	if s := got["serial"]; len(s) != 3 || s[1].seq != 5 || got.minSeq() != 3 || len(got["new"]) != 1 {
		t.Errorf("merged %+v", got)
	}
}

// FuzzDecodeBlock: a posting block of any bytes decodes or is an error
// wrapping store.ErrCorrupt — never a panic, never a huge allocation.
func FuzzDecodeBlock(f *testing.F) {
	f.Add(encodeBlock(block{"serial": {{seq: 3, tf: 1, dl: 12}, {seq: 9, passage: 2, tf: 3, dl: 128}}}))
	f.Add([]byte{blockVersion, 1, 2, 'a', 'b', 200, 1, 0})
	f.Add([]byte{})
	f.Add([]byte{statsVersion, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, v []byte) {
		b, err := decodeBlock(v)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if _, err := decodeBlock(encodeBlock(b)); err != nil {
			t.Fatalf("re-encoded block does not decode: %v", err)
		}
		if _, err := decodeStats(v); err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("stats error %v does not wrap ErrCorrupt", err)
		}
	})
}

// TestDamagedIndexIsRebuilt: a damaged block or session record is found
// by a search, which rebuilds the session's index from the ledger and
// answers as before; a catch-up that meets a damaged tail does the same.
func TestDamagedIndexIsRebuilt(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"block", "record", "tail on catch-up"} {
		t.Run(damage, func(t *testing.T) {
			f := newFixture(t)
			want := search(t, f, `{"query": "certificate serial SN-4471-AX", "scope": "all_sessions"}`)
			if len(want.Hits) == 0 {
				t.Fatal("no hits before the damage")
			}
			var ops []store.DocOp
			switch damage {
			case "block", "tail on catch-up":
				docs, err := f.st.ListDocs(ctx, CollBlocks, store.DocPath("support", "ana", bucketPart(bucketOf("sn-4471-ax"))), "", 0)
				if err != nil || len(docs) == 0 {
					t.Fatalf("blocks %d %v", len(docs), err)
				}
				if damage == "block" {
					f.l.add(f.cur, user("Serial SN-4471-AX is mentioned here too."))
					if _, err := f.x.CatchUp(ctx, f.cur); err != nil {
						t.Fatal(err)
					}
					if docs, err = f.st.ListDocs(ctx, CollBlocks, store.DocPath("support", "ana", bucketPart(bucketOf("sn-4471-ax"))), "", 0); err != nil || len(docs) < 2 {
						t.Fatalf("want blocks of two sessions, got %d %v", len(docs), err)
					}
				}
				for _, d := range docs {
					ops = append(ops, store.DocOp{Coll: CollBlocks, Key: d.Key, Value: []byte{blockVersion, 9, 1}})
				}
			case "record":
				ops = append(ops, store.DocOp{Coll: CollSessions, Key: store.DocPath("support", "ana", "s1"), Value: []byte{statsVersion, 0x80}})
			}
			if err := f.st.ApplyDocs(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			if damage == "tail on catch-up" {
				// New events whose terms fall in the damaged bucket.
				f.l.add(f.other, user("Another serial: SN-4471-AX again."))
				if _, err := f.x.CatchUp(ctx, f.other); err != nil {
					t.Fatalf("catch-up over a damaged tail: %v", err)
				}
			}
			got := search(t, f, `{"query": "certificate serial SN-4471-AX", "scope": "all_sessions"}`)
			if len(got.Hits) == 0 || got.Hits[len(got.Hits)-1].Snippet == "" {
				t.Fatalf("after the damage: %+v", got)
			}
			found := false
			for _, h := range got.Hits {
				found = found || h.EventID == want.Hits[0].EventID
			}
			if !found || !strings.Contains(got.Hits[0].Snippet, "SN-4471-AX") {
				t.Errorf("after rebuilding: %+v, want %s among them", got.Hits, want.Hits[0].EventID)
			}
		})
	}
}
