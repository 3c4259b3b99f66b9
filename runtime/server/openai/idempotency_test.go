package openai_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/store"
)

// streamText is the content a stream's chunks carry, joined.
func streamText(t *testing.T, body []byte) string {
	t.Helper()
	var b strings.Builder
	for _, f := range frames(t, body) {
		if f == "[DONE]" {
			continue
		}
		if i := strings.Index(f, `"content":"`); i >= 0 {
			rest := f[i+len(`"content":"`):]
			b.WriteString(rest[:strings.Index(rest, `"`)])
		}
	}
	return b.String()
}

// TestIdempotencyKey: a request re-sent with its Idempotency-Key answers
// from the run the first one started — replayed from the ledger once it
// ended, resumed when its client left, followed to its end while in
// flight — and never
// starts another; another body under the key is 422; keys are per user.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, envOpts{})
	key := func(k string) []string { return []string{openai.IdempotencyHeader, k} }
	calls := func() int { return len(e.model.requests()) }

	// Ended: replayed, same completion, no second model call.
	body := chatBody("echo", false, "user", "hello there")
	c1 := decodeCompletion(t, e.chat(aliceToken, body, key("k1")...))
	n := calls()
	r2 := e.chat(aliceToken, body, key("k1")...)
	c2 := decodeCompletion(t, r2)
	if c2.ID != c1.ID || c2.Created != c1.Created || *c2.Choices[0].Message.Content != "echo: hello there" ||
		r2.header.Get("Idempotent-Replayed") != "true" || calls() != n {
		t.Fatalf("re-sent: %s (headers %v), first id %s, model calls %d then %d", r2.body, r2.header, c1.ID, n, calls())
	}
	streamed := e.chat(aliceToken, chatBody("echo", true, "user", "hello there"), key("k1")...)
	if _, _, code, _ := apiError(t, streamed.body); streamed.status != http.StatusUnprocessableEntity || code != "idempotency_key_reused" {
		t.Fatalf("another body under the key: %d %s", streamed.status, streamed.body)
	}
	if c := decodeCompletion(t, e.chat(bobToken, body, key("k1")...)); c.ID == c1.ID {
		t.Fatal("bob's k1 is alice's")
	}
	if r := e.chat(aliceToken, body, key(strings.Repeat("k", 256))...); r.status != http.StatusBadRequest {
		t.Fatalf("a key of 256 characters: %d %s", r.status, r.body)
	}

	// A client that leaves mid-run: its run is canceled; the re-sent
	// request continues it and answers in full, in one run.
	streamBody := chatBody("echo", true, "user", "block")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions", strings.NewReader(streamBody))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set(openai.IdempotencyHeader, "k3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run, firstID := resp.Header.Get(openai.RunHeader), resp.Header.Get("X-Request-Id")
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	<-e.model.started
	cancel()
	resp.Body.Close()
	e.waitIdle()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := e.b.GetRun(context.Background(), "alice", run)
		if err == nil && got.Status == store.RunCanceled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run after the disconnect: %+v, %v", got, err)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// In flight: the re-sent request follows the run through its ledger
	// and gets the same completion when it ends; nothing else starts.
	async := e.chatAsync(aliceToken, chatBody("echo", false, "user", "block"), key("k4")...)
	<-e.model.started
	n = calls()
	follower := e.chatAsync(aliceToken, chatBody("echo", false, "user", "block"), key("k4")...)
	time.Sleep(50 * time.Millisecond) // let it attach while the run waits
	close(e.model.gate)
	first4 := decodeCompletion(t, <-async)
	followed := <-follower
	if c := decodeCompletion(t, followed); c.ID != first4.ID || *c.Choices[0].Message.Content != *first4.Choices[0].Message.Content ||
		followed.header.Get("Idempotent-Replayed") != "true" || calls() != n {
		t.Fatalf("k4 re-sent in flight: %s %v, first %s, model calls %d then %d", followed.body, followed.header, first4.ID, n, calls())
	}
	if c := decodeCompletion(t, e.chat(aliceToken, chatBody("echo", false, "user", "block"), key("k4")...)); c.ID != first4.ID {
		t.Fatalf("k4 re-sent after its end: %s, first %s", c.ID, first4.ID)
	}

	resumed := e.chat(aliceToken, streamBody, key("k3")...)
	if resumed.status != 200 || resumed.header.Get(openai.RunHeader) != run || resumed.header.Get("X-Request-Id") != firstID {
		t.Fatalf("k3 re-sent: %d %s %v", resumed.status, resumed.body, resumed.header)
	}
	if got := streamText(t, resumed.body); !strings.Contains(got, "echo: block") {
		t.Fatalf("the resumed stream says %q", got)
	}
	if got, err := e.b.GetRun(context.Background(), "alice", run); err != nil || got.Status != store.RunCompleted {
		t.Fatalf("k3's run after the re-send: %+v, %v", got, err)
	}
}

// TestOrphanedIdempotencyKeyTakenOver: a key reserved by a process that
// died before starting its run (its claim names another instance of a
// store this process alone opens) is taken over at once by the re-sent
// request, which runs once; a later re-send gets the same completion.
func TestOrphanedIdempotencyKeyTakenOver(t *testing.T) {
	e := newEnv(t, envOpts{})
	body := chatBody("echo", false, "user", "hello there")
	sum := sha256.Sum256([]byte(body))
	now := e.b.Clock.Now()
	orphan := fmt.Sprintf(`{"v":1,"hash":%q,"session":"chatcmpl-dead","id":"chatcmpl-dead","created":%d,"claim":{"owner":"proc_dead","since":%d,"session":"chatcmpl-dead","inv":"chatcmpl-dead"}}`,
		hex.EncodeToString(sum[:]), now.Unix(), now.UnixMilli())
	if err := e.b.Docs.ApplyDocs(context.Background(), store.DocOp{Coll: openai.CollIdempotency, Key: store.DocPath(e.b.App(), "alice", "k9"), Value: []byte(orphan)}); err != nil {
		t.Fatal(err)
	}
	r := e.chat(aliceToken, body, openai.IdempotencyHeader, "k9")
	if r.status != http.StatusOK {
		t.Fatalf("re-sent after its process died: %d %s", r.status, r.body)
	}
	c := decodeCompletion(t, r)
	n := len(e.model.requests())
	again := e.chat(aliceToken, body, openai.IdempotencyHeader, "k9")
	if c2 := decodeCompletion(t, again); c2.ID != c.ID || again.header.Get("Idempotent-Replayed") != "true" || len(e.model.requests()) != n {
		t.Fatalf("re-sent again: %s %v (first %s)", again.body, again.header, c.ID)
	}
}
