package ui

// The CLI's side of "the CLI on a served store" (spec/inspector.md): the
// file agentc serve leaves in a Pebble data directory, and a client of the
// JSON API that answers what an inspect.Inspector answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// ServeFile is the name of the file agentc serve writes into the Pebble
// data directory it holds.
const ServeFile = "serve.json"

// ServeInfo is what ServeFile holds: who serves the directory, where, and
// the admin token of the CLI.
type ServeInfo struct {
	PID   int    `json:"pid"`
	Addr  string `json:"addr"` // host:port
	Token string `json:"token,omitempty"`
	User  string `json:"user"`
	App   string `json:"app"`
}

// WriteServeFile writes info into dir (mode 0600, replaced atomically) and
// returns a function that removes it.
func WriteServeFile(dir string, info ServeInfo) (remove func() error, err error) {
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ServeFile+".*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", ServeFile, err)
	}
	name := tmp.Name()
	if err := errors.Join(tmp.Chmod(0o600), writeAll(tmp, b), tmp.Sync(), tmp.Close()); err != nil {
		_ = os.Remove(name)
		return nil, fmt.Errorf("write %s: %w", ServeFile, err)
	}
	path := filepath.Join(dir, ServeFile)
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return nil, fmt.Errorf("write %s: %w", ServeFile, err)
	}
	return func() error {
		err := os.Remove(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}, nil
}

func writeAll(w io.Writer, b []byte) error { _, err := w.Write(b); return err }

// ReadServeFile reads dir's ServeFile (an error when there is none or it
// does not parse).
func ReadServeFile(dir string) (ServeInfo, error) {
	var info ServeInfo
	b, err := os.ReadFile(filepath.Join(dir, ServeFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Addr == "" || info.PID <= 0 {
		return info, fmt.Errorf("%s in %s is not agentc serve's: %v", ServeFile, dir, err)
	}
	return info, nil
}

// Client asks a running server's inspector API what an inspect.Inspector
// would answer from the store. It implements inspect.API.
type Client struct {
	base  string // http://host:port + APIPath without its slash
	token string
	user  string // an open server's user (X-Agentc-User)
	http  *http.Client
}

var _ inspect.API = (*Client)(nil)

// NewClient returns a client of the server at addr (host:port) that
// authenticates with token (an open server: as user instead).
func NewClient(addr, token, user string) *Client {
	return &Client{base: "http://" + addr + APIPath[:len(APIPath)-1], token: token, user: user,
		http: &http.Client{Timeout: 60 * time.Second}}
}

// errorBody is the API's error shape.
type errorBody struct {
	Error struct {
		Code    string              `json:"code"`
		Message string              `json:"message"`
		Fields  inspect.FieldErrors `json:"fields"`
	} `json:"error"`
}

// do sends one request and decodes the JSON answer into out (raw: the body
// is returned as it is).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) ([]byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.user != "" {
		req.Header.Set("X-Agentc-User", c.user)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the server: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("ask the server: %w", err)
	}
	if res.StatusCode/100 != 2 {
		var e errorBody
		_ = json.Unmarshal(b, &e)
		msg := e.Error.Message
		if msg == "" {
			msg = res.Status
		}
		switch {
		case res.StatusCode == http.StatusNotFound:
			return nil, fmt.Errorf("%s: %w", msg, store.ErrNotFound)
		case len(e.Error.Fields) > 0:
			return nil, e.Error.Fields
		case res.StatusCode == http.StatusBadRequest:
			return nil, fmt.Errorf("%s: %w", msg, inspect.ErrInvalid)
		case e.Error.Code == "not_pending":
			return nil, fmt.Errorf("%s: %w", msg, evolution.ErrNotPending)
		}
		return nil, fmt.Errorf("the server answered %d %s: %s", res.StatusCode, e.Error.Code, msg)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("the server's answer: %w", err)
		}
	}
	return b, nil
}

func scopeQuery(user string) url.Values {
	q := url.Values{}
	if user != "" {
		q.Set("user", user)
	}
	return q
}

// Sessions implements inspect.API: the server's app only.
func (c *Client) Sessions(ctx context.Context, f session.ListFilter) ([]inspect.Session, error) {
	var out struct{ Sessions []inspect.Session }
	q := scopeQuery(f.User)
	q.Set("app", f.App)
	if _, err := c.do(ctx, "GET", "/sessions", q, nil, &out); err != nil {
		return nil, err
	}
	var keep []inspect.Session
	for _, s := range out.Sessions {
		if (f.App == "" || s.App == f.App) && (f.Limit <= 0 || len(keep) < f.Limit) {
			keep = append(keep, s)
		}
	}
	return keep, nil
}

// Session implements inspect.API.
func (c *Client) Session(ctx context.Context, key store.SessionKey) (inspect.Session, error) {
	var out inspect.Session
	q := scopeQuery(key.User)
	q.Set("app", key.App)
	_, err := c.do(ctx, "GET", "/sessions/"+url.PathEscape(key.Session), q, nil, &out)
	if err == nil && out.App != key.App {
		err = fmt.Errorf("session %s: %w", key.Session, store.ErrNotFound)
	}
	return out, err
}

