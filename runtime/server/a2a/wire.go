package a2a

// The data model on the wire, in both protocol versions (spec/a2a.md). The
// task record keeps one version-neutral form (the 1.0 shapes with plain
// state and role names); encode1 and encode03 render it for a request's
// version, and decodeMessage reads either version's Message.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Version is a negotiated protocol version.
type Version uint8

// Versions served.
const (
	V03 Version = iota + 1 // no A2A-Version header
	V10                    // A2A-Version: 1.0
)

func (v Version) String() string {
	if v == V10 {
		return "1.0"
	}
	return "0.3"
}

// state is a task state in the record: the 0.3 names, which the 1.0 enum
// spells TASK_STATE_<UPPER_SNAKE>.
type state string

const (
	stateSubmitted     state = "submitted"
	stateWorking       state = "working"
	stateInputRequired state = "input-required"
	stateCompleted     state = "completed"
	stateFailed        state = "failed"
	stateCanceled      state = "canceled"
	stateRejected      state = "rejected"
	stateAuthRequired  state = "auth-required"
)

// terminal reports whether no message can continue a task in state s.
func (s state) terminal() bool {
	return s == stateCompleted || s == stateFailed || s == stateCanceled || s == stateRejected
}

// enum1 is the 1.0 ProtoJSON name of s.
func (s state) enum1() string {
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

// parseState1 reads a 1.0 TaskState name; "" and TASK_STATE_UNSPECIFIED are
// the zero state (no filter).
func parseState1(s string) (state, bool) {
	if s == "" || s == "TASK_STATE_UNSPECIFIED" {
		return "", true
	}
	for _, st := range []state{stateSubmitted, stateWorking, stateInputRequired, stateCompleted, stateFailed,
		stateCanceled, stateRejected, stateAuthRequired} {
		if st.enum1() == s {
			return st, true
		}
	}
	return "", false
}

// Part is one piece of content: exactly one of Text, Raw, URL and Data.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// DataPart returns a JSON data part.
func DataPart(v json.RawMessage) Part { return Part{Data: v, MediaType: "application/json"} }

// Message is one message; Role is "user" or "agent".
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// Artifact is one output of a task.
type Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []Part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// ---- decoding requests -------------------------------------------------

// wireMessage accepts both versions' Message; decodeMessage checks it
// against the request's version.
type wireMessage struct {
	Kind             string          `json:"kind"`
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId"`
	TaskID           string          `json:"taskId"`
	Role             string          `json:"role"`
	Parts            []wirePart      `json:"parts"`
	Metadata         json.RawMessage `json:"metadata"`
	Extensions       []string        `json:"extensions"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds"`
}

type wirePart struct {
	// 0.3
	Kind string    `json:"kind"`
	File *wireFile `json:"file"`
	// both
	Text     *string         `json:"text"`
	Data     json.RawMessage `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
	// 1.0
	Raw       *string `json:"raw"`
	URL       *string `json:"url"`
	Filename  string  `json:"filename"`
	MediaType string  `json:"mediaType"`
}

type wireFile struct {
	Bytes    *string `json:"bytes"`
	URI      *string `json:"uri"`
	MimeType string  `json:"mimeType"`
	Name     string  `json:"name"`
}

// decodeMessage validates a client's message in version v and returns it in
// the record's form. Errors are -32602 with the offending field.
func decodeMessage(v Version, w *wireMessage) (Message, *rpcError) {
	bad := func(field, format string, args ...any) (Message, *rpcError) {
		return Message{}, invalidParams(field, fmt.Sprintf(format, args...))
	}
	if w == nil {
		return bad("message", "message is required")
	}
	if w.MessageID == "" {
		return bad("message.messageId", "messageId is required")
	}
	switch {
	case v == V10 && w.Role == "ROLE_USER", v == V03 && w.Role == "user":
	default:
		want := map[Version]string{V10: "ROLE_USER", V03: "user"}[v]
		return bad("message.role", "role must be %q, got %q", want, w.Role)
	}
	if v == V03 && w.Kind != "" && w.Kind != "message" {
		return bad("message.kind", "kind must be \"message\", got %q", w.Kind)
	}
	if len(w.Parts) == 0 {
		return bad("message.parts", "at least one part is required")
	}
	m := Message{MessageID: w.MessageID, ContextID: w.ContextID, TaskID: w.TaskID, Role: "user",
		Metadata: w.Metadata, Extensions: w.Extensions, ReferenceTaskIDs: w.ReferenceTaskIDs}
	for i, wp := range w.Parts {
		field := fmt.Sprintf("message.parts[%d]", i)
		p, err := decodePart(v, wp)
		if err != "" {
			return bad(field, "%s", err)
		}
		m.Parts = append(m.Parts, p)
	}
	return m, nil
}

func decodePart(v Version, w wirePart) (Part, string) {
	p := Part{Metadata: w.Metadata}
	if v == V03 {
		switch w.Kind {
		case "text":
			if w.Text == nil {
				return p, "a text part needs text"
			}
			p.Text = w.Text
		case "data":
			if len(w.Data) == 0 || w.Data[0] != '{' {
				return p, "a data part needs a data object"
			}
			p.Data, p.MediaType = w.Data, "application/json"
		case "file":
			if w.File == nil || (w.File.Bytes == nil) == (w.File.URI == nil) {
				return p, "a file part needs exactly one of file.bytes and file.uri"
			}
			p.MediaType, p.Filename = w.File.MimeType, w.File.Name
			if w.File.URI != nil {
				p.URL = *w.File.URI
			} else {
				b, err := base64.StdEncoding.DecodeString(*w.File.Bytes)
				if err != nil {
					return p, "file.bytes is not base64"
				}
				p.Raw = b
			}
		default:
			return p, fmt.Sprintf("unknown part kind %q (text, file or data)", w.Kind)
		}
		return p, ""
	}
	n := 0
	for _, set := range []bool{w.Text != nil, w.Raw != nil, w.URL != nil, len(w.Data) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return p, "a part has exactly one of text, raw, url and data"
	}
	p.Filename, p.MediaType = w.Filename, w.MediaType
	switch {
	case w.Text != nil:
		p.Text = w.Text
	case w.Raw != nil:
		b, err := base64.StdEncoding.DecodeString(*w.Raw)
		if err != nil {
			return p, "raw is not base64"
		}
		p.Raw = b
	case w.URL != nil:
		p.URL = *w.URL
	default:
		p.Data = w.Data
	}
	return p, ""
}

// ---- encoding responses ------------------------------------------------

// timestamp renders t as the protocols want it: ISO 8601 UTC with
// milliseconds.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// The shapes both versions share, over each version's message, status
// and artifact types; Kind is 0.3's discriminator (empty, so left out, in
// 1.0).

type wireStatus[M any] struct {
	State     string `json:"state"`
	Message   *M     `json:"message,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

type wireTask[S, A, M any] struct {
	Kind      string          `json:"kind,omitempty"`
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    S               `json:"status"`
	Artifacts []A             `json:"artifacts,omitempty"`
	History   []M             `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

type wireArtifactUpdate[A any] struct {
	Kind      string `json:"kind,omitempty"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Artifact  A      `json:"artifact"`
	Append    bool   `json:"append,omitempty"`
	LastChunk bool   `json:"lastChunk,omitempty"`
}

// 1.0 shapes: ROLE_ and TASK_STATE_ enums, no kinds.

type status1 = wireStatus[message1]

// message1 is a 1.0 Message: the record's fields, with the role as
// ROLE_USER or ROLE_AGENT.
type message1 Message

type task1 = wireTask[status1, Artifact, message1]

type statusUpdate1 struct {
	TaskID    string  `json:"taskId"`
	ContextID string  `json:"contextId"`
	Status    status1 `json:"status"`
}

type artifactUpdate1 = wireArtifactUpdate[Artifact]

// streamResponse1 is a 1.0 StreamResponse (and, with Task or Message only,
// a SendMessageResponse): exactly one member is set.
type streamResponse1 struct {
	Task           *task1           `json:"task,omitempty"`
	Message        *message1        `json:"message,omitempty"`
	StatusUpdate   *statusUpdate1   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *artifactUpdate1 `json:"artifactUpdate,omitempty"`
}

func encodeMessage1(m *Message) *message1 {
	if m == nil {
		return nil
	}
	out := message1(*m)
	out.Role = "ROLE_USER"
	if m.Role == "agent" {
		out.Role = "ROLE_AGENT"
	}
	return &out
}

func encodeStatus1(s taskStatus) status1 {
	return status1{State: s.State.enum1(), Message: encodeMessage1(s.Message), Timestamp: timestamp(s.Time)}
}

func encodeTask1(t *Task) *task1 {
	out := &task1{ID: t.ID, ContextID: t.ContextID, Status: encodeStatus1(t.Status), Artifacts: t.Artifacts, Metadata: t.Metadata}
	for i := range t.History {
		out.History = append(out.History, *encodeMessage1(&t.History[i]))
	}
	return out
}

// 0.3 shapes: kind discriminators, lowercase states and roles, file parts.

type part03 struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *file03         `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

type file03 struct {
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type message03 struct {
	Kind             string          `json:"kind"`
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []part03        `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

type status03 = wireStatus[message03]

type artifact03 struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []part03        `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

type task03 = wireTask[status03, artifact03, message03]

type statusUpdate03 struct {
	Kind      string   `json:"kind"`
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Status    status03 `json:"status"`
	Final     bool     `json:"final"`
}

type artifactUpdate03 = wireArtifactUpdate[artifact03]

// encodePart03 renders p as a 0.3 part. 0.3 data parts hold an object:
// any other JSON value is wrapped as {"value": v}.
func encodePart03(p Part) part03 {
	out := part03{Metadata: p.Metadata}
	switch {
	case p.Text != nil:
		out.Kind, out.Text = "text", p.Text
	case len(p.Data) > 0:
		out.Kind, out.Data = "data", p.Data
		if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' {
			out.Data = append(append([]byte(`{"value":`), d...), '}')
		}
	default:
		out.Kind = "file"
		out.File = &file03{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
		if p.Raw != nil {
			out.File.Bytes = base64.StdEncoding.EncodeToString(p.Raw)
		}
	}
	return out
}

func encodeParts03(ps []Part) []part03 {
	out := make([]part03, 0, len(ps))
	for _, p := range ps {
		out = append(out, encodePart03(p))
	}
	return out
}

func encodeMessage03(m *Message) *message03 {
	if m == nil {
		return nil
	}
	return &message03{Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: m.Role,
		Parts: encodeParts03(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs}
}

func encodeStatus03(s taskStatus) status03 {
	return status03{State: string(s.State), Message: encodeMessage03(s.Message), Timestamp: timestamp(s.Time)}
}

func encodeArtifact03(a Artifact) artifact03 {
	return artifact03{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: encodeParts03(a.Parts), Metadata: a.Metadata}
}

func encodeTask03(t *Task) *task03 {
	out := &task03{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: encodeStatus03(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, encodeArtifact03(a))
	}
	for i := range t.History {
		out.History = append(out.History, *encodeMessage03(&t.History[i]))
	}
	return out
}

// encodeTask renders a task result in version v.
func encodeTask(v Version, t *Task) any {
	if v == V10 {
		return encodeTask1(t)
	}
	return encodeTask03(t)
}

// encodeSendResult renders a SendMessage result: 1.0 wraps the task.
func encodeSendResult(v Version, t *Task) any {
	if v == V10 {
		return streamResponse1{Task: encodeTask1(t)}
	}
	return encodeTask03(t)
}

// encodeUpdate renders one stream event in version v.
func encodeUpdate(v Version, t *Task, u update) any {
	switch {
	case v == V10 && u.Task != nil:
		return streamResponse1{Task: encodeTask1(u.Task)}
	case v == V10 && u.Artifact != nil:
		return streamResponse1{ArtifactUpdate: &artifactUpdate1{TaskID: t.ID, ContextID: t.ContextID, Artifact: *u.Artifact, LastChunk: true}}
	case v == V10:
		return streamResponse1{StatusUpdate: &statusUpdate1{TaskID: t.ID, ContextID: t.ContextID, Status: encodeStatus1(*u.Status)}}
	case u.Task != nil:
		return encodeTask03(u.Task)
	case u.Artifact != nil:
		return artifactUpdate03{Kind: "artifact-update", TaskID: t.ID, ContextID: t.ContextID, Artifact: encodeArtifact03(*u.Artifact), LastChunk: true}
	default:
		return statusUpdate03{Kind: "status-update", TaskID: t.ID, ContextID: t.ContextID, Status: encodeStatus03(*u.Status), Final: u.Final}
	}
}
