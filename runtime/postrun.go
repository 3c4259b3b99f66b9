package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/agentc/agentc/runtime/store"
)

// PostRun is the work order handed to post-run hooks after a run ends.
type PostRun struct {
	Session store.SessionKey
	Run     string
	// FirstEvent is the sequence number of the run's first event in the
	// session (store.Run.FirstEvent; 0: unknown): none of its events
	// precedes it.
	FirstEvent uint64
	Runnable   string
	Status     RunStatus
	// Trace is the context of the run's span (nil without an Observer).
	// The hooks' root spans link to it (WithSpanLink): the run span has
	// ended when they start.
	Trace context.Context
}

// PostRunHook runs after a run ended, on the Runner's post-run workers, off
// the caller's path (summary, memory extraction, evolution review). An
// error is logged; the next run of the session enqueues it again.
type PostRunHook interface {
	AfterRun(ctx context.Context, job PostRun) error
}

// PostRunFunc adapts a function to PostRunHook.
type PostRunFunc func(ctx context.Context, job PostRun) error

// AfterRun calls f.
func (f PostRunFunc) AfterRun(ctx context.Context, job PostRun) error { return f(ctx, job) }

// postRunPool is the bounded post-run worker pool. Work is coalesced per
// session: while a session waits in the queue, a newer run's job replaces
// its job (the hooks read the ledger, which then includes both runs). When
// the queue is full, the job is dropped with a warning. The Runner owns the
// workers; close stops them.
type postRunPool struct {
	log   *slog.Logger
	hooks []namedHook

	mu      sync.Mutex
	closed  bool
	pending map[store.SessionKey]PostRun
	queue   chan store.SessionKey
	dropped int

	ctx    context.Context // the hooks' context; canceled when close gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type namedHook struct {
	name string
	hook PostRunHook
}

func newPostRunPool(log *slog.Logger, cfg RunnerConfig) *postRunPool {
	p := &postRunPool{log: log, pending: map[store.SessionKey]PostRun{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for _, h := range []namedHook{{"summary", cfg.Summary}, {"memory", cfg.Memory}, {"evolution", cfg.Evolution}} {
		if h.hook != nil {
			p.hooks = append(p.hooks, h)
		}
	}
	if len(p.hooks) == 0 {
		return p // nothing to do: no workers, enqueue is a no-op
	}
	workers, size := cfg.Workers, cfg.QueueSize
	if workers <= 0 {
		workers = 1
	}
	if size <= 0 {
		size = 256
	}
	p.queue = make(chan store.SessionKey, size)
	for range workers {
		p.wg.Go(p.work)
	}
	return p
}

// enqueue hands a finished run's session to the workers without blocking.
func (p *postRunPool) enqueue(job PostRun) {
	if p.queue == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if _, queued := p.pending[job.Session]; queued {
		p.pending[job.Session] = job
		return
	}
	select {
	case p.queue <- job.Session:
		p.pending[job.Session] = job
	default:
		p.dropped++
		p.log.Warn("runtime: post-run queue full; dropping", "session", job.Session.String(), "run", job.Run, "dropped", p.dropped)
	}
}

func (p *postRunPool) work() {
	for key := range p.queue {
		p.mu.Lock()
		job := p.pending[key]
		delete(p.pending, key)
		p.mu.Unlock()
		for _, h := range p.hooks {
			if err := p.call(h, job); err != nil {
				p.log.Warn("runtime: post-run hook failed", "hook", h.name, "session", key.String(), "run", job.Run, "err", err)
			}
		}
	}
}

func (p *postRunPool) call(h namedHook, job PostRun) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	ctx := p.ctx
	if job.Trace != nil {
		ctx = WithSpanLink(ctx, job.Trace)
	}
	return h.hook.AfterRun(ctx, job)
}

// close stops accepting work and lets the workers drain the queue; when
// ctx is done first, the hooks' context is canceled and close waits for
// the workers to return.
func (p *postRunPool) close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		if p.queue != nil {
			close(p.queue)
		}
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { // owned by close: ends when the workers do
		p.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		p.cancel()
		<-done
	}
	p.cancel()
	return err
}
