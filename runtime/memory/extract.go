package memory

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// DefaultInstruction is the extractor's instruction unless the policy
// replaces it.
const DefaultInstruction = `You maintain long-term memory about a user. Read the conversation excerpt and
list the stable facts it reveals about the user: preferences, environment, role,
projects, decisions and constraints that will still hold in later conversations.
Do not record one-off requests, small talk, secrets or anything about the
assistant. Do not repeat facts listed as already known. Reply with JSON only:
{"facts": [{"memory": "The user prefers metric units.", "topics": ["preferences"]}]}
Reply {"facts": []} when there is nothing to remember.`

// Extraction limits.
const (
	extractPage     = 200  // events read per model call
	maxMessageBytes = 2000 // of one message in the transcript
	maxFacts        = 20   // per reply
	maxKnown        = 50   // known memories shown to the model
)

// ErrBadReply is wrapped by the error of a reply that is not the expected
// JSON; the cursor does not advance.
var ErrBadReply = errors.New("memory: extractor reply is not {\"facts\": [...]}")

// ExtractorConfig configures the auto extractor.
type ExtractorConfig struct {
	Service *Service
	// Ledger reads session events (store.Sessions).
	Ledger store.Sessions
	// Docs holds the cursors (usually the same store as the service's).
	Docs  store.Docs
	Model runtime.Model
	// Instruction replaces DefaultInstruction when set; MaxMemories is the
	// policy's max_memories (≤ 0: DefaultMaxMemories).
	Instruction string
	MaxMemories int
	Logger      *slog.Logger // nil: discard
}

// Extractor is auto memory: after a run it reads the session's events after
// its cursor, asks the model for stable user facts as JSON, stores them and
// advances the cursor. A reply that does not validate is logged and
// returned as an error, and the cursor stays, so the next run retries the
// same events. It implements runtime.PostRunHook.
type Extractor struct {
	cfg ExtractorConfig
	log *slog.Logger

	locks store.KeyedMutex[store.SessionKey] // one extraction per session at a time
}

// NewExtractor returns the extractor.
func NewExtractor(cfg ExtractorConfig) (*Extractor, error) {
	if cfg.Service == nil || cfg.Ledger == nil || cfg.Docs == nil || cfg.Model == nil {
		return nil, errors.New("memory: extractor needs a service, a ledger, docs and a model")
	}
	if cfg.Instruction == "" {
		cfg.Instruction = DefaultInstruction
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Extractor{cfg: cfg, log: log}, nil
}

func cursorKey(key store.SessionKey) string { return store.DocPath(key.App, key.User, key.Session) }

// Cursor returns the last sequence of key's ledger that was extracted.
func (x *Extractor) Cursor(ctx context.Context, key store.SessionKey) (uint64, error) {
	b, err := x.cfg.Docs.GetDoc(ctx, CollCursors, cursorKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memory: read cursor of %s: %w", key, err)
	}
	v, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) {
		return 0, fmt.Errorf("memory: cursor of %s: %w", key, store.ErrCorrupt)
	}
	return v, nil
}

func (x *Extractor) setCursor(ctx context.Context, key store.SessionKey, seq uint64) error {
	err := x.cfg.Docs.ApplyDocs(ctx, store.DocOp{Coll: CollCursors, Key: cursorKey(key), Value: binary.AppendUvarint(nil, seq)})
	if err != nil {
		return fmt.Errorf("memory: advance cursor of %s to %d: %w", key, seq, err)
	}
	return nil
}

// AfterRun implements runtime.PostRunHook.
func (x *Extractor) AfterRun(ctx context.Context, job runtime.PostRun) error {
	key := job.Session
	unlock := x.locks.Lock(key)
	defer unlock()
	cur, err := x.Cursor(ctx, key)
	if err != nil {
		return err
	}
	u := User{App: key.App, User: key.User}
	for {
		entries, err := x.cfg.Ledger.ListEvents(ctx, key, cur, extractPage)
		if err != nil {
			return fmt.Errorf("memory: read events of %s: %w", key, err)
		}
		if len(entries) == 0 {
			return nil
		}
		last := entries[len(entries)-1].Seq
		transcript := transcriptOf(entries)
		if transcript != "" {
			facts, err := x.extract(ctx, u, key, transcript)
			if err != nil {
				x.log.Warn("memory: extraction failed; cursor kept", "session", key.String(), "cursor", cur, "err", err)
				return err
			}
			for _, f := range facts {
				if _, _, err := x.cfg.Service.Add(ctx, u, f.Memory, f.Topics, x.cfg.MaxMemories); err != nil {
					return err
				}
			}
		}
		if err := x.setCursor(ctx, key, last); err != nil {
			return err
		}
		cur = last
		if len(entries) < extractPage {
			return nil
		}
	}
}

