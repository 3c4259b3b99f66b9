package runtime

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/storetest"
)

// TestLedgerCacheAppended: events told to the cache are not read back when
// they directly follow what it holds; anything else (a gap, events it read
// already, a ledger it does not hold from its start) is left to the next
// read, which returns the same events as a cache never told.
func TestLedgerCacheAppended(t *testing.T) {
	ctx := context.Background()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	enc := func(t *testing.T, kind EventKind, text string) []byte {
		b, err := EncodeEvent(&Event{ID: text, Kind: kind, Text: text, Persisted: true, Time: time.Unix(1, 0)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type tell struct {
		first uint64 // the tap's first sequence (the append's own when 0)
		evs   int    // how many of the append's events are told
	}
	cases := []struct {
		name string
		// appends are written in order; tells[i], when set, is what the
		// cache is told of appends[i]; reads lists the appends after
		// which the cache is read.
		appends    [][]EventKind
		tells      []*tell
		reads      []int
		wantReread int64
	}{
		{"told from the start", [][]EventKind{{EventInput, EventRunStarted}, {EventModelResponse}}, []*tell{{}, {}}, []int{1}, 0},
		{"a gap is read", [][]EventKind{{EventInput}, {EventModelResponse}, {EventToolResult}}, []*tell{{}, nil, {}}, []int{2}, 2},
		{"read already", [][]EventKind{{EventInput}, {EventModelResponse}}, []*tell{{}, {}}, []int{0, 1}, 0},
		{"told after a read past it", [][]EventKind{{EventInput}, {EventModelResponse, EventToolResult}}, []*tell{nil, nil}, []int{1}, 3},
		{"not from the start", [][]EventKind{{EventInput}, {EventModelResponse}}, []*tell{nil, {}}, []int{1}, 2},
		{"a wrong first is ignored", [][]EventKind{{EventInput}, {EventModelResponse}}, []*tell{{}, {first: 5}}, []int{1}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &storetest.Reads{Store: memory.New()}
			if _, _, err := st.GetOrCreateSession(ctx, key, time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
			told, plain := NewLedgerCache(4, 0), NewLedgerCache(4, 0)
			n := 0
			for i, kinds := range tc.appends {
				var bs [][]byte
				for _, k := range kinds {
					n++
					bs = append(bs, enc(t, k, string(k)+"-"+string(rune('0'+n))))
				}
				first, err := st.AppendEvents(ctx, key, bs, time.Unix(1, 0))
				if err != nil {
					t.Fatal(err)
				}
				if tl := tc.tells[i]; tl != nil {
					f := first
					if tl.first != 0 {
						f = tl.first
					}
					told.Appended(key, f, bs)
				}
				if slices.Contains(tc.reads, i) {
					if _, _, err := told.Events(ctx, st, key, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, _, err := told.Events(ctx, st, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			reread := int64(st.Entries())
			want, _, err := plain.Events(ctx, st.Store, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d events, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].ID != want[i].ID || got[i].Seq != want[i].Seq || got[i].Kind != want[i].Kind {
					t.Fatalf("event %d: got %s/%d/%s, want %s/%d/%s", i, got[i].ID, got[i].Seq, got[i].Kind, want[i].ID, want[i].Seq, want[i].Kind)
				}
			}
			if reread != tc.wantReread {
				t.Fatalf("%d entries read back, want %d", reread, tc.wantReread)
			}
		})
	}
}

// TestRunnerTellsItsLedger: a session's runs open their context from what
// the Runner told its ledger cache, not from the store: no event is read
// back, on a second run of the session either.
func TestRunnerTellsItsLedger(t *testing.T) {
	st := &storetest.Reads{Store: memory.New()}
	model := &fakeModel{name: "fast", reply: textReply("The report.", 3), rec: true}
	f := newFixture(t, st, buildProgram(t, progOpts{noInterrupt: true}), model, nil, nil)
	ctx := context.Background()
	for i := range 2 {
		evs := f.collect(ctx, Invocation{User: "u1", Session: "s1", Input: "example.com"})
		if fin := last(evs); fin.Kind != EventRunFinished || fin.Status != StatusCompleted {
			t.Fatalf("run %d ended %s %s", i, fin.Kind, fin.Status)
		}
	}
	if n := int64(st.Entries()); n != 0 {
		t.Fatalf("%d ledger events read back", n)
	}
	// The second run's model saw the first run's exchange.
	calls := model.requests()
	if len(calls) != 2 {
		t.Fatalf("%d model calls, want 2", len(calls))
	}
	first, second := calls[0].Messages, calls[1].Messages
	if len(second) != len(first)+2 { // the first run's input and reply
		t.Fatalf("the second request has %d messages, the first %d: want the first run's exchange more", len(second), len(first))
	}
}

// TestLedgerCacheToldBound: a session told more than maxTold events it
// never read is dropped to be read from the store, not kept growing.
func TestLedgerCacheToldBound(t *testing.T) {
	ctx := context.Background()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	st := &storetest.Reads{Store: memory.New()}
	if _, _, err := st.GetOrCreateSession(ctx, key, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	c := NewLedgerCache(4, 0)
	n := maxTold + 10
	for i := range n {
		b, err := EncodeEvent(&Event{ID: fmt.Sprint("e", i), Kind: EventInput, Text: "hi", Persisted: true, Time: time.Unix(1, 0)})
		if err != nil {
			t.Fatal(err)
		}
		first, err := st.AppendEvents(ctx, key, [][]byte{b}, time.Unix(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		c.Appended(key, first, [][]byte{b})
	}
	cl := c.m[key]
	if cl == nil || len(cl.told) > maxTold {
		t.Fatalf("the entry keeps %d told events, the bound is %d", len(cl.told), maxTold)
	}
	got, _, err := c.Events(ctx, st, key, 0)
	if err != nil || len(got) != n {
		t.Fatalf("read %d events (%v), want %d", len(got), err, n)
	}
	for i, e := range got {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// longLedger writes a session of n events (an input, then model deltas
// and a response, in turns of 10) to st.
func longLedger(tb testing.TB, st store.Store, key store.SessionKey, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, _, err := st.GetOrCreateSession(ctx, key, time.Unix(1, 0)); err != nil {
		tb.Fatal(err)
	}
	var bs [][]byte
	for i := range n {
		kind := EventModelDelta
		switch i % 10 {
		case 0:
			kind = EventInput
		case 9:
			kind = EventModelResponse
		}
		b, err := EncodeEvent(&Event{ID: fmt.Sprint("e", i), Kind: kind, Text: "a turn of the conversation, of some length", Persisted: true, Time: time.Unix(1, 0)})
		if err != nil {
			tb.Fatal(err)
		}
		bs = append(bs, b)
	}
	if _, err := st.AppendEvents(ctx, key, bs, time.Unix(1, 0)); err != nil {
		tb.Fatal(err)
	}
}

// TestLedgerCacheFirstRead: a first read of a session reads its window
// (with a window) or from the sequence asked after (without), not the
// ledger from its start; a later read asked for events before what the
// entry read reads them. Every read returns what a read of the whole
// ledger would.
func TestLedgerCacheFirstRead(t *testing.T) {
	ctx := context.Background()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	st := &storetest.Reads{Store: memory.New()}
	longLedger(t, st, key, 5000)
	whole := func(after, window uint64) []uint64 {
		evs, _, err := NewLedgerCache(0, 0).Events(ctx, st.Store, key, after)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, e := range evs {
			if window == 0 || 5000-e.Seq < window {
				seqs = append(seqs, e.Seq)
			}
		}
		return seqs
	}
	for _, tc := range []struct {
		name          string
		window, after uint64
		read          int64
	}{
		{"window", 256, 0, 256},
		{"window, after in it", 256, 4900, 100},
		{"no window, after", 0, 4000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.Reset()
			c := NewLedgerCache(4, tc.window)
			got, _, last, err := c.events(ctx, st, key, tc.after)
			if err != nil || last != 5000 {
				t.Fatalf("events: last %d, %v", last, err)
			}
			var seqs []uint64
			for _, e := range got {
				if tc.window == 0 || last-e.Seq < tc.window {
					seqs = append(seqs, e.Seq)
				}
			}
			if want := whole(tc.after, tc.window); !slices.Equal(seqs, want) {
				t.Errorf("got %d events (%v…), want %d", len(seqs), seqs[:min(3, len(seqs))], len(want))
			}
			if n := int64(st.Entries()); n != tc.read {
				t.Errorf("read %d entries, want %d", n, tc.read)
			}
		})
	}
	// Without a window, events before the first read's are read when
	// asked for.
	st.Reset()
	c := NewLedgerCache(4, 0)
	if _, _, err := c.Events(ctx, st, key, 4000); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Events(ctx, st, key, 3000)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range got {
		seqs = append(seqs, e.Seq)
	}
	if want := whole(3000, 0); !slices.Equal(seqs, want) {
		t.Errorf("after 3000 once 4000 was read: %d events, want %d", len(seqs), len(want))
	}
	if n := int64(st.Entries()); n != 1000+2000 {
		t.Errorf("read %d entries, want 3000", n)
	}
}

// BenchmarkLedgerCacheFirstRead is a session's first read by the plain
// projection's cache (a window of PlainHistoryEvents) in a ledger of 5,000
// events on the memory store, against a read of the whole ledger (no
// window: what the first read cost before it began at the window).
func BenchmarkLedgerCacheFirstRead(b *testing.B) {
	ctx := context.Background()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	st := memory.New()
	longLedger(b, st, key, 5000)
	for _, c := range []struct {
		name   string
		window uint64
	}{{"window", PlainHistoryEvents}, {"whole", 0}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := NewLedgerCache(plainCacheSessions, c.window).Events(ctx, st, key, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
