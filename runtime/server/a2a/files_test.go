package a2a_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/store/memory"
)

// TestFileParts: a message's file parts (1.0 raw bytes, 0.3 file.bytes)
// are stored as artifacts of the context's session, under the user; an
// http(s) URL is accepted as a reference.
func TestFileParts(t *testing.T) {
	e := newEnv(t, memory.New())
	png := []byte{0x89, 'P', 'N', 'G', 7}
	for _, tc := range []struct {
		ver  string
		part map[string]any
		name string
	}{
		{"1.0", map[string]any{"raw": base64.StdEncoding.EncodeToString(png), "mediaType": "image/png", "filename": "chart.png"}, "input/chart.png"},
		{"", map[string]any{"kind": "file", "file": map[string]any{"bytes": base64.StdEncoding.EncodeToString(png), "mimeType": "image/png", "name": "plot.png"}}, "input/plot.png"},
	} {
		role, text := "ROLE_USER", map[string]any{"text": "What is the capital of France?"}
		if tc.ver == "" {
			role, text = "user", map[string]any{"kind": "text", "text": "What is the capital of France?"}
		}
		method := map[string]string{"1.0": "SendMessage", "": "message/send"}[tc.ver]
		task := e.ok("ana", tc.ver, method, map[string]any{"message": map[string]any{"messageId": "f-" + tc.name, "role": role,
			"parts": []any{text, tc.part}}})
		if tc.ver == "" {
			task = map[string]any{"task": task}
		}
		ctxID := str(t, task, "task", "contextId")
		a, err := artifact.New(e.st, nil).Get(context.Background(), artifact.Key{App: e.backend.App(), User: "ana", Session: ctxID, Name: tc.name}, 0)
		if err != nil || string(a.Data) != string(png) || a.Meta.MimeType != "image/png" {
			t.Fatalf("%s: artifact %+v %v", tc.name, a, err)
		}
		// Another user's session holds nothing of it.
		if _, err := artifact.New(e.st, nil).Get(context.Background(), artifact.Key{App: e.backend.App(), User: "bob", Session: ctxID, Name: tc.name}, 0); err == nil {
			t.Fatalf("%s: bob sees ana's file", tc.name)
		}
	}
	e.ok("ana", "1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": "f-url", "role": "ROLE_USER",
		"parts": []any{map[string]any{"text": "look"}, map[string]any{"url": "https://example.com/a.png", "mediaType": "image/png"}}}})
}
