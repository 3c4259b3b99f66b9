package a2a

// JSON-RPC 2.0 over HTTP: the envelope, version negotiation, the error
// vocabulary, and SSE framing for the streaming methods.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentc/agentc/internal/jsonrpc"
	"github.com/agentc/agentc/runtime/server"
)

// A2A's JSON-RPC error codes (A2A 1.0 §5.4 and §9.5), beside the standard
// ones of package jsonrpc.
const (
	CodeTaskNotFound              = -32001
	CodeTaskNotCancelable         = -32002
	CodePushNotSupported          = -32003
	CodeUnsupportedOperation      = -32004
	CodeContentTypeNotSupported   = -32005
	CodeExtendedCardNotConfigured = -32007
	CodeVersionNotSupported       = -32009
)

// rpcError is a JSON-RPC error object. reason and field feed the 1.0
// error details (google.rpc.ErrorInfo / BadRequest); 0.3 sends none.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`

	reason string            // 1.0 ErrorInfo reason
	field  string            // 1.0 BadRequest field
	meta   map[string]string // 1.0 ErrorInfo metadata
	status int               // HTTP status (0: 200, or 500 for -32603)
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

func parseError() *rpcError {
	return &rpcError{Code: jsonrpc.ParseError, Message: "Invalid JSON payload"}
}

func invalidRequest(why string) *rpcError {
	return &rpcError{Code: jsonrpc.InvalidRequest, Message: "Request payload validation error: " + why}
}

func methodNotFound(v Version, m string) *rpcError {
	return &rpcError{Code: jsonrpc.MethodNotFound, Message: fmt.Sprintf("Method not found: %q is not an A2A %s method", m, v)}
}

func invalidParams(field, why string) *rpcError {
	return &rpcError{Code: jsonrpc.InvalidParams, Message: "Invalid parameters: " + why, field: field}
}

func internalError() *rpcError {
	return &rpcError{Code: jsonrpc.InternalError, Message: "Internal error"}
}

func taskNotFound(id string) *rpcError {
	return &rpcError{Code: CodeTaskNotFound, Message: fmt.Sprintf("Task not found: %q", id), reason: "TASK_NOT_FOUND",
		meta: map[string]string{"taskId": id}}
}

func taskNotCancelable(id string, s state) *rpcError {
	return &rpcError{Code: CodeTaskNotCancelable, Message: fmt.Sprintf("Task %s is %s and cannot be canceled", id, s),
		reason: "TASK_NOT_CANCELABLE", meta: map[string]string{"taskId": id}}
}

func pushNotSupported() *rpcError {
	return &rpcError{Code: CodePushNotSupported, Message: "Push notifications are not supported by this agent",
		reason: "PUSH_NOTIFICATION_NOT_SUPPORTED"}
}

func unsupported(why string) *rpcError {
	return &rpcError{Code: CodeUnsupportedOperation, Message: "Unsupported operation: " + why, reason: "UNSUPPORTED_OPERATION"}
}

func contentTypeNotSupported(why string) *rpcError {
	return &rpcError{Code: CodeContentTypeNotSupported, Message: "Content type not supported: " + why,
		reason: "CONTENT_TYPE_NOT_SUPPORTED"}
}

func versionNotSupported(v string) *rpcError {
	return &rpcError{Code: CodeVersionNotSupported, Message: fmt.Sprintf("A2A version %q is not supported (supported: 1.0, and 0.3 without the A2A-Version header)", v),
		reason: "VERSION_NOT_SUPPORTED", meta: map[string]string{"requestedVersion": v, "supportedVersions": "1.0,0.3"}}
}

// withDetails returns e with the 1.0 error details filled in.
func (e *rpcError) withDetails(v Version) *rpcError {
	c := *e
	if v != V10 {
		return &c
	}
	switch {
	case e.field != "":
		c.Data = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []any{map[string]string{"field": e.field, "description": e.Message}}}}
	case e.reason != "":
		info := map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.reason, "domain": "a2a-protocol.org"}
		if len(e.meta) > 0 {
			info["metadata"] = e.meta
		}
		c.Data = []any{info}
	}
	return &c
}

// nullID is the id of a response to a request whose id is unknown.
var nullID = json.RawMessage("null")

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// MaxIDBytes bounds a request id as written (a longer one is refused).
const MaxIDBytes = 256

// rpcRequest is a checked request envelope.
type rpcRequest struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage // an object, or nil
}

