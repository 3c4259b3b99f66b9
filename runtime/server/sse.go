package server

import (
	"context"
	"errors"
	"net/http"
	goruntime "runtime"
	"sync"
	"time"
)

// Timers is the part of an injected clock a stream uses (vm.Clock has it).
type Timers interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// expired is a write deadline already past: setting it unblocks a stuck
// write.
var expired = time.Unix(1, 0)

// SSE writes a text/event-stream response for the protocol adapters:
// frames "data: <payload>\n\n" (LF framing; a payload is one line of JSON),
// each written at once and sent to the client by the next Flush. With a
// clock, the writes and flush of a batch are bounded by the timeout: a
// watchdog on the injected clock, armed by the batch's first write, moves
// the write deadline into the past, which unblocks a write stuck on a
// client that does not read, and calls OnFail. After the first failure
// nothing more is written and Err reports it.
type SSE struct {
	w       http.ResponseWriter
	rc      http.ResponseController
	clock   Timers // nil: no write timeout
	timeout time.Duration
	// OnFail, when set, is called on a failure: a failed write or flush,
	// or the watchdog (from the clock's goroutine).
	OnFail  func()
	own     bool // the stream ends with its connection (OwnConnection)
	started bool
	stop    func() bool // the armed watchdog
	expire  func()      // the watchdog's call, made once per stream
	buf     []byte
	err     error

	// wmu guards held and lapsed against the watchdog's goroutine: while
	// a batch is held (Hold) its watchdog does not count, and one that
	// runs out meanwhile only says so (lapsed).
	wmu          sync.Mutex
	held, lapsed bool
}

// NewSSE returns a stream over w answering r (its framing is
// OwnConnection's); clock (may be nil) and timeout bound each batch.
// Nothing is written before Start or the first Frame or Flush.
func NewSSE(w http.ResponseWriter, r *http.Request, clock Timers, timeout time.Duration) *SSE {
	return &SSE{w: w, rc: *http.NewResponseController(w), clock: clock, timeout: timeout, own: OwnConnection(r), buf: make([]byte, 0, 512)}
}

// OwnConnection reports whether an event stream answering r ends with its
// connection (Transfer-Encoding identity in net/http: no chunked encoding,
// the connection closed after the reply) rather than with a chunked body's
// terminator on a connection kept alive: so it does for a client of the
// Fetch standard, which sends Sec-Fetch-Mode on every request (Node's
// fetch, under the official AG-UI, openai and A2A clients, and browsers),
// and for a nil request. Node's fetch leaves a read pending forever when
// the client aborts right after a read that returned the last events
// together with the terminator (an abort on RUN_FINISHED or on the finish
// chunk: one run in three to three in four); with the end of the body
// being the connection's, the same abort settles. Any other client keeps
// its connection: a stream then costs no connection set-up and tear-down
// (spec/serve.md, "Streams").
func OwnConnection(r *http.Request) bool {
	return r == nil || r.Header.Get("Sec-Fetch-Mode") != ""
}

// Start sends the status and the stream's headers, once.
func (s *SSE) Start() {
	if s.started {
		return
	}
	s.started = true
	// One allocation for the values of all four (a Set each would make
	// one per header).
	vals := []string{"text/event-stream", "no-cache", "no", "identity"}
	h := s.w.Header()
	h["Content-Type"] = vals[0:1:1]
	h["Cache-Control"] = vals[1:2:2]
	h["X-Accel-Buffering"] = vals[2:3:3]
	if s.own {
		h["Transfer-Encoding"] = vals[3:4:4]
	}
	s.w.WriteHeader(http.StatusOK)
}

// ClearWriteDeadline lifts the server's write timeout from the response: a
// stream bounded by its own watchdog outlives it.
func (s *SSE) ClearWriteDeadline() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// Frame writes one frame; the next Flush sends it.
func (s *SSE) Frame(payload []byte) {
	if s.err != nil {
		return
	}
	s.Start()
	s.arm()
	s.buf = append(append(append(s.buf[:0], "data: "...), payload...), '\n', '\n')
	if _, err := s.w.Write(s.buf); err != nil {
		s.fail(err)
	}
}

