package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/agentc/agentc/internal/jsonrpc"
)

// The base protocol of LSP: JSON-RPC 2.0 messages, each preceded by a
// header block ("Content-Length: N\r\n", optionally "Content-Type: ...",
// then "\r\n"). This is all of it the server needs: requests, notifications
// and responses in one message shape, read one at a time and written under
// a lock.

// maxMessage bounds one message's body (64 MiB): a larger Content-Length
// is refused rather than allocated.
const maxMessage = 64 << 20

// The error codes: LSP's own, and JSON-RPC's standard ones (package
// jsonrpc) by this package's names.
const (
	codeNotInitialized = -32002
	codeRequestFailed  = -32803
	codeParseError     = jsonrpc.ParseError
	codeInvalidRequest = jsonrpc.InvalidRequest
	codeMethodNotFound = jsonrpc.MethodNotFound
	codeInvalidParams  = jsonrpc.InvalidParams
	codeInternalError  = jsonrpc.InternalError
)

// message is any JSON-RPC message: a request (ID and Method), a
// notification (Method only) or a response (ID and Result or Error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func (m *message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// rpcError is a JSON-RPC error object; it is also the error handlers
// return to choose the code.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// reader reads framed messages.
type reader struct{ r *bufio.Reader }

func newReader(r io.Reader) *reader { return &reader{r: bufio.NewReader(r)} }

// errFraming marks a malformed header: the stream cannot be resynchronized.
var errFraming = errors.New("lsp: malformed message header")

// read returns the next message body. io.EOF means the stream ended
// between messages.
func (r *reader) read() ([]byte, error) {
	length := -1
	first := true
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && first && line == "" {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("read header: %w", err)
		}
		first = false
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: %q", errFraming, line)
		}
		if strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: Content-Length %q", errFraming, v)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, fmt.Errorf("%w: no Content-Length", errFraming)
	}
	if length > maxMessage {
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d", errFraming, length, maxMessage)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r.r, body); err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// writer writes framed messages; it is safe for concurrent use.
type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *writer) write(m *message) error {
	m.JSONRPC = jsonrpc.Version
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "Content-Length: %d\r\n\r\n", len(body))
	buf.Write(body)
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}
