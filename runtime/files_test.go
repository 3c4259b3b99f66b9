package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store/memory"
)

const filesSource = `workflow files "Looks at pictures"

model eyes { provider = openai, name = "vision-model", image_input = true }
model blind { provider = openai, name = "text-model" }

agent looker llm { model = eyes }
agent reader llm { model = blind }

state S { q: string, a: string = "", b: string = "" }

graph main(S) input q output a {
  node look = llm looker { prompt = q } into a
  node read = llm reader { prompt = q } into b
  start -> look
  look -> read
  read -> end
}
`

// recordingModel answers "ok" and keeps its requests.
type recordingModel struct {
	name string
	mu   sync.Mutex
	reqs []runtime.ModelRequest
}

func (m *recordingModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: m.name, Model: "test:" + m.name}
}
func (m *recordingModel) Generate(_ context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *req
	c.Messages = slices.Clone(req.Messages)
	m.reqs = append(m.reqs, c)
	return &runtime.ModelResponse{Text: "ok", FinishReason: "stop"}, nil
}

// TestInputFiles: a request's files are stored as artifacts of the
// session and recorded in the input event; its images reach the llm call
// whose model takes images, after the prompt's text, and not the other.
func TestInputFiles(t *testing.T) {
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "files.agent", filesSource)
	st := memory.New()
	eyes, blind := &recordingModel{name: "eyes"}, &recordingModel{name: "blind"}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"eyes": eyes, "blind": blind},
		Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	png := []byte{0x89, 'P', 'N', 'G', 1, 2, 3}
	last := lastOfKind(t, r, runtime.Invocation{User: "u", Session: "s", Input: "what is this?", Runnable: "main", Files: []runtime.InputFile{
		{Name: "../cat.png", MediaType: "image/png", Data: png},
		{Name: "notes.txt", MediaType: "text/plain", Data: []byte("a note")},
		{MediaType: "image/jpeg", URL: "https://example.com/dog.jpg"},
	}})
	in, fin := last[runtime.EventInput], last[runtime.EventRunFinished]
	if fin == nil || fin.Status != runtime.StatusCompleted {
		t.Fatalf("run ended %+v", fin)
	}
	if in == nil || len(in.Files) != 3 || in.Files[0].Artifact != "input/cat.png" || in.Files[0].Revision != 1 || in.Files[0].Size != len(png) ||
		in.Files[1].Artifact != "input/notes.txt" || in.Files[2].URL != "https://example.com/dog.jpg" || in.Files[2].Artifact != "" {
		t.Fatalf("input event files %+v", in)
	}
	a, err := artifact.New(st, nil).Get(ctx, artifact.Key{App: prog.Workflow, User: "u", Session: "s", Name: "input/cat.png"}, 0)
	if err != nil || string(a.Data) != string(png) || a.Meta.MimeType != "image/png" || a.Meta.Run != fin.Run {
		t.Fatalf("artifact %+v %v", a, err)
	}
	msg := eyes.reqs[0].Messages[len(eyes.reqs[0].Messages)-1]
	if msg.Content != "what is this?" || len(msg.Parts) != 3 || msg.Parts[0].Text != "what is this?" ||
		msg.Parts[1].Type != "image" || string(msg.Parts[1].Data) != string(png) || msg.Parts[2].URL != "https://example.com/dog.jpg" {
		t.Fatalf("the image model's prompt %+v", msg)
	}
	if m := blind.reqs[0].Messages[len(blind.reqs[0].Messages)-1]; len(m.Parts) != 0 {
		t.Fatalf("the text model got parts %+v", m.Parts)
	}
	// A file without bytes or an http(s) URL refuses the invocation.
	if _, err := r.Run(ctx, runtime.Invocation{User: "u", Session: "s2", Input: "x", Files: []runtime.InputFile{{URL: "file:///etc/passwd"}}}); err == nil {
		t.Fatal("a file: URL was accepted")
	}
}
