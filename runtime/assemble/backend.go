package assemble

import (
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"strconv"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Backend is the server.Backend of r over st, what agentc serve, mcp stdio
// and ui serve: the assembly's clock, protocol ids from NewID, logger (nil:
// discarded), limits and metrics (nil: a fresh set).
func (a *Assembly) Backend(r *runtime.Runner, st store.Store, logger *slog.Logger, limits server.Limits, metrics *server.Metrics) *server.Backend {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics = server.NewMetrics()
	}
	return &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: a.cfg.Clock,
		NewID: a.NewID, Logger: logger, Limits: limits, Metrics: metrics}
}

// NewID returns prefix + a time-ordered random id (the assembly's clock in
// milliseconds, base 36, then 80 bits of its entropy in hex): the ids
// adapters mint for protocol objects ("msg_", "task_").
func (a *Assembly) NewID(prefix string) string {
	cfg := &a.cfg
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], cfg.Entropy.Uint64())
	binary.BigEndian.PutUint64(b[8:], cfg.Entropy.Uint64())
	// Appended in one buffer: the id is its one allocation.
	var buf [64]byte
	id := append(buf[:0], prefix...)
	id = strconv.AppendInt(id, cfg.Clock.Now().UnixMilli(), 36)
	return string(hex.AppendEncode(id, b[:10]))
}
