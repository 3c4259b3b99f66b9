package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store/memory"
)

// recordingHooks records the calls of RunHooks in order.
type recordingHooks struct {
	mu     sync.Mutex
	calls  []string // "admitted:<run>", event kinds, "done:<run>:<status>"
	events []*Event
	atDone int // events seen when Done was called
}

func (h *recordingHooks) Admitted(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, "admitted:"+run)
}

func (h *recordingHooks) Event(e *Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, string(e.Kind))
	h.events = append(h.events, e)
}

func (h *recordingHooks) Done(run string, status RunStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, "done:"+run+":"+string(status))
	h.atDone = len(h.events)
}

// TestStartHooks: Start's hooks see what a reader of the events would,
// in order — Admitted first, each event as it is handed over, Done once
// after the last and before the channel closes, with the run's end — and
// none is called when Start fails.
func TestStartHooks(t *testing.T) {
	cases := []struct {
		name   string
		opts   progOpts
		status RunStatus
	}{
		{"interrupted", progOpts{}, StatusInterrupted},
		{"completed", progOpts{noInterrupt: true}, StatusCompleted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, memory.New(), buildProgram(t, tc.opts), nil, nil, nil)
			h := &recordingHooks{atDone: -1}
			s, err := f.r.Start(context.Background(), Invocation{User: "u1", Session: "s1", Input: "example.com"}, h)
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, s.Events)
			h.mu.Lock()
			defer h.mu.Unlock()
			if s.ID == "" || runIDOf(t, got) != s.ID {
				t.Fatalf("Start's id %q, the events' %q", s.ID, runIDOf(t, got))
			}
			if !slices.Equal(h.events, got) {
				t.Fatalf("Event saw %v, the reader %v", kinds(h.events), kinds(got))
			}
			if h.atDone != len(got) {
				t.Errorf("Done was called after %d events of %d", h.atDone, len(got))
			}
			if h.calls[0] != "admitted:"+s.ID {
				t.Fatalf("first call %q, want admitted:%s", h.calls[0], s.ID)
			}
			if want := "done:" + s.ID + ":" + string(tc.status); h.calls[len(h.calls)-1] != want {
				t.Fatalf("last call %q, want %q", h.calls[len(h.calls)-1], want)
			}
			if n := slices.IndexFunc(h.calls, func(c string) bool { return strings.HasPrefix(c, "done:") }); n != len(h.calls)-1 {
				t.Fatalf("Done called at %d of %d calls: %v", n, len(h.calls), h.calls)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		f := newFixture(t, memory.New(), buildProgram(t, progOpts{}), nil, nil, nil)
		h := &recordingHooks{}
		_, err := f.r.Start(context.Background(), Invocation{User: "u1"}, h)
		if !errors.Is(err, ErrInvalidInvocation) {
			t.Fatalf("err %v, want ErrInvalidInvocation", err)
		}
		if len(h.calls) > 0 {
			t.Fatalf("hooks called for a run Start refused: %v", h.calls)
		}
	})
}

// writeHooks records WriteHooks' calls among RunHooks'.
type writeHooks struct{ recordingHooks }

func (h *writeHooks) Writing() { h.note("writing") }
func (h *writeHooks) Written() { h.note("written") }

func (h *writeHooks) note(c string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

// TestWriteHooks: hooks that are WriteHooks see each write of the run to
// the store between a Writing and a Written — a new run from its
// admission on (its goroutine begins with its initial checkpoint's
// write), a resumed one from its first write — and no write is left
// open when the run's last event is handed over.
func TestWriteHooks(t *testing.T) {
	f := newFixture(t, memory.New(), buildProgram(t, progOpts{}), nil, nil, nil)
	check := func(t *testing.T, inv Invocation, fresh bool) string {
		t.Helper()
		h := &writeHooks{recordingHooks{atDone: -1}}
		s, err := f.r.Start(context.Background(), inv, h)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s.Events)
		h.mu.Lock()
		defer h.mu.Unlock()
		calls := h.calls
		if got := calls[1] == "writing"; got != fresh {
			t.Fatalf("writing right after admission: %v, want %v (%v)", got, fresh, calls)
		}
		open, written := false, 0
		for i, c := range calls {
			switch c {
			case "writing":
				open = true
			case "written":
				if !open {
					t.Fatalf("written without writing at %d: %v", i, calls)
				}
				open = false
				written++
			case string(EventRunFinished):
				if open {
					t.Fatalf("run_finished handed over during a write: %v", calls)
				}
			}
		}
		if open || written == 0 || fresh && written < 2 { // a new run: its initial checkpoint, at least
			t.Fatalf("writes: %d ended, one open %v: %v", written, open, calls)
		}
		return s.ID
	}
	run := check(t, Invocation{User: "u1", Session: "s1", Input: "example.com"}, true)
	check(t, Invocation{User: "u1", Session: "s1", Resume: &ResumeRequest{Run: run, Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}}, false)
}
