package runtime

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// TestDecisionAnswers: the one spelling of a decision every front end
// takes, the older one still read, and what is refused.
func TestDecisionAnswers(t *testing.T) {
	one := []DecisionInfo{{ID: "g/pay", Node: "pay"}}
	two := []DecisionInfo{{ID: "g/pay", Node: "pay"}, {ID: "g/ship", Node: "ship"}}
	for _, tc := range []struct {
		name    string
		pending []DecisionInfo
		answer  string
		want    map[string]DecisionRequest // nil: refused
	}{
		{"done with a result", one, `{"decision": "done", "result": {"ok": true}}`, map[string]DecisionRequest{"g/pay": {Action: "result", Value: json.RawMessage(`{"ok": true}`)}}},
		{"retry", one, `{"decision": "retry"}`, map[string]DecisionRequest{"g/pay": {Action: "rerun"}}},
		{"a bare word", one, `"fail"`, map[string]DecisionRequest{"g/pay": {Action: "fail"}}},
		{"the older spelling", one, `{"action": "result", "value": 3}`, map[string]DecisionRequest{"g/pay": {Action: "result", Value: json.RawMessage(`3`)}}},
		{"keyed by id", two, `{"g/pay": {"decision": "retry"}, "g/ship": {"decision": "fail"}}`, map[string]DecisionRequest{"g/pay": {Action: "rerun"}, "g/ship": {Action: "fail"}}},
		{"one, keyed by id", one, `{"g/pay": {"decision": "retry"}}`, map[string]DecisionRequest{"g/pay": {Action: "rerun"}}},
		{"not a decision", one, `{"decision": "maybe"}`, nil},
		{"done without a result", one, `{"decision": "done"}`, nil},
		{"a result without done", one, `{"decision": "retry", "result": 1}`, nil},
		{"several, not keyed", two, `{"decision": "retry"}`, nil},
		{"an id not pending", two, `{"g/nope": {"decision": "retry"}}`, nil},
		{"not JSON of an answer", one, `[1, 2]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecisionAnswers(tc.pending, json.RawMessage(tc.answer))
			if tc.want == nil {
				if err == nil || !errors.Is(err, ErrBadDecision) {
					t.Fatalf("DecisionAnswers = %v, %v; want ErrBadDecision", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecisionAnswers = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	s := DecisionSchema(map[string]any{"type": "string"})
	if r := s["properties"].(map[string]any)["result"].(map[string]any); r["type"] != "string" {
		t.Errorf("the result's schema is not the output's: %v", r)
	}
}

// FuzzParseDecisionAnswer: any bytes give a request or ErrBadDecision,
// never a panic; a request is one of the three actions.
func FuzzParseDecisionAnswer(f *testing.F) {
	for _, s := range []string{`{"decision":"done","result":1}`, `"retry"`, `{"action":"rerun"}`, `{"g/p":{"decision":"fail"}}`, `null`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDecisionAnswer(b)
		if err != nil {
			if !errors.Is(err, ErrBadDecision) {
				t.Fatalf("error %v is not ErrBadDecision", err)
			}
			return
		}
		switch d.Action {
		case "rerun", "fail":
		case "result":
			if !json.Valid(d.Value) {
				t.Fatalf("a result that is not JSON: %q", d.Value)
			}
		default:
			t.Fatalf("action %q", d.Action)
		}
	})
}
