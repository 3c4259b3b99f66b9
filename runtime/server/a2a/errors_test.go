package a2a_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store/memory"
)

func TestErrorCodes(t *testing.T) {
	e := newEnv(t, memory.New())
	done := str(t, e.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", nil)), "task", "id")
	cases := []struct {
		name, ver, body string
		code            int
	}{
		{"parse error", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask"`, -32700},
		{"parse error 0.3", "", `not json at all`, -32700},
		{"jsonrpc 1.0", "1.0", `{"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, -32600},
		{"no jsonrpc", "1.0", `{"id": 1, "method": "GetTask"}`, -32600},
		{"no method", "1.0", `{"jsonrpc": "2.0", "id": 1}`, -32600},
		{"method not a string", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": 5}`, -32600},
		{"no id", "1.0", `{"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}`, -32600},
		{"object id", "1.0", `{"jsonrpc": "2.0", "id": {}, "method": "GetTask"}`, -32600},
		{"batch", "1.0", `[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]`, -32600},
		{"scalar", "", `42`, -32600},
		{"params scalar", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": "x"}`, -32600},
		{"unknown method", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "DoSomething"}`, -32601},
		{"unknown method 0.3", "", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/explode"}`, -32601},
		{"params array", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": ["x"]}`, -32602},
		{"no message", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}`, -32602},
		{"no parts", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}}`, -32602},
		{"no message id", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}}`, -32602},
		{"agent role", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}}`, -32602},
		{"0.3 role in 1.0", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}}`, -32602},
		{"two contents", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "url": "y"}]}}}`, -32602},
		{"0.3 unknown part kind", "", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "video"}]}}}`, -32602},
		{"wrong type", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}`, -32602},
		{"get without id", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}`, -32602},
		{"negative history", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x", "historyLength": -2}}`, -32602},
		{"long context id", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "contextId": "` + strings.Repeat("c", 300) + `", "parts": [{"text": "x"}]}}}`, -32602},
		{"task not found", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "task_nope"}}`, -32001},
		{"task not found 0.3", "", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "task_nope"}}`, -32001},
		{"message to unknown task", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "task_nope", "parts": [{"text": "x"}]}}}`, -32001},
		{"not cancelable", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": "` + done + `"}}`, -32002},
		{"push create", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", "params": {"taskId": "` + done + `", "url": "https://example.com/hook"}}`, -32003},
		{"push list 0.3", "", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/list", "params": {"id": "` + done + `"}}`, -32003},
		{"push config on send", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}, "configuration": {"taskPushNotificationConfig": {"url": "https://example.com/hook"}}}}`, -32003},
		{"message to terminal task", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "` + done + `", "parts": [{"text": "x"}]}}}`, -32004},
		{"extended card", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}`, -32004},
		{"file part", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "ftp://example.com/a.pdf", "mediaType": "application/pdf"}]}}}`, -32005},
		{"extended card 0.3", "", `{"jsonrpc": "2.0", "id": 1, "method": "agent/getAuthenticatedExtendedCard"}`, -32007},
		{"version 2.0", "2.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, -32009},
		{"version garbage", "latest", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, -32009},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post("ana", c.ver, []byte(c.body))
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var r rpcResp
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code != c.code || r.Error.Message == "" || r.Result != nil {
				t.Fatalf("want %d, got %s", c.code, b)
			}
			wantID := "1"
			if c.code == -32700 || c.name == "no id" || c.name == "object id" || c.name == "batch" || c.name == "scalar" {
				wantID = "null"
			}
			if string(r.ID) != wantID {
				t.Fatalf("id %s, want %s", r.ID, wantID)
			}
			// 1.0 A2A errors carry google.rpc details; 0.3 errors none.
			if c.ver == "" && r.Error.Data != nil {
				t.Fatalf("0.3 error with data: %s", b)
			}
			if c.ver == "1.0" && c.code > -32100 && c.code <= -32001 && c.code != -32007 &&
				!strings.Contains(string(r.Error.Data[0]), `"@type":"type.googleapis.com/google.rpc.ErrorInfo"`) {
				t.Fatalf("1.0 error without ErrorInfo: %s", b)
			}
			if c.code == -32602 && c.ver == "1.0" && c.name != "params array" &&
				!strings.Contains(string(r.Error.Data[0]), "google.rpc.BadRequest") {
				t.Fatalf("invalid params without BadRequest: %s", b)
			}
		})
	}
}

