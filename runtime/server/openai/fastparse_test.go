package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// requestBodies are bodies decodeFast reads itself or leaves to
// encoding/json: the usual shapes, and each thing it must leave.
var requestBodies = []string{
	benchBody, benchStreamBody,
	`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi","name":"ann"}],"user":"u1","metadata":{"a":1}}`,
	`{"model":"m","messages":[{"role":"tool","content":"42","tool_call_id":"call_1"}],"stream":false}`,
	`{"model":"m","messages":[]}`, `{"model":"m"}`, `{}`, `[]`, `null`, `{"model":null,"messages":null}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"a\nb"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":10}`,
	`{"Model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","model":"n","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi","content":"ho"}]}`,
	`{"model":"m","stream_options":{"include_usage":true},"stream_options":{}}`,
	`{"model":"m","stream_options":{"Include_Usage":false}}`,
	`{"model":"m","stream":1}`, `{"model":"m","stream":null}`, "{\"model\":\"\xff\"}",
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[],"tool_choice":"none","n":1}`,
	`{"mode\u006c":"m"}`, `{"model":"m","messages":[null]}`, `{"model":"m","messages":[{"role":1}]}`,
}

// FuzzDecodeFast: a body decodeFast reads is one encoding/json decodes
// the same: every member equal.
func FuzzDecodeFast(f *testing.F) {
	for _, b := range requestBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast chatRequest
		if !decodeFast(body, &fast) {
			return
		}
		var slow chatRequest
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("decodeFast read %s; encoding/json: %v", body, err)
		}
		if got, want := normalized(&fast), normalized(&slow); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\ndecodeFast   %+v\nencoding/json %+v", body, got, want)
		}
	})
}

// normalized is req without what only decodeFast sets (the values Model
// and StreamOptions point to are compared by DeepEqual).
func normalized(req *chatRequest) chatRequest {
	n := *req
	if n.Model != nil {
		m := *n.Model
		n.Model = &m
	}
	if n.StreamOptions != nil {
		o := *n.StreamOptions
		n.StreamOptions = &o
	}
	n.model, n.opts, n.msgs = "", streamOptions{}, [2]chatMessage{}
	return n
}

// TestDecodeFastReads: the usual bodies are read by decodeFast, the rest
// left to encoding/json, and parse answers the same either way.
func TestDecodeFastReads(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool
	}{
		{benchBody, true}, {benchStreamBody, true}, {requestBodies[2], true}, {requestBodies[3], true},
		{`{"model":"m","messages":[]}`, true},
		{`{"model":null,"messages":null}`, false}, {requestBodies[10], false}, {requestBodies[11], false},
		{requestBodies[12], false}, {requestBodies[13], false}, {requestBodies[14], false}, {requestBodies[15], false},
		{requestBodies[16], false}, {requestBodies[17], false}, {requestBodies[20], false}, {requestBodies[22], false},
	} {
		var req chatRequest
		if got := decodeFast([]byte(tc.body), &req); got != tc.fast {
			t.Errorf("decodeFast(%s) = %v, want %v", tc.body, got, tc.fast)
		}
		var slow chatRequest
		if json.Unmarshal([]byte(tc.body), &slow) == nil && tc.fast {
			if got, want := normalized(&req), normalized(&slow); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: decodeFast %+v, encoding/json %+v", tc.body, got, want)
			}
		}
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() {
		var req chatRequest
		decodeFast([]byte(benchStreamBody), &req)
	}); n > 3 {
		t.Errorf("decodeFast of the bench body: %v allocations, want at most 3 (the request, the model's and the content's strings)", n)
	}
}
