package a2a

// The agent card at /.well-known/agent-card.json: the 1.0 card for a
// request with A2A-Version 1.x, else the 0.3 card with the 1.0
// supportedInterfaces embedded (a client of either version reads it).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// CardPath is where the agent card is served (A2A 0.3 and 1.0).
const CardPath = "/.well-known/agent-card.json"

// OptionsFromProgram reads the serve block's a2a block (spec/language.md
// §13.1): path, name, description, version, url and skills. Attributes
// given with env() are resolved with lookup (os.LookupEnv in the CLI).
// Defaults (New applies them): the workflow's name and doc string,
// version "1.0.0", path "/a2a". A program without a serve block, or whose
// serve block has no a2a block, gives the defaults.
func OptionsFromProgram(p *bytecode.Program, lookup func(string) (string, bool)) (Options, error) {
	o := Options{Name: p.Workflow, Description: p.Doc}
	if p.Serve == nil {
		return o, nil
	}
	for _, pr := range p.Serve.Protocols {
		if pr.Kind != bytecode.ProtoA2A {
			continue
		}
		o.Path = pr.Path
		for _, a := range pr.Attrs {
			var v types.Value
			switch a.Kind {
			case bytecode.AttrConst:
				if int(a.Const) >= len(p.Consts) {
					return o, fmt.Errorf("a2a.%s: constant %d out of range", a.Name, a.Const)
				}
				v = p.Consts[a.Const]
			case bytecode.AttrEnv:
				var err error
				if v, err = p.ResolveEnv(a.Env, lookup); err != nil {
					return o, fmt.Errorf("a2a.%s: %w", a.Name, err)
				}
			default:
				continue
			}
			if v.IsNull() {
				continue
			}
			switch a.Name {
			case "path":
				o.Path = v.Str()
			case "name":
				o.Name = v.Str()
			case "description":
				o.Description = v.Str()
			case "version":
				o.Version = v.Str()
			case "url":
				o.URL = v.Str()
			case "skills":
				for _, e := range v.Elems() {
					o.Skills = append(o.Skills, e.Str())
				}
			}
		}
	}
	return o, nil
}

type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type capabilities struct {
	Streaming              bool  `json:"streaming"`
	PushNotifications      bool  `json:"pushNotifications"`
	ExtendedAgentCard      *bool `json:"extendedAgentCard,omitempty"`
	StateTransitionHistory *bool `json:"stateTransitionHistory,omitempty"`
}

type skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

type card1 struct {
	Name                string           `json:"name"`
	Description         string           `json:"description"`
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
	Version             string           `json:"version"`
	Capabilities        capabilities     `json:"capabilities"`
	DefaultInputModes   []string         `json:"defaultInputModes"`
	DefaultOutputModes  []string         `json:"defaultOutputModes"`
	Skills              []skill          `json:"skills"`
}

type additionalInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type card03 struct {
	ProtocolVersion                   string                `json:"protocolVersion"`
	Name                              string                `json:"name"`
	Description                       string                `json:"description"`
	URL                               string                `json:"url"`
	PreferredTransport                string                `json:"preferredTransport"`
	AdditionalInterfaces              []additionalInterface `json:"additionalInterfaces"`
	Version                           string                `json:"version"`
	Capabilities                      capabilities          `json:"capabilities"`
	DefaultInputModes                 []string              `json:"defaultInputModes"`
	DefaultOutputModes                []string              `json:"defaultOutputModes"`
	Skills                            []skill               `json:"skills"`
	SupportsAuthenticatedExtendedCard bool                  `json:"supportsAuthenticatedExtendedCard"`
	// The 1.0 interfaces, so that a 1.0 client that sent no header still
	// finds the 1.0 endpoint.
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
}

// endpoint is the public URL of the JSON-RPC endpoint: Options.URL, else
// derived from the request (X-Forwarded-Proto/Host when a proxy set them).
func (h *Handler) endpoint(r *http.Request) string {
	if h.opts.URL != "" {
		return h.opts.URL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" && !strings.ContainsAny(fh, "/ ,") {
		host = fh
	}
	return scheme + "://" + host + h.opts.Path
}

func (h *Handler) skills() []skill {
	tags := h.opts.Skills
	if len(tags) == 0 {
		tags = []string{h.opts.Name}
	}
	return []skill{{ID: h.opts.Name, Name: h.opts.Name, Description: h.opts.Description, Tags: tags}}
}

// Card returns the agent card for a request: the 1.0 card when v is V10,
// else the 0.3 card.
func (h *Handler) card(v Version, r *http.Request) any {
	url := h.endpoint(r)
	ifaces := []agentInterface{
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
	}
	no := false
	if v == V10 {
		return card1{Name: h.opts.Name, Description: h.opts.Description, SupportedInterfaces: ifaces, Version: h.opts.Version,
			Capabilities:      capabilities{Streaming: true, ExtendedAgentCard: &no},
			DefaultInputModes: h.opts.InputModes, DefaultOutputModes: h.opts.OutputModes, Skills: h.skills()}
	}
	return card03{ProtocolVersion: "0.3.0", Name: h.opts.Name, Description: h.opts.Description, URL: url,
		PreferredTransport: "JSONRPC", AdditionalInterfaces: []additionalInterface{{URL: url, Transport: "JSONRPC"}},
		Version: h.opts.Version, Capabilities: capabilities{Streaming: true, StateTransitionHistory: &no},
		DefaultInputModes: h.opts.InputModes, DefaultOutputModes: h.opts.OutputModes, Skills: h.skills(),
		SupportedInterfaces: ifaces}
}

// CardHandler serves the agent card (GET or HEAD, public: mount it outside
// the authentication middleware).
func (h *Handler) CardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		v, verr := negotiate(r)
		if verr != nil {
			v = V10 // an unknown version still gets the newest card
		}
		b, err := json.Marshal(h.card(v, r))
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Vary", "A2A-Version")
		w.Header().Set("Cache-Control", "public, max-age=300")
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	})
}