// Events implements inspect.API, page by page.
func (c *Client) Events(ctx context.Context, key store.SessionKey, eq inspect.EventQuery) ([]*runtime.Event, error) {
	if err := eq.Check(); err != nil {
		return nil, err
	}
	var all []*runtime.Event
	var after uint64
	for {
		q := scopeQuery(key.User)
		q.Set("app", key.App)
		if eq.Run != "" {
			q.Set("run", eq.Run)
		}
		for _, k := range eq.Kinds {
			q.Add("kind", k)
		}
		q.Set("after", strconv.FormatUint(after, 10))
		q.Set("limit", "5000")
		var out struct {
			Events []*runtime.Event
			Last   uint64
		}
		if _, err := c.do(ctx, "GET", "/sessions/"+url.PathEscape(key.Session)+"/events", q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Events...)
		if len(out.Events) < 5000 {
			return all, nil
		}
		after = out.Last
	}
}

// Checkpoints implements inspect.API.
func (c *Client) Checkpoints(ctx context.Context, id string) ([]inspect.Checkpoint, error) {
	var out struct{ Checkpoints []inspect.Checkpoint }
	_, err := c.do(ctx, "GET", "/runs/"+url.PathEscape(id)+"/checkpoints", nil, nil, &out)
	return out.Checkpoints, err
}

// State implements inspect.API (step < 0: the run's last).
func (c *Client) State(ctx context.Context, id string, step int64) (*inspect.State, error) {
	if step < 0 {
		var d inspect.RunDetail
		if _, err := c.do(ctx, "GET", "/runs/"+url.PathEscape(id), nil, nil, &d); err != nil {
			return nil, err
		}
		step = int64(d.Step)
	}
	var out inspect.StepDiff
	if _, err := c.do(ctx, "GET", "/runs/"+url.PathEscape(id)+"/steps/"+strconv.FormatInt(step, 10), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.State, nil
}

// Fork implements inspect.API; the server checks the program itself.
func (c *Client) Fork(ctx context.Context, req inspect.ForkRequest) (inspect.Forked, error) {
	var out inspect.Forked
	if req.ProgramHash != "" {
		return out, fmt.Errorf("--program: the server forks under the program it serves: %w", inspect.ErrInvalid)
	}
	_, err := c.do(ctx, "POST", "/runs/"+url.PathEscape(req.Run)+"/fork", nil, map[string]any{"step": req.Step, "set": req.Set}, &out)
	return out, err
}

// Artifacts implements inspect.API.
func (c *Client) Artifacts(ctx context.Context, f artifact.Filter) ([]artifact.Meta, error) {
	var out struct{ Artifacts []artifact.Meta }
	q := scopeQuery(f.User)
	q.Set("app", f.App)
	if f.Session != "" {
		q.Set("session", f.Session)
	}
	_, err := c.do(ctx, "GET", "/artifacts", q, nil, &out)
	return out.Artifacts, err
}

// Artifact implements inspect.API: the revision's metadata, then its bytes.
func (c *Client) Artifact(ctx context.Context, k artifact.Key, rev int) (*artifact.Artifact, error) {
	q := scopeQuery(k.User)
	q.Set("app", k.App)
	q.Set("session", k.Session)
	q.Set("name", k.Name)
	var revs struct{ Revisions []artifact.Meta }
	if _, err := c.do(ctx, "GET", "/artifacts/revisions", q, nil, &revs); err != nil {
		return nil, err
	}
	var meta *artifact.Meta
	for i := range revs.Revisions {
		if r := &revs.Revisions[i]; rev <= 0 && (meta == nil || r.Revision > meta.Revision) || r.Revision == rev {
			meta = r
		}
	}
	if meta == nil {
		return nil, fmt.Errorf("artifact %s revision %d: %w", k.Name, rev, store.ErrNotFound)
	}
	q.Set("rev", strconv.Itoa(meta.Revision))
	b, err := c.do(ctx, "GET", "/artifacts/raw", q, nil, nil)
	if err != nil {
		return nil, err
	}
	return &artifact.Artifact{Meta: *meta, Data: b}, nil
}

// Pending implements inspect.API.
func (c *Client) Pending(ctx context.Context) ([]*evolution.Candidate, error) {
	var out struct{ Candidates []*evolution.Candidate }
	_, err := c.do(ctx, "GET", "/candidates", nil, nil, &out)
	return out.Candidates, err
}

// Candidate implements inspect.API.
func (c *Client) Candidate(ctx context.Context, id string) (*evolution.Candidate, error) {
	var out evolution.Candidate
	if _, err := c.do(ctx, "GET", "/candidates/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Approve implements inspect.API; the server records its own caller.
func (c *Client) Approve(ctx context.Context, id, _ string) (*evolution.Candidate, error) {
	var out evolution.Candidate
	if _, err := c.do(ctx, "POST", "/candidates/"+url.PathEscape(id)+"/approve", nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reject implements inspect.API; the server records its own caller.
func (c *Client) Reject(ctx context.Context, id, _, reason string) (*evolution.Candidate, error) {
	var out evolution.Candidate
	if _, err := c.do(ctx, "POST", "/candidates/"+url.PathEscape(id)+"/reject", nil, map[string]string{"reason": reason}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
