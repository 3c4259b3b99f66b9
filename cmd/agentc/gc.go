package main

import (
	"fmt"
	"os"

	"github.com/agentc/agentc/internal/gctune"
)

// tuneGCForBatch paces the collector for a short-lived batch command
// (validate, fmt, graph, compile): parsing builds a large pointer-rich AST
// at once, and like the Go compiler a batch command trades a larger heap for
// less collection (internal/gctune). An explicit GOGC wins.
func tuneGCForBatch() { gctune.Batch(os.LookupEnv) }

// tuneGCForServer paces the collector for agentc serve (internal/gctune,
// spec/serve.md "Garbage collection") and says how.
func tuneGCForServer(a *app) {
	fmt.Fprintf(a.stderr, "agentc: %s\n", gctune.Server(os.LookupEnv, os.DirFS("/")))
}
