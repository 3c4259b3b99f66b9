// A2A conformance: drives a running `agentc serve examples/support/support.agent`
// through the official A2A JavaScript SDK (@a2a-js/sdk, pinned in
// package-lock.json).
//
//   AGENTC_URL    base URL of the server, e.g. http://127.0.0.1:8080
//   AGENTC_TOKEN  bearer token for the JSON-RPC calls (the card is public)
//
// A2A 1.0 goes through the SDK's Client (card resolution, JsonRpcTransport).
// A2A 0.3 goes through the SDK's v0.3 compatibility client
// (LegacyJsonRpcTransport, which sends `A2A-Version: 0.3`) and through raw
// fetch calls without any A2A-Version header, which a server must read as 0.3.
//
// The server replays the support example's first test fixtures (no
// OPENAI_API_KEY): a certificate incident is triaged, scanned, written up,
// and waits at the `approve` interrupt (input-required) until a follow-up
// message answers {"approved": true}.
//
// Exits 0 when every check passes; otherwise prints each failure and exits 1.

import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, Client } from "@a2a-js/sdk/client";
import { TaskState, Message, SendMessageRequest, GetTaskRequest, CancelTaskRequest, ListTasksRequest } from "@a2a-js/sdk";
import { LegacyJsonRpcTransport, isLegacyAgentCard, parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";

const BASE = (process.env.AGENTC_URL ?? "").replace(/\/+$/, "");
const TOKEN = process.env.AGENTC_TOKEN ?? "";
if (!BASE || !TOKEN) {
  console.error("run.mjs: set AGENTC_URL (base URL of a running agentc serve) and AGENTC_TOKEN (a bearer token it accepts)");
  process.exit(2);
}

const INCIDENT = "prod.example.com fails with x509: certificate signed by unknown authority";
const STEP_TIMEOUT_MS = 60_000;

// authFetch adds the bearer token to every JSON-RPC call.
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers ?? {});
  headers.set("Authorization", `Bearer ${TOKEN}`);
  return fetch(url, { ...init, headers });
};

const failures = [];
let seq = 0;

async function step(name, fn) {
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS); }),
    ]);
    console.log(`ok   ${name}`);
  } catch (err) {
    failures.push(name);
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  } finally {
    clearTimeout(timer);
  }
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const stateName = (s) => TaskState[s] ?? String(s);

function expectState(task, want, what) {
  check(task && task.status, `${what}: no task status in ${JSON.stringify(task)}`);
  check(task.status.state === want, `${what}: state ${stateName(task.status.state)}, want ${stateName(want)}`);
}

// userMessage builds a 1.0 Message in the SDK's representation.
function userMessage(text, extra = {}) {
  return Message.fromJSON({ messageId: `conf-${Date.now()}-${++seq}`, role: "ROLE_USER", parts: [{ text }], ...extra });
}

function approval(taskId, contextId) {
  return Message.fromJSON({
    messageId: `conf-${Date.now()}-${++seq}`, role: "ROLE_USER", taskId, contextId,
    parts: [{ data: { approved: true }, mediaType: "application/json" }],
  });
}

function artifactText(task) {
  return (task.artifacts ?? []).flatMap((a) => a.parts).map((p) => p.content?.$case === "text" ? p.content.value : JSON.stringify(p.content?.value)).join("\n");
}

function errorCode(err) {
  return err?.envelopeCode ?? err?.code ?? err?.error?.code;
}

async function expectError(promise, code, what) {
  try {
    await promise;
  } catch (err) {
    check(errorCode(err) === code || String(err?.message).includes(`${code}`), `${what}: error ${err?.name} ${err?.message} (code ${errorCode(err)}), want ${code}`);
    return err;
  }
  throw new Error(`${what}: succeeded, want error ${code}`);
}

// ---- A2A 1.0 through the SDK client ------------------------------------

let client;
let card;

