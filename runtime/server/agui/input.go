package agui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/internal/jsonscan"
	"github.com/agentc/agentc/runtime"
)

// maxIDLen bounds threadId and runId: the thread id becomes a session id.
const maxIDLen = 256

// runInput is the part of an AG-UI RunAgentInput this adapter reads. Unknown
// members are accepted and ignored (the protocol's schema is open).
type runInput struct {
	ThreadID string
	RunID    string
	Messages []message
	Tools    []tool
	Resume   []resumeEntry
}

type message struct {
	ID         string
	Role       string
	Text       string              // the text of a user or tool message's content
	Files      []runtime.InputFile // a user message's media parts (image, audio, video, document)
	ToolCallID string              // tool messages
	CallIDs    []string            // an assistant message's tool call ids
}

type tool struct {
	Name string
}

type resumeEntry struct {
	InterruptID string
	Status      string          // "resolved" or "cancelled"
	Payload     json.RawMessage // nil when absent
}

// inputError is a malformed request: HTTP 400 before the stream starts.
type inputError struct {
	msg    string
	status int // 0: 400
}

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// wireInput mirrors RunAgentInput with raw members, so that a missing member,
// a null and a value of the wrong type can each be told apart. The members
// the adapter does not read (state, forwardedProps) are accepted as any
// JSON, like unknown ones, and not kept.
type wireInput struct {
	ThreadID        json.RawMessage `json:"threadId"`
	RunID           json.RawMessage `json:"runId"`
	Messages        json.RawMessage `json:"messages"`
	Tools           json.RawMessage `json:"tools"`
	Context         json.RawMessage `json:"context"`
	ProtocolVersion json.RawMessage `json:"protocolVersion"`
	ParentRunID     json.RawMessage `json:"parentRunId"`
	Resume          json.RawMessage `json:"resume"`
}

// parseInput reads one RunAgentInput from r. Every error is an *inputError
// naming the offending member (or the body's size or JSON error). The body
// is decoded once (parseDecoded); a body that decoding does not take as
// it is — anything malformed — is read again member by member
// (parseMembers), which names what is wrong. A body both accept reads
// the same through either (FuzzParseInput).
func parseInput(r io.Reader) (runInput, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return runInput{}, &inputError{msg: fmt.Sprintf("request body larger than %d bytes", mbe.Limit), status: http.StatusRequestEntityTooLarge}
		}
		return runInput{}, badInput("read request body: %v", err)
	}
	if !utf8.Valid(body) {
		return runInput{}, badInput("request body is not UTF-8")
	}
	if in, err := parseDecoded(body); err == nil {
		return in, nil
	}
	return parseMembers(body)
}

// parseDecoded reads body in one pass of a scanner of its own (internal/jsonscan),
// without encoding/json's reflection or copies: a member's value is its
// bytes in body. Any error means only that parseMembers must read body:
// it is malformed, or holds what the scanner leaves to encoding/json (a
// key with an escape or in another case than the protocol's, which
// encoding/json matches too). A body both read reads the same through
// either (FuzzParseInput).
func parseDecoded(body []byte) (runInput, error) {
	if !json.Valid(body) {
		return runInput{}, errLeft
	}
	var w wireInput
	s := jsonscan.New(body)
	if !s.Object() {
		return runInput{}, errLeft
	}
	for {
		key, val, ok := s.Member()
		if !ok {
			break
		}
		field := w.field(key)
		if field == nil {
			if !jsonscan.PlainKey(key, wireInputKeys) {
				return runInput{}, errLeft
			}
			continue
		}
		*field = val
	}
	if len(w.Messages) == 0 || w.Messages[0] != '[' {
		return runInput{}, errLeft
	}
	in, err := inputHead(&w)
	if err != nil {
		return runInput{}, err
	}
	if n := jsonscan.CountElems(w.Messages); n > 0 {
		in.Messages = make([]message, 0, n)
	}
	a := jsonscan.New(w.Messages)
	a.Array()
	for {
		raw, ok := a.Elem()
		if !ok {
			break
		}
		var wm wireMessage
		if !wm.scan(raw) {
			return runInput{}, errLeft
		}
		m, err := messageOf(&wm)
		if err != nil {
			return runInput{}, err
		}
		in.Messages = append(in.Messages, m)
	}
	return in, inputTail(&in, &w)
}

