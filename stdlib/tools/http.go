package tools

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/vm"
)

// hostAllowed reports whether u's host and port match an allowlist entry:
// "host" (the scheme's default port only: 80 for http, 443 for https),
// "host:port", "host:*" (any port), and "*.suffix" for any subdomain of
// suffix with the same port forms ("*.corp.example:8443"); IPv6 hosts in
// brackets ("[::1]:8080"). Case-insensitive; an empty list denies.
func hostAllowed(allow []string, u *url.URL) bool {
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return false
	}
	port := u.Port()
	def := defaultPort(u.Scheme)
	if port == "" {
		port = def
	}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		ah, ap := a, ""
		if h, p, err := net.SplitHostPort(a); err == nil {
			ah, ap = h, p
		} else {
			ah = strings.Trim(a, "[]")
		}
		ah = strings.TrimSuffix(ah, ".")
		switch ap {
		case "*":
		case "":
			if port != def {
				continue
			}
		default:
			if ap != port {
				continue
			}
		}
		if suf, ok := strings.CutPrefix(ah, "*."); ok {
			if suf != "" && strings.HasSuffix(host, "."+suf) {
				return true
			}
		} else if ah != "" && ah == host {
			return true
		}
	}
	return false
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "https") {
		return "443"
	}
	return "80"
}

// origin is a URL's scheme, host and port (the default one filled in).
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")) + ":" + port
}

// credentialHeaders are dropped from every redirect that leaves the first
// request's origin, besides the headers a tool declares.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2"}

// httpClient is the client of http_get and the http tools. A redirect is
// re-checked against the allowlist; one that changes scheme, host or port
// (on this hop or an earlier one) goes without credentialHeaders and the
// headers named in drop (the tool's own, which may carry secrets).
func (c Config) httpClient(drop ...string) *http.Client {
	var cl http.Client
	if c.HTTPClient != nil {
		cl = *c.HTTPClient
	} else {
		cl.Transport = &http.Transport{
			Proxy:               nil, // never route around the allowlist
			DialContext:         c.dial(),
			TLSClientConfig:     &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: c.timeout(),
			DisableKeepAlives:   true,
		}
	}
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		if !hostAllowed(c.AllowHosts, req.URL) {
			return &notAllowed{host: req.URL.Hostname(), port: portOf(req.URL)}
		}
		first := origin(via[0].URL)
		left := origin(req.URL) != first
		for _, v := range via[1:] {
			left = left || origin(v.URL) != first
		}
		if left {
			for _, h := range credentialHeaders {
				req.Header.Del(h)
			}
			for _, h := range drop {
				req.Header.Del(h)
			}
		}
		return nil
	}
	return &cl
}

// AllowURL is the host allowlist's verdict on u (nil: AllowHosts names
// its host and port), for clients of other protocols bound by the same
// list (MCP servers reached over HTTP).
func (c Config) AllowURL(u *url.URL) error {
	if !hostAllowed(c.AllowHosts, u) {
		return fmt.Errorf("host %q is not allowed on port %s (AGENTC_ALLOW_HOSTS)", u.Hostname(), portOf(u))
	}
	return nil
}

type notAllowed struct{ host, port string }

func (e *notAllowed) Error() string {
	return fmt.Sprintf("host %q is not allowed on port %s", e.host, e.port)
}

// portOf is u's port, the scheme's default when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return defaultPort(u.Scheme)
}

// httpGetIn is http_get's input.
type httpGetIn struct {
	URL string `json:"url"`
}

func httpGet(cfg Config, ctx context.Context, in httpGetIn) (any, error) {
	u, ok := outbound.HTTPURL(in.URL)
	if !ok {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: %q is not an http(s) URL", in.URL)
	}
	if !hostAllowed(cfg.AllowHosts, u) {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: host %q is not allowed on port %s", u.Hostname(), portOf(u))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: %v", err)
	}
	if cfg.Propagate != nil {
		cfg.Propagate(ctx, req.Header)
	}
	max := cfg.maxBytes()
	rep, err := outbound.Do(cfg.httpClient(), req, max)
	if err != nil {
		return nil, netError("http_get", ctx, err)
	}
	body := rep.Body
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	if int64(len(body)) == max && !utf8.Valid(body) {
		// the cap may split a character: drop the broken tail
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
		text = string(body)
	}
	return struct {
		Status      int    `json:"status"`
		Body        string `json:"body"`
		ContentType string `json:"content_type"`
	}{rep.StatusCode, text, rep.Header.Get("Content-Type")}, nil
}

// netError classifies a transport failure: a refused redirect is a
// tool_error, a deadline a timeout, anything else unavailable.
func netError(tool string, ctx context.Context, err error) error {
	var na *notAllowed
	if errors.As(err, &na) {
		return runtime.Errorf(vm.KindToolError, "%s: redirect to host %q is not allowed on port %s", tool, na.host, na.port)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()) {
		return runtime.Errorf(vm.KindTimeout, "%s: %v", tool, err)
	}
	return runtime.Errorf(vm.KindUnavailable, "%s: %v", tool, err)
}
