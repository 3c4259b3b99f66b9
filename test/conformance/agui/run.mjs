// AG-UI conformance of `agentc serve examples/support/support.agent`, checked
// with the official client: @ag-ui/client's HttpAgent, whose verifier and
// schema enforcement fail a run on any protocol violation.
//
//   AGENTC_URL    base URL of the running server (e.g. http://127.0.0.1:8080)
//   AGENTC_TOKEN  bearer token the server accepts
//   AGENTC_AGUI_PATH  the AG-UI endpoint path (default /agui)
//
// Exits non-zero when any check fails, naming it. spec/agui.md describes
// the server's side of every check.
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const base = process.env.AGENTC_URL;
const token = process.env.AGENTC_TOKEN;
if (!base || !token) {
  console.error("run.mjs: set AGENTC_URL and AGENTC_TOKEN");
  process.exit(2);
}
const endpoint = new URL(process.env.AGENTC_AGUI_PATH ?? "/agui", base).toString();

// The support example investigates TLS incidents; its scripted fixtures
// answer this question with a triage, a scan, a report and an approval
// interrupt.
const QUESTION = "prod.example.com fails with x509: certificate signed by unknown authority";
const TIMEOUT_MS = 30_000;

class CheckError extends Error {}
function check(cond, msg) {
  if (!cond) throw new CheckError(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function newAgent(threadId = randomUUID(), headers = {}) {
  return new HttpAgent({
    url: endpoint,
    threadId,
    headers: { Authorization: `Bearer ${token}`, ...headers },
  });
}

function userMessage(agent, content) {
  agent.addMessage({ id: randomUUID(), role: "user", content });
}

// run runs the agent once and records what the client saw. The verifier
// throws (and runAgent rejects) on any protocol violation.
async function run(agent, params = {}, onEvent) {
  const seen = { events: [], errors: [], finished: null, outcome: "success", interrupts: [] };
  const subscriber = {
    onEvent({ event }) {
      seen.events.push(event);
      onEvent?.(event, agent);
    },
    onRunErrorEvent({ event }) {
      seen.errors.push(event);
    },
    onRunFinishedEvent(p) {
      seen.finished = p.event;
      seen.outcome = p.outcome;
      if (p.outcome === "interrupt") seen.interrupts = p.interrupts;
    },
  };
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckError(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  try {
    await Promise.race([agent.runAgent({ runId: randomUUID(), ...params }, subscriber), timeout]);
  } finally {
    clearTimeout(timer);
  }
  return seen;
}

// runOK runs and requires a run that ended with RUN_FINISHED (any outcome)
// echoing the thread and run ids.
async function runOK(agent, params = {}) {
  const runId = params.runId ?? randomUUID();
  const seen = await run(agent, { ...params, runId });
  check(seen.errors.length === 0, `RUN_ERROR: ${JSON.stringify(seen.errors[0])}`);
  const first = seen.events[0];
  check(first?.type === "RUN_STARTED", `first event is ${first?.type}, not RUN_STARTED`);
  check(first.threadId === agent.threadId && first.runId === runId, `RUN_STARTED ids ${first.threadId}/${first.runId}, sent ${agent.threadId}/${runId}`);
  check(seen.finished, "no RUN_FINISHED");
  check(seen.finished.threadId === agent.threadId && seen.finished.runId === runId, "RUN_FINISHED does not echo the ids");
  for (const e of seen.events) check(Number.isInteger(e.timestamp ?? 0), `${e.type} timestamp ${e.timestamp} is not an integer`);
  return seen;
}

// answer builds a resume payload from an interrupt's response schema.
function answer(schema) {
  if (!schema || typeof schema !== "object") return true;
  switch (schema.type) {
    case "boolean":
      return true;
    case "string":
      return schema.enum?.[0] ?? "yes";
    case "integer":
    case "number":
      return 1;
    case "array":
      return [];
    case "object": {
      const out = {};
      for (const [k, s] of Object.entries(schema.properties ?? {})) {
        if (k === "approved") out[k] = true;
        else if ((schema.required ?? []).includes(k)) out[k] = answer(s);
      }
      return out;
    }
  }
  return true;
}

// resolveAll answers the agent's open interrupts until its run completes.
async function resolveAll(agent, seen) {
  for (let round = 0; seen.outcome === "interrupt" && round < 4; round++) {
    const resume = seen.interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: answer(i.responseSchema) }));
    seen = await runOK(agent, { resume });
  }
  check(seen.outcome === "success", `the run did not complete after resuming: ${seen.outcome}`);
  return seen;
}

