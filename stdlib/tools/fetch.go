package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/vm"
)

// httpFetch is http_get reduced to the page: the body as text when the
// status is 2xx. Like a declared http tool, 429 is rate_limit, 5xx
// unavailable and any other status tool_error, each naming the status and
// the start of the body. Transport failures are http_get's.
func httpFetch(cfg Config, ctx context.Context, in httpGetIn) (any, error) {
	res, err := httpGet(cfg, ctx, in)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, runtime.Errorf(vm.KindInternal, "http_fetch: %v", err)
	}
	var got struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		return nil, runtime.Errorf(vm.KindInternal, "http_fetch: %v", err)
	}
	if got.Status >= 200 && got.Status < 300 {
		return got.Body, nil
	}
	kind, transient := outbound.Transient(got.Status)
	if !transient {
		kind = vm.KindToolError
	}
	start, _, _ := strings.Cut(got.Body, "\n")
	if len(start) > 256 {
		start = strings.ToValidUTF8(start[:256], "")
	}
	return nil, runtime.Errorf(kind, "http_fetch: HTTP %d: %s", got.Status, start)
}