// errLeft is parseDecoded's error for a body it leaves to parseMembers.
var errLeft = errors.New("agui: the body is left to parseMembers")

// wireInputKeys are wireInput's members, as field takes them.
var wireInputKeys = []string{"threadId", "runId", "messages", "tools", "context", "protocolVersion", "parentRunId", "resume"}

// field is w's member of JSON name key (nil: none).
func (w *wireInput) field(key []byte) *json.RawMessage {
	switch string(key) { // no allocation: compared in place
	case "threadId":
		return &w.ThreadID
	case "runId":
		return &w.RunID
	case "messages":
		return &w.Messages
	case "tools":
		return &w.Tools
	case "context":
		return &w.Context
	case "protocolVersion":
		return &w.ProtocolVersion
	case "parentRunId":
		return &w.ParentRunID
	case "resume":
		return &w.Resume
	}
	return nil
}

// wireMessageKeys are wireMessage's members.
var wireMessageKeys = []string{"id", "role", "content", "toolCallId", "toolCalls"}

// scan reads the message object raw into w as json.Unmarshal does; false
// when it is not an object or holds a key for encoding/json (jsonscan.PlainKey).
func (w *wireMessage) scan(raw []byte) bool {
	s := jsonscan.New(raw)
	if !s.Object() {
		return false
	}
	for {
		key, val, ok := s.Member()
		if !ok {
			return true
		}
		var field *json.RawMessage
		switch string(key) {
		case "id":
			field = &w.ID
		case "role":
			field = &w.Role
		case "content":
			field = &w.Content
		case "toolCallId":
			field = &w.ToolCallID
		case "toolCalls":
			field = &w.ToolCalls
		default:
			if !jsonscan.PlainKey(key, wireMessageKeys) {
				return false
			}
			continue
		}
		*field = val // the last of a key wins, as in encoding/json
	}
}

// parseMembers reads body member by member, naming the first that is
// wrong.
func parseMembers(body []byte) (runInput, error) {
	var w wireInput
	if err := decodeStrict(body, &w); err != nil {
		return runInput{}, badInput("request body is not a RunAgentInput JSON object: %v", err)
	}
	in, err := inputHead(&w)
	if err != nil {
		return runInput{}, err
	}
	if len(w.Messages) == 0 {
		return runInput{}, badInput("messages: required")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(w.Messages, &raws); err != nil || raws == nil {
		return runInput{}, badInput("messages: must be an array")
	}
	for i, raw := range raws {
		m, err := parseMessage(raw)
		if err != nil {
			return runInput{}, badInput("messages[%d]: %v", i, err)
		}
		in.Messages = append(in.Messages, m)
	}
	return in, inputTail(&in, &w)
}

// inputHead reads the ids and the optional strings of w.
func inputHead(w *wireInput) (runInput, error) {
	var in runInput
	var err error
	if in.ThreadID, err = requiredString(w.ThreadID, "threadId"); err != nil {
		return runInput{}, err
	}
	if in.RunID, err = requiredString(w.RunID, "runId"); err != nil {
		return runInput{}, err
	}
	for _, id := range []struct{ name, v string }{{"threadId", in.ThreadID}, {"runId", in.RunID}} {
		if err := checkID(id.name, id.v); err != nil {
			return runInput{}, err
		}
	}
	if err := optionalString(w.ProtocolVersion, "protocolVersion"); err != nil {
		return runInput{}, err
	}
	if err := optionalString(w.ParentRunID, "parentRunId"); err != nil {
		return runInput{}, err
	}
	return in, nil
}

// inputTail reads the tools, context and resume entries of w into in.
func inputTail(in *runInput, w *wireInput) error {
	var err error
	if in.Tools, err = parseTools(w.Tools); err != nil {
		return err
	}
	if err := checkContext(w.Context); err != nil {
		return err
	}
	in.Resume, err = parseResume(w.Resume)
	return err
}

// decodeStrict decodes one JSON object and refuses trailing data.
func decodeStrict(b []byte, v any) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

func requiredString(raw json.RawMessage, name string) (string, error) {
	if len(raw) == 0 {
		return "", badInput("%s: required", name)
	}
	if s, ok := jsonscan.String(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
		return "", badInput("%s: must be a string", name)
	}
	return s, nil
}

func optionalString(raw json.RawMessage, name string) error {
	if len(raw) == 0 {
		return nil
	}
	_, err := requiredString(raw, name)
	return err
}

// checkID: ids are non-empty, at most maxIDLen bytes, without control
// characters (the thread id names a session in the store and in logs).
func checkID(name, v string) error {
	if v == "" {
		return badInput("%s: must not be empty", name)
	}
	if len(v) > maxIDLen {
		return badInput("%s: longer than %d bytes", name, maxIDLen)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return badInput("%s: contains a control character", name)
		}
	}
	return nil
}