// parseRequest checks body against JSON-RPC 2.0: -32700 for bad JSON,
// -32600 for anything that is not one Request object with an id (batches
// and notifications are not part of A2A). The id is returned whenever it
// could be read, so the error echoes it.
func parseRequest(body []byte) (rpcRequest, *rpcError) {
	req := rpcRequest{ID: nullID}
	if !json.Valid(body) {
		return req, parseError()
	}
	body = bytes.TrimSpace(body)
	switch {
	case body[0] == '[':
		return req, invalidRequest("batch requests are not supported")
	case body[0] != '{':
		return req, invalidRequest("the request must be a JSON object")
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		return req, invalidRequest(err.Error())
	}
	id, ok := env["id"]
	if !ok {
		return req, invalidRequest("id is required (notifications are not supported)")
	}
	switch c := id[0]; {
	case len(id) > MaxIDBytes:
		return req, invalidRequest(fmt.Sprintf("id is longer than %d bytes", MaxIDBytes))
	case c == '"', c == '-', c >= '0' && c <= '9':
		// Echoed as sent, except bytes that are not UTF-8 (which the
		// JSON we write must not carry): replaced by U+FFFD, as a JSON
		// decoder reads them.
		req.ID = json.RawMessage(strings.ToValidUTF8(string(id), "\uFFFD"))
	case string(id) == "null":
	default:
		return req, invalidRequest("id must be a string or a number")
	}
	var version string
	if raw, ok := env["jsonrpc"]; !ok || json.Unmarshal(raw, &version) != nil || version != jsonrpc.Version {
		return req, invalidRequest(`jsonrpc must be "2.0"`)
	}
	if raw, ok := env["method"]; !ok || json.Unmarshal(raw, &req.Method) != nil || req.Method == "" {
		return req, invalidRequest("method must be a non-empty string")
	}
	if raw, ok := env["params"]; ok && string(raw) != "null" {
		switch raw[0] {
		case '{':
			req.Params = raw
		case '[':
			return req, invalidParams("params", "params must be an object (by-position parameters are not supported)")
		default:
			return req, invalidRequest("params must be an object")
		}
	}
	return req, nil
}

// decodeParams decodes a request's params into p; a missing params is an
// empty object.
func decodeParams(raw json.RawMessage, p any) *rpcError {
	if raw == nil {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams(te.Field, fmt.Sprintf("%s: expected %s, got a JSON %s", te.Field, te.Type, te.Value))
		}
		return invalidParams("params", err.Error())
	}
	return nil
}

// negotiate reads the A2A-Version header (or query parameter): none means
// 0.3; Major.Minor selects, a patch part is ignored.
func negotiate(r *http.Request) (Version, *rpcError) {
	raw := strings.TrimSpace(r.Header.Get("A2A-Version"))
	if raw == "" {
		raw = strings.TrimSpace(r.URL.Query().Get("A2A-Version"))
	}
	if raw == "" {
		return V03, nil
	}
	mm := raw
	if parts := strings.Split(raw, "."); len(parts) == 3 {
		mm = parts[0] + "." + parts[1]
	}
	switch mm {
	case "1.0":
		return V10, nil
	case "0.3":
		return V03, nil
	}
	return V10, versionNotSupported(raw)
}

// internalErrorJSON answers when a response does not encode.
const internalErrorJSON = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`

// writeJSON writes one JSON-RPC response.
func writeJSON(w http.ResponseWriter, status int, resp rpcResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(internalErrorJSON)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// sseWriter writes JSON-RPC responses as SSE frames, flushed one by one.
// A client that stops reading blocks only its own stream: the run goes on
// (the pump never waits for a stream). Write deadlines are the HTTP
// server's: the injected clock need not be wall time, so this package sets
// none.
type sseWriter struct {
	sse *server.SSE
	id  json.RawMessage
}

func newSSEWriter(w http.ResponseWriter, r *http.Request, id json.RawMessage) *sseWriter {
	return &sseWriter{sse: server.NewSSE(w, r, nil, 0), id: id}
}

// start sends the stream's headers (an empty stream still answers with
// them).
func (s *sseWriter) start() { s.sse.Start() }

// send writes one result frame; false once the client is gone.
func (s *sseWriter) send(result any) bool {
	b, err := json.Marshal(rpcResponse{JSONRPC: jsonrpc.Version, ID: s.id, Result: result})
	if err != nil {
		b = []byte(internalErrorJSON)
	}
	s.sse.Frame(b)
	return s.sse.Flush()
}
