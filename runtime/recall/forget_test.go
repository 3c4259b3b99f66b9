package recall

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// TestForget indexes two sessions of a user whose ids share a prefix,
// forgets one, and finds none of its documents left and every one of the
// other's still there.
func TestForget(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	l := newLedger(t, st)
	gone, kept := key("ann", "s1"), key("ann", "s10")
	for _, k := range []store.SessionKey{gone, kept} {
		l.add(k, user("the router serial is SN-4471-AX"), toolRes("call_1", "lookup", `{"serial": "SN-4471-AX", "site": "Oslo"}`),
			ev{kind: runtime.EventToolResult, callID: "call_2", tool: SearchToolName, result: `{"hits": []}`, run: "run_r"})
		if _, err := NewIndex(st, nil).CatchUp(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	count := func(k store.SessionKey) map[string]int {
		out := map[string]int{}
		for _, coll := range []string{CollBlocks, CollClaims, CollRefs, CollSessions, legacyPostings, legacySessions} {
			ds, err := st.ListDocs(ctx, coll, store.DocPath(k.App, k.User), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				parts, _ := store.SplitDocPath(d.Key[len(store.DocPath(k.App, k.User)):])
				var sess string
				switch {
				case coll == CollSessions || coll == CollClaims || coll == legacySessions:
					sess = parts[0]
				case coll == CollRefs && parts[0] == "event":
					_, n := binary.Uvarint(d.Value)
					sess = string(d.Value[n:])
				default: // blocks: bucket, session, block; legacy postings: term, session, ref; call and recall-run refs: kind, session, id
					sess = parts[1]
				}
				if sess == k.Session {
					out[coll]++
				}
			}
		}
		return out
	}
	// Layout 1's documents of both sessions, left from before the upgrade.
	for _, k := range []store.SessionKey{gone, kept} {
		if err := st.ApplyDocs(ctx,
			store.DocOp{Coll: legacyPostings, Key: store.DocPath(k.App, k.User, "serial", k.Session, "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"), Value: []byte{1, 5}},
			store.DocOp{Coll: legacySessions, Key: store.DocPath(k.App, k.User, k.Session), Value: []byte{1, 1, 5}}); err != nil {
			t.Fatal(err)
		}
	}
	before := count(kept)
	if before[CollBlocks] == 0 || before[CollClaims] == 0 || before[CollRefs] < 4 || before[CollSessions] != 1 {
		t.Fatalf("indexed documents of %s: %v", kept, before)
	}
	if err := Forget(ctx, st, gone); err != nil {
		t.Fatal(err)
	}
	if got := count(gone); len(got) != 0 {
		t.Errorf("documents of the forgotten session left: %v", got)
	}
	if got := count(kept); got[CollBlocks] != before[CollBlocks] || got[CollClaims] != before[CollClaims] || got[CollRefs] != before[CollRefs] || got[CollSessions] != 1 || got[legacyPostings] != 1 || got[legacySessions] != 1 {
		t.Errorf("documents of the other session: %v, want %v", got, before)
	}
}
