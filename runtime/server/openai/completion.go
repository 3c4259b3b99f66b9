package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentc/agentc/internal/jsonscan"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
)

// completion turns one run's events into a chat completion.
//
// The answer: a completed run's output (a string as it is, anything else as
// JSON). While streaming, the text the answer nodes' models stream (the llm
// or agent nodes writing the runnable's output field) is sent as it comes;
// when none was streamed, the output is sent at the end in one delta. A run
// that stops at an interrupt answers with the output field's current value
// (the draft) followed by the interrupts' prompts; the next request in the
// session answers them.
type completion struct {
	h            *Handler
	id           string
	created      int64
	includeUsage bool
	user         string // who the request is for (client tool calls are recorded under them)
	session      string

	answer   *answerInfo
	streamed bool            // answer text was streamed
	draft    json.RawMessage // the output field's latest value (read by valueText when the answer needs it)
	usage    runtime.Usage   // the answer's invocations', from their run_finished
	fin      *runtime.Event
	failure  *runtime.ErrorInfo
	said     string // the text of the answer nodes' latest model reply
}

// observe records what an event tells about the answer; it returns the
// text to stream, if any.
func (c *completion) observe(e *runtime.Event) string {
	switch e.Kind {
	case runtime.EventRunStarted:
		c.answer = c.h.answerFor(e.Runnable)
	case runtime.EventModelDelta:
		if c.answer != nil && c.answer.nodes[e.Node] && e.Text != "" {
			c.streamed = true
			return e.Text
		}
	case runtime.EventModelResponse:
		if c.answer != nil && c.answer.nodes[e.Node] {
			c.said = e.Text
		}
	case runtime.EventStateDelta:
		if c.answer != nil && c.answer.field != "" && e.Node == "" {
			for _, ch := range e.Changes {
				if ch.Field == c.answer.field && ch.Op == "set" {
					c.draft = ch.Value
				}
			}
		}
	case runtime.EventRunError:
		c.failure = e.Error
	case runtime.EventRunFinished:
		c.fin = e
		if u := e.Usage; u != nil {
			// The Runner's total of an invocation; a replayed answer that
			// covers several adds theirs.
			c.usage.PromptTokens += u.PromptTokens
			c.usage.CompletionTokens += u.CompletionTokens
			c.usage.CachedTokens += u.CachedTokens
		}
	}
	return ""
}

// valueText is a JSON value as answer text: a string as it is, anything
// else as its JSON.
func valueText(v json.RawMessage) string {
	if s, ok := jsonscan.String(bytes.TrimSpace(v)); ok {
		return s
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(v)); t != "null" {
		return t
	}
	return ""
}

// prompts is the text of a run's pending interrupts.
func prompts(in []runtime.InterruptInfo) string {
	var b strings.Builder
	for i, p := range in {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Prompt)
	}
	return b.String()
}

// collect reads the run to its end.
func (c *completion) collect(run *server.Run) {
	for e := range run.Events {
		c.observe(e)
	}
}

// toolCalls are the client tool calls the run paused on (none: it did not).
func (c *completion) toolCalls() []runtime.ToolCall {
	if c.fin == nil || c.fin.Status != runtime.StatusInterrupted {
		return nil
	}
	return pendingCalls(c.fin.Interrupts)
}

// handOut records where the paused run's client tool calls wait, so that
// their results find it without a session header; false (logged) when the
// store refused.
func (c *completion) handOut(ctx context.Context, calls []runtime.ToolCall) bool {
	if err := c.h.recordToolCalls(context.WithoutCancel(ctx), c.user, c.session, c.fin.Run, calls); err != nil {
		c.h.logger().Error("openai: record tool calls", "run", c.fin.Run, "err", err)
		return false
	}
	return true
}

// content is the whole answer of a finished run (non-streaming).
func (c *completion) content() string {
	if len(c.toolCalls()) > 0 {
		return c.said
	}
	switch c.fin.Status {
	case runtime.StatusCompleted:
		return valueText(c.fin.Output)
	case runtime.StatusInterrupted:
		return joinParas(valueText(c.draft), prompts(c.fin.Interrupts))
	case runtime.StatusNeedsDecision:
		return joinParas(valueText(c.draft), runtime.DecisionPrompts(c.fin.Decisions))
	}
	return ""
}

