package vm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// sizedGraph maps a tool over the input xs (max 3) into out (max 3,
// append, default [0]), then sets big (max 2) to a three-element list when
// setBig. With catch, the map's failures go to a node that keeps the
// error and ends the run.
func sizedGraph(t *testing.T, catch, setBig bool) *Machine {
	b := newGraph(t,
		fld("xs", listInt, ptr(vl()), 0),
		fld("out", listInt, ptr(vl(vi(0))), bytecode.ReduceAppend),
		fld("big", listInt, ptr(vl()), 0),
		fld(ErrorField, errFieldT, nil, 0), fld("failure", errFieldT, nil, 0))
	b.graph().Input = int32(b.field("xs"))
	for i, max := range map[string]uint32{"xs": 3, "out": 3, "big": 2} {
		b.p.States[0].Fields[b.field(i)].MaxLen = max
	}
	n := b.mapNode("sq", "sq", "out", b.loadChunk("xs"), 2)
	if setBig {
		b.set("grow", "big", b.constChunk(vl(vi(1), vi(2), vi(3))))
		b.chain("sq", "grow")
	} else {
		b.chain("sq")
	}
	if catch {
		fb := b.set("caught", "failure", b.loadChunk(ErrorField))
		b.graph().Nodes[n].Catch = int32(fb)
		b.edge("caught", "end")
	}
	return b.machine()
}

func sqHost(m *Machine) *toolHost {
	return &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"sq": func(ctx context.Context, req CallRequest) (types.Value, error) {
			x := arg(req, "x").Int()
			return vi(x * x), nil
		}}}
}

// A list size holds on a run's input and on every write: a longer input is
// refused before the run starts, a node whose writes would pass a size
// fails with eval before any of them is applied, and its catch route
// takes the failure.
func TestListSizes(t *testing.T) {
	m := sizedGraph(t, false, false)
	host := sqHost(m)

	// Within the sizes: out grows from [0] to [0, 1, 4].
	res := mustRun(t, m, Options{Host: host, Input: vl(vi(1), vi(2))})
	if got := fieldOf(t, m, res, "out").String(); got != "[0, 1, 4]" {
		t.Errorf("out %s", got)
	}

	// An input, or a named value, longer than its field's size.
	for _, o := range []Options{{Host: host, Input: vl(vi(1), vi(2), vi(3), vi(4))},
		{Host: host, Fields: []NamedValue{{Name: "xs", Value: vl(vi(1), vi(2), vi(3), vi(4))}}}} {
		res, err := m.Run(bg, 0, o)
		var se *bytecode.SizeError
		if res != nil || !errors.As(err, &se) || se.Field != "xs" || !strings.Contains(err.Error(), "field xs: a list of 4 elements, past its max of 3") {
			t.Errorf("long input: %v, %v", res, err)
		}
	}

	// Three items appended to [0] would make four: the node fails, and
	// nothing of it is written.
	res, err := m.Run(bg, 0, Options{Host: host, Input: vl(vi(1), vi(2), vi(3))})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindEval || e.Node != "g/sq" || e.Message != "field out: a list of 4 elements, past its max of 3" || res.Status != StatusFailed {
		t.Fatalf("append past the size: %v, %v", res, err)
	}
	if got := fieldOf(t, m, res, "out").String(); got != "[0]" {
		t.Errorf("out after the failure %s", got)
	}

	// With a catch route, the route takes it.
	m = sizedGraph(t, true, false)
	host.m = m
	res = mustRun(t, m, Options{Host: host, Input: vl(vi(1), vi(2), vi(3))})
	if got := stateOf(t, m, res); got["out"] != "[0]" || !strings.Contains(got["failure"], `kind: "eval", message: "field out: a list of 4 elements, past its max of 3", node: "g/sq"`) {
		t.Errorf("caught: %v", got)
	}

	// A replacing write past the size fails its node too.
	m = sizedGraph(t, false, true)
	host.m = m
	res, err = m.Run(bg, 0, Options{Host: host, Input: vl(vi(1))})
	if !errors.As(err, &e) || e.Kind != KindEval || e.Node != "g/grow" || e.Message != "field big: a list of 3 elements, past its max of 2" {
		t.Fatalf("set past the size: %v, %v", res, err)
	}
	if got := stateOf(t, m, res); got["out"] != "[0, 1]" || got["big"] != "[]" {
		t.Errorf("state after the failed set: %v", got)
	}
}
