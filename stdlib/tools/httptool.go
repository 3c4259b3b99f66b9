package tools

// `run = http { url, method, headers, query, body, timeout }`
// (spec/language.md §7.2, spec/tools.md "Declared http and exec tools").

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/vm"
)

type httpTool struct {
	*declared
	method  string
	headers []bytecode.Attr // Impl.Headers: name → template or env reference
	env     map[string]types.Value
	own     time.Duration // the block's timeout (default DefaultHTTPTimeout)
}

func newHTTPTool(d *declared) (*httpTool, error) {
	h := &httpTool{declared: d, method: strings.ToUpper(d.t.Impl.Method), headers: d.t.Impl.Headers,
		own: DefaultHTTPTimeout}
	if h.method == "" {
		h.method = http.MethodGet
	}
	switch h.method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
	default:
		return nil, fmt.Errorf("tool %s: unsupported HTTP method %q", d.t.Name, h.method)
	}
	if a, ok := h.opts["timeout"]; ok {
		v, err := d.constAttr(a)
		if err != nil {
			return nil, err
		}
		if v.Duration() > 0 {
			h.own = v.Duration()
		}
	}
	env, err := d.resolveEnv(h.headers)
	if err != nil {
		return nil, err
	}
	h.env = env
	return h, nil
}

func (h *httpTool) Spec() runtime.ToolSpec { return h.spec() }
func (h *httpTool) Effect() runtime.Effect { return runtime.Effect(h.t.Effect) }

// Call renders the request from the validated input, checks the URL's host
// against the allowlist, and decodes a 2xx body as the output type.
func (h *httpTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, h.callTimeout(h.own))
	defer cancel()
	input, err := h.input(req.Args)
	if err != nil {
		return nil, err
	}
	r, own, err := h.request(ctx, input, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	max := h.cfg.maxBytes()
	rep, err := outbound.Do(h.cfg.httpClient(own...), r, max)
	if err != nil {
		return nil, h.transportError(ctx, r, err)
	}
	if rep.Over {
		return nil, h.errorf(vm.KindToolError, "%s %s: response body exceeds the %d-byte cap", h.method, r.URL.Host, max)
	}
	body := rep.Body
	if rep.StatusCode < 200 || rep.StatusCode > 299 {
		kind, transient := outbound.Transient(rep.StatusCode)
		if !transient {
			kind = vm.KindToolError
		}
		msg := fmt.Sprintf("%s %s: HTTP %d", h.method, r.URL.Host, rep.StatusCode)
		if s := outbound.Snippet(body, 256); s != "" {
			msg += ": " + s
		}
		return nil, h.errorf(kind, "%s", msg)
	}
	if h.method == http.MethodHead {
		body = nil
	}
	return h.result("response", body)
}

// request renders URL, query, headers and body; own names the headers
// the tool set (dropped on a redirect to another origin). Input values are
// escaped for where they go: URL parts by escapeURL, header values must
// be one line, the body is JSON.
func (h *httpTool) request(ctx context.Context, input types.Value, idem string) (r *http.Request, own []string, err error) {
	defer func() {
		if err != nil {
			r, own = nil, nil
		}
	}()
	raw, err := h.text(ctx, "url", h.t.Impl.URL, input)
	if err != nil {
		return nil, nil, err
	}
	if raw, err = h.escapeURL(ctx, h.t.Impl.URL, input, raw); err != nil {
		return nil, nil, err
	}
	u, ok := outbound.HTTPURL(raw)
	if !ok {
		return nil, nil, h.errorf(vm.KindToolError, "url %q is not an http(s) URL", redactURL(raw))
	}
	if !hostAllowed(h.cfg.AllowHosts, u) {
		return nil, nil, h.errorf(vm.KindToolError, "host %q is not allowed on port %s (AGENTC_ALLOW_HOSTS)", u.Hostname(), portOf(u))
	}
	if params, set, err := h.optStringMap(ctx, "query", input); err != nil {
		return nil, nil, err
	} else if set {
		q := u.Query()
		for k, val := range params {
			q.Set(k, val)
		}
		u.RawQuery = q.Encode()
	}
	var body io.Reader
	var hasBody bool
	if a, ok := h.opts["body"]; ok {
		v, err := h.attrValue(ctx, a, nil, input)
		if err != nil {
			return nil, nil, err
		}
		b, err := types.ToJSON(v)
		if err != nil {
			return nil, nil, h.errorf(vm.KindToolError, "body: %v", err)
		}
		body, hasBody = bytes.NewReader(b), true
	} else if h.method != http.MethodGet && h.method != http.MethodHead {
		b, err := types.ToJSON(input)
		if err != nil {
			return nil, nil, h.errorf(vm.KindToolError, "body: %v", err)
		}
		body, hasBody = bytes.NewReader(b), true
	}
	r, err = http.NewRequestWithContext(ctx, h.method, u.String(), body)
	if err != nil {
		return nil, nil, h.errorf(vm.KindToolError, "request: %v", err)
	}
	if hasBody {
		r.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		r.Header.Set("Idempotency-Key", idem)
	}
	if h.cfg.Propagate != nil {
		h.cfg.Propagate(ctx, r.Header)
	}
	hs, _, err := h.optStringMap(ctx, "headers", input) // headers written as one map expression
	if err != nil {
		return nil, nil, err
	}
	for k, val := range hs {
		if err := oneLine(k, val); err != nil {
			return nil, nil, h.errorf(vm.KindToolError, "%v", err)
		}
		r.Header.Set(k, val)
		own = append(own, k)
	}
	for _, a := range h.headers {
		v, err := h.attrValue(ctx, a, h.env, input)
		if err != nil {
			return nil, nil, err
		}
		own = append(own, a.Name)
		switch v.Kind() {
		case types.ValString:
			if err := oneLine(a.Name, v.Str()); err != nil {
				return nil, nil, h.errorf(vm.KindToolError, "%v", err)
			}
			r.Header.Set(a.Name, v.Str())
		case types.ValSecret:
			if err := oneLine(a.Name, v.SecretText()); err != nil {
				return nil, nil, h.errorf(vm.KindToolError, "%v", err)
			}
			r.Header.Set(a.Name, v.SecretText())
		case types.ValNull:
		default:
			return nil, nil, h.errorf(vm.KindToolError, "header %s: want a string, got %s", a.Name, v.Kind())
		}
	}
	return r, own, nil
}

// oneLine refuses a header value that would end the header (CR, LF) or
// that net/http would refuse anyway (NUL and other controls but tab).
func oneLine(name, v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("header %s: the value has a control character (byte %d); header values are one line", name, i)
		}
	}
	return nil
}

// transportError classifies a failed exchange without repeating the URL,
// which may carry credentials: a refused redirect is a tool_error, a
// deadline a timeout, anything else unavailable.
func (h *httpTool) transportError(ctx context.Context, r *http.Request, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var na *notAllowed
	if errors.As(err, &na) {
		return h.errorf(vm.KindToolError, "redirect to host %q is not allowed on port %s (AGENTC_ALLOW_HOSTS)", na.host, na.port)
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		return h.errorf(vm.KindTimeout, "%s %s: no response within %s", h.method, r.URL.Host, h.callTimeout(h.own))
	}
	if errors.Is(err, context.Canceled) {
		return h.errorf(vm.KindCanceled, "%s %s: canceled", h.method, r.URL.Host)
	}
	return h.errorf(vm.KindUnavailable, "%s %s: %v", h.method, r.URL.Host, err)
}

// redactURL drops the user info and query of a URL for an error message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		return raw
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// toValidUTF8 is b as text, invalid sequences replaced.
func toValidUTF8(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
