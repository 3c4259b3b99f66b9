package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
)

func TestSSEFrames(t *testing.T) {
	rec := httptest.NewRecorder()
	s := NewSSE(rec, nil, nil, 0)
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
	s := NewSSE(rec, nil, nil, 0)
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
	s := NewSSE(rec, nil, firing{}, time.Second)
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

// manualTimers arms timers that fire only when told (fire).
type manualTimers struct{ armed []*manualTimer }

type manualTimer struct {
	f             func()
	stopped, done bool
}

func (m *manualTimers) AfterFunc(_ time.Duration, f func()) func() bool {
	t := &manualTimer{f: f}
	m.armed = append(m.armed, t)
	return func() bool {
		if t.done || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// fire fires the timers armed and not stopped.
func (m *manualTimers) fire() {
	for _, t := range m.armed {
		if !t.stopped && !t.done {
			t.done = true
			t.f()
		}
	}
}

// TestSSEHold: a held batch's watchdog does not count (its frames wait in
// the buffer: nothing is being written), the next write after a hold it
// ran out in arms a fresh one, a hold it did not run out in leaves it as
// it was, and one that fired before the hold fails the stream.
func TestSSEHold(t *testing.T) {
	timers := &manualTimers{}
	failed := 0
	s := NewSSE(httptest.NewRecorder(), nil, timers, time.Second)
	s.OnFail = func() { failed++ }
	s.Frame([]byte(`{"a":1}`))
	if !s.Hold() {
		t.Fatalf("Hold: %v", s.Err())
	}
	timers.fire()
	if s.Err() != nil || failed > 0 {
		t.Fatalf("a held batch's watchdog failed the stream: %v", s.Err())
	}
	s.Frame([]byte(`{"a":2}`))
	if len(timers.armed) != 2 {
		t.Fatalf("%d watchdogs armed, want a fresh one after the lapse: 2", len(timers.armed))
	}
	s.Hold()
	s.Frame([]byte(`{"a":3}`))
	if len(timers.armed) != 2 {
		t.Fatalf("%d watchdogs armed, want the batch's own still: 2", len(timers.armed))
	}
	if !s.Flush() {
		t.Fatalf("Flush: %v", s.Err())
	}
	s.Frame([]byte(`{"a":4}`))
	timers.fire() // not held: the write it guards may have been cut short
	s.Hold()
	if s.Flush() || !errors.Is(s.Err(), context.DeadlineExceeded) || failed == 0 {
		t.Fatalf("Flush after the watchdog fired: err %v, OnFail %d; want DeadlineExceeded", s.Err(), failed)
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
			sw := &statusWriter{ResponseWriter: rec, writeTimeout: time.Minute}
			s := NewSSE(sw, nil, nil, 0)
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

// TestQuiet checks the flush rule with the run's writes: a run writing
// to the store is not quiet, and the end of that write is told to a
// reader that found it so (WriteEnded), never to one that did not.
func TestQuiet(t *testing.T) {
	ch := make(chan *runtime.Event, 1)
	r := &Run{Events: ch, hooks: startedRun{ended: make(chan struct{}, 1)}}
	told := func() bool {
		select {
		case <-r.WriteEnded():
			return true
		default:
			return false
		}
	}
	if !r.Quiet() {
		t.Fatal("a run neither writing nor with an event waiting is not quiet")
	}
	ch <- &runtime.Event{}
	if r.Quiet() {
		t.Fatal("a run with an event waiting is quiet")
	}
	<-ch
	r.hooks.Writing()
	if r.Quiet() {
		t.Fatal("a run writing is quiet")
	}
	if told() {
		t.Fatal("a write's end told before it ended")
	}
	r.hooks.Written()
	if !told() || !r.Quiet() {
		t.Fatal("the end of the write the reader waited for is not told")
	}
	r.hooks.Writing()
	r.hooks.Written()
	if told() {
		t.Fatal("the end of a write no reader waited for is told")
	}
	if (&Run{Events: ch}).WriteEnded() != nil {
		t.Fatal("a run not started by Backend.Start tells of writes")
	}
}

// TestQuietRace: however a reader's Quiet and the run's writes
// interleave, a reader that found the run writing is told when it stops.
func TestQuietRace(t *testing.T) {
	r := &Run{Events: make(chan *runtime.Event), hooks: startedRun{ended: make(chan struct{}, 1)}}
	const writes = 2000
	stop := make(chan struct{})
	go func() { // owned by the test: ends after its writes
		defer close(stop)
		for range writes {
			r.hooks.Writing()
			r.hooks.Written()
		}
	}()
	for {
		select {
		case <-stop:
			// The writer is done and nothing is writing: the last
			// Quiet false must have been told.
			if !r.Quiet() {
				t.Fatal("not quiet after the last write")
			}
			return
		default:
		}
		if !r.Quiet() {
			select {
			case <-r.WriteEnded():
			case <-time.After(10 * time.Second):
				t.Fatal("a reader that found the run writing was never told the write ended")
			}
		}
	}
}

// TestSSEFraming: a stream answering a Fetch-standard client (it sends
// Sec-Fetch-Mode) ends with its connection; any other client's stream is
// chunked and its connection serves the next request.
func TestSSEFraming(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := NewSSE(w, r, nil, 0)
		s.Frame([]byte(`{"a":1}`))
		s.Flush()
		s.Frame([]byte(`[DONE]`))
		s.End() // [DONE] goes out with the body's end
	}))
	writes := &countingListener{Listener: srv.Listener}
	srv.Listener = writes
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		fetch   string // Sec-Fetch-Mode
		own     bool
		chunked bool
		reused  bool // the second request's connection is the first's
	}{
		{"go client", "", false, true, true},
		{"fetch client", "cors", true, false, false},
		{"browser navigation", "navigate", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			var reused []bool
			for range 2 {
				writes.n.Store(0)
				req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
				if tc.fetch != "" {
					req.Header.Set("Sec-Fetch-Mode", tc.fetch)
				}
				if got := OwnConnection(req); got != tc.own {
					t.Errorf("OwnConnection = %v, want %v", got, tc.own)
				}
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
				}))
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if want := "data: {\"a\":1}\n\ndata: [DONE]\n\n"; string(body) != want {
					t.Fatalf("body %q, want %q", body, want)
				}
				chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
				if chunked != tc.chunked || resp.Close == tc.chunked {
					t.Errorf("transfer encoding %v, close %v; want chunked %v", resp.TransferEncoding, resp.Close, tc.chunked)
				}
				// The headers and the first frame, then the last frame with
				// the body's end (a chunked body's terminator included).
				if n := writes.n.Load(); n != 2 {
					t.Errorf("%d writes to the connection, want 2", n)
				}
			}
			if len(reused) != 2 || reused[1] != tc.reused {
				t.Errorf("connections reused %v, want the second %v", reused, tc.reused)
			}
		})
	}
	if !OwnConnection(nil) {
		t.Error("OwnConnection(nil) = false: with no request to go by, a stream should end with its connection")
	}
}