// transcriptOf renders the user inputs and model replies of entries, one
// message a line-block, each at most maxMessageBytes.
func transcriptOf(entries []store.Entry) string {
	var b strings.Builder
	for _, en := range entries {
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			continue
		}
		var who string
		switch e.Kind {
		case runtime.EventInput:
			who = "user"
		case runtime.EventModelResponse:
			who = "assistant"
		default:
			continue
		}
		text := strings.TrimSpace(e.Text)
		if text == "" {
			continue
		}
		if len(text) > maxMessageBytes {
			text = strings.ToValidUTF8(text[:maxMessageBytes], "") + "…"
		}
		fmt.Fprintf(&b, "%s: %s\n", who, text)
	}
	return b.String()
}

// Fact is one extracted fact.
type Fact struct {
	Memory string   `json:"memory"`
	Topics []string `json:"topics,omitempty"`
}

var factsSchema = map[string]any{
	"type": "object", "required": []string{"facts"}, "additionalProperties": false,
	"properties": map[string]any{"facts": map[string]any{"type": "array", "items": map[string]any{
		// Strict structured output needs every property required.
		"type": "object", "required": []string{"memory", "topics"}, "additionalProperties": false,
		"properties": map[string]any{
			"memory": map[string]any{"type": "string"},
			"topics": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		}}}},
}

func (x *Extractor) extract(ctx context.Context, u User, key store.SessionKey, transcript string) ([]Fact, error) {
	known, err := x.cfg.Service.List(ctx, u)
	if err != nil {
		return nil, err
	}
	var in strings.Builder
	if len(known) > 0 {
		in.WriteString("Already known:\n")
		for _, m := range known[max(0, len(known)-maxKnown):] {
			fmt.Fprintf(&in, "- %s\n", m.Text)
		}
		in.WriteString("\n")
	}
	in.WriteString("Conversation excerpt:\n")
	in.WriteString(transcript)
	resp, err := x.cfg.Model.Generate(ctx, &runtime.ModelRequest{
		Site: runtime.CallSite{Node: "memory/extract", MapIndex: -1, Turn: 1},
		Messages: []runtime.Message{
			{Role: runtime.RoleSystem, Content: x.cfg.Instruction},
			{Role: runtime.RoleUser, Content: in.String()},
		},
		ResponseSchema: factsSchema,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("memory: extractor model for %s: %w", key, err)
	}
	return ParseFacts(resp.Text)
}

// ParseFacts validates an extractor reply: a JSON object {"facts": [...]}
// (optionally inside a ``` fence) whose items are strings or {"memory",
// "topics"} objects with non-empty text of at most MaxMemoryBytes, at most
// 20 of them.
func ParseFacts(text string) ([]Fact, error) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimPrefix(s, "json")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	var reply struct {
		Facts *[]json.RawMessage `json:"facts"`
	}
	if err := json.Unmarshal([]byte(s), &reply); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadReply, err)
	}
	if reply.Facts == nil {
		return nil, fmt.Errorf("%w: no facts member", ErrBadReply)
	}
	if len(*reply.Facts) > maxFacts {
		return nil, fmt.Errorf("%w: %d facts, at most %d", ErrBadReply, len(*reply.Facts), maxFacts)
	}
	out := make([]Fact, 0, len(*reply.Facts))
	for i, raw := range *reply.Facts {
		var f Fact
		var str string
		if err := json.Unmarshal(raw, &str); err == nil {
			f.Memory = str
		} else if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("%w: fact %d: %v", ErrBadReply, i, err)
		}
		f.Memory = normalize(f.Memory)
		if f.Memory == "" || len(f.Memory) > MaxMemoryBytes {
			return nil, fmt.Errorf("%w: fact %d is empty or longer than %d bytes", ErrBadReply, i, MaxMemoryBytes)
		}
		out = append(out, f)
	}
	return out, nil
}
