package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/runtime/store/storetest"
)

// TestSkipsOnlyWhatCannotMatch: an event EventFilter.skips passes over
// without decoding is one match would have refused, for runs with and
// without escapes, events without a run, and payloads holding a "run"
// member of their own; and it does pass over most of another run's events.
func TestSkipsOnlyWhatCannotMatch(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []*runtime.Event
	for _, run := range []string{"run_a", "run_b", "", `run_"q`, `run_\b`} {
		for _, kind := range []runtime.EventKind{runtime.EventInput, runtime.EventModelDelta, runtime.EventRunFinished} {
			e := &runtime.Event{ID: "e" + fmt.Sprint(len(evs)), Kind: kind, Time: at, App: "a", User: `u"x`, Session: `s,"run":"run_a"`, Run: run, Text: `,"run":"run_a"`}
			if kind == runtime.EventRunFinished {
				e.Status = runtime.StatusCompleted
				e.Output = json.RawMessage(`{"x":1,"run":"run_a","kind":"input"}`)
			}
			evs = append(evs, e)
		}
	}
	filters := []EventFilter{{}}
	for _, run := range []string{"", "run_a", "run_b", `run_"q`, `run_\b`, "run_c"} {
		for _, kinds := range [][]runtime.EventKind{nil, {runtime.EventInput}, {runtime.EventRunFinished, runtime.EventModelDelta}} {
			filters = append(filters, EventFilter{Run: run, Kinds: kinds})
		}
	}
	skipped := 0
	for _, e := range evs {
		b, err := runtime.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		d, err := runtime.DecodeEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range filters {
			if f.skips(b) {
				skipped++
				if f.match(d) {
					t.Errorf("filter %+v skips %s, which it matches", f, b)
				}
			}
		}
	}
	if skipped < len(evs)*len(filters)/3 {
		t.Errorf("only %d of %d (event, filter) pairs skipped", skipped, len(evs)*len(filters))
	}
	// Another codec's encoding is never skipped: it is decoded, and its
	// error reported.
	other := []byte(`{"v":2,"id":"x","kind":"input","run":"run_b"}`)
	if (&EventFilter{Run: "run_a"}).skips(other) {
		t.Error("an event of another codec version is skipped")
	}
}

// TestEventsOfARun: Events with a run filter returns that run's events from
// a session of many runs; an event that does not decode is still an error
// when it is of the run asked for, and not when its run rules it out.
func TestEventsOfARun(t *testing.T) {
	ctx := context.Background()
	// A damaged event of run_010 (its run member readable, the rest not).
	svc, k := runsLedger(t, 50, 3, []byte(`{"v":1,"id":"bad","kind":"input","time":"2026-01-02T03:04:05Z","app":"a","user":"u","session":"s","run":"run_010",`))
	got, err := svc.Events(ctx, k, EventFilter{Run: "run_049", Kinds: []runtime.EventKind{runtime.EventRunFinished, runtime.EventInput}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "e49-0" || got[1].ID != "e49-2" || got[1].Seq != 49*3+3 {
		t.Fatalf("run_049's input and run_finished: %+v", got)
	}
	if _, err := svc.Events(ctx, k, EventFilter{Run: "run_010"}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("a damaged event of the run asked for: %v, want an error", err)
	}
}

// BenchmarkEventsOfARun reads the last run's run_finished out of a session
// of 500 runs (5,000 events) on the memory store: "run-indexed" with the
// run's record naming its first event (the ledger is read from there),
// "run" without records (the other runs' events are read and passed over
// undecoded), against "decode-all", a filter only a decoded event can be
// tested by; and the two run reads on the Pebble store.
func BenchmarkEventsOfARun(b *testing.B) {
	ctx := context.Background()
	svc, k := runsLedger(b, 500, 10)
	indexed := runsLedgerOn(b, memory.New(), true, 500, 10)
	onPebble := func(records bool) *Service {
		st, err := pebble.Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return runsLedgerOn(b, st, records, 500, 10)
	}
	last := EventFilter{Run: "run_499", Kinds: []runtime.EventKind{runtime.EventRunFinished}}
	for _, c := range []struct {
		name string
		svc  *Service
		f    EventFilter
		want int
	}{
		{"run-indexed", indexed, last, 1},
		{"run", svc, last, 1},
		{"decode-all", svc, EventFilter{FilterKey: "nosuch"}, 0},
		{"pebble/run-indexed", onPebble(true), last, 1},
		{"pebble/run", onPebble(false), last, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				evs, err := c.svc.Events(ctx, k, c.f)
				if err != nil || len(evs) != c.want {
					b.Fatal(len(evs), err)
				}
			}
		})
	}
}

// runsLedger returns a Service over the memory store and the key of a
// session of runs runs run_000, run_001, … of perRun events each (an
// input, model deltas, a run_finished; ids e<run>-<i>), then the raw
// events extra. The runs have no records (see runsLedgerOn).
func runsLedger(tb testing.TB, runs, perRun int, extra ...[]byte) (*Service, store.SessionKey) {
	tb.Helper()
	st := memory.New()
	return runsLedgerOn(tb, st, false, runs, perRun, extra...), store.SessionKey{App: "a", User: "u", Session: "s"}
}

