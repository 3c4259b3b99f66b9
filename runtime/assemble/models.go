package assemble

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/vm"
)

// scripted holds the scripted models and tools of one test block.
type scripted struct {
	models map[string]runtime.Model
	tools  map[string]runtime.Tool
}

// toolNames lists the scripted tools, sorted.
func (s *scripted) toolNames() []string {
	var out []string
	for name := range s.tools {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// loadFixtures reads a test block's replays, relative to root.
func loadFixtures(p *bytecode.Program, t *bytecode.Test, root string) (*scripted, error) {
	s := &scripted{models: map[string]runtime.Model{}, tools: map[string]runtime.Tool{}}
	for _, f := range t.Fixtures {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Errorf("test %q: fixture: %w", t.Name, err)
		}
		name := p.RefName(f.Target)
		switch f.Target.Kind {
		case bytecode.RefModel:
			fx, err := model.LoadFixture(f.Path, data)
			if err != nil {
				return nil, fmt.Errorf("test %q: %w", t.Name, err)
			}
			s.models[name] = model.NewScripted(runtime.ModelInfo{Name: name, Provider: "scripted", Model: "scripted:" + f.Path}, fx)
		case bytecode.RefTool:
			fx, err := model.LoadToolFixture(f.Path, data)
			if err != nil {
				return nil, fmt.Errorf("test %q: %w", t.Name, err)
			}
			tl := &p.Tools[f.Target.Index]
			s.tools[name] = model.NewScriptedTool(runtime.ToolSpec{Name: name, Description: tl.Doc}, runtime.Effect(tl.Effect), fx)
		}
	}
	return s, nil
}

// openAIModels builds an OpenAI-compatible provider per declared model.
func openAIModels(p *bytecode.Program, key string, env func(string) (string, bool), ent vm.Entropy) (map[string]runtime.Model, error) {
	out := map[string]runtime.Model{}
	for i := range p.Models {
		md := &p.Models[i]
		base, _ := env("OPENAI_BASE_URL")
		if base == "" {
			base = p.AttrString(md.Attrs, "base_url", env)
		}
		id := p.AttrString(md.Attrs, "name", env)
		if id == "" {
			id = md.Name
		}
		m, err := model.NewOpenAI(model.OpenAIConfig{
			Name: md.Name, Model: id, BaseURL: base, APIKey: key, MaxRetries: 3,
			Rand: func() float64 { return float64(ent.Uint64()>>11) / (1 << 53) },
			Now:  time.Now,
		})
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", md.Name, err)
		}
		out[md.Name] = m
	}
	return out, nil
}

// unscriptedModel stands in for a model a test does not replay; calling it
// fails with a model_error naming it.
type unscriptedModel struct{ name string }

func (m *unscriptedModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: m.name, Provider: "none", Model: "none:" + m.name}
}

func (m *unscriptedModel) Generate(context.Context, *runtime.ModelRequest, func(string)) (*runtime.ModelResponse, error) {
	return nil, vm.NewError(vm.KindModelError, "model %s has no replay in this test", m.name)
}

// stubModels adds an unscriptedModel for every declared model models lacks.
func stubModels(p *bytecode.Program, models map[string]runtime.Model) {
	for _, md := range p.Models {
		if models[md.Name] == nil {
			models[md.Name] = &unscriptedModel{name: md.Name}
		}
	}
}