type wireMessage struct {
	ID         json.RawMessage `json:"id"`
	Role       json.RawMessage `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID json.RawMessage `json:"toolCallId"`
	ToolCalls  json.RawMessage `json:"toolCalls"`
}

func parseMessage(raw json.RawMessage) (message, error) {
	var w wireMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return message{}, errors.New("must be an object")
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return message{}, err
	}
	return messageOf(&w)
}

// roles are the message roles by their JSON: a message's role, almost
// always written so, is not copied out of the body.
var roles = map[string]string{`"user"`: "user", `"assistant"`: "assistant", `"tool"`: "tool", `"system"`: "system",
	`"developer"`: "developer", `"reasoning"`: "reasoning", `"activity"`: "activity"}

// messageOf reads one decoded message.
func messageOf(w *wireMessage) (message, error) {
	var m message
	var err error
	if m.ID, err = requiredString(w.ID, "id"); err != nil {
		return m, err
	}
	if r, ok := roles[string(w.Role)]; ok { // no allocation: looked up in place
		m.Role = r
	} else if m.Role, err = requiredString(w.Role, "role"); err != nil {
		return m, err
	}
	switch m.Role {
	case "user", "tool":
		if len(w.Content) == 0 {
			return m, badInput("content: required for a message of role %s", m.Role)
		}
		if m.Text, m.Files, err = contentParts(w.Content); err != nil {
			return m, err
		}
		if m.Role == "tool" {
			if m.ToolCallID, err = requiredString(w.ToolCallID, "toolCallId"); err != nil {
				return m, err
			}
		}
	case "developer", "system", "reasoning":
		if _, err := requiredString(w.Content, "content"); err != nil {
			return m, err
		}
	case "assistant":
		if len(w.Content) > 0 && !isNull(w.Content) {
			if err := optionalString(w.Content, "content"); err != nil {
				return m, err
			}
		}
		if len(w.ToolCalls) > 0 && !isNull(w.ToolCalls) {
			var calls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			}
			if err := json.Unmarshal(w.ToolCalls, &calls); err != nil {
				return m, badInput("toolCalls: %v", err)
			}
			for _, c := range calls {
				m.CallIDs = append(m.CallIDs, c.ID)
			}
		}
	case "activity":
	default:
		return m, badInput("role: unknown role %q", m.Role)
	}
	return m, nil
}

// contentParts returns the text of a message content — a string, or the
// text parts of a content-part array joined by newlines — and its media
// parts (image, audio, video, document) as input files: a data source's
// base64 bytes, or an http(s) URL source (never fetched). A file source (a
// handle only its provider can read) is dropped, as the protocol lets a
// peer drop a part it cannot use; other parts carry no text and are
// skipped.
func contentParts(raw json.RawMessage) (string, []runtime.InputFile, error) {
	if s, ok := jsonscan.String(raw); ok {
		return s, nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && !isNull(raw) {
		return s, nil, nil
	}
	var parts []struct {
		Type   *string `json:"type"`
		Text   *string `json:"text"`
		Source *struct {
			Type     string `json:"type"`
			Value    string `json:"value"`
			MimeType string `json:"mimeType"`
		} `json:"source"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil || parts == nil {
		return "", nil, badInput("content: must be a string or an array of content parts")
	}
	var texts []string
	var files []runtime.InputFile
	for i, p := range parts {
		if p.Type == nil {
			return "", nil, badInput("content[%d].type: required", i)
		}
		switch *p.Type {
		case "text":
			if p.Text == nil {
				return "", nil, badInput("content[%d].text: required", i)
			}
			texts = append(texts, *p.Text)
		case "image", "audio", "video", "document":
			if p.Source == nil {
				return "", nil, badInput("content[%d].source: required", i)
			}
			src := p.Source
			switch src.Type {
			case "data":
				b, err := base64.StdEncoding.DecodeString(src.Value)
				if err != nil || src.MimeType == "" {
					return "", nil, badInput("content[%d].source: a data source needs base64 value and mimeType", i)
				}
				files = append(files, runtime.InputFile{MediaType: src.MimeType, Data: b})
			case "url":
				if !strings.HasPrefix(src.Value, "https://") && !strings.HasPrefix(src.Value, "http://") {
					return "", nil, badInput("content[%d].source.value: a url source must be http or https", i)
				}
				files = append(files, runtime.InputFile{MediaType: src.MimeType, URL: src.Value})
			case "file":
			default:
				return "", nil, badInput("content[%d].source.type: unknown source type %q", i, src.Type)
			}
		}
	}
	if len(files) > runtime.MaxInputFiles {
		return "", nil, badInput("content: %d media parts, at most %d", len(files), runtime.MaxInputFiles)
	}
	return strings.Join(texts, "\n"), files, nil
}

