package assemble

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

// TestBackend: the Backend of an assembly's Runner has its clock, a
// session service and fresh metrics; its ids are prefixed, grow with time
// and never repeat.
func TestBackend(t *testing.T) {
	prog := runtimetest.CompileSource(t, "a.agent", "workflow a\n\nstate S { q: string }\n\ngraph g(S) input q {\n  node n = set { q = q }\n  start -> n\n  n -> end\n}\n")
	clock := &runtimetest.Clock{}
	asm, err := Prepare(Options{Program: prog, Offline: true, Clock: clock, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	r, err := asm.Runner(st)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	b := asm.Backend(r, st, nil, server.Limits{}, nil)
	if b.Runner != r || b.Sessions == nil || b.Metrics == nil || b.Logger == nil || b.Clock != clock {
		t.Fatalf("backend %+v", b)
	}
	a1, a2 := b.NewID("msg_"), b.NewID("msg_")
	if !strings.HasPrefix(a1, "msg_") || a1 == a2 || len(a1) != len(a2) {
		t.Errorf("ids %q, %q", a1, a2)
	}
	// The clock's milliseconds in base 36, then 10 random bytes in hex.
	if n := len(a1) - 20; n <= 4 {
		t.Errorf("id %q: too short", a1)
	} else if ms, err := strconv.ParseInt(a1[4:n], 36, 64); err != nil || ms/1000 != clock.Now().Unix() {
		t.Errorf("id %q: time part %d, %v; the clock's %d", a1, ms, err, clock.Now().UnixMilli())
	} else if _, err := hex.DecodeString(a1[n:]); err != nil {
		t.Errorf("id %q: random part %v", a1, err)
	}
	if n := testing.AllocsPerRun(100, func() { b.NewID("msg_") }); n != 1 {
		t.Errorf("NewID allocates %v times, want 1", n)
	}
}
