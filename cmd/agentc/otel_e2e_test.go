package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestOTLPExport runs the real binary with OTEL_EXPORTER_OTLP_ENDPOINT at a
// local OTLP/HTTP receiver: the spans of the run arrive (flushed at exit)
// under OTEL_SERVICE_NAME, decoded from the protobuf export request.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var names []string
	service := ""
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		b, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
		b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	defer recv.Close()

	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "slow.agent"), []byte(slowSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("AGENTC_DATA="+filepath.Join(root, ".agentc"), "LONG_NAP=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=agentc-e2e")
	r := runAgentc(t, root, env, "run", "slow.agent", "--input", "go", "--session", "s")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if service != "agentc-e2e" {
		t.Errorf("service.name = %q, want agentc-e2e", service)
	}
	count := func(name string) int {
		n := 0
		for _, s := range names {
			if s == name {
				n++
			}
		}
		return n
	}
	if count("invoke_workflow naps") != 1 || count("superstep") != 3 || count("node a") != 1 || count("execute_tool long_nap") != 1 ||
		count("execute_tool nap") != 2 || count("store.commit") < 3 {
		slices.Sort(names)
		t.Errorf("spans received: %v", names)
	}
}
