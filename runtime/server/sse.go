package server

import (
	"context"
	"errors"
	"net/http"
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
// sent and flushed by Flush. With a clock, a flush that takes longer than
// the timeout fails: a watchdog on the injected clock moves the write
// deadline into the past, which unblocks the stuck write, and calls
// OnFail. After the first failure nothing more is written and Err reports
// it.
type SSE struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	clock   Timers // nil: no write timeout
	timeout time.Duration
	// OnFail, when set, is called on a failure: the write that failed, or
	// the watchdog (from the clock's goroutine).
	OnFail  func()
	started bool
	buf     []byte
	err     error
}

// NewSSE returns a stream over w; clock (may be nil) and timeout bound each
// flush. Nothing is written before Start or the first Flush.
func NewSSE(w http.ResponseWriter, clock Timers, timeout time.Duration) *SSE {
	return &SSE{w: w, rc: http.NewResponseController(w), clock: clock, timeout: timeout, buf: make([]byte, 0, 512)}
}

// Start sends the status and the stream's headers, once.
func (s *SSE) Start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// ClearWriteDeadline lifts the server's write timeout from the response: a
// stream bounded by its own watchdog outlives it.
func (s *SSE) ClearWriteDeadline() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// Frame adds one frame to what the next Flush sends.
func (s *SSE) Frame(payload []byte) {
	s.buf = append(append(append(s.buf, "data: "...), payload...), '\n', '\n')
}

// Flush starts the stream if need be, writes the frames added since the
// last Flush and flushes them; false once the stream has failed.
func (s *SSE) Flush() bool {
	if s.err != nil {
		return false
	}
	s.Start()
	var stop func() bool
	if s.clock != nil {
		stop = s.clock.AfterFunc(s.timeout, func() {
			_ = s.rc.SetWriteDeadline(expired)
			if s.OnFail != nil {
				s.OnFail()
			}
		})
	}
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if err == nil {
		if err = s.rc.Flush(); errors.Is(err, http.ErrNotSupported) {
			err = nil // a writer that does not buffer
		}
	}
	if stop != nil && !stop() && err == nil {
		// The watchdog fired: its deadline may have cut the write short.
		err = context.DeadlineExceeded
	}
	if err != nil {
		s.err = err
		if s.OnFail != nil {
			s.OnFail()
		}
		return false
	}
	return true
}

// Err is the failure that ended the stream (nil: none yet).
func (s *SSE) Err() error { return s.err }
