// Package jsonrpc holds what JSON-RPC 2.0 itself defines, for the
// module's JSON-RPC servers (the language server, A2A, MCP's error
// answers): the protocol version and the standard error codes
// (JSON-RPC 2.0 §5.1). The codes a protocol adds (A2A's task errors,
// LSP's) stay in its package.
package jsonrpc

// Version is the "jsonrpc" member of every request and response.
const Version = "2.0"

// The standard error codes.
const (
	ParseError     = -32700 // the body is not JSON
	InvalidRequest = -32600 // the JSON is not a valid request object
	MethodNotFound = -32601 // no such method
	InvalidParams  = -32602 // the method's parameters do not fit
	InternalError  = -32603 // the server failed
)
