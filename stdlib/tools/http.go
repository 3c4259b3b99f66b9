package tools

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// hostAllowed reports whether host matches an allowlist entry: exactly, or
// as a subdomain of a "*.suffix" entry. Case-insensitive; empty list denies.
func hostAllowed(allow []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return false
	}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), "."))
		if suf, ok := strings.CutPrefix(a, "*."); ok {
			if suf != "" && strings.HasSuffix(host, "."+suf) {
				return true
			}
		} else if a != "" && a == host {
			return true
		}
	}
	return false
}

func (c Config) httpClient() *http.Client {
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
		if !hostAllowed(c.AllowHosts, req.URL.Hostname()) {
			return &notAllowed{host: req.URL.Hostname()}
		}
		return nil
	}
	return &cl
}

type notAllowed struct{ host string }

func (e *notAllowed) Error() string { return fmt.Sprintf("host %q is not allowed", e.host) }

func httpGet(cfg Config, ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := decode("http_get", args, &in); err != nil {
		return nil, err
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: %q is not an http(s) URL", in.URL)
	}
	if !hostAllowed(cfg.AllowHosts, u.Hostname()) {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: host %q is not allowed", u.Hostname())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "http_get: %v", err)
	}
	resp, err := cfg.httpClient().Do(req)
	if err != nil {
		return nil, netError("http_get", ctx, err)
	}
	defer resp.Body.Close()
	max := cfg.maxBytes()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return nil, netError("http_get", ctx, err)
	}
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
	}{resp.StatusCode, text, resp.Header.Get("Content-Type")}, nil
}

// netError classifies a transport failure: a refused redirect is a
// tool_error, a deadline a timeout, anything else unavailable.
func netError(tool string, ctx context.Context, err error) error {
	var na *notAllowed
	if errors.As(err, &na) {
		return runtime.Errorf(vm.KindToolError, "%s: redirect to host %q is not allowed", tool, na.host)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()) {
		return runtime.Errorf(vm.KindTimeout, "%s: %v", tool, err)
	}
	return runtime.Errorf(vm.KindUnavailable, "%s: %v", tool, err)
}