await step("1.0 card resolution", async () => {
  card = await new DefaultAgentCardResolver().resolve(BASE);
  check(card.name === "cert-investigator", `card name ${card.name}`);
  check(card.capabilities?.streaming === true, "card does not declare streaming");
  check(card.capabilities?.pushNotifications !== true, "card declares push notifications");
  const versions = (card.supportedInterfaces ?? []).filter((i) => i.protocolBinding === "JSONRPC").map((i) => i.protocolVersion);
  check(versions.includes("1.0") && versions.includes("0.3"), `interfaces ${JSON.stringify(card.supportedInterfaces)}`);
  check((card.skills ?? []).some((s) => (s.tags ?? []).includes("tls-incident")), `skills ${JSON.stringify(card.skills)}`);
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
  }));
  client = await factory.createFromUrl(BASE);
  check(client.protocolVersion === "1.0", `client speaks ${client.protocolVersion}`);
});

if (!client) {
  console.error(`\nA2A conformance: cannot resolve the agent card at ${BASE}/.well-known/agent-card.json; is agentc serve running there?`);
  process.exit(1);
}

let firstTask;
await step("1.0 SendMessage (blocking) reaches input-required", async () => {
  firstTask = await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `conf-${++seq}`, role: "ROLE_USER", parts: [{ text: INCIDENT }] } }));
  expectState(firstTask, TaskState.TASK_STATE_INPUT_REQUIRED, "first send");
  check(firstTask.id && firstTask.contextId, "task without id or contextId");
  const prompt = firstTask.status.message?.parts?.[0]?.content?.value;
  check(prompt === "Publish this report?", `input-required prompt ${JSON.stringify(prompt)}`);
});

await step("1.0 multi-turn: the follow-up message resumes the task", async () => {
  const done = await client.sendMessage({ message: approval(firstTask.id, firstTask.contextId) });
  expectState(done, TaskState.TASK_STATE_COMPLETED, "after approval");
  check(done.id === firstTask.id && done.contextId === firstTask.contextId, "resume changed the task or context id");
  check(artifactText(done).includes("intermediate"), `artifact ${artifactText(done)}`);
});

await step("1.0 multi-turn: a new task in the same context", async () => {
  const next = await client.sendMessage({ message: userMessage(INCIDENT, { contextId: firstTask.contextId }) });
  check(next.contextId === firstTask.contextId, `context ${next.contextId}, want ${firstTask.contextId}`);
  check(next.id !== firstTask.id, "the same task id for a new task");
  expectState(next, TaskState.TASK_STATE_INPUT_REQUIRED, "second task");
  const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: next.id }));
  expectState(canceled, TaskState.TASK_STATE_CANCELED, "cancel the second task");
});

let streamed;
await step("1.0 SendStreamingMessage, then a streamed resume", async () => {
  const cases = [];
  let last;
  for await (const ev of client.sendMessageStream({ message: userMessage(INCIDENT) })) {
    cases.push(ev.payload?.$case);
    last = ev.payload;
    if (ev.payload?.$case === "task") streamed = ev.payload.value;
  }
  check(cases[0] === "task", `first stream event ${cases[0]} (${cases.join(",")})`);
  check(last?.$case === "statusUpdate" && last.value.status.state === TaskState.TASK_STATE_INPUT_REQUIRED,
    `last stream event ${JSON.stringify(last)}`);
  check(cases.includes("statusUpdate"), `events ${cases.join(",")}`);
  const resumed = [];
  for await (const ev of client.sendMessageStream({ message: approval(streamed.id, streamed.contextId) })) {
    resumed.push(ev.payload);
  }
  const end = resumed[resumed.length - 1];
  check(resumed[0]?.$case === "task" && resumed[0].value.id === streamed.id, `resume stream starts with ${resumed[0]?.$case}`);
  check(resumed.some((p) => p.$case === "artifactUpdate"), `no artifact update in ${resumed.map((p) => p.$case).join(",")}`);
  check(end?.$case === "statusUpdate" && end.value.status.state === TaskState.TASK_STATE_COMPLETED, `stream ended with ${JSON.stringify(end)}`);
});

await step("1.0 GetTask", async () => {
  const got = await client.getTask(GetTaskRequest.fromJSON({ id: streamed.id, historyLength: 1 }));
  expectState(got, TaskState.TASK_STATE_COMPLETED, "GetTask");
  check(got.history.length <= 1, `historyLength 1 gave ${got.history.length} messages`);
  check(artifactText(got).includes("intermediate"), "GetTask lost the artifact");
});

