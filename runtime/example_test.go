package runtime

import (
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

// TestSchemaExample: the example of each kind of resume type is valid JSON
// of that type, by the schema types.JSONSchema writes.
func TestSchemaExample(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema map[string]any
		want   string
	}{
		{"bool", map[string]any{"type": "boolean"}, `true`},
		{"string", map[string]any{"type": "string"}, `"text"`},
		{"enum", map[string]any{"type": "string", "enum": []any{"low", "high"}}, `"low"`},
		{"optional int", map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"type": "integer"}}}, `0`},
		{"type list", map[string]any{"type": []any{"null", "number"}}, `0`},
		{"list", map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, `["text"]`},
		{"record", map[string]any{"type": "object", "required": []any{"approved"},
			"properties": map[string]any{"approved": map[string]any{"type": "boolean"}, "note": map[string]any{"type": "string"}}}, `{"approved":true}`},
		{"unreadable", nil, `null`},
	} {
		if got := string(SchemaExample(tc.schema)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// The schemas the runtime really writes: each example converts to its type.
	level, _ := types.NewEnum("Level", []string{"low", "high"})
	rec, err := types.NewRecord("Decision", []types.Field{
		{Name: "approved", Type: types.BoolType}, {Name: "note", Type: types.OptionalOf(types.StringType)},
		{Name: "level", Type: level}, {Name: "tags", Type: types.ListOf(types.StringType)},
		{Name: "score", Type: types.FloatType}, {Name: "n", Type: types.IntType}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range []*types.Type{types.BoolType, types.StringType, level, rec, types.ListOf(rec), types.OptionalOf(types.IntType)} {
		ex := SchemaExample(types.JSONSchema(ty))
		if _, err := types.FromJSON(ty, ex); err != nil {
			t.Errorf("example %s of %v does not fit: %v", ex, types.JSONSchema(ty), err)
		}
	}
}
