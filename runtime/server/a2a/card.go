package a2a

// The agent card at /.well-known/agent-card.json: the 1.0 card for a
// request with A2A-Version 1.x, else the 0.3 card with the 1.0
// supportedInterfaces embedded (a client of either version reads it).

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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

// cardBody is what both versions' cards say about the agent itself, in the
// same place of each.
type cardBody struct {
	Version            string       `json:"version"`
	Capabilities       capabilities `json:"capabilities"`
	DefaultInputModes  []string     `json:"defaultInputModes"`
	DefaultOutputModes []string     `json:"defaultOutputModes"`
	Skills             []skill      `json:"skills"`
}

type card1 struct {
	Name                string           `json:"name"`
	Description         string           `json:"description"`
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
	cardBody
}

type additionalInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type card03 struct {
	ProtocolVersion      string                `json:"protocolVersion"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	URL                  string                `json:"url"`
	PreferredTransport   string                `json:"preferredTransport"`
	AdditionalInterfaces []additionalInterface `json:"additionalInterfaces"`
	cardBody
	SupportsAuthenticatedExtendedCard bool `json:"supportsAuthenticatedExtendedCard"`
	// The 1.0 interfaces, so that a 1.0 client that sent no header still
	// finds the 1.0 endpoint.
	SupportedInterfaces []agentInterface `json:"supportedInterfaces"`
}

// origin is where the card's url comes from.
type origin int

const (
	fixedOrigin     origin = iota // Options.URL, PublicURL or ListenAddr: the same for every request
	hostOrigin                    // the request's Host: each client sees its own
	forwardedOrigin               // a trusted proxy's X-Forwarded-Host/Proto
)

// endpoint is the public URL of the JSON-RPC endpoint: Options.URL, else
// PublicURL + Path, else what a trusted proxy forwarded, else the listen
// address (when it names one host), else the request's Host. Forwarded
// headers from any other client are ignored: a card built from them could
// be cached and served to others (cache poisoning).
func (h *Handler) endpoint(r *http.Request) (string, origin) {
	if h.opts.URL != "" {
		return h.opts.URL, fixedOrigin
	}
	if h.opts.PublicURL != "" {
		return strings.TrimRight(h.opts.PublicURL, "/") + h.opts.Path, fixedOrigin
	}
	if h.trustedProxy(r.RemoteAddr) {
		fh := r.Header.Get("X-Forwarded-Host")
		if validHost(fh) {
			scheme := "http"
			if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
				scheme = p
			}
			return scheme + "://" + fh + h.opts.Path, forwardedOrigin
		}
	}
	if host, _, err := net.SplitHostPort(h.opts.ListenAddr); err == nil && host != "" {
		if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err != nil || !ip.IsUnspecified() {
			return "http://" + h.opts.ListenAddr + h.opts.Path, fixedOrigin
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host + h.opts.Path, hostOrigin
}

// trustedProxy reports whether a request's peer is a configured proxy.
func (h *Handler) trustedProxy(remote string) bool {
	if len(h.opts.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range h.opts.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// validHost reports whether s is a plain host[:port]: letters, digits,
// dots, hyphens, an IPv6 literal in brackets, an optional numeric port.
func validHost(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	host := s
	if h, port, err := net.SplitHostPort(s); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Is4() || strings.HasPrefix(s, "[") // an IPv6 host is bracketed
	}
	return host != "" && strings.Trim(strings.ToLower(host), "abcdefghijklmnopqrstuvwxyz0123456789.-") == ""
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
func (h *Handler) card(v Version, url string) any {
	ifaces := []agentInterface{
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
	}
	no := false
	body := cardBody{Version: h.opts.Version, Capabilities: capabilities{Streaming: true, PushNotifications: h.opts.Push != nil},
		DefaultInputModes: h.opts.InputModes, DefaultOutputModes: h.opts.OutputModes, Skills: h.skills()}
	if v == V10 {
		body.Capabilities.ExtendedAgentCard = &no
		return card1{Name: h.opts.Name, Description: h.opts.Description, SupportedInterfaces: ifaces, cardBody: body}
	}
	body.Capabilities.StateTransitionHistory = &no
	return card03{ProtocolVersion: "0.3.0", Name: h.opts.Name, Description: h.opts.Description, URL: url,
		PreferredTransport: "JSONRPC", AdditionalInterfaces: []additionalInterface{{URL: url, Transport: "JSONRPC"}},
		cardBody: body, SupportedInterfaces: ifaces}
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
		url, from := h.endpoint(r)
		b, err := json.Marshal(h.card(v, url))
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", "application/json")
		// A card that depends on who asks is no shared cache's to keep;
		// the Host header is part of a cache's key already, the
		// forwarded headers are not.
		switch from {
		case fixedOrigin:
			hd.Set("Vary", "A2A-Version")
			hd.Set("Cache-Control", "public, max-age=300")
		case hostOrigin:
			hd.Set("Vary", "A2A-Version")
			hd.Set("Cache-Control", "private, max-age=300")
		case forwardedOrigin:
			hd.Set("Vary", "A2A-Version, X-Forwarded-Host, X-Forwarded-Proto")
			hd.Set("Cache-Control", "private, max-age=300")
		}
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	})
}