// TestSSEEnd: End sends nothing itself, stops the batch's watchdog and
// bounds the write the response's end makes by a deadline timeout ahead
// (none without a clock); a stream whose watchdog fired fails.
func TestSSEEnd(t *testing.T) {
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	var stopped bool
	s := NewSSE(rec, nil, stopClock{&stopped}, time.Minute)
	s.Frame([]byte(`[DONE]`))
	before := time.Now()
	if !s.End() {
		t.Fatal(s.Err())
	}
	if !stopped {
		t.Error("End left the watchdog armed")
	}
	if len(rec.set) != 1 || rec.set[0].Before(before.Add(time.Minute)) || rec.set[0].After(time.Now().Add(time.Minute)) {
		t.Errorf("deadlines set %v, want one a minute ahead", rec.set)
	}
	if rec.Body.String() != "data: [DONE]\n\n" || rec.Flushed {
		t.Errorf("body %q flushed %v: End should leave the frames to the response's end", rec.Body.String(), rec.Flushed)
	}

	rec = &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	s = NewSSE(rec, nil, nil, 0)
	s.Frame([]byte(`[DONE]`))
	if !s.End() || len(rec.set) != 0 {
		t.Errorf("without a clock: End %v, deadlines %v", s.Err(), rec.set)
	}

	rec = &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	s = NewSSE(rec, nil, firing{}, time.Second)
	s.Frame([]byte(`[DONE]`))
	if s.End() || !errors.Is(s.Err(), context.DeadlineExceeded) {
		t.Errorf("End after the watchdog fired: %v", s.Err())
	}
}

// stopClock is a clock whose timers never fire and record their stop.
type stopClock struct{ stopped *bool }

func (c stopClock) AfterFunc(time.Duration, func()) func() bool {
	return func() bool { *c.stopped = true; return true }
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: &l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}