function ids(seen, type, key) {
  return seen.events.filter((e) => e.type === type).map((e) => e[key]);
}

const checks = {
  // One streamed run: steps, text, tool calls, state, and an interrupt at
  // the approval (the example's graph ends on it).
  async "streaming run"() {
    const agent = newAgent();
    userMessage(agent, QUESTION);
    const seen = await runOK(agent);
    const types = new Set(seen.events.map((e) => e.type));
    for (const t of ["STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_SNAPSHOT", "STATE_DELTA"]) {
      check(types.has(t), `no ${t} event`);
    }
    check(agent.messages.some((m) => m.role === "assistant" && (m.content ?? "").length > 0), "no assistant text reached the client's messages");
    check(agent.state && typeof agent.state === "object" && "report" in agent.state, `the client's state has no report: ${JSON.stringify(agent.state)}`);
  },

  // The approval interrupt ends the run with an interrupt outcome; the
  // resume continues the same run to completion.
  async "interrupt and resume"() {
    const agent = newAgent();
    userMessage(agent, QUESTION);
    const seen = await runOK(agent);
    check(seen.outcome === "interrupt", `expected an interrupt outcome (the example asks "Publish this report?"), got ${seen.outcome}`);
    const it = seen.interrupts[0];
    check(it.id && it.reason && it.message, `interrupt without id/reason/message: ${JSON.stringify(it)}`);
    check(it.responseSchema?.type === "object", `interrupt without an object responseSchema: ${JSON.stringify(it)}`);
    check(agent.pendingInterrupts.length === seen.interrupts.length, "the client does not track the pending interrupts");
    await resolveAll(agent, seen);
    check(agent.pendingInterrupts.length === 0, "interrupts still pending after the resume");
  },

  // Several runs on one thread: same thread id, fresh run and message ids,
  // the history grows.
  async "multi-turn continuity"() {
    const agent = newAgent();
    userMessage(agent, QUESTION);
    const first = await resolveAll(agent, await runOK(agent));
    const before = agent.messages.length;
    userMessage(agent, "api.example.com: connection reset by peer");
    const second = await runOK(agent);
    check(second.events[0].threadId === first.events[0].threadId, "the thread id changed");
    const a = new Set(ids(first, "TEXT_MESSAGE_START", "messageId"));
    for (const id of ids(second, "TEXT_MESSAGE_START", "messageId")) check(!a.has(id), `message id ${id} reused across runs`);
    const calls = new Set(ids(first, "TOOL_CALL_START", "toolCallId"));
    for (const id of ids(second, "TOOL_CALL_START", "toolCallId")) check(!calls.has(id), `tool call id ${id} reused across runs`);
    check(agent.messages.length > before, "the second run added no messages");
  },

  // Independent threads run at the same time.
  async "concurrent runs"() {
    const agents = Array.from({ length: 4 }, () => newAgent());
    agents.forEach((a) => userMessage(a, QUESTION));
    const results = await Promise.all(agents.map((a) => runOK(a)));
    const runIds = new Set(results.map((s) => s.events[0].runId));
    check(runIds.size === agents.length, "concurrent runs share run ids");
    await Promise.all(agents.map((a, i) => resolveAll(a, results[i])));
  },

  // The client aborts mid-stream; the server stays healthy and the thread
  // takes the next run.
  async "abort"() {
    const agent = newAgent();
    userMessage(agent, QUESTION);
    const seen = await run(agent, {}, (e, ag) => {
      if (e.type === "RUN_STARTED") ag.abortRun();
    });
    check(seen.events[0]?.type === "RUN_STARTED", "no RUN_STARTED before the abort");
    check(!agent.isRunning, "the agent still runs after the abort");
    // The aborted run may already have paused before the abort landed:
    // then the client saw the interrupt and must cancel it.
    userMessage(agent, QUESTION);
    for (let attempt = 0; ; attempt++) {
      const resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "cancelled" }));
      const next = await run(agent, resume.length ? { resume } : {});
      if (next.errors.length && next.errors[0].code === "thread_busy" && attempt < 50) {
        await sleep(100); // the server is still settling the aborted run
        continue;
      }
      check(next.errors.length === 0, `the run after the abort failed: ${JSON.stringify(next.errors[0])}`);
      check(next.finished, "the run after the abort did not finish");
      break;
    }
  },

  // An abort loop: 200 runs, each aborted on a different kind of event
  // (RUN_FINISHED and the interrupt included: the client may abort while
  // the end of the response is on its way), each settling within 1 s with
  // the agent no longer running.
  async "abort loop"() {
    const at = ["RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TOOL_CALL_RESULT",
      "STATE_DELTA", "CUSTOM", "RUN_FINISHED"];
    let slowest = 0;
    for (let i = 0; i < 200; i++) {
      const agent = newAgent();
      userMessage(agent, QUESTION);
      const on = at[i % at.length];
      let aborted = 0;
      const running = agent.runAgent({ runId: randomUUID() }, {
        onEvent({ event }) {
          if (!aborted && event.type === on) {
            aborted = performance.now();
            agent.abortRun();
          }
        },
      });
      let timer;
      const settled = await Promise.race([
        running.then(() => true, () => true),
        new Promise((r) => { timer = setTimeout(() => r(false), TIMEOUT_MS); }),
      ]);
      clearTimeout(timer);
      const took = aborted ? performance.now() - aborted : 0;
      check(settled && took < 1000, `try ${i}: runAgent aborted on ${on} did not settle within 1 s (${settled ? took.toFixed(0) + " ms" : "not at all"})`);
      check(!agent.isRunning, `try ${i}: the agent still runs after the abort on ${on}`);
      slowest = Math.max(slowest, took);
    }
    console.log(`     abort loop: 200 runs, the slowest abort settled in ${slowest.toFixed(0)} ms`);
  },

  // A user message with an image part (inline data) and a document by URL
  // runs: the media parts are the run's files (stored as artifacts).
  async "media parts"() {
    const agent = newAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: [
      { type: "text", text: QUESTION },
      { type: "image", source: { type: "data", value: "iVBORw0KGgo=", mimeType: "image/png" } },
      { type: "document", source: { type: "url", value: "https://example.com/chain.pem", mimeType: "application/x-pem-file" } },
    ] });
    const seen = await runOK(agent);
    check(seen.outcome === "interrupt", `the run with media parts did not reach the approval: ${seen.outcome}`);
  },

  // Errors: a malformed body is a 400 JSON error before any stream; an
  // unknown interrupt is a RUN_ERROR; a bad token is refused; the server
  // keeps serving.
  async "errors"() {
    const resp = await fetch(endpoint, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "text/event-stream" },
      body: '{"threadId": 7, "messages": "no"',
    });
    check(resp.status === 400, `malformed body: HTTP ${resp.status}, want 400`);
    const body = await resp.json();
    check(typeof body?.error?.message === "string", `malformed body: no JSON error: ${JSON.stringify(body)}`);

    const agent = newAgent();
    userMessage(agent, QUESTION);
    const seen = await run(agent, { resume: [{ interruptId: "no-such-interrupt", status: "resolved", payload: { approved: true } }] });
    check(seen.errors.length === 1, `an unknown interrupt gave no RUN_ERROR: ${seen.events.map((e) => e.type)}`);
    check(!seen.finished, "RUN_FINISHED after RUN_ERROR");

    const stranger = newAgent(randomUUID(), { Authorization: "Bearer not-the-token" });
    userMessage(stranger, QUESTION);
    let refused = false;
    try {
      await stranger.runAgent({ runId: randomUUID() });
    } catch (err) {
      refused = /HTTP 40[13]/.test(String(err?.message ?? err));
    }
    check(refused, "a wrong token was not refused with 401/403");

    const good = newAgent();
    userMessage(good, QUESTION);
    await runOK(good);
  },
};

// The client logs protocol warnings ([ag-ui][enforce] ..., [ag-ui][compat]
// ...) instead of failing: count them as failures too.
const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  const s = args.map(String).join(" ");
  if (s.includes("[ag-ui]") || s.includes("Failed to apply state patch")) warnings.push(s);
  warn(...args);
};
const error = console.error;
console.error = (...args) => {
  if (!String(args[0]).startsWith("Agent execution failed")) error(...args);
};

let passed = 0;
let failed = 0;
for (const [name, fn] of Object.entries(checks)) {
  warnings.length = 0;
  try {
    await fn();
    check(warnings.length === 0, `client warnings: ${warnings.join(" | ")}`);
    passed++;
    console.log(`ok   agui: ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL agui: ${name}: ${err instanceof CheckError ? err.message : err?.stack ?? err}`);
  }
}
console.log(`agui: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