await step("1.0 file parts: raw bytes and an http(s) URL are accepted; another scheme is -32005", async () => {
  const t = await client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `conf-${++seq}`, role: "ROLE_USER", parts: [
    { text: INCIDENT },
    { raw: "iVBORw0KGgo=", mediaType: "image/png", filename: "chain.png" },
    { url: "https://example.com/chain.pem", mediaType: "application/x-pem-file" },
  ] } }));
  expectState(t, TaskState.TASK_STATE_INPUT_REQUIRED, "a message with file parts");
  await client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
  await expectError(client.sendMessage(SendMessageRequest.fromJSON({ message: { messageId: `conf-${++seq}`, role: "ROLE_USER", parts: [
    { text: INCIDENT }, { url: "file:///etc/passwd", mediaType: "text/plain" },
  ] } })), -32005, "a file part by a file: URL");
});

await step("1.0 CancelTask, then cancel again (-32002)", async () => {
  const t = await client.sendMessage({ message: userMessage(INCIDENT) });
  expectState(t, TaskState.TASK_STATE_INPUT_REQUIRED, "task to cancel");
  const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
  expectState(canceled, TaskState.TASK_STATE_CANCELED, "CancelTask");
  await expectError(client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id })), -32002, "cancel a canceled task");
  await expectError(client.sendMessage({ message: approval(t.id, t.contextId) }), -32004, "message to a canceled task");
});

await step("1.0 ListTasks", async () => {
  const res = await client.listTasks(ListTasksRequest.fromJSON({ contextId: firstTask.contextId, pageSize: 10 }));
  const ids = res.tasks.map((t) => t.id);
  check(ids.includes(firstTask.id), `list of the context misses ${firstTask.id}: ${ids}`);
  check(res.tasks.every((t) => t.contextId === firstTask.contextId), "list ignores contextId");
  check(res.nextPageToken === "", `nextPageToken ${JSON.stringify(res.nextPageToken)}`);
  check(res.totalSize === res.tasks.length, `totalSize ${res.totalSize} for ${res.tasks.length} tasks`);
  const page = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 1 }));
  check(page.tasks.length === 1 && page.nextPageToken !== "", `first page of 1: ${page.tasks.length} tasks, token ${JSON.stringify(page.nextPageToken)}`);
});

await step("1.0 errors: unknown task (-32001), unknown method (-32601)", async () => {
  await expectError(client.getTask(GetTaskRequest.fromJSON({ id: "task_does_not_exist" })), -32001, "GetTask of an unknown task");
  const r = await authFetch(`${card.supportedInterfaces[0].url}`, {
    method: "POST", headers: { "Content-Type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: "x1", method: "tasks/get", params: { id: "x" } }),
  });
  const body = await r.json();
  check(body.id === "x1" && body.error?.code === -32601, `1.0 request with a 0.3 method: ${JSON.stringify(body)}`);
  const bad = await authFetch(card.supportedInterfaces[0].url, {
    method: "POST", headers: { "Content-Type": "application/json", "A2A-Version": "1.0" }, body: "{not json",
  });
  const badBody = await bad.json();
  check(badBody.id === null && badBody.error?.code === -32700, `bad JSON: ${JSON.stringify(badBody)}`);
});

// ---- A2A 0.3 -------------------------------------------------------------

let endpoint;
await step("0.3 card (no A2A-Version header)", async () => {
  const r = await fetch(`${BASE}/.well-known/agent-card.json`);
  check(r.ok, `card: HTTP ${r.status}`);
  const raw = await r.json();
  // The 0.3 fields, plus the 1.0 supportedInterfaces the SDK's own server
  // embeds in this "hybrid" card (so the SDK classifies it as a 1.0 card;
  // a 0.3-only client reads url and preferredTransport).
  check(raw.protocolVersion === "0.3.0" && raw.preferredTransport === "JSONRPC" && raw.capabilities?.streaming === true,
    `not a 0.3 card: ${JSON.stringify(raw).slice(0, 200)}`);
  check(r.headers.get("vary")?.includes("A2A-Version"), "card response without Vary: A2A-Version");
  const { supportedInterfaces, ...legacyOnly } = raw;
  check(isLegacyAgentCard(legacyOnly), "the 0.3 fields alone are not a 0.3 card for the SDK");
  const parsed = parseLegacyAgentCard(legacyOnly);
  check(parsed.name === "cert-investigator", `parsed 0.3 card name ${parsed.name}`);
  endpoint = raw.url;
  check(endpoint && endpoint.startsWith("http"), `0.3 card url ${endpoint}`);
});

await step("0.3 SDK compatibility client: send, resume, get", async () => {
  const legacy = new Client(new LegacyJsonRpcTransport({ endpoint, fetchImpl: authFetch }), card);
  check(legacy.protocolVersion === "0.3", `legacy client speaks ${legacy.protocolVersion}`);
  const t = await legacy.sendMessage({ message: userMessage(INCIDENT) });
  expectState(t, TaskState.TASK_STATE_INPUT_REQUIRED, "0.3 send");
  const done = await legacy.sendMessage({ message: approval(t.id, t.contextId) });
  expectState(done, TaskState.TASK_STATE_COMPLETED, "0.3 resume");
  const got = await legacy.getTask({ id: t.id, tenant: "" });
  expectState(got, TaskState.TASK_STATE_COMPLETED, "0.3 tasks/get");
  await expectError(legacy.getTask({ id: "task_does_not_exist", tenant: "" }), -32001, "0.3 tasks/get of an unknown task");
});

// rpc03 sends a raw 0.3 request: no A2A-Version header at all.
async function rpc03(method, params) {
  const r = await authFetch(endpoint, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++seq, method, params }),
  });
  check(r.headers.get("content-type")?.startsWith("application/json"), `${method}: content type ${r.headers.get("content-type")}`);
  const body = await r.json();
  check(body.jsonrpc === "2.0" && body.id === seq, `${method}: envelope ${JSON.stringify(body).slice(0, 200)}`);
  return body;
}

