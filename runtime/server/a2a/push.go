package a2a

// Push notifications (spec/a2a.md, "Push notifications"): webhook
// configurations kept in the task's record, and their delivery — one
// ordered queue per configuration, drained by a goroutine the Handler owns,
// retried with exponential backoff.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentc/agentc/runtime/outbound"
)

// PushOptions enable push notifications. Without them (Options.Push nil)
// the card says pushNotifications false and every push method and
// configuration is -32003.
type PushOptions struct {
	// Allow vets a webhook URL when it is configured and before each
	// delivery (the operator's host allowlist). Required.
	Allow func(u *neturl.URL) error
	// Client posts the notifications (nil: a client without proxy or
	// redirects). Its CheckRedirect is replaced: a webhook is not followed
	// elsewhere.
	Client *http.Client
	// Timeout bounds each attempt (default 10s).
	Timeout time.Duration
	// Attempts is how many times one notification is tried (default 5).
	Attempts int
	// Backoff is the wait before the first retry, doubled before each
	// next one (default 1s).
	Backoff time.Duration
	// Propagate, when set, writes the trace context of a context into
	// headers (traceparent; spec/telemetry.md): a task's notifications
	// carry that of the request that started its run. Nil: none.
	Propagate func(ctx context.Context, h http.Header)
}

// Limits of a configuration.
const (
	maxPushConfigs = 10
	maxPushURL     = 2048
	maxPushSecret  = 4096 // token, credentials
	maxPushQueue   = 256  // notifications waiting per configuration
)

// pushConfig is one webhook of a task, as its record keeps it. V is the
// protocol version it was configured in: its notifications are in that
// version's shape.
type pushConfig struct {
	ID          string  `json:"id"`
	URL         string  `json:"url"`
	Token       string  `json:"token,omitempty"`
	Scheme      string  `json:"scheme,omitempty"`
	Credentials string  `json:"credentials,omitempty"`
	V           Version `json:"v"`
}

// ---- wire shapes -------------------------------------------------------

type authInfo1 struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// pushConfig1 is 1.0's TaskPushNotificationConfig (also the params of
// CreateTaskPushNotificationConfig).
type pushConfig1 struct {
	Tenant         string     `json:"tenant,omitempty"`
	ID             string     `json:"id,omitempty"`
	TaskID         string     `json:"taskId,omitempty"`
	URL            string     `json:"url"`
	Token          string     `json:"token,omitempty"`
	Authentication *authInfo1 `json:"authentication,omitempty"`
}

type authInfo03 struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials,omitempty"`
}

// pushConfig03 is 0.3's PushNotificationConfig.
type pushConfig03 struct {
	ID             string      `json:"id,omitempty"`
	URL            string      `json:"url"`
	Token          string      `json:"token,omitempty"`
	Authentication *authInfo03 `json:"authentication,omitempty"`
}

// taskPushConfig03 is 0.3's TaskPushNotificationConfig.
type taskPushConfig03 struct {
	TaskID                 string        `json:"taskId"`
	PushNotificationConfig *pushConfig03 `json:"pushNotificationConfig"`
}

// encodePushConfig renders c in version v. Credentials are never sent
// back: a reader of the configuration learns the scheme only.
func encodePushConfig(v Version, taskID string, c pushConfig) any {
	if v == V10 {
		out := pushConfig1{ID: c.ID, TaskID: taskID, URL: c.URL, Token: c.Token}
		if c.Scheme != "" {
			out.Authentication = &authInfo1{Scheme: c.Scheme}
		}
		return out
	}
	out := &pushConfig03{ID: c.ID, URL: c.URL, Token: c.Token}
	if c.Scheme != "" {
		out.Authentication = &authInfo03{Schemes: []string{c.Scheme}}
	}
	return taskPushConfig03{TaskID: taskID, PushNotificationConfig: out}
}

