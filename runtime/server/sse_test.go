package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSSEFrames(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewSSE(rec, nil, 0)
	if rec.Body.Len() != 0 || s.started {
		t.Fatal("NewSSE wrote before Start, Frame or Flush")
	}
	s.Frame([]byte(`{"a":1}`))
	if rec.Body.String() != "data: {\"a\":1}\n\n" {
		// A frame is written at once: a client that does not read blocks
		// the write, under the watchdog, not a growing buffer.
		t.Fatalf("after one Frame the body is %q", rec.Body.String())
	}
	s.Frame([]byte(`[DONE]`))
	if !s.Flush() {
		t.Fatalf("Flush: %v", s.Err())
	}
	if got, want := rec.Body.String(), "data: {\"a\":1}\n\ndata: [DONE]\n\n"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if rec.Code != 200 {
		t.Errorf("status %d, want 200", rec.Code)
	}
	if !s.Flush() || rec.Body.Len() != len("data: {\"a\":1}\n\ndata: [DONE]\n\n") {
		t.Error("an empty Flush wrote again")
	}
}

// FrameWith frames what its encoder appends; an encoder that fails
// writes nothing, and the stream goes on.
func TestSSEFrameWith(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewSSE(rec, nil, 0)
	bad := errors.New("bad")
	if err := s.FrameWith(func(b []byte) ([]byte, error) { return append(b, "partial"...), bad }); err != bad {
		t.Fatalf("FrameWith = %v, want the encoder's error", err)
	}
	if rec.Body.Len() != 0 || s.started {
		t.Fatalf("a failed encoder wrote %q", rec.Body.String())
	}
	for _, p := range []string{`{"a":1}`, `[DONE]`} {
		if err := s.FrameWith(func(b []byte) ([]byte, error) { return append(b, p...), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Flush() {
		t.Fatalf("Flush: %v", s.Err())
	}
	if got, want := rec.Body.String(), "data: {\"a\":1}\n\ndata: [DONE]\n\n"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
}

// firing is a clock whose timers fire at once, as a write that outlived
// its timeout would see.
type firing struct{}

func (firing) AfterFunc(_ time.Duration, f func()) func() bool {
	f()
	return func() bool { return false }
}

func TestSSEWatchdog(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewSSE(rec, firing{}, time.Second)
	failed := 0
	s.OnFail = func() { failed++ }
	s.Frame([]byte(`{}`))
	if s.Flush() {
		t.Fatal("Flush succeeded although its watchdog fired")
	}
	if !errors.Is(s.Err(), context.DeadlineExceeded) || failed == 0 {
		t.Errorf("Err = %v, OnFail called %d times; want DeadlineExceeded and a call", s.Err(), failed)
	}
	n := rec.Body.Len()
	s.Frame([]byte(`{}`))
	if s.Flush() || rec.Body.Len() != n {
		t.Error("a failed stream wrote again")
	}
}

// deadlineRecorder is a ResponseWriter whose connection deadlines are
// recorded, as http.ResponseController sets them.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// A stream that clears the write deadline through the server's
// statusWriter turns its per-write deadline off (its writes no longer
// reset one), and a past deadline its watchdog sets stays set: a stuck
// write still unblocks. A response that does not clear it keeps one
// deadline per write and flush.
func TestStatusWriterClearedDeadline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clear bool
		want  []string // "zero", "future", "past": the deadlines set, in order
	}{
		{"per write", false, []string{"future", "future", "future", "past", "future"}},
		{"cleared by a stream", true, []string{"zero", "past"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			sw := &statusWriter{ResponseWriter: rec, rc: http.NewResponseController(rec), writeTimeout: time.Minute}
			s := NewSSE(sw, nil, 0)
			if tc.clear {
				s.ClearWriteDeadline()
			}
			s.Frame([]byte(`{"a":1}`))
			s.Frame([]byte(`{"b":2}`))
			if !s.Flush() {
				t.Fatal(s.Err())
			}
			// The watchdog's deadline, then one more write.
			_ = http.NewResponseController(sw).SetWriteDeadline(expired)
			s.Frame([]byte(`[DONE]`))
			var got []string
			for _, d := range rec.set {
				switch {
				case d.IsZero():
					got = append(got, "zero")
				case d.Equal(expired):
					got = append(got, "past")
				default:
					got = append(got, "future")
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("deadlines set %v, want %v", got, tc.want)
			}
			if want := "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"; rec.Body.String() != want {
				t.Errorf("body %q, want %q", rec.Body.String(), want)
			}
		})
	}
}

// TestIdle checks the flush rule's test: an event waiting is not idle, a
// channel nothing is sent on is, and so is one whose events were taken.
func TestIdle(t *testing.T) {
	ch := make(chan int, 2)
	if !Idle(ch) {
		t.Fatal("an empty channel is not idle")
	}
	ch <- 1
	if Idle(ch) {
		t.Fatal("a channel with an event waiting is idle")
	}
	<-ch
	if !Idle(ch) {
		t.Fatal("a drained channel is not idle")
	}
	close(ch)
	if !Idle(ch) {
		t.Fatal("a closed, drained channel is not idle")
	}
}
