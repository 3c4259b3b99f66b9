package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// jsonQueryIn is json_query's input.
type jsonQueryIn struct {
	Value json.RawMessage `json:"value"`
	Path  string          `json:"path"`
}

// jsonQuery applies the VM's json(x, path) builtin. A path without the
// leading "$" is taken relative to the root: "a.b[0]" is "$.a.b[0]".
func jsonQuery(_ Config, _ context.Context, in jsonQueryIn) (any, error) {
	if len(in.Value) == 0 {
		in.Value = json.RawMessage("null")
	}
	v, err := types.ParseJSON(in.Value)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "json_query: value: %v", err)
	}
	path := strings.TrimSpace(in.Path)
	switch {
	case path == "" || path == ".":
		path = "$"
	case strings.HasPrefix(path, "$"):
	case strings.HasPrefix(path, "["):
		path = "$" + path
	default:
		path = "$." + strings.TrimPrefix(path, ".")
	}
	res, err := vm.Builtins()["json"]([]types.Value{v, types.MakeString(path)})
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "json_query: %v", err)
	}
	b, err := types.ToJSON(res)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "json_query: %v", err)
	}
	return json.RawMessage(b), nil
}
