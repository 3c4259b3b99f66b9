package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store/memory"
)

// The answers of earlier recall rounds repeat the original's words in a
// short message, so BM25 ranks them all above it; they are echoes (halved
// at re-ranking), and they must not use the candidate budget either: with
// more rounds than the budget (30 events) the original was not even read
// (bench/context -only recall, 12 sessions × 80 turns: recall@5 0.950).
func TestEchoesDoNotCrowdOutTheOriginal(t *testing.T) {
	st := memory.New()
	l := newLedger(t, st)
	x := NewIndex(st, nil)
	k := key("ana", "s1")
	filler := "The rack audit covered power, cooling, cabling and labels for every row of the hall."
	ids := l.add(k, started(), user(filler+" The replacement disk for orion-3 has serial number SN-6653-WB."), assistant("Noted."))
	for i := range 40 {
		run := fmt.Sprintf("run_r%02d", i)
		l.add(k,
			ev{kind: runtime.EventInput, text: "What was the serial number of the replacement disk for orion-3?", run: run},
			ev{kind: runtime.EventToolResult, callID: "c" + run, tool: SearchToolName, result: `{"hits": []}`, run: run},
			ev{kind: runtime.EventModelResponse, text: "From the history: the replacement disk for orion-3 has serial number SN-6653-WB.", run: run})
	}
	out, err := NewSearchTool(x, nil).Call(context.Background(), runtime.ToolRequest{Session: k, Run: "run_now",
		Args: json.RawMessage(`{"query": "serial number of the replacement disk for orion-3", "scope": "current_session", "top_k": 5}`)})
	if err != nil {
		t.Fatal(err)
	}
	var res SearchResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].EventID != ids[1] {
		t.Fatalf("hits %+v, want the original %s first", res.Hits, ids[1])
	}
}
