package vm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// pauseHost pauses a call the first time and answers with the resume value
// (and the data it was given back) the second time.
func pauseHost(calls *[]CallRequest) Host {
	return HostFunc(func(ctx context.Context, req CallRequest) (types.Value, error) {
		*calls = append(*calls, req)
		if req.Resume == nil {
			return types.Value{}, fmt.Errorf("wrapped: %w", &Pause{Prompt: "need the weather", Data: []byte(`{"turn":1}`)})
		}
		return vs(string(req.Resume.Data) + " " + req.Resume.Value.String()), nil
	})
}

func pauseGraph(t *testing.T, effect bytecode.Effect) *Machine {
	b := newGraph(t, fld("out", strT, ptr(vs("")), 0), fld("n", intT, ptr(vi(0)), bytecode.ReduceSum))
	n := b.call("ask", "weather", "out", "q", b.constChunk(vs("x")))
	b.graph().Nodes[n].Effect = effect
	b.set("after", "n", b.constChunk(vi(1)))
	b.chain("ask", "after")
	return b.machine()
}

// TestCallPause: a host call that returns a *Pause becomes a pending
// interrupt of its node (type json, with the pause's data in the
// checkpoint); the answer runs the call again with Resume set, in memory,
// from the store and under replay.
func TestCallPause(t *testing.T) {
	for _, effect := range []bytecode.Effect{bytecode.EffectReadOnly, bytecode.EffectSideEffect} {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/durable=%v", effect, durable), func(t *testing.T) {
				m := pauseGraph(t, effect)
				store := NewMemStore()
				var calls []CallRequest
				o := Options{RunID: "r", Host: pauseHost(&calls)}
				if durable {
					o.Checkpointer = store
				}
				res := mustRun(t, m, o)
				if res.Status != StatusInterrupted || len(res.Interrupts) != 1 {
					t.Fatalf("status %s %+v", res.Status, res.Interrupts)
				}
				it := res.Interrupts[0]
				if it.ID != "g/ask" || it.Node != "ask" || it.Prompt != "need the weather" || it.Type != types.JSONType || string(it.Data) != `{"turn":1}` {
					t.Fatalf("interrupt %+v", it)
				}
				in := ResumeInput{From: res.Snapshot}
				if durable {
					in = ResumeInput{Chain: store.Chain("r")}
					recs := store.Records("r")
					got, err := DecodeInterrupts(m.prog, 0, recs[len(recs)-1].Interrupts)
					if err != nil || len(got) != 1 || string(got[0].Data) != `{"turn":1}` {
						t.Fatalf("recorded interrupts %+v %v", got, err)
					}
				}
				// Without an answer the call waits on and the host is not called.
				res2, err := m.Resume(bg, 0, in, o)
				if err != nil || res2.Status != StatusInterrupted || len(calls) != 1 || string(res2.Interrupts[0].Data) != `{"turn":1}` {
					t.Fatalf("resume without answer: %+v %v, %d calls", res2, err, len(calls))
				}
				ans, _ := types.ParseJSON([]byte(`{"call_1":"sunny"}`))
				in.Answers = map[string]types.Value{"g/ask": ans}
				res, err = m.Resume(bg, 0, in, o)
				if err != nil || res.Status != StatusCompleted {
					t.Fatalf("resume: %+v %v", res, err)
				}
				if len(calls) != 2 || calls[1].Resume == nil || string(calls[1].Resume.Data) != `{"turn":1}` {
					t.Fatalf("calls %+v", calls)
				}
				if got := stateOf(t, m, res); !strings.Contains(got["out"], "sunny") || got["n"] != "1" {
					t.Errorf("state %v", got)
				}
				if !durable {
					return
				}
				want := fmt.Sprint(stateOf(t, m, res))
				rep, err := m.Replay(bg, 0, store.Journal("r"), Options{RunID: "replay"})
				if err != nil || rep.Status != StatusCompleted || fmt.Sprint(stateOf(t, m, rep)) != want {
					t.Fatalf("replay: %+v %v", rep, err)
				}
				// A journal cut at the pause replays to it.
				cut := store.Records("r")[0].Journal
				for _, r := range store.Records("r")[1:] {
					cut = append(cut, r.Journal...)
					if r.Status == StatusInterrupted {
						break
					}
				}
				rep, err = m.Replay(bg, 0, cut, Options{})
				if err != nil || rep.Status != StatusInterrupted || rep.Interrupts[0].Prompt != "need the weather" {
					t.Errorf("cut replay: %+v %v", rep, err)
				}
			})
		}
	}
}

// TestCallPauseInMap: a map item cannot wait alone; its pause fails it.
func TestCallPauseInMap(t *testing.T) {
	b := newGraph(t, fld("out", types.ListOf(strT), ptr(types.MakeList(nil)), 0))
	b.mapNode("each", "weather", "out", b.constChunk(types.MakeList([]types.Value{vs("a")})), 1)
	b.chain("each")
	m := b.machine()
	var calls []CallRequest
	res, err := m.Run(bg, 0, Options{RunID: "r", Host: pauseHost(&calls)})
	var e *Error
	if err == nil && res != nil && res.Err != nil {
		err = res.Err
	}
	if !errors.As(err, &e) || e.Kind != KindInternal || !strings.Contains(e.Message, "inside a map") {
		t.Fatalf("map pause: %+v %v", res, err)
	}
}
