// Package ui is the run inspector (spec/inspector.md): a versioned JSON API
// over runtime/inspect at /ui/api/v1/, a live event stream per run, and the
// pages that use them, embedded in the binary, at /ui/.
//
// Tenancy: every lookup is scoped to the authenticated user (server.UserFrom)
// and the served app; another user's run, session, artifact or candidate is
// 404, as one that does not exist. Administrators (Config.Admins) see every
// user. Actions go through the Backend (resumes, cancel) or the libraries
// the CLI uses (inspect, session, evolution); nothing here writes a run
// record.
package ui

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Paths of the inspector.
const (
	PagePath = "/ui/"
	APIPath  = "/ui/api/v1/"
)

// AdminUser is the user of the admin token agentc serve writes for the CLI
// (spec/inspector.md, "The CLI on a served store").
const AdminUser = "agentc-admin"

//go:embed assets
var assets embed.FS

// Config is what the inspector reads and acts through.
type Config struct {
	// Store is read through inspect (required).
	Store store.Store
	// Backend continues runs (answers, decisions, forks that continue) and
	// cancels them; nil: those actions are 409 no_runner.
	Backend *server.Backend
	// App scopes every lookup to one app; "" serves every app of the store
	// (agentc ui), where requests name the app of a session.
	App string
	// Admins are the users that see every user's runs.
	Admins map[string]bool
	// Inspect configures the Inspector (its Store is Config.Store): the
	// clock and entropy forks take, the time decisions record.
	Inspect inspect.Config
	// Poll is how often an idle event stream looks for new events without
	// being woken (default: with a Backend, whose runs' commits wake it,
	// server.FollowEvery; else 250 ms); StreamLimit bounds one stream
	// (default 30 min); KeepAlive
	// is the interval of its keep-alive comments (default 15 s).
	Poll, StreamLimit, KeepAlive time.Duration
	// MaxBody bounds a request body (default the server's default,
	// server.Limits: 4 MiB; the server's own limit applies first when it
	// is mounted on one).
	MaxBody int64
	Logger  *slog.Logger
}

// Handler serves the inspector's API and pages.
type Handler struct {
	cfg      Config
	in       *inspect.Inspector
	sessions *session.Service
	api      *http.ServeMux
	pages    http.Handler
	log      *slog.Logger
}

// New returns the inspector over cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("ui: Config.Store is required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
		if cfg.Backend != nil {
			cfg.Poll = server.FollowEvery
		}
	}
	if cfg.StreamLimit <= 0 {
		cfg.StreamLimit = 30 * time.Minute
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = server.Limits{}.WithDefaults().MaxBodyBytes
	}
	ic := cfg.Inspect
	ic.Store = cfg.Store
	h := &Handler{cfg: cfg, in: inspect.New(ic), sessions: session.New(cfg.Store), log: cfg.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	h.pages = pageHandler(sub)
	h.api = http.NewServeMux()
	h.routes()
	return h, nil
}

// Mounts are the inspector's mounts on agentc serve: the API (authenticated,
// protocol "ui") and the pages (public: files without data).
func (h *Handler) Mounts() []server.Mount {
	return []server.Mount{
		{Pattern: APIPath, Protocol: "ui", Handler: http.HandlerFunc(h.ServeAPI), Error: WriteError},
		{Pattern: PagePath, Protocol: "ui", Handler: h.pages, Public: true},
		{Pattern: strings.TrimSuffix(PagePath, "/"), Protocol: "ui", Public: true,
			Handler: http.RedirectHandler(PagePath, http.StatusMovedPermanently)},
	}
}

// ServeAPI serves one API request of an authenticated user
// (server.UserFrom).
func (h *Handler) ServeAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if server.UserFrom(r.Context()) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentc"`)
		WriteError(w, r, http.StatusUnauthorized, "unauthorized", "missing or invalid bearer token")
		return
	}
	h.api.ServeHTTP(w, r)
}

// Pages serves the embedded pages.
func (h *Handler) Pages() http.Handler { return h.pages }

// pageHandler serves the embedded files with a strict content security
// policy: scripts, styles and connections of this origin only.
func pageHandler(files fs.FS) http.Handler {
	fsrv := http.StripPrefix(strings.TrimSuffix(PagePath, "/"), http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "the pages take GET only")
			return
		}
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// Local wraps h for agentc ui: requests must be for a loopback Host, and
// API requests must carry token as a bearer token; they are made by the
// administrator. Bodies are cut at the handler's limit.
func (h *Handler) Local(token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.IsLoopback(r.Host) {
			WriteError(w, r, http.StatusForbidden, "forbidden", "agentc ui answers only requests for a loopback host")
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, APIPath):
			if !bearerIs(r, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentc"`)
				WriteError(w, r, http.StatusUnauthorized, "unauthorized", "missing or invalid bearer token (the one agentc ui printed)")
				return
			}
			r = r.WithContext(server.WithUser(r.Context(), AdminUser))
			h.ServeAPI(w, r)
		case r.URL.Path == "/" || r.URL.Path == strings.TrimSuffix(PagePath, "/"):
			http.Redirect(w, r, PagePath, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, PagePath):
			h.pages.ServeHTTP(w, r)
		default:
			WriteError(w, r, http.StatusNotFound, "not_found", "no endpoint at "+r.URL.Path)
		}
	})
}

// Context returns ctx for work an action starts that outlives its request.
func detached(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