func parseTools(raw json.RawMessage) ([]tool, error) {
	if len(raw) == 0 || isNull(raw) || emptyArray(raw) {
		return nil, nil
	}
	var ws []struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, badInput("tools: must be an array of tools: %v", err)
	}
	out := make([]tool, 0, len(ws))
	for i, w := range ws {
		if w.Name == nil || *w.Name == "" {
			return nil, badInput("tools[%d].name: required", i)
		}
		out = append(out, tool{Name: *w.Name})
	}
	return out, nil
}

func checkContext(raw json.RawMessage) error {
	if len(raw) == 0 || isNull(raw) || emptyArray(raw) {
		return nil
	}
	var cs []struct {
		Description *string `json:"description"`
		Value       *string `json:"value"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		return badInput("context: must be an array of {description, value} strings: %v", err)
	}
	for i, c := range cs {
		if c.Description == nil || c.Value == nil {
			return badInput("context[%d]: description and value are required", i)
		}
	}
	return nil
}

func parseResume(raw json.RawMessage) ([]resumeEntry, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var ws []struct {
		InterruptID *string         `json:"interruptId"`
		Status      *string         `json:"status"`
		Payload     json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, badInput("resume: must be an array of {interruptId, status, payload?}: %v", err)
	}
	out := make([]resumeEntry, 0, len(ws))
	seen := map[string]bool{}
	for i, w := range ws {
		switch {
		case w.InterruptID == nil || *w.InterruptID == "":
			return nil, badInput("resume[%d].interruptId: required", i)
		case w.Status == nil || *w.Status != "resolved" && *w.Status != "cancelled":
			return nil, badInput(`resume[%d].status: must be "resolved" or "cancelled"`, i)
		case seen[*w.InterruptID]:
			return nil, badInput("resume[%d]: interrupt %q answered twice", i, *w.InterruptID)
		}
		seen[*w.InterruptID] = true
		e := resumeEntry{InterruptID: *w.InterruptID, Status: *w.Status}
		if len(w.Payload) > 0 && !isNull(w.Payload) {
			e.Payload = w.Payload
		}
		out = append(out, e)
	}
	return out, nil
}

// lastUserText returns the text of the last message when it is a user
// message: the new input of a run. ok is false otherwise.
func (in *runInput) lastUserText() (string, bool) {
	if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == "user" {
		return in.Messages[n-1].Text, true
	}
	return "", false
}

// toolAnswers returns the text of the tool messages by tool call id (the
// last one wins): frontend tool results. Only ids of pending interrupts are
// ever looked up, and those are fresh per interrupt, so older results in the
// history never answer a newer interrupt.
func (in *runInput) toolAnswers() map[string]string {
	out := map[string]string{}
	for _, m := range in.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text
		}
	}
	return out
}

// hasTool reports whether tools has one of that name.
func hasTool(tools []tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// emptyArray reports whether raw, a valid JSON value, is an empty array
// (what most clients send for no tools and no context): it needs no
// decoding.
func emptyArray(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}
