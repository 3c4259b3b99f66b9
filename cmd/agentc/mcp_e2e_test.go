package main

// agentc mcp stdio end to end: the real binary under the MCP Go SDK's
// client over a command transport.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpSource = `workflow hello "Greets, asking first when told to"

state S {
  name     : string
  greeting : string = ""
  ok       : bool = false
}

graph greet(S) input name output greeting {
  node hi  = set { greeting = "hello {name}" }
  node ask = interrupt "Greet loudly?" returns bool into ok
  node up  = set { greeting = "HELLO {name}" }
  start -> hi
  hi    -> ask when name == "ask"
  hi    -> end otherwise
  ask   -> up when ok
  ask   -> end otherwise
  up    -> end
}
`

func TestMCPStdioE2E(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.agent"), []byte(mcpSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agentcBin(t), "mcp", "stdio", "hello.agent", "--data", filepath.Join(dir, "data"), "--user", "ada")
	cmd.Dir, cmd.Env = dir, cleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"agentc_resume", "greet"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	callText := func(name string, args any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("call %s: %v %+v", name, err, res)
		}
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		return res.Content[0].(*sdk.TextContent).Text, sc
	}
	if got, _ := callText("greet", map[string]any{"input": "grace"}); got != "hello grace" {
		t.Fatalf("greet: %q", got)
	}
	got, sc := callText("greet", map[string]any{"input": "ask"})
	run, _ := sc["run"].(string)
	if sc["status"] != "interrupted" || !strings.Contains(got, "agentc_resume") {
		t.Fatalf("greet ask: %q %v", got, sc)
	}
	if got, _ := callText("agentc_resume", map[string]any{"run": run, "value": true}); got != "HELLO ask" {
		t.Fatalf("resume: %q", got)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "as user ada") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	// The runs are in the store, as user ada's.
	r := runAgentc(t, dir, cleanEnv(), "sessions", "list", "--app", "hello", "--user", "ada", "--data", filepath.Join(dir, "data"))
	if r.code != 0 || strings.Count(r.stdout, "mcp_") < 2 {
		t.Fatalf("sessions list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