// decodePushConfig reads a configuration from its version's JSON (field
// names the parameter for errors) and checks it: an http(s) URL the
// allowlist accepts, bounded secrets, an HTTP authentication scheme.
func (h *Handler) decodePushConfig(v Version, raw json.RawMessage, field string) (pushConfig, *rpcError) {
	var c pushConfig
	if v == V10 {
		var w pushConfig1
		if e := decodeParams(raw, &w); e != nil {
			return c, e
		}
		c = pushConfig{ID: w.ID, URL: w.URL, Token: w.Token, V: v}
		if w.Authentication != nil {
			c.Scheme, c.Credentials = w.Authentication.Scheme, w.Authentication.Credentials
			if c.Scheme == "" {
				return c, invalidParams(field+".authentication.scheme", "authentication.scheme is required")
			}
		}
	} else {
		var w pushConfig03
		if e := decodeParams(raw, &w); e != nil {
			return c, e
		}
		c = pushConfig{ID: w.ID, URL: w.URL, Token: w.Token, V: v}
		if a := w.Authentication; a != nil {
			switch {
			case len(a.Schemes) == 0 && a.Credentials != "":
				return c, invalidParams(field+".authentication.schemes", "authentication.schemes must name the scheme of the credentials")
			case len(a.Schemes) > 0 && a.Credentials != "":
				c.Scheme, c.Credentials = a.Schemes[0], a.Credentials
			}
		}
	}
	if c.URL == "" {
		return c, invalidParams(field+".url", "url is required")
	}
	if len(c.URL) > maxPushURL {
		return c, invalidParams(field+".url", fmt.Sprintf("url is longer than %d bytes", maxPushURL))
	}
	u, ok := outbound.HTTPURL(c.URL)
	if !ok || u.User != nil {
		return c, invalidParams(field+".url", "url must be an absolute http(s) URL without user information")
	}
	if err := h.opts.Push.Allow(u); err != nil {
		return c, invalidParams(field+".url", "url is not allowed: "+err.Error())
	}
	if badID(c.ID) {
		return c, invalidParams(field+".id", fmt.Sprintf("id must be valid UTF-8 of at most %d bytes", maxIDLen))
	}
	for name, s := range map[string]string{"token": c.Token, "authentication.credentials": c.Credentials} {
		if len(s) > maxPushSecret || strings.ContainsAny(s, "\r\n\x00") {
			return c, invalidParams(field+"."+name, fmt.Sprintf("%s must be one line of at most %d bytes", name, maxPushSecret))
		}
	}
	if c.Scheme != "" && !httpToken(c.Scheme) {
		return c, invalidParams(field+".authentication.scheme", "authentication.scheme must be an HTTP authentication scheme name (Bearer, Basic, ...)")
	}
	return c, nil
}

// httpToken reports whether s is an RFC 9110 token (an auth scheme name).
func httpToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if r > 127 || !(r == '!' || r == '#' || r == '$' || r == '%' || r == '&' || r == '\'' || r == '*' || r == '+' ||
			r == '-' || r == '.' || r == '^' || r == '_' || r == '`' || r == '|' || r == '~' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			return false
		}
	}
	return true
}

// addPush adds c to t's configurations (replacing one with its id; a new
// one without an id gets one) and returns it as stored.
func (h *Handler) addPush(t *Task, c pushConfig) (pushConfig, *rpcError) {
	for i := range t.Push {
		if c.ID != "" && t.Push[i].ID == c.ID {
			t.Push[i] = c
			return c, nil
		}
	}
	if len(t.Push) >= maxPushConfigs {
		return c, invalidParams("url", fmt.Sprintf("task %s has %d push notification configurations already (the most)", t.ID, maxPushConfigs))
	}
	if c.ID == "" {
		c.ID = h.b.NewID("push_")
	}
	t.Push = append(t.Push, c)
	return c, nil
}

// ---- the methods -------------------------------------------------------