function message03(text, extra = {}) {
  return { kind: "message", messageId: `conf03-${++seq}`, role: "user", parts: [{ kind: "text", text }], ...extra };
}

await step("0.3 raw (no header): message/send, message/stream with final, tasks/cancel", async () => {
  const sent = await rpc03("message/send", { message: message03(INCIDENT) });
  check(sent.result?.kind === "task" && sent.result.status?.state === "input-required", `message/send: ${JSON.stringify(sent).slice(0, 300)}`);
  const r = await authFetch(endpoint, {
    method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: "s1", method: "message/stream", params: {
      message: { kind: "message", messageId: `conf03-${++seq}`, role: "user", taskId: sent.result.id, contextId: sent.result.contextId,
        parts: [{ kind: "data", data: { approved: true } }] } } }),
  });
  check(r.headers.get("content-type")?.startsWith("text/event-stream"), `message/stream: content type ${r.headers.get("content-type")}`);
  const text = await r.text();
  check(!text.includes("\r"), "CR in the SSE stream");
  const frames = text.split("\n\n").filter((f) => f.trim() !== "").map((f) => JSON.parse(f.replace(/^data: /, "")));
  const kinds = frames.map((f) => f.result?.kind);
  check(kinds[0] === "task", `first frame ${kinds[0]} (${kinds.join(",")})`);
  const last = frames[frames.length - 1].result;
  check(last.kind === "status-update" && last.final === true && last.status.state === "completed", `last frame ${JSON.stringify(last)}`);
  check(frames.slice(0, -1).every((f) => f.result.final !== true), "final before the last frame");
  const another = await rpc03("message/send", { message: message03(INCIDENT) });
  const canceled = await rpc03("tasks/cancel", { id: another.result.id });
  check(canceled.result?.kind === "task" && canceled.result.status.state === "canceled", `tasks/cancel: ${JSON.stringify(canceled).slice(0, 300)}`);
  const gone = await rpc03("tasks/get", { id: "task_does_not_exist" });
  check(gone.error?.code === -32001, `tasks/get unknown: ${JSON.stringify(gone)}`);
});

if (failures.length > 0) {
  console.error(`\nA2A conformance: ${failures.length} check(s) failed: ${failures.join("; ")}`);
  process.exit(1);
}
console.log("\nA2A conformance: all checks passed (1.0 and 0.3)");
