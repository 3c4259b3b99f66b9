package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store"
)

// TestTenantIsolationAcrossProtocols: alice's session "shared", started
// over OpenAI and waiting on its interrupt, is invisible to bob whichever
// protocol he names it in (AG-UI threadId, A2A contextId and task id,
// OpenAI session header): his requests run in his own session and alice's
// run is untouched.
func TestTenantIsolationAcrossProtocols(t *testing.T) {
	e := newEnv(t, envOpts{support: true, all: true})
	const question = "prod.example.com fails with x509: certificate signed by unknown authority"
	a := e.chat(aliceToken, chatBody("support", false, "user", question), "X-Agentc-Session", "shared")
	if a.status != 200 || a.header.Get("X-Agentc-Status") != "interrupted" {
		t.Fatalf("alice: %d %s", a.status, a.body)
	}
	aliceRun := a.header.Get("X-Agentc-Run")
	tests := []struct {
		name, method, path, body string
		headers                  []string
		notFound                 string // the body says this instead (a not-found error echoing the id)
	}{
		{"AG-UI thread id", "POST", "/agui",
			`{"threadId":"shared","runId":"r1","messages":[{"id":"m1","role":"user","content":"{\"approved\": true}"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`, nil, ""},
		{"A2A context id", "POST", "/a2a",
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","contextId":"shared","parts":[{"kind":"text","text":"{\"approved\": true}"}]}}}`, nil, ""},
		{"A2A task id", "POST", "/a2a",
			`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + aliceRun + `"}}`, nil, `"code":-32001`},
		{"OpenAI session", "POST", "/v1/chat/completions",
			chatBody("support", false, "user", `{"approved": true}`), []string{"X-Agentc-Session", "shared"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, bobToken, tc.body, tc.headers...)
			if tc.notFound != "" {
				if !strings.Contains(string(r.body), tc.notFound) {
					t.Fatalf("want %s: %d %s", tc.notFound, r.status, r.body)
				}
				return
			}
			if strings.Contains(string(r.body), aliceRun) || r.header.Get("X-Agentc-Run") == aliceRun {
				t.Fatalf("bob's response names alice's run: %d %.400s", r.status, r.body)
			}
		})
	}
	ctx := context.Background()
	if _, err := e.b.GetRun(ctx, "bob", aliceRun); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("bob reads alice's run: %v", err)
	}
	got, err := e.b.GetRun(ctx, "alice", aliceRun)
	if err != nil || got.Status != store.RunInterrupted {
		t.Fatalf("alice's run after bob's requests: %+v, %v", got, err)
	}
	runs, err := e.b.Sessions.Runs(ctx, store.SessionKey{App: "support", User: "alice", Session: "shared"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("alice's session has runs %+v, %v", runs, err)
	}
	bobs, err := e.b.Sessions.Runs(ctx, store.SessionKey{App: "support", User: "bob", Session: "shared"})
	if err != nil || len(bobs) == 0 {
		t.Fatalf("bob's requests did not run in his own session: %+v, %v", bobs, err)
	}
}