func joinParas(a, b string) string {
	a = strings.TrimRight(a, "\n")
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// runFailure is the error response of a run that did not end with an
// answer; ok is false when it did.
func (c *completion) runFailure(ctx context.Context) (status int, code, msg string, ok bool) {
	if c.fin == nil {
		if ctx.Err() != nil {
			return 499, "canceled", "The request was canceled", true
		}
		// The Runner drops the events of runs it cancels at shutdown.
		return http.StatusServiceUnavailable, "run_canceled", "The run was canceled by a server shutdown; retry later", true
	}
	switch c.fin.Status {
	case runtime.StatusCompleted, runtime.StatusInterrupted, runtime.StatusNeedsDecision:
		// A pending decision is asked like an interrupt (spec/serve.md).
		return 0, "", "", false
	case runtime.StatusCanceled:
		return http.StatusServiceUnavailable, "run_canceled", "The run was canceled (time limit or server shutdown); run " + c.fin.Run + " can be resumed", true
	}
	msg = "The run failed"
	if c.failure != nil {
		msg += ": " + c.failure.Kind + ": " + c.failure.Message
	} else if c.fin.Error != nil {
		msg += ": " + c.fin.Error.Kind + ": " + c.fin.Error.Message
	}
	return http.StatusInternalServerError, "run_failed", msg, true
}

// respond writes the non-streaming response.
func (c *completion) respond(ctx context.Context, w http.ResponseWriter) {
	if status, code, msg, failed := c.runFailure(ctx); failed {
		if ctx.Err() != nil {
			return // the client is gone
		}
		if c.fin != nil {
			w.Header().Set(StatusHeader, string(c.fin.Status))
		}
		typ := "server_error"
		if status < 500 {
			typ = "invalid_request_error"
		}
		c.h.fail(w, status, typ, "", code, msg)
		return
	}
	buf := getBuf()
	b := append(*buf, `{"id":`...)
	b = appendString(b, c.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, c.h.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	finish := "stop"
	if calls := c.toolCalls(); len(calls) > 0 {
		if !c.handOut(ctx, calls) {
			putBuf(buf, b)
			c.h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not record the tool calls")
			return
		}
		b = appendNullable(b, c.content())
		b = append(b, `,"tool_calls":`...)
		b = appendToolCalls(b, calls, false)
		finish = "tool_calls"
	} else if out := bytes.TrimSpace(c.fin.Output); c.fin.Status == runtime.StatusCompleted && canonicalString(out) {
		b = append(b, out...) // the output string as appendString(b, c.content()) writes it
	} else {
		b = appendString(b, c.content())
	}
	b = append(b, `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":`...)
	b = appendString(b, finish)
	b = append(b, `}],"usage":`...)
	b = c.appendUsage(b)
	b = append(b, `,"system_fingerprint":`...)
	b = appendString(b, c.h.fingerprint)
	b = append(b, "}\n"...)
	setHeaders(w.Header(), "Content-Type", "application/json", StatusHeader, string(c.fin.Status))
	_, _ = w.Write(b)
	putBuf(buf, b)
}

func (c *completion) appendUsage(b []byte) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.usage.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c.usage.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.usage.PromptTokens+c.usage.CompletionTokens), 10)
	if c.usage.CachedTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(c.usage.CachedTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// stream writes the streaming response: the role delta, the answer's
// deltas, one finish chunk, the usage chunk when asked, [DONE]. A run that
// fails after the stream started ends with an error frame and [DONE].
func (c *completion) stream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, r *http.Request, run *server.Run) {
	// Frames are flushed whenever no further event is ready and the run is
	// not writing to the store (server.Run.Quiet: a burst of events, the
	// role chunk with the first deltas when they follow at once, costs one
	// write to the socket; a lone frame goes out at once, or when the
	// run's write ends), each flush bounded by the slow-client write
	// timeout.
	out := server.NewSSE(w, r, c.h.b.Clock, c.h.b.Limits.WithDefaults().WriteTimeout)
	out.ClearWriteDeadline() // its watchdog bounds each flush: no deadline per write
	out.Start()
	// Every chunk is written in one buffer whose start, the members all
	// the chunks share, is encoded once: a chunk is choice's start, its
	// delta appended, then send.
	chunk := c.appendChunkPrefix(make([]byte, 0, 512))
	head := len(chunk)
	choice := func() []byte { return append(chunk[:head], `"choices":[{"index":0,"delta":`...) }
	send := func(b []byte, finish string) {
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		b = appendNullable(b, finish)
		b = append(b, "}]"...)
		if c.includeUsage {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, '}')
		chunk = b // the buffer as it grew
		out.Frame(b)
	}
	pending := false // frames written since the last flush
	text := func(s string) {
		if s != "" {
			b := append(choice(), `{"content":`...)
			b = appendString(b, s)
			send(append(b, '}'), "")
			pending = true
		}
	}
	flush := func() {
		switch {
		case !pending:
		case run.Quiet():
			out.Flush()
			pending = false
		case run.Writing():
			out.Hold() // until the write ends: nothing is sent meanwhile
		}
	}
	send(append(choice(), `{"role":"assistant","content":""}`...), "")
	pending = true
	flush()
events:
	for {
		select {
		case e, open := <-run.Events:
			if !open {
				break events
			}
			if out.Err() != nil {
				cancel() // the client is gone or too slow: stop the run
				continue
			}
			text(c.observe(e))
			if e.Kind == runtime.EventRunFinished {
				continue // the events end here: what is pending goes with the body's end (End)
			}
		case <-run.WriteEnded(): // frames held for a write of the run's
		}
		flush()
	}
	defer out.End() // the last frames go with the body's end: one write
	if out.Err() != nil || ctx.Err() != nil {
		return
	}
	if status, code, msg, failed := c.runFailure(ctx); failed {
		typ := "server_error"
		if status < 500 {
			typ = "invalid_request_error"
		}
		c.h.b.Metrics.Error(Protocol, code)
		b := append([]byte(`{"error":{"message":`), appendString(nil, msg)...)
		b = append(b, `,"type":`...)
		b = appendString(b, typ)
		b = append(b, `,"param":null,"code":`...)
		b = appendString(b, code)
		out.Frame(append(b, "}}"...))
		out.Frame([]byte("[DONE]"))
		return
	}
	finish := "stop"
	switch calls := c.toolCalls(); {
	case len(calls) > 0:
		if !c.streamed {
			text(c.said)
		}
		if !c.handOut(ctx, calls) {
			c.h.b.Metrics.Error(Protocol, "internal")
			out.Frame([]byte(`{"error":{"message":"could not record the tool calls","type":"server_error","param":null,"code":"internal"}}`))
			out.Frame([]byte("[DONE]"))
			return
		}
		send(append(appendToolCalls(append(choice(), `{"tool_calls":`...), calls, true), '}'), "")
		finish = "tool_calls"
	case c.fin.Status == runtime.StatusCompleted:
		if !c.streamed {
			text(valueText(c.fin.Output))
		}
	case c.fin.Status == runtime.StatusInterrupted, c.fin.Status == runtime.StatusNeedsDecision:
		asked := prompts(c.fin.Interrupts)
		if c.fin.Status == runtime.StatusNeedsDecision {
			asked = runtime.DecisionPrompts(c.fin.Decisions)
		}
		if c.streamed {
			text("\n\n" + asked)
		} else {
			text(joinParas(valueText(c.draft), asked))
		}
	}
	send(append(choice(), `{}`...), finish)
	if c.includeUsage {
		b := append(chunk[:head], `"choices":[],"usage":`...)
		b = c.appendUsage(b)
		out.Frame(append(b, '}'))
	}
	out.Frame([]byte("[DONE]"))
}

// appendChunkPrefix appends the part every chunk of this completion shares.
func (c *completion) appendChunkPrefix(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, c.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, c.h.model)
	b = append(b, `,"system_fingerprint":`...)
	b = appendString(b, c.h.fingerprint)
	return append(b, ',')
}
