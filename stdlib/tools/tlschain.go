package tools

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// tlsChainIn is tls_chain's input.
type tlsChainIn struct {
	Host string `json:"host"`
	Port *int   `json:"port"`
}

// tlsChain handshakes with host:port and reports the presented chain. It
// sets InsecureSkipVerify so that an expired or untrusted chain can still be
// READ (that is the point of the tool); it sends no application data and
// trusts nothing it received.
func tlsChain(cfg Config, ctx context.Context, in tlsChainIn) (any, error) {
	port := 443
	if in.Port != nil {
		port = *in.Port
	}
	if in.Host == "" || port <= 0 || port > 65535 {
		return nil, runtime.Errorf(vm.KindToolError, "tls_chain: bad address %q port %d", in.Host, port)
	}
	addr := net.JoinHostPort(in.Host, strconv.Itoa(port))
	raw, err := cfg.dial()(ctx, "tcp", addr)
	if err != nil {
		return nil, netError("tls_chain", ctx, err)
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{ServerName: in.Host, InsecureSkipVerify: true}) //nolint:gosec // read-only chain inspection
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, netError("tls_chain", ctx, err)
	}
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, runtime.Errorf(vm.KindToolError, "tls_chain: %s presented no certificate", addr)
	}
	chain := make([]string, len(certs))
	for i, c := range certs {
		chain[i] = c.Subject.String()
	}
	return struct {
		Chain   []string `json:"chain"`
		Expires string   `json:"expires"`
	}{chain, certs[0].NotAfter.UTC().Format(time.RFC3339)}, nil
}
