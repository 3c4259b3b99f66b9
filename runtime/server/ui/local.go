package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentc/agentc/runtime/server"
)

// ServeLocal serves h on l for agentc ui (Handler.Local with token) until
// ctx ends, then shuts down, giving requests in flight (an event stream
// ends at once) up to 5 s. l must be a loopback listener.
func (h *Handler) ServeLocal(ctx context.Context, l net.Listener, token string) error {
	if !server.IsLoopback(l.Addr().String()) {
		_ = l.Close()
		return fmt.Errorf("ui: refusing to serve on %s: agentc ui serves loopback addresses only", l.Addr())
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           h.Local(token),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }() // owned here: Shutdown ends it, joined below
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	cancel() // ends the event streams
	sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
