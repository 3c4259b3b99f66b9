package model

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// FixtureVersion is the only fixture schema version this package reads.
const FixtureVersion = 1

// Fixture is a loaded scripted model fixture (spec/fixtures.md): an ordered
// list of reply rules and an optional default. A Fixture is immutable; the
// `times` counts live in each model made from it by NewScripted.
type Fixture struct {
	// Name is the name the fixture was loaded under (usually its path); it
	// prefixes every load error.
	Name string
	// Model is the `model:` key, the declared model the fixture scripts, or
	// "". Whoever binds the fixture to a declaration checks it.
	Model string

	rules []*rule
	def   *reply // nil: an unmatched call fails
}

// rule is one entry of `replies`.
type rule struct {
	num  int // 1-based position in `replies`, for messages
	line int

	node  *string
	index *int
	turn  *int
	input *regexp.Regexp
	times int // 0: unlimited

	reply reply
}

// reply is what a matched call returns.
type reply struct {
	text      string
	toolCalls []scriptedCall
	chunks    int
	usage     *runtime.Usage
	err       *scriptedError // set: fail the call instead
}

type scriptedCall struct {
	id   string // "" → derived from the call site
	name string
	args json.RawMessage
}

type scriptedError struct {
	kind    vm.ErrorKind
	message string
}

// LoadFixture parses a scripted model fixture. Decoding is strict: unknown
// keys, wrong types, a missing or other `version`, bad regexps and invalid
// values are errors (*FixtureError) naming the line and the rule.
func LoadFixture(name string, data []byte) (*Fixture, error) {
	r := &yamlReader{file: name}
	m, model, err := r.head(data, "model", "replies", "default")
	if err != nil {
		return nil, err
	}
	fx := &Fixture{Name: name, Model: model}
	if n := m.get("replies"); n != nil {
		fx.rules, err = sequenceOf(r, n, "replies", func(item *yaml.Node, i int) (*rule, error) { return r.rule(item, i+1) })
		if err != nil {
			return nil, err
		}
	}
	if n := m.get("default"); n != nil {
		dm, err := r.mapping(n, "default", replyKeys...)
		if err != nil {
			return nil, err
		}
		fx.def = &reply{}
		if err := r.reply(dm, "default", fx.def); err != nil {
			return nil, err
		}
	}
	if len(fx.rules) == 0 && fx.def == nil {
		return nil, r.errorf(m.node, "fixture has neither replies nor a default")
	}
	return fx, nil
}

// head reads what both kinds of fixture start with: the document, a mapping
// of version, label and more keys, the version and the optional string
// label (a model fixture's model, a tool fixture's tool).
func (r *yamlReader) head(data []byte, label string, more ...string) (m *mapping, labelValue string, err error) {
	root, err := r.document(data)
	if err != nil {
		return nil, "", err
	}
	if m, err = r.mapping(root, "fixture", append([]string{"version", label}, more...)...); err != nil {
		return nil, "", err
	}
	if err := r.version(m); err != nil {
		return nil, "", err
	}
	if n := m.get(label); n != nil {
		if labelValue, err = r.str(n, label); err != nil {
			return nil, "", err
		}
	}
	return m, labelValue, nil
}

// version checks `version: 1`, which every fixture must start with.
func (r *yamlReader) version(m *mapping) error {
	n := m.get("version")
	if n == nil {
		return r.errorf(m.node, "missing version: this agentc reads fixtures with version: %d", FixtureVersion)
	}
	v, err := r.integer(n, "version", math.MinInt, math.MaxInt)
	if err != nil {
		return err
	}
	if v != FixtureVersion {
		return r.errorf(n, "unsupported fixture version %d: this agentc reads version %d", v, FixtureVersion)
	}
	return nil
}

var replyKeys = []string{"text", "tool_calls", "chunks", "usage", "error"}

func (r *yamlReader) rule(n *yaml.Node, num int) (*rule, error) {
	path := fmt.Sprintf("replies[%d]", num-1)
	m, err := r.mapping(n, path, append([]string{"match", "times"}, replyKeys...)...)
	if err != nil {
		return nil, err
	}
	ru := &rule{num: num, line: m.node.Line}
	if mn := m.get("match"); mn != nil {
		if err := r.match(mn, path+".match", ru); err != nil {
			return nil, err
		}
	}
	if tn := m.get("times"); tn != nil {
		if ru.times, err = r.integer(tn, path+".times", 1, math.MaxInt); err != nil {
			return nil, err
		}
	}
	if err := r.reply(m, path, &ru.reply); err != nil {
		return nil, err
	}
	return ru, nil
}