func TestIDEchoedExactly(t *testing.T) {
	e := newEnv(t, memory.New())
	for _, id := range []string{`"req-7"`, `7`, `-3`, `12345678901234567890`, `1.5e3`, `"ünï\u00e9"`, `null`} {
		r := e.raw("ana", "1.0", []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"GetTask","params":{"id":"task_nope"}}`))
		if string(r.ID) != id || r.Error == nil || r.Error.Code != -32001 {
			t.Fatalf("id %s echoed as %s (%+v)", id, r.ID, r.Error)
		}
	}
}

func TestHTTPLevelErrors(t *testing.T) {
	e := newEnv(t, memory.New())
	// GET is not JSON-RPC.
	req := httptestRequest(t, e.srv.URL+"/a2a")
	req.Header.Set("Authorization", "Bearer ana")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r rpcResp
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || r.Error == nil || r.Error.Code != -32600 {
		t.Fatalf("GET: %d %+v", resp.StatusCode, r.Error)
	}
	// A body over the limit.
	e.backend.Limits.MaxBodyBytes = 512
	resp = e.post("ana", "1.0", request("SendMessage", msg1(strings.Repeat("x", 2048), nil)))
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != -32600 {
		t.Fatalf("large body: %d %+v", resp.StatusCode, r.Error)
	}
	// Without an authenticated user (the middleware never lets that
	// through; the handler refuses it anyway).
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(string(request("GetTask", map[string]any{"id": "x"})))))
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"code":-32600`) {
		t.Fatalf("unauthenticated: %d %s", rec.Code, rec.Body)
	}
}

// TestGarbageThenGoodRequest sends 1,000 malformed or mutated requests;
// every one gets a JSON-RPC error (never a 5xx, never a hang), and a good
// request afterwards still works.
func TestGarbageThenGoodRequest(t *testing.T) {
	e := newEnv(t, memory.New())
	rng := rand.New(rand.NewPCG(1, 2))
	seeds := [][]byte{
		request("GetTask", map[string]any{"id": "task_1", "historyLength": 3}),
		request("ListTasks", map[string]any{"pageSize": 5, "status": "TASK_STATE_WORKING"}),
		request("CancelTask", map[string]any{"id": "task_2"}),
		request("tasks/get", map[string]any{"id": "task_3"}),
		request("SendMessage", msg1("What is the capital of France?", nil)),
	}
	alphabet := []byte(`{}[]":,0123456789.-+eEtrufalsn \\/abcxyz` + "\x00\xff\t\n")
	for i := range 1000 {
		var body []byte
		switch i % 4 {
		case 0: // random bytes
			body = make([]byte, rng.IntN(200))
			for j := range body {
				body[j] = byte(rng.UintN(256))
			}
		case 1: // random JSON-ish tokens
			body = make([]byte, rng.IntN(120))
			for j := range body {
				body[j] = alphabet[rng.IntN(len(alphabet))]
			}
		case 2: // a valid request, truncated
			s := seeds[rng.IntN(len(seeds))]
			body = s[:rng.IntN(len(s))]
		default: // a valid request with a few bytes changed
			s := seeds[rng.IntN(len(seeds))]
			body = bytes.Clone(s)
			for range 1 + rng.IntN(3) {
				body[rng.IntN(len(body))] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		ver := []string{"", "1.0", "0.3"}[i%3]
		resp := e.post(fmt.Sprintf("user%d", i%5), ver, body)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("request %d %q: HTTP %d %s", i, body, resp.StatusCode, b)
		}
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			continue // a mutation that is still a valid streaming call
		}
		var r rpcResp
		if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" || (r.Error == nil && r.Result == nil) {
			t.Fatalf("request %d %q: answer %s", i, body, b)
		}
	}
	task := get(t, e.ok("ana", "1.0", "SendMessage", msg1("What is the capital of France?", nil)), "task")
	if str(t, task, "artifacts", 0, "parts", 0, "text") != "Paris." {
		t.Fatalf("good request after garbage: %v", task)
	}
}