type pushParams struct {
	// 1.0
	TaskID string `json:"taskId"`
	ID     string `json:"id"`
	// 0.3: id is the task; the configuration's id is this
	ConfigID string `json:"pushNotificationConfigId"`
	// 0.3 set
	PushNotificationConfig json.RawMessage `json:"pushNotificationConfig"`
	// 1.0 list
	PageSize  int32  `json:"pageSize"`
	PageToken string `json:"pageToken"`
}

// push answers the four push-notification methods of either version.
func (c *call) push(method string) (any, *rpcError) {
	if c.h.opts.Push == nil {
		return nil, pushNotSupported()
	}
	var p pushParams
	if e := decodeParams(c.params, &p); e != nil {
		return nil, e
	}
	op := strings.TrimPrefix(strings.ToLower(method), "tasks/pushnotificationconfig/")
	task, config := p.TaskID, p.ID
	if c.v == V03 {
		task, config = p.ID, p.ConfigID
		if op == "set" {
			task = p.TaskID
		}
	} else {
		op = map[string]string{"createtaskpushnotificationconfig": "set", "gettaskpushnotificationconfig": "get",
			"listtaskpushnotificationconfigs": "list", "deletetaskpushnotificationconfig": "delete"}[op]
	}
	taskField := "taskId"
	if c.v == V03 && op != "set" {
		taskField = "id"
	}
	if task == "" {
		return nil, invalidParams(taskField, taskField+" is required")
	}
	switch op {
	case "set":
		raw, field := c.params, "params"
		if c.v == V03 {
			raw, field = p.PushNotificationConfig, "pushNotificationConfig"
			if !present(raw) {
				return nil, invalidParams(field, "pushNotificationConfig is required")
			}
		}
		cfg, e := c.h.decodePushConfig(c.v, raw, field)
		if e != nil {
			return nil, e
		}
		var stored pushConfig
		if e := c.mutate(task, func(t *Task) *rpcError {
			var e *rpcError
			stored, e = c.h.addPush(t, cfg)
			return e
		}); e != nil {
			return nil, e
		}
		return encodePushConfig(c.v, task, stored), nil
	case "get":
		if config == "" && c.v == V10 {
			return nil, invalidParams("id", "id is required")
		}
		t, e := c.load(task)
		if e != nil {
			return nil, e
		}
		for _, pc := range t.Push {
			if pc.ID == config || (config == "" && c.v == V03) {
				return encodePushConfig(c.v, task, pc), nil
			}
		}
		return nil, pushConfigNotFound(task, config)
	case "list":
		if p.PageSize < 0 {
			return nil, invalidParams("pageSize", "pageSize must not be negative")
		}
		t, e := c.load(task)
		if e != nil {
			return nil, e
		}
		list := []any{}
		for _, pc := range t.Push {
			list = append(list, encodePushConfig(c.v, task, pc))
		}
		if c.v == V10 {
			return map[string]any{"configs": list, "nextPageToken": ""}, nil
		}
		return list, nil
	case "delete":
		if config == "" {
			field := "id"
			if c.v == V03 {
				field = "pushNotificationConfigId"
			}
			return nil, invalidParams(field, field+" is required")
		}
		if e := c.mutate(task, func(t *Task) *rpcError {
			for i := range t.Push {
				if t.Push[i].ID == config {
					t.Push = append(t.Push[:i:i], t.Push[i+1:]...)
					c.h.pushes.forget(t.ID, config)
					break
				}
			}
			return nil // deleting twice is deleting once
		}); e != nil {
			return nil, e
		}
		if c.v == V10 {
			return struct{}{}, nil // google.protobuf.Empty
		}
		return json.RawMessage("null"), nil
	}
	return nil, methodNotFound(c.v, method)
}

func pushConfigNotFound(task, id string) *rpcError {
	e := taskNotFound(task)
	e.Message = fmt.Sprintf("Push notification configuration %q of task %q not found", id, task)
	return e
}

