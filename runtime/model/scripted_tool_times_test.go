package model

import (
	"context"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
)

func TestScriptedToolTimes(t *testing.T) {
	fx, err := LoadToolFixture("t.yaml", []byte(`version: 1
tool: suite
results:
  - times: 1
    output: "fail"
  - output: "pass"
`))
	if err != nil {
		t.Fatal(err)
	}
	tool := NewScriptedTool(runtime.ToolSpec{Name: "suite"}, runtime.ReadOnly, fx)
	var got []string
	for range 3 {
		out, err := tool.Call(context.Background(), runtime.ToolRequest{Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(out))
	}
	if strings.Join(got, ",") != `"fail","pass","pass"` {
		t.Errorf("got %v", got)
	}
	if _, err := LoadToolFixture("t.yaml", []byte("version: 1\nresults:\n  - times: 0\n    output: 1\n")); err == nil {
		t.Error("times: 0 accepted")
	}
}