// FrameWith writes one frame whose payload enc appends to the slice it is
// given (the stream's own buffer: no copy of its own per frame); the next
// Flush sends it. A payload enc fails on is not written, and its error is
// returned (the stream goes on).
func (s *SSE) FrameWith(enc func([]byte) ([]byte, error)) error {
	if s.err != nil {
		return nil
	}
	b, err := enc(append(s.buf[:0], "data: "...))
	if err != nil {
		return err
	}
	s.Start()
	s.arm()
	s.buf = append(b, '\n', '\n')
	if _, err := s.w.Write(s.buf); err != nil {
		s.fail(err)
	}
	return nil
}

// Flush sends what the frames since the last Flush wrote (starting the
// stream if need be); false once the stream has failed.
func (s *SSE) Flush() bool {
	if s.err == nil {
		s.Start()
		s.arm()
		if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) { // ErrNotSupported: a writer that does not buffer
			s.fail(err)
		}
	}
	return s.disarm()
}

// Hold suspends the watchdog of the frames written since the last Flush
// while the stream keeps them unsent (its run is writing to the store,
// Run.Quiet): nothing is being written to the client meanwhile. The next
// Frame, Flush or End resumes it (a fresh one if its time ran out
// meanwhile). False once the stream has failed.
func (s *SSE) Hold() bool {
	if s.stop != nil && !s.held {
		s.wmu.Lock()
		s.held = true
		s.wmu.Unlock()
	}
	return s.err == nil
}

// resume ends a Hold.
func (s *SSE) resume() {
	if !s.held { // written only here and in Hold, on the stream's goroutine
		return
	}
	s.wmu.Lock()
	lapsed := s.lapsed
	s.held, s.lapsed = false, false
	s.wmu.Unlock()
	if lapsed {
		s.stop = nil // it fired, counting nothing: the next write arms another
	}
}

// disarm stops the batch's watchdog; false once the stream has failed.
func (s *SSE) disarm() bool {
	s.resume()
	if s.stop != nil {
		if !s.stop() && s.err == nil {
			// The watchdog fired: its deadline may have cut a write short.
			s.fail(context.DeadlineExceeded)
		}
		s.stop = nil
	}
	return s.err == nil
}

// End ends the stream without a Flush: what the frames since the last
// Flush wrote goes out with the end of the response, in the same write as
// a chunked body's terminator (net/http writes both when the handler
// returns), so the handler returns right after. That write is bounded by
// the timeout, as a Flush is, by a deadline on the connection: wall time,
// since the handler is gone when it counts. False once the stream has
// failed.
func (s *SSE) End() bool {
	if s.err == nil {
		s.Start()
	}
	s.disarm()
	if s.err == nil && s.clock != nil && s.timeout > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
	return s.err == nil
}

// Err is the failure that ended the stream (nil: none yet).
func (s *SSE) Err() error { return s.err }

// arm starts the watchdog of a batch, unless it runs already.
func (s *SSE) arm() {
	s.resume()
	if s.stop != nil || s.clock == nil {
		return
	}
	if s.expire == nil {
		s.expire = func() {
			s.wmu.Lock()
			if s.held {
				s.lapsed = true
				s.wmu.Unlock()
				return
			}
			s.wmu.Unlock()
			_ = s.rc.SetWriteDeadline(expired)
			if s.OnFail != nil {
				s.OnFail()
			}
		}
	}
	s.stop = s.clock.AfterFunc(s.timeout, s.expire)
}

func (s *SSE) fail(err error) {
	s.err = err
	if s.OnFail != nil {
		s.OnFail()
	}
}

// Idle reports whether no event waits in ch, the channel a stream's frames
// come from, after the goroutines ready to run (the run's among them) have
// had their turn once: a stream flushes when Idle, so that a burst still
// being produced — the stream's opening frames and the run's first events,
// a model's deltas — costs one write to the socket, and a frame no further
// event follows at once is sent at once (spec/serve.md, "Streams").
func Idle[T any](ch <-chan T) bool {
	if len(ch) > 0 {
		return false
	}
	goruntime.Gosched()
	return len(ch) == 0
}