// mutate applies f to user's task id and saves it, whether a run of it is
// in flight here (under the live task's lock) or not (claiming it first,
// so that no run starts meanwhile).
func (c *call) mutate(id string, f func(t *Task) *rpcError) *rpcError {
	h := c.h
	ctx := context.WithoutCancel(c.r.Context())
	for range 100 {
		if lt := h.liveFor(c.user, id); lt != nil {
			lt.mu.Lock()
			if lt.released {
				lt.mu.Unlock()
				continue
			}
			if e := f(lt.t); e != nil {
				lt.mu.Unlock()
				return e
			}
			lt.t.Updated = h.now()
			err := h.save(ctx, lt.user, lt.t, false)
			lt.mu.Unlock()
			if err != nil {
				return c.internal("save task "+id, err)
			}
			return nil
		}
		t, e := c.load(id)
		if e != nil {
			return e
		}
		lt, err := h.claim(c.user, t)
		if errors.Is(err, errBusy) {
			continue // a run started: change the live task
		}
		if err != nil {
			return h.startError(err)
		}
		t, err = h.readTask(ctx, c.user, id)
		if err != nil {
			h.release(lt)
			return c.internal("read task "+id, err)
		}
		lt.mu.Lock()
		lt.t = t
		e = f(t)
		if e == nil {
			t.Updated = h.now()
			err = h.save(ctx, c.user, t, false)
		}
		lt.mu.Unlock()
		h.release(lt)
		if e != nil {
			return e
		}
		if err != nil {
			return c.internal("save task "+id, err)
		}
		return nil
	}
	return unsupported(fmt.Sprintf("task %s is changing too often to configure; try again", id))
}

// ---- delivery ----------------------------------------------------------

// pusher delivers notifications: one queue per (task, configuration),
// each drained in order by one goroutine while it has items.
type pusher struct {
	opts   PushOptions
	client *http.Client
	log    func(msg string, args ...any)

	ctx  context.Context // canceled by stop: deliveries give up
	stop context.CancelFunc

	mu     sync.Mutex
	queues map[string]*pushQueue
	wg     sync.WaitGroup
}

type pushQueue struct {
	cfg   pushConfig
	items []pushItem
	ctype string
}

// pushItem is one notification: its body and the trace context headers
// of the run it reports (nil: none).
type pushItem struct {
	body  []byte
	trace http.Header
}

// traceOf returns the trace context headers of ctx (nil: none, or no
// Propagate).
func (p *pusher) traceOf(ctx context.Context) http.Header {
	if p == nil || p.opts.Propagate == nil {
		return nil
	}
	h := http.Header{}
	p.opts.Propagate(ctx, h)
	if len(h) == 0 {
		return nil
	}
	return h
}

