package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeA2APush: `agentc serve` with AGENTC_PUSH_HOSTS posts a task's
// updates to the webhook a client configures on SendMessage, with the
// client's credentials; the card says pushNotifications true.
func TestServeA2APush(t *testing.T) {
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `"ok"`)
	}))
	defer tools.Close()
	var mu sync.Mutex
	var got []map[string]any
	var auth []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		got, auth = append(got, m), append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer hook.Close()
	root, env := orphanProject(t, tools)
	cmd, addr, stderr := startServe(t, root, append(env, "AGENTC_PUSH_HOSTS="+hook.Listener.Addr().String()))
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	call := func(body string) map[string]any {
		req, _ := http.NewRequest("POST", "http://"+addr+"/a2a", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || m["error"] != nil {
			t.Fatalf("a2a answered %s (%v)\n%s", b, err, stderr())
		}
		return m
	}
	resp, err := http.Get("http://" + addr + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(card, []byte(`"pushNotifications":true`)) {
		t.Fatalf("card: %s", card)
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"go"}]},` +
		`"configuration":{"taskPushNotificationConfig":{"url":"` + hook.URL + `/hook","authentication":{"scheme":"Bearer","credentials":"hook-secret"}}}}}`)
	// Refused: a webhook on a host the list lacks.
	req, _ := http.NewRequest("POST", "http://"+addr+"/a2a", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"go"}]},`+
		`"configuration":{"taskPushNotificationConfig":{"url":"http://169.254.169.254/latest"}}}}`))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if r, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !bytes.Contains(b, []byte(`-32602`)) {
			t.Fatalf("a webhook on a host not allowed: %s", b)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		done := false
		for _, m := range got {
			if su, ok := m["statusUpdate"].(map[string]any); ok && su["status"].(map[string]any)["state"] == "TASK_STATE_COMPLETED" {
				done = true
			}
		}
		n, a := len(got), append([]string(nil), auth...)
		mu.Unlock()
		if done {
			for _, h := range a {
				if h != "Bearer hook-secret" {
					t.Fatalf("webhook Authorization %q", h)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completed notification (%d received)\n%s", n, stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