func (r *yamlReader) match(n *yaml.Node, path string, ru *rule) error {
	m, err := r.mapping(n, path, "node", "index", "turn", "input")
	if err != nil {
		return err
	}
	if v := m.get("node"); v != nil {
		s, err := r.str(v, path+".node")
		if err != nil {
			return err
		}
		ru.node = &s
	}
	if v := m.get("index"); v != nil {
		i, err := r.integer(v, path+".index", 0, math.MaxInt)
		if err != nil {
			return err
		}
		ru.index = &i
	}
	if v := m.get("turn"); v != nil {
		t, err := r.integer(v, path+".turn", 1, math.MaxInt)
		if err != nil {
			return err
		}
		ru.turn = &t
	}
	if v := m.get("input"); v != nil {
		s, err := r.str(v, path+".input")
		if err != nil {
			return err
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return r.errorf(v, "%s.input: bad regexp: %v", path, err)
		}
		ru.input = re
	}
	return nil
}

// reply reads the reply keys of m (a rule or the default) into out. When
// `error` is set the call fails and the other keys are not used.
func (r *yamlReader) reply(m *mapping, path string, out *reply) error {
	var err error
	if n := m.get("text"); n != nil {
		if out.text, err = r.str(n, path+".text"); err != nil {
			return err
		}
	}
	if n := m.get("tool_calls"); n != nil {
		out.toolCalls, err = sequenceOf(r, n, path+".tool_calls", func(item *yaml.Node, i int) (scriptedCall, error) {
			return r.toolCall(item, fmt.Sprintf("%s.tool_calls[%d]", path, i))
		})
		if err != nil {
			return err
		}
	}
	out.chunks = 1
	if n := m.get("chunks"); n != nil {
		if out.chunks, err = r.integer(n, path+".chunks", 1, math.MaxInt); err != nil {
			return err
		}
	}
	if n := m.get("usage"); n != nil {
		if out.usage, err = r.usage(n, path+".usage"); err != nil {
			return err
		}
	}
	if n := m.get("error"); n != nil {
		if out.err, err = r.errorValue(n, path+".error"); err != nil {
			return err
		}
	}
	return nil
}

func (r *yamlReader) toolCall(n *yaml.Node, path string) (scriptedCall, error) {
	m, err := r.mapping(n, path, "id", "name", "args")
	if err != nil {
		return scriptedCall{}, err
	}
	var c scriptedCall
	if v := m.get("id"); v != nil {
		if c.id, err = r.str(v, path+".id"); err != nil {
			return c, err
		}
	}
	v := m.get("name")
	if v == nil {
		return c, r.errorf(m.node, "%s: missing name", path)
	}
	if c.name, err = r.str(v, path+".name"); err != nil {
		return c, err
	}
	c.args = json.RawMessage("{}")
	if v := m.get("args"); v != nil {
		if rv := r.resolve(v); rv == nil || rv.Kind != yaml.MappingNode {
			return c, r.errorf(v, "%s.args: want a mapping, got %s", path, describe(rv))
		}
		if c.args, err = r.json(v, path+".args"); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (r *yamlReader) usage(n *yaml.Node, path string) (*runtime.Usage, error) {
	m, err := r.mapping(n, path, "prompt_tokens", "completion_tokens", "cached_tokens")
	if err != nil {
		return nil, err
	}
	u := &runtime.Usage{}
	if v := m.get("prompt_tokens"); v != nil {
		if u.PromptTokens, err = r.integer(v, path+".prompt_tokens", 0, math.MaxInt32); err != nil {
			return nil, err
		}
	}
	if v := m.get("completion_tokens"); v != nil {
		if u.CompletionTokens, err = r.integer(v, path+".completion_tokens", 0, math.MaxInt32); err != nil {
			return nil, err
		}
	}
	if v := m.get("cached_tokens"); v != nil {
		if u.CachedTokens, err = r.integer(v, path+".cached_tokens", 0, u.PromptTokens); err != nil {
			return nil, err
		}
	}
	return u, nil
}
