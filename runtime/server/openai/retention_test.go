package openai_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/store"
)

// TestIdempotencyRecord reads the record a request with an
// Idempotency-Key wrote: retention finds its run and its time through it.
func TestIdempotencyRecord(t *testing.T) {
	e := newEnv(t, envOpts{})
	at := e.b.Clock.Now().Truncate(time.Second)
	e.chat(aliceToken, chatBody("echo", false, "user", "hello"), openai.IdempotencyHeader, "k1")
	v, err := e.b.Docs.GetDoc(context.Background(), openai.CollIdempotency, store.DocPath(e.b.App(), "alice", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	run, made, err := openai.IdempotencyRecord(v)
	if err != nil || run == "" || !made.Equal(at) {
		t.Fatalf("IdempotencyRecord(%s) = %q, %v, %v", v, run, made, err)
	}
	if _, _, err := openai.IdempotencyRecord([]byte(`[`)); err == nil {
		t.Error("a damaged record read")
	}
}
