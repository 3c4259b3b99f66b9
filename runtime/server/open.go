package server

// The policy of an open (unauthenticated, loopback) server: any program on
// the machine may call it, but a web page must not — neither a page of
// another site posting a form or a no-CORS fetch to 127.0.0.1 (CSRF), nor
// one whose own host name resolves to 127.0.0.1 (DNS rebinding), which
// could read the answers too.

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// openRefusal checks a request to an open server: its Host must be a
// loopback name or address; an Origin, when sent, must be a loopback one
// (a web UI on another local port is fine); and a POST must have a JSON
// content type, which a cross-site form or no-CORS fetch cannot send. The
// other state-changing methods (PUT, PATCH, DELETE, …) are not "simple":
// a browser sends them cross-site only after a CORS preflight, which this
// server never grants, so they need no such proof (an MCP client ends its
// session with a bodiless DELETE). Nil: allowed.
func openRefusal(r *http.Request) *refusal {
	if !loopbackHost(r.Host) {
		return &refusal{http.StatusForbidden, "forbidden", "an open server answers only requests for a loopback host (127.0.0.1, ::1, localhost); the Host header is " + quoteShort(r.Host)}
	}
	if o, ok := r.Header["Origin"]; ok {
		u, err := url.Parse(strings.Join(o, ""))
		if len(o) != 1 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || !loopbackHost(u.Host) {
			return &refusal{http.StatusForbidden, "forbidden", "an open server refuses requests from web pages of other origins; Origin is " + quoteShort(strings.Join(o, ","))}
		}
	}
	if r.Method != http.MethodPost {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !(mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return &refusal{http.StatusUnsupportedMediaType, "unsupported_media_type", "an open server takes state-changing requests with Content-Type: application/json only"}
	}
	return nil
}

// loopbackHost reports whether a Host header value ("host[:port]") names
// a loopback address or localhost.
func loopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

// ParsePrefixes reads IP addresses and CIDR prefixes ("10.0.0.0/8",
// "192.0.2.7", "::1"); blanks are skipped.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