func newPusher(opts *PushOptions, log func(string, ...any)) *pusher {
	if opts == nil {
		return nil
	}
	o := *opts
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	var cl http.Client
	if o.Client != nil {
		cl = *o.Client
	} else {
		cl.Transport = &http.Transport{Proxy: nil, TLSHandshakeTimeout: o.Timeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	}
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := &pusher{opts: o, client: &cl, log: log, queues: map[string]*pushQueue{}}
	p.ctx, p.stop = context.WithCancel(context.Background())
	return p
}

func queueKey(task, config string) string { return task + "\x00" + config }

// notify queues the notifications of one change of t (its updates ups)
// for each of its configurations: in 1.0 one StreamResponse per update, in
// 0.3 the task as it now is.
func (p *pusher) notify(t *Task, trace http.Header, ups []update) {
	if p == nil || len(t.Push) == 0 || len(ups) == 0 {
		return
	}
	for _, cfg := range t.Push {
		var items []pushItem
		ctype := "application/json"
		if cfg.V == V10 {
			ctype = "application/a2a+json"
			for _, u := range ups {
				b, _ := json.Marshal(encodeUpdate(V10, t, u))
				items = append(items, pushItem{body: b, trace: trace})
			}
		} else {
			b, _ := json.Marshal(encodeTask03(t.view(nil, true)))
			items = append(items, pushItem{body: b, trace: trace})
		}
		p.enqueue(t.ID, cfg, ctype, items)
	}
}

func (p *pusher) enqueue(task string, cfg pushConfig, ctype string, bodies []pushItem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	key := queueKey(task, cfg.ID)
	q := p.queues[key]
	if q != nil {
		q.cfg = cfg // a replaced configuration takes effect for what is queued
		if len(q.items)+len(bodies) > maxPushQueue {
			p.log("a2a: push queue full, dropping notifications", "task", task, "config", cfg.ID, "dropped", len(bodies))
			return
		}
		q.items = append(q.items, bodies...)
		return
	}
	q = &pushQueue{cfg: cfg, items: bodies, ctype: ctype}
	p.queues[key] = q
	p.wg.Add(1)
	go p.drain(task, key, q)
}

// forget drops the queue of a deleted configuration: nothing more is sent
// to it once the attempt in flight ends.
func (p *pusher) forget(task, config string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if q := p.queues[queueKey(task, config)]; q != nil {
		q.items = nil
		q.cfg.URL = ""
	}
	p.mu.Unlock()
}

// drain sends q's items in order, each until it is acknowledged or its
// attempts are spent; it ends when q is empty.
func (p *pusher) drain(task, key string, q *pushQueue) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		if len(q.items) == 0 || q.cfg.URL == "" || p.ctx.Err() != nil {
			delete(p.queues, key)
			p.mu.Unlock()
			return
		}
		item, cfg := q.items[0], q.cfg
		q.items = q.items[1:]
		p.mu.Unlock()
		if err := p.deliver(cfg, q.ctype, item); err != nil {
			p.log("a2a: push notification not delivered", "task", task, "config", cfg.ID, "err", err)
		}
	}
}

// deliver posts body to cfg's webhook, retrying a failure that may pass
// (no answer, 408, 429, 5xx) with exponential backoff.
func (p *pusher) deliver(cfg pushConfig, ctype string, item pushItem) error {
	for attempt := 1; ; attempt++ {
		retry, err := p.post(cfg, ctype, item)
		if err == nil || !retry || attempt >= p.opts.Attempts {
			if err != nil && retry {
				err = fmt.Errorf("after %d attempts: %w", attempt, err)
			}
			return err
		}
		if outbound.Sleep(p.ctx, outbound.Backoff(p.opts.Backoff, 0, attempt, nil)) != nil {
			return fmt.Errorf("shutting down: %w", err)
		}
	}
}

func (p *pusher) post(cfg pushConfig, ctype string, item pushItem) (retry bool, err error) {
	u, err := neturl.Parse(cfg.URL)
	if err != nil {
		return false, err
	}
	if err := p.opts.Allow(u); err != nil {
		return false, fmt.Errorf("url no longer allowed: %w", err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(item.body))
	if err != nil {
		return false, err
	}
	for k, v := range item.trace {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", ctype)
	if cfg.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", cfg.Token)
	}
	if cfg.Scheme != "" && cfg.Credentials != "" {
		req.Header.Set("Authorization", cfg.Scheme+" "+cfg.Credentials)
	}
	rep, err := outbound.Do(p.client, req, 4096) // the reply's body is read only to reuse the connection
	if rep == nil {
		return true, err
	}
	if s := rep.StatusCode; s >= 200 && s < 300 {
		return false, nil
	}
	_, transient := outbound.Transient(rep.StatusCode)
	return transient || rep.StatusCode == http.StatusRequestTimeout, fmt.Errorf("webhook answered %s", rep.Status)
}

// close lets the queued notifications go out until ctx ends, then gives
// up on the rest.
func (p *pusher) close(ctx context.Context) {
	if p == nil {
		return
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.stop()
	p.mu.Unlock()
	<-done
}
