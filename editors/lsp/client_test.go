package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/stdlib"
)

// client drives a server like an editor: over in-process pipes, with
// framed JSON-RPC, recording the diagnostics the server publishes.
type client struct {
	t      testing.TB
	w      *writer
	nextID int
	done   chan error
	cancel context.CancelFunc
	srv    *Server // read only between sync and the next message

	mu        sync.Mutex
	responses map[string]*message
	diags     map[string]publishDiagnosticsParams // latest by URI
	published int
	arrived   chan struct{} // signalled on every message
}

func newClient(t testing.TB, root string) *client {
	t.Helper()
	cin, sout := io.Pipe() // server → client
	sin, cout := io.Pipe() // client → server
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{
		t: t, w: &writer{w: cout}, done: make(chan error, 1), cancel: cancel,
		responses: map[string]*message{}, diags: map[string]publishDiagnosticsParams{},
		arrived: make(chan struct{}, 1),
	}
	c.srv = newServer(sout, Options{Universe: stdlib.Universe(), Version: "test"})
	go func() {
		c.done <- c.srv.serve(ctx, sin)
		sout.Close()
	}()
	go c.readLoop(newReader(cin))
	t.Cleanup(func() {
		cancel()
		cout.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Error("the server did not stop")
		}
	})
	c.request("initialize", map[string]any{"processId": nil, "rootUri": uriOf(root)}, nil)
	c.notify("initialized", map[string]any{})
	return c
}

func (c *client) readLoop(r *reader) {
	for {
		body, err := r.read()
		if err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("server sent invalid JSON: %v", err)
			return
		}
		c.mu.Lock()
		switch {
		case m.Method == "textDocument/publishDiagnostics":
			var p publishDiagnosticsParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				c.t.Errorf("publishDiagnostics: %v", err)
			}
			c.diags[p.URI] = p
			c.published++
		case m.Method == "":
			c.responses[string(m.ID)] = &m
		}
		c.mu.Unlock()
		select {
		case c.arrived <- struct{}{}:
		default:
		}
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.write(&message{Method: method, Params: b}); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and waits for its response; it returns the
// response's error, if any, and decodes the result into out.
func (c *client) call(method string, params, out any) *rpcError {
	c.t.Helper()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	b, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.w.write(&message{ID: id, Method: method, Params: b}); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		c.mu.Lock()
		m := c.responses[string(id)]
		delete(c.responses, string(id))
		c.mu.Unlock()
		if m != nil {
			if m.Error != nil {
				return m.Error
			}
			if out != nil {
				if err := json.Unmarshal(m.Result, out); err != nil {
					c.t.Fatalf("%s: decode %s: %v", method, m.Result, err)
				}
			}
			return nil
		}
		select {
		case <-c.arrived:
		case <-deadline:
			c.t.Fatalf("%s: no response", method)
		}
	}
}

// request is call that fails the test on an error response.
func (c *client) request(method string, params, out any) {
	c.t.Helper()
	if err := c.call(method, params, out); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// sync waits until every notification sent so far has been handled: the
// server answers in order.
func (c *client) sync() {
	c.t.Helper()
	_ = c.call("textDocument/hover", at("file:///nonexistent/none.agent", 0, 0), nil)
}

func (c *client) open(path, src string) string {
	c.t.Helper()
	uri := uriOf(path)
	c.notify("textDocument/didOpen", map[string]any{"textDocument": textDocumentItem{URI: uri, LanguageID: "agent", Version: 1, Text: src}})
	return uri
}

func (c *client) change(uri string, version int, changes ...contentChange) {
	c.t.Helper()
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   versionedTextDocumentIdentifier{URI: uri, Version: version},
		"contentChanges": changes,
	})
}

func (c *client) diagnostics(uri string) []Diagnostic {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.diags[uri]
	if !ok {
		c.t.Fatalf("no diagnostics published for %s", uri)
	}
	return p.Diagnostics
}

func at(uri string, line, char int) textDocumentPositionParams {
	return textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: Position{Line: line, Character: char}}
}

func abs(t testing.TB, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ioPipe() (io.ReadCloser, io.WriteCloser) { return io.Pipe() }

// syncWriter is a strings.Builder safe for the server's writes.
type syncWriter struct {
	mu sync.Mutex
	b  interface {
		Write([]byte) (int, error)
		String() string
	}
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// serverDoc is the server's state of an open document; call it after
// sync, while the server waits for the next message.
func (c *client) serverDoc(uri string) *document {
	c.t.Helper()
	d := c.srv.docs[uri]
	if d == nil {
		c.t.Fatalf("%s is not open", uri)
	}
	return d
}

// waitPublished waits for the diagnostics of uri at version.
func (c *client) waitPublished(uri string, version int) []Diagnostic {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		c.mu.Lock()
		p, ok := c.diags[uri]
		c.mu.Unlock()
		if ok && p.Version != nil && *p.Version == version {
			return p.Diagnostics
		}
		select {
		case <-c.arrived:
		case <-deadline:
			c.t.Fatalf("no diagnostics for %s version %d", uri, version)
		}
	}
}
