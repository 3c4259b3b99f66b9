package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

// admitCalls records the admission writes a Runner makes; it has no
// AdmitRun, as a store without the capability.
type admitCalls struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (s *admitCalls) note(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name)
}

func (s *admitCalls) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *admitCalls) GetOrCreateSession(ctx context.Context, k store.SessionKey, now time.Time) (store.Session, bool, error) {
	s.note("GetOrCreateSession")
	return s.Store.GetOrCreateSession(ctx, k, now)
}

func (s *admitCalls) AppendEvents(ctx context.Context, k store.SessionKey, events [][]byte, now time.Time) (uint64, error) {
	s.note("AppendEvents")
	return s.Store.AppendEvents(ctx, k, events, now)
}

func (s *admitCalls) CreateRun(ctx context.Context, r store.Run) error {
	s.note("CreateRun")
	return s.Store.CreateRun(ctx, r)
}

func (s *admitCalls) UpdateRunStatus(ctx context.Context, id string, status store.RunStatus, now time.Time) error {
	s.note("UpdateRunStatus")
	return s.Store.UpdateRunStatus(ctx, id, status, now)
}

// shopRunner returns a Runner of the cost tests' shop program over st,
// closed when the test ends.
func shopRunner(t *testing.T, st store.Store) *runtime.Runner {
	t.Helper()
	prog := runtimetest.CompileSource(t, "shop.agent", costSource)
	fx, err := model.LoadFixture("shop.yaml", []byte(costFixture))
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]runtime.Model{}
	for _, name := range []string{"priced", "free", "zero"} {
		ms[name] = model.NewScripted(runtime.ModelInfo{Name: name}, fx)
	}
	r, err := runtime.NewRunner(runtime.RunnerConfig{App: "shop", Store: st, Program: prog, Models: ms,
		Funcs: vm.Builtins(), Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// admitOnce is admitCalls with the store's AdmitRun.
type admitOnce struct{ *admitCalls }

func (s admitOnce) AdmitRun(ctx context.Context, r store.Run, events [][]byte, now time.Time, docs ...store.DocOp) (uint64, error) {
	s.note("AdmitRun")
	return s.Store.(store.RunAdmitter).AdmitRun(ctx, r, events, now, docs...)
}

// TestAdmissionWrites: a new run on a store with AdmitRun is admitted in
// one write, on another in three; a resumption takes the three calls'
// path either way; and the ledger and the run records are the same.
func TestAdmissionWrites(t *testing.T) {
	type outcome struct {
		first, resume []string
		ledger        []string
		run           store.Run
	}
	drive := func(t *testing.T, st store.Store, calls *admitCalls) outcome {
		r := shopRunner(t, st)
		var o outcome
		evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "review", Input: "q"})
		o.first = calls.take()
		run := evs[len(evs)-1].Run
		collect(t, r, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run,
			Values: map[string]json.RawMessage{"review/ask": json.RawMessage("true")}}})
		o.resume = calls.take()
		es, err := st.ListEvents(context.Background(), store.SessionKey{App: "shop", User: "u", Session: "s"}, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			o.ledger = append(o.ledger, fmt.Sprintf("%d %s", e.Seq, e.Data))
		}
		if o.run, err = st.GetRun(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		return o
	}
	three := &admitCalls{Store: memory.New()}
	without := drive(t, three, three)
	one := &admitCalls{Store: memory.New()}
	with := drive(t, admitOnce{one}, one)

	// The first invocation's admission; the step and end writes are
	// CommitStep and EndRun, which the wrapper does not count.
	if want := []string{"GetOrCreateSession", "AppendEvents", "CreateRun"}; !slices.Equal(without.first, want) {
		t.Errorf("new run without AdmitRun: %v, want %v", without.first, want)
	}
	if want := []string{"AdmitRun"}; !slices.Equal(with.first, want) {
		t.Errorf("new run with AdmitRun: %v, want %v", with.first, want)
	}
	want := []string{"GetOrCreateSession", "AppendEvents", "UpdateRunStatus"}
	if !slices.Equal(without.resume, want) || !slices.Equal(with.resume, want) {
		t.Errorf("resumption: %v without AdmitRun, %v with it; want %v", without.resume, with.resume, want)
	}
	if !slices.Equal(with.ledger, without.ledger) || len(with.ledger) == 0 {
		t.Errorf("ledgers differ:\nwith AdmitRun    %q\nwithout AdmitRun %q", with.ledger, without.ledger)
	}
	if fmt.Sprint(with.run) != fmt.Sprint(without.run) {
		t.Errorf("run records differ: %+v with AdmitRun, %+v without", with.run, without.run)
	}
	// Either way the record names the run's first event: its input.
	if with.run.FirstEvent != 1 || without.run.FirstEvent != 1 {
		t.Errorf("the run's first event: %d with AdmitRun, %d without; want 1 (its input)", with.run.FirstEvent, without.run.FirstEvent)
	}
}

// TestAdmissionRecords: an invocation's records are written with its new
// run's admission, naming the run; one whose IfAbsent key exists refuses
// the run (store.ErrDocExists) and writes nothing of it; a resumption, or
// a Runner whose admission is not one write, refuses records.
func TestAdmissionRecords(t *testing.T) {
	newRunner := shopRunner
	ctx := context.Background()
	records := func(run string) []store.DocOp {
		return []store.DocOp{{Coll: "recs", Key: "shop/u/k1", Value: []byte(`{"run":"` + run + `"}`), IfAbsent: true}}
	}
	st := memory.New()
	r := newRunner(t, st)
	if !r.AdmitsInOneWrite() {
		t.Fatal("a Runner over the memory store does not admit in one write")
	}
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "review", Input: "q", Records: records})
	run := evs[len(evs)-1].Run
	if v, err := st.GetDoc(ctx, "recs", "shop/u/k1"); err != nil || string(v) != `{"run":"`+run+`"}` {
		t.Fatalf("record: %q, %v; want the run %s", v, err, run)
	}

	_, err := r.Run(ctx, runtime.Invocation{User: "u", Session: "s2", Runnable: "review", Input: "q", Records: records})
	if !errors.Is(err, store.ErrDocExists) {
		t.Fatalf("a second run with the record's key: %v, want ErrDocExists", err)
	}
	if _, err := st.GetSession(ctx, store.SessionKey{App: "shop", User: "u", Session: "s2"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused run's session was created: %v", err)
	}

	_, err = r.Run(ctx, runtime.Invocation{User: "u", Session: "s", Records: records, Resume: &runtime.ResumeRequest{Run: run,
		Values: map[string]json.RawMessage{"review/ask": json.RawMessage("true")}}})
	if !errors.Is(err, runtime.ErrInvalidInvocation) {
		t.Errorf("a resumption with records: %v, want ErrInvalidInvocation", err)
	}

	three := newRunner(t, &admitCalls{Store: memory.New()})
	if three.AdmitsInOneWrite() {
		t.Fatal("a Runner over a store without AdmitRun admits in one write")
	}
	if _, err := three.Run(ctx, runtime.Invocation{User: "u", Session: "s", Runnable: "review", Input: "q", Records: records}); !errors.Is(err, runtime.ErrInvalidInvocation) {
		t.Errorf("records without a one-write admission: %v, want ErrInvalidInvocation", err)
	}
}
