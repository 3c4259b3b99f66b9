package main

// Tenancy of agentc serve's /mcp (issue 15 acceptance): the real binary,
// two users, a served workflow whose MCP tool returns an image (saved as
// an artifact of the caller's session).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const tenancySource = `workflow studio "Draws, then asks before publishing"

tool draw "Draws a picture" {
  input  { subject: string }
  run    = mcp { url = env("DRAW_MCP_URL"), tool = "draw" }
  effect = read_only
}

state S {
  q       : string
  drawing : string = ""
  ok      : bool = false
}

graph publish(S) input q output drawing {
  node pic = tool draw { subject = q } into drawing
  node ask = interrupt "Publish it?" returns bool into ok
  start -> pic
  pic -> ask
  ask -> end
}
`

// bearer adds a token to every request.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPServeTenancy: alice's run and the artifact her call saved are
// invisible to bob on the same server: resuming her run by its id is
// not_found (as for a run that does not exist), his own call of the same
// tool references only his own artifact, and the server lists him no
// resources; after the server stops, the store holds each artifact under
// its own user only. (A session id used by another user is refused 403:
// runtime/server/mcp TestSessionBoundToUser.)
func TestMCPServeTenancy(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "draw", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "draw"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct {
		Subject string `json:"subject"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a drawing of " + in.Subject},
			&sdk.ImageContent{Data: []byte("PNG of " + in.Subject), MIMEType: "image/png"}}}, nil, nil
	})
	draw := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer draw.Close()

	root := projectWith(t, "studio.agent", tenancySource)
	env := cleanEnv("DRAW_MCP_URL="+draw.URL, "AGENTC_ALLOW_HOSTS="+draw.Listener.Addr().String(), "AGENTC_DATA="+filepath.Join(root, "data"))
	serve, addr, banner := startServeArgs(t, root, env, "studio.agent", "--token", "tok-alice=alice", "--token", "tok-bob=bob")
	stopped := false
	stopServe := func() {
		if !stopped {
			stopped = true
			_ = serve.Process.Signal(os.Interrupt)
			_ = serve.Wait()
		}
	}
	defer stopServe()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(tok string) *sdk.ClientSession {
		t.Helper()
		c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	call := func(cs *sdk.ClientSession, name string, args any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String(), sc
	}

	alice, bob := connect("tok-alice"), connect("tok-bob")
	_, sc := call(alice, "publish", map[string]any{"input": "cats"})
	run, _ := sc["run"].(string)
	if sc["status"] != "interrupted" || run == "" {
		t.Fatalf("alice's run: %v", sc)
	}
	// Bob cannot resume (or learn anything of) alice's run.
	text, sc := call(bob, "agentc_resume", map[string]any{"run": run, "value": true})
	_, sc2 := call(bob, "agentc_resume", map[string]any{"run": "run_01NOSUCHRUN0000000000000000", "value": true})
	if sc["error"] == nil || strings.Contains(text, "cats") || sc["error"].(map[string]any)["code"] != "not_found" ||
		sc2["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("bob resuming alice's run: %q %v (a missing run: %v)", text, sc, sc2)
	}
	// Bob's own call sees his own artifact only.
	text, sc = call(bob, "publish", map[string]any{"input": "dogs"})
	if sc["status"] != "interrupted" || strings.Contains(text, "cats") {
		t.Fatalf("bob's run: %q %v", text, sc)
	}
	if res, err := bob.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		t.Errorf("bob lists resources: %+v", res.Resources)
	}
	// Alice finishes her own run.
	text, _ = call(alice, "agentc_resume", map[string]any{"run": run, "value": true})
	if !strings.Contains(text, "a drawing of cats") || !strings.Contains(text, "[artifact mcp/draw/") {
		t.Fatalf("alice's resume: %q", text)
	}
	stopServe()
	if t.Failed() {
		t.Log(banner())
	}

	for _, tc := range []struct{ user, has, hasNot string }{{"alice", "PNG of cats", "dogs"}, {"bob", "PNG of dogs", "cats"}} {
		r := runAgentc(t, root, env, "artifacts", "list", "--app", "studio", "--user", tc.user)
		if r.code != 0 || strings.Count(r.stdout, "mcp/draw/") != 1 {
			t.Fatalf("artifacts of %s: exit %d\n%s%s", tc.user, r.code, r.stdout, r.stderr)
		}
		f := strings.Fields(r.stdout)
		r = runAgentc(t, root, env, "artifacts", "get", f[1], "--app", "studio", "--user", tc.user, "--session", f[0])
		if r.code != 0 || !strings.Contains(r.stdout, tc.has) || strings.Contains(r.stdout, tc.hasNot) {
			t.Errorf("artifact of %s: exit %d %q\n%s", tc.user, r.code, r.stdout, r.stderr)
		}
	}
}