// runsLedgerOn writes runsLedger's session to st and returns a Service over
// st; with records, each run has its record, naming its first event.
func runsLedgerOn(tb testing.TB, st Store, records bool, runs, perRun int, extra ...[]byte) *Service {
	tb.Helper()
	ctx := context.Background()
	k := store.SessionKey{App: "a", User: "u", Session: "s"}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, _, err := st.GetOrCreateSession(ctx, k, now); err != nil {
		tb.Fatal(err)
	}
	var raw [][]byte
	for r := range runs {
		for i := range perRun {
			kind := runtime.EventModelDelta
			switch i {
			case 0:
				kind = runtime.EventInput
			case perRun - 1:
				kind = runtime.EventRunFinished
			}
			e, err := runtime.EncodeEvent(&runtime.Event{ID: fmt.Sprintf("e%d-%d", r, i), Kind: kind, Time: now, App: k.App, User: k.User, Session: k.Session,
				Run: fmt.Sprintf("run_%03d", r), Node: "chat", Text: "a delta of the model's reply, of some length", Status: runtime.StatusCompleted, Persisted: true})
			if err != nil {
				tb.Fatal(err)
			}
			raw = append(raw, e)
		}
		first, err := st.AppendEvents(ctx, k, raw, now)
		if err != nil {
			tb.Fatal(err)
		}
		raw = raw[:0]
		if records {
			rec := store.Run{ID: fmt.Sprintf("run_%03d", r), Session: k, Runnable: "chat", Status: store.RunCompleted, Created: now, Updated: now, FirstEvent: first}
			if err := st.CreateRun(ctx, rec); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if len(extra) > 0 {
		if _, err := st.AppendEvents(ctx, k, extra, now); err != nil {
			tb.Fatal(err)
		}
	}
	return New(st)
}

// TestEventsFromTheRunsFirst: a run's events are read from the first event
// its record names, not from the ledger's start (RunEvents: from the record
// the caller holds, without reading it again); a record that does not name
// it (none, 0, another session's) leaves the read at the ledger's start,
// and an After of the caller's is kept.
func TestEventsFromTheRunsFirst(t *testing.T) {
	ctx := context.Background()
	st := &storetest.Reads{Store: memory.New()}
	svc := runsLedgerOn(t, st, true, 50, 3)
	k := store.SessionKey{App: "a", User: "u", Session: "s"}
	read := func(f EventFilter) ([]*runtime.Event, uint64) {
		t.Helper()
		st.Reset()
		evs, err := svc.Events(ctx, k, f)
		if err != nil || len(st.Afters()) == 0 {
			t.Fatalf("Events(%+v): %v, reads %v", f, err, st.Afters())
		}
		return evs, st.Afters()[0]
	}
	evs, after := read(EventFilter{Run: "run_049"})
	if len(evs) != 3 || evs[0].ID != "e49-0" || after != 49*3 {
		t.Errorf("run_049: %d events from %v, read after %d; want its 3, after %d", len(evs), evs, after, 49*3)
	}
	if _, after = read(EventFilter{Run: "run_049", After: 10}); after != 10 {
		t.Errorf("with After 10, read after %d", after)
	}
	// Given the record, nothing more is read than the run's events.
	rec, err := st.GetRun(ctx, "run_049")
	if err != nil {
		t.Fatal(err)
	}
	st.Reset()
	evs, err = svc.RunEvents(ctx, rec, EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}})
	if afters := st.Afters(); err != nil || len(evs) != 1 || evs[0].ID != "e49-2" || st.Runs() != 0 || len(afters) == 0 || afters[0] != 49*3 {
		t.Errorf("RunEvents of run_049: %v, %v; %d records read, read after %v", evs, err, st.Runs(), afters)
	}

	// A run whose record names no first event, or a first event of
	// another session, or that has no record.
	for _, rec := range []store.Run{
		{ID: "run_x", Session: k, Runnable: "chat", Status: store.RunCompleted},
		{ID: "run_y", Session: store.SessionKey{App: "a", User: "u", Session: "other"}, Runnable: "chat", Status: store.RunCompleted, FirstEvent: 1 << 20},
	} {
		if _, _, err := st.GetOrCreateSession(ctx, rec.Session, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateRun(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, run := range []string{"run_x", "run_y", "run_nosuch"} {
		e, err := runtime.EncodeEvent(&runtime.Event{ID: "ev-" + run, Kind: runtime.EventInput, App: k.App, User: k.User, Session: k.Session, Run: run})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendEvents(ctx, k, [][]byte{e}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if evs, after := read(EventFilter{Run: run}); len(evs) != 1 || evs[0].ID != "ev-"+run || after != 0 {
			t.Errorf("%s: %d events, read after %d; want its one, read from the start", run, len(evs), after)
		}
	}
}
