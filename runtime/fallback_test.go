package runtime_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/openaitest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store/memory"
)

const fallbackSource = `workflow fb "Falls back"

model down { provider = openai, name = "down-model", fallback = [limited, up] }
model limited { provider = openai, name = "limited-model" }
model up {
  provider = openai
  name     = "up-model"
  price { input = 1, output = 2 }
}

model broken { provider = openai, name = "broken-model", fallback = [up] }

agent asker llm { model = down }
agent refused llm { model = broken }
agent direct llm { model = down, fallback = [up] }

graph main(S) input q output a {
  node ask = llm asker { prompt = q } into a
  start -> ask
  ask -> end
}

graph pinned(S) input q output a {
  node ask = llm direct { prompt = q } into a
  start -> ask
  ask -> end
}

graph bad(S) input q output a {
  node ask = llm refused { prompt = q } into a
  start -> ask
  ask -> end
}

state S { q: string, a: string = "" }
`

// TestModelFallback: with OpenAI-wire upstreams, one answering 503 and one
// 429 (after the provider's own retries), the call moves down the fallback
// list to the model that answers; the model_response names it and carries
// its price, and a replay of the run is exact. An agent's own list
// replaces its model's.
func TestModelFallback(t *testing.T) {
	down := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: http.StatusServiceUnavailable, Error: "overloaded"}
	})
	defer down.Close()
	limited := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: http.StatusTooManyRequests, Error: "slow down"}
	})
	defer limited.Close()
	broken := openaitest.New(func(openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Status: http.StatusBadRequest, Error: "bad request"}
	})
	defer broken.Close()
	up := openaitest.New(func(r openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "answer from up"} })
	defer up.Close()
	provider := func(name, id, base string) runtime.Model {
		m, err := model.NewOpenAI(model.OpenAIConfig{Name: name, Model: id, BaseURL: base, APIKey: "k", MaxRetries: 1,
			Sleep: func(context.Context, time.Duration) error { return nil }, Rand: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	prog := runtimetest.CompileSource(t, "fb.agent", fallbackSource)
	st := memory.New()
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog,
		Models: map[string]runtime.Model{
			"down": provider("down", "down-model", down.BaseURL), "limited": provider("limited", "limited-model", limited.BaseURL),
			"up": provider("up", "up-model", up.BaseURL), "broken": provider("broken", "broken-model", broken.BaseURL)},
		Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for _, tc := range []struct {
		runnable        string
		downN, limitedN int
		upN             int
	}{
		{"main", 2, 2, 1},   // down (1 + 1 retry), limited (1 + 1 retry), up
		{"pinned", 4, 2, 2}, // the agent's list: down, then up
	} {
		last := lastOfKind(t, r, runtime.Invocation{User: "u", Session: "s-" + tc.runnable, Input: "q", Runnable: tc.runnable})
		resp, fin := last[runtime.EventModelResponse], last[runtime.EventRunFinished]
		if fin == nil || fin.Status != runtime.StatusCompleted || string(fin.Output) != `"answer from up"` {
			t.Fatalf("%s: run ended %+v", tc.runnable, fin)
		}
		if resp == nil || resp.Model != "up-model" || resp.Cost == nil || *resp.Cost == 0 {
			t.Fatalf("%s: model_response %+v", tc.runnable, resp)
		}
		if n := len(down.Requests()); n != tc.downN {
			t.Errorf("%s: down got %d requests, want %d", tc.runnable, n, tc.downN)
		}
		if n := len(limited.Requests()); n != tc.limitedN {
			t.Errorf("%s: limited got %d requests, want %d", tc.runnable, n, tc.limitedN)
		}
		if n := len(up.Requests()); n != tc.upN {
			t.Errorf("%s: up got %d requests, want %d", tc.runnable, n, tc.upN)
		}
		run, err := st.GetRun(context.Background(), fin.Run)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runtime.ReplayRun(context.Background(), st, prog, nil, run)
		if err != nil || !rep.Identical {
			t.Errorf("%s: replay %+v %v", tc.runnable, rep, err)
		}
	}
	// A model_error (the request itself is refused) does not fall back.
	fin := lastOfKind(t, r, runtime.Invocation{User: "u", Session: "s-bad", Input: "q", Runnable: "bad"})[runtime.EventRunFinished]
	if fin == nil || fin.Status != runtime.StatusFailed || len(up.Requests()) != 2 || len(broken.Requests()) != 1 {
		t.Errorf("model_error: %+v, up %d, broken %d requests", fin, len(up.Requests()), len(broken.Requests()))
	}
}
