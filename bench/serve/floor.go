package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/agentc/agentc/internal/gctune"
	"github.com/agentc/agentc/runtime/server"
)

// The transport floor: a child of its own (no store, no Runner, nothing in
// the background) whose handler answers every request with a response
// recorded from the server under test, in the server's framing, and does
// nothing else. Its CPU per request is what HTTP on loopback costs any
// server answering the same requests with the same bytes — the part of a
// protocol row's overhead that no work in the server can remove — so a
// scenario's floor ratio, (baseline + floor) / baseline, is the least its
// protocol row could measure.

// floorHandler reads the request's body, then writes the recorded bytes:
// a JSON body with its length in one write, or an event stream in one
// write with the body's end — the least a streamed reply takes under the
// flush rule (spec/serve.md, "Streams": frames wait while the run writes
// to the store, and a run that waits on nothing else, as the scripted
// model's, is sent whole at its end). A stream is framed as server.SSE
// frames it for the same request (server.OwnConnection: a chunked body on
// a connection kept alive, or, for a Fetch-standard client, a body ending
// with its connection), or, on the other floor, always ends with its
// connection: the difference is what a connection per stream costs.
type floorHandler struct {
	*recording
	own func(*http.Request) bool // the stream ends with its connection
}

// recording is the response the floor replays, recorded from the server.
type recording struct {
	mu   sync.Mutex
	body []byte
	sse  bool
}

func (f *recording) set(body []byte, sse bool) {
	f.mu.Lock()
	f.body, f.sse = body, sse
	f.mu.Unlock()
}

func (f floorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	f.mu.Lock()
	body, sse := f.body, f.sse
	f.mu.Unlock()
	h := w.Header()
	if !sse {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if f.own(r) {
		h.Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // sent with the body's end, as server.SSE.End does
}

// floorChild serves the floor, a control endpoint (GET /stats, POST
// /floor?sse=0|1 with the response to replay as the body) and the
// connection floor (a connection per stream), on three addresses it
// prints, until its stdin closes.
func floorChild() error {
	gctune.Server(os.LookupEnv, os.DirFS("/")) // as agentc serve, and the server's child
	var ls [3]net.Listener
	for i := range ls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls[i] = l
	}
	rec := &recording{}
	ctl := http.NewServeMux()
	ctl.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(readStats())
	})
	ctl.HandleFunc("POST /floor", func(w http.ResponseWriter, q *http.Request) {
		body, err := io.ReadAll(q.Body)
		if err != nil {
			http.Error(w, "bad floor response", http.StatusBadRequest)
			return
		}
		rec.set(body, q.URL.Query().Get("sse") == "1")
	})
	always := func(*http.Request) bool { return true }
	srvs := []*http.Server{{Handler: floorHandler{recording: rec, own: server.OwnConnection}}, {Handler: ctl}, {Handler: floorHandler{recording: rec, own: always}}}
	for i, srv := range srvs {
		go func() { _ = srv.Serve(ls[i]) }() // owned here: closed below
	}
	fmt.Printf("ADDR http://%s http://%s http://%s\n", ls[0].Addr(), ls[1].Addr(), ls[2].Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }() // ends with stdin
	<-ctx.Done()
	var err error
	for _, srv := range srvs {
		err = errors.Join(err, srv.Close())
	}
	return err
}
