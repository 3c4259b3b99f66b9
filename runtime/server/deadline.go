package server

// Deadlines on what a client sends: the request's headers (http.Server's
// ReadHeaderTimeout), its body (a deadline that grows with the bytes
// received: a rate floor after a grace), the time between keep-alive
// requests, and caps on the connections open and the bodies being received
// at once. Network deadlines are wall time (time.Now), not the Backend's
// clock, which tests may stop.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// Timeouts bound the time a client may take to send a request. Zero values
// take the defaults.
type Timeouts struct {
	// Header is the time to send the request line and headers (default 10 s).
	Header time.Duration
	// Idle is how long a keep-alive connection may wait for its next
	// request (default 60 s).
	Idle time.Duration
	// BodyGrace and BodyMinRate make the body's deadline: the body must
	// have arrived by BodyGrace + (bytes received so far) / BodyMinRate
	// after the headers, i.e. a client may pause for BodyGrace once and
	// must otherwise keep up BodyMinRate bytes per second (defaults 5 s,
	// 1 KiB/s).
	BodyGrace   time.Duration
	BodyMinRate int64
	// Body is the most a body may take however fast it comes (default 60 s).
	Body time.Duration
}

// WithDefaults returns t with zero fields set to their defaults.
func (t Timeouts) WithDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = 10 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 60 * time.Second
	}
	if t.BodyGrace <= 0 {
		t.BodyGrace = 5 * time.Second
	}
	if t.BodyMinRate <= 0 {
		t.BodyMinRate = 1 << 10
	}
	if t.Body <= 0 {
		t.Body = 60 * time.Second
	}
	return t
}

// refusal is an answer the server gives itself before the handler runs.
type refusal struct {
	status        int
	code, message string
}

// hasBody reports whether r declares a body (a length, or chunked).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// refuse answers r with an error and closes the connection afterwards
// without reading what is left of the body: net/http would otherwise
// discard up to 256 KiB of it, waiting as long as the client stalls,
// before the answer is even sent.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, errf ErrorFunc, proto string, f refusal) {
	s.b.Metrics.Error(proto, f.code)
	if hasBody(r) {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	errf(w, r, f.status, f.code, f.message)
}

// readBody reads r's whole body, at most max bytes, within the body
// deadline, holding one of the MaxBodyReads slots while it does.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *refusal) {
	select {
	case s.bodySlots <- struct{}{}:
		defer func() { <-s.bodySlots }()
	default:
		return nil, &refusal{http.StatusServiceUnavailable, "busy", "the server is receiving too many request bodies; retry later"}
	}
	t := s.timeouts
	rc := http.NewResponseController(w)
	start := time.Now()
	hard := start.Add(t.Body)
	size := int64(32 << 10)
	if r.ContentLength > 0 {
		size = min(r.ContentLength, max) + 1
	}
	// The body is read straight into buf, sized by the declared length
	// (one byte more, to see the end without growing it): no chunk of its
	// own per request.
	buf := make([]byte, 0, min(size, 1<<20))
	for {
		got := int64(len(buf))
		dl := start.Add(t.BodyGrace + time.Duration(got*int64(time.Second)/t.BodyMinRate))
		if dl.After(hard) {
			dl = hard
		}
		_ = rc.SetReadDeadline(dl) // not supported (a recorder): no deadline
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(max+1-int64(len(buf)), 4<<10)))
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, &refusal{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body is larger than %d bytes", max)}
		}
		if errors.Is(err, io.EOF) {
			// Closed once read to its end: net/http then has nothing
			// to drain before the response (it reads a body left open
			// to its end itself, through a reader of its own).
			_ = r.Body.Close()
			break
		}
		if err != nil {
			var ne net.Error
			if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
				return nil, &refusal{http.StatusRequestTimeout, "body_timeout",
					fmt.Sprintf("request body too slow: %d bytes in %s (the floor is %d bytes/s after %s, at most %s in all)",
						got+int64(n), time.Since(start).Round(time.Millisecond), t.BodyMinRate, t.BodyGrace, t.Body)}
			}
			return nil, &refusal{http.StatusBadRequest, "bad_request", "reading the request body: " + err.Error()}
		}
	}
	_ = rc.SetReadDeadline(time.Time{})
	return buf, nil
}

// limitListener closes the connections accepted beyond max open ones.
type limitListener struct {
	net.Listener
	max     int
	refused func()

	mu   sync.Mutex
	open int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			if l.refused != nil {
				l.refused()
			}
			continue
		}
		l.open++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l}, nil
	}
}

type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

// CloseWrite passes a TCP half-close through (net/http's graceful close).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
