// The official openai npm client against `agentc serve`.
//
//   AGENTC_URL=http://127.0.0.1:PORT AGENTC_TOKEN=TOKEN AGENTC_BIN=path/to/agentc node run.mjs
//
// Expects the server to serve examples/support/support.agent (scripted
// model): the first turn stops at the approval interrupt, the second
// answers it. tools.mjs (client function tools) starts its own server from
// AGENTC_BIN. Exits non-zero when a check fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import "./tools.mjs";

const base = process.env.AGENTC_URL;
const token = process.env.AGENTC_TOKEN;
if (!base || !token) {
  console.error("set AGENTC_URL and AGENTC_TOKEN");
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0, timeout: 30_000 });
const question = "prod.example.com fails with x509: certificate signed by unknown authority";
let model = process.env.AGENTC_MODEL || "";
const session = () => `conf-${process.pid}-${Math.random().toString(36).slice(2)}`;
const withSession = (id) => ({ headers: { "X-Agentc-Session": id } });

test("models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.equal(ids.length, 1);
  model ||= ids[0];
  const m = await client.models.retrieve(model);
  assert.equal(m.id, model);
  assert.equal(m.object, "model");
  assert.ok(Number.isInteger(m.created));
});

test("non-streaming", async () => {
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: question }] });
  assert.equal(c.object, "chat.completion");
  assert.equal(c.choices.length, 1);
  assert.equal(c.choices[0].message.role, "assistant");
  assert.equal(c.choices[0].finish_reason, "stop");
  assert.match(c.choices[0].message.content, /Publish this report\?/);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  assert.ok(c.created < 1e10, "created is in seconds");
});

test("streaming through the stream() accumulator", async () => {
  // stream() throws on a missing role or finish_reason.
  const s = client.chat.completions.stream({ model, messages: [{ role: "user", content: question }] });
  let deltas = 0;
  s.on("content", () => deltas++);
  const c = await s.finalChatCompletion();
  assert.ok(deltas > 0);
  assert.equal(c.choices[0].finish_reason, "stop");
  assert.match(c.choices[0].message.content, /Publish this report\?/);
});

test("streaming with include_usage", async () => {
  const stream = await client.chat.completions.create({
    model, stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: question }],
  });
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  assert.equal(chunks[0].choices[0].delta.role, "assistant");
  const finishes = chunks.filter((c) => c.choices.length && c.choices[0].finish_reason);
  assert.equal(finishes.length, 1);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  assert.ok(new Set(chunks.map((c) => c.id)).size === 1);
});

test("stream ends with [DONE] on the wire", async () => {
  const resp = await client.chat.completions
    .create({ model, stream: true, messages: [{ role: "user", content: question }] })
    .asResponse();
  const raw = await resp.text();
  assert.ok(raw.endsWith("data: [DONE]\n\n"), raw.slice(-80));
  assert.ok(!raw.includes("\r"));
});

test("multi-turn continuity through X-Agentc-Session", async () => {
  const id = session();
  const history = [{ role: "user", content: question }];
  const first = await client.chat.completions.create({ model, messages: history }, withSession(id));
  assert.match(first.choices[0].message.content, /Publish this report\?/);
  history.push({ role: "assistant", content: first.choices[0].message.content });
  history.push({ role: "user", content: '{"approved": true}' });
  const s = client.chat.completions.stream({ model, messages: history }, withSession(id));
  const second = await s.finalChatCompletion();
  assert.match(second.choices[0].message.content, /intermediate/);
  assert.doesNotMatch(second.choices[0].message.content, /Publish this report\?/);
});

test("an answer that does not fit the interrupt is a 400", async () => {
  const id = session();
  await client.chat.completions.create({ model, messages: [{ role: "user", content: question }] }, withSession(id));
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "maybe" }] }, withSession(id)),
    (err) => err instanceof OpenAI.BadRequestError && err.code === "invalid_resume",
  );
});

test("concurrent requests", async () => {
  const runs = Array.from({ length: 16 }, (_, i) =>
    i % 2
      ? client.chat.completions.create({ model, messages: [{ role: "user", content: question }] }, withSession(session()))
      : client.chat.completions.stream({ model, messages: [{ role: "user", content: question }] }, withSession(session())).finalChatCompletion(),
  );
  const done = await Promise.all(runs);
  for (const c of done) assert.match(c.choices[0].message.content, /Publish this report\?/);
});

test("abort mid-stream", async () => {
  const ac = new AbortController();
  const stream = await client.chat.completions.create(
    { model, stream: true, messages: [{ role: "user", content: question }] },
    { signal: ac.signal, ...withSession(session()) },
  );
  let seen = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of stream) {
        seen++;
        ac.abort();
      }
      throw new OpenAI.APIUserAbortError(); // the stream ended before the abort took effect
    })(),
    (err) => err instanceof OpenAI.APIUserAbortError || err.name === "AbortError",
  );
  assert.ok(seen >= 1);
  const after = await client.chat.completions.create({ model, messages: [{ role: "user", content: question }] });
  assert.equal(after.choices[0].finish_reason, "stop");
});

test("abort on the finish chunk settles (100 tries)", async () => {
  // Node's fetch leaves a read pending forever when the client aborts right
  // after a read that returned the last chunk with the end of a chunked
  // body; the server ends streams with their connection instead.
  let slowest = 0;
  for (let i = 0; i < 100; i++) {
    const ac = new AbortController();
    let aborted = 0;
    const done = (async () => {
      const stream = await client.chat.completions.create({ model, stream: true, messages: [{ role: "user", content: question }] }, { signal: ac.signal });
      try {
        for await (const ch of stream) {
          if (ch.choices[0]?.finish_reason && !aborted) {
            aborted = performance.now();
            Promise.resolve().then(() => ac.abort());
          }
        }
      } catch {}
    })();
    let timer;
    const settled = await Promise.race([done.then(() => true, () => true), new Promise((r) => { timer = setTimeout(() => r(false), 30_000); })]);
    clearTimeout(timer);
    const took = aborted ? performance.now() - aborted : 0;
    assert.ok(settled && took < 1000, `try ${i}: the aborted stream did not settle within 1 s (${settled ? took.toFixed(0) + " ms" : "not at all"})`);
    assert.ok(aborted, `try ${i}: no finish chunk to abort on`);
    slowest = Math.max(slowest, took);
  }
  console.log(`# abort on the finish chunk: the slowest settled in ${slowest.toFixed(0)} ms`);
});

test("sampling parameters are accepted", async () => {
  // The scripted model ignores them; the Go tests check that they reach the model.
  const params = { temperature: 0, top_p: 0.5, max_completion_tokens: 256, stop: ["\n\nEND", "STOP"], seed: 42, response_format: { type: "text" } };
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: question }], ...params });
  assert.equal(c.choices[0].finish_reason, "stop");
  assert.match(c.choices[0].message.content, /Publish this report\?/);
  const s = client.chat.completions.stream({ model, messages: [{ role: "user", content: question }], temperature: 1.5, max_tokens: 100, stop: "STOP" });
  const sc = await s.finalChatCompletion();
  assert.match(sc.choices[0].message.content, /Publish this report\?/);
});

test("out-of-range sampling parameters are 400s", async (t) => {
  const cases = [
    { name: "temperature 5", params: { temperature: 5 }, param: "temperature", code: "decimal_above_max_value" },
    { name: "top_p -1", params: { top_p: -1 }, param: "top_p", code: "decimal_below_min_value" },
    { name: "max_tokens 0", params: { max_tokens: 0 }, param: "max_tokens", code: "integer_below_min_value" },
    { name: "five stop sequences", params: { stop: ["a", "b", "c", "d", "e"] }, param: "stop", code: "array_above_max_length" },
    { name: "seed 1.5", params: { seed: 1.5 }, param: "seed", code: "invalid_type" },
    { name: "json_object for a text answer", params: { response_format: { type: "json_object" } }, param: "response_format", code: "unsupported_value" },
  ];
  for (const c of cases) {
    for (const stream of [false, true]) {
      await t.test(`${c.name}${stream ? " (stream)" : ""}`, async () => {
        await assert.rejects(
          client.chat.completions.create({ model, stream, messages: [{ role: "user", content: question }], ...c.params }),
          (err) => {
            assert.ok(err instanceof OpenAI.BadRequestError, `${err}`);
            assert.equal(err.code, c.code);
            assert.equal(err.param, c.param);
            assert.equal(err.type, "invalid_request_error");
            return true;
          },
        );
      });
    }
  }
});

test("image parts are accepted", async () => {
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: [
    { type: "text", text: question },
    { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
  ] }] });
  assert.match(c.choices[0].message.content, /Publish this report\?/);
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://example.com/a.png" } }] }] }),
    (err) => err instanceof OpenAI.BadRequestError && err.code === "invalid_value" && err.param === "messages[0].content",
  );
});

test("errors", async (t) => {
  const cases = [
    { name: "unknown model", call: () => client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }), cls: OpenAI.NotFoundError, status: 404, code: "model_not_found" },
    { name: "unknown model (retrieve)", call: () => client.models.retrieve("no-such-model"), cls: OpenAI.NotFoundError, status: 404, code: "model_not_found" },
    { name: "bad token", call: () => new OpenAI({ baseURL: `${base}/v1`, apiKey: "wrong", maxRetries: 0 }).models.list(), cls: OpenAI.AuthenticationError, status: 401, code: "invalid_api_key" },
    { name: "missing messages", call: () => client.chat.completions.create({ model }), cls: OpenAI.BadRequestError, status: 400, code: "missing_required_parameter" },
    { name: "a client tool named like the workflow's", call: () => client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "cert_scan", parameters: {} } }] }), cls: OpenAI.BadRequestError, status: 400, code: "invalid_value" },
    { name: "tool_choice required", call: () => client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "f", parameters: {} } }], tool_choice: "required" }), cls: OpenAI.BadRequestError, status: 400, code: "unsupported_value" },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      await assert.rejects(c.call(), (err) => {
        assert.ok(err instanceof c.cls, `${err}`);
        assert.equal(err.status, c.status);
        assert.equal(err.code, c.code);
        assert.equal(typeof err.error.message, "string");
        assert.ok("param" in err.error && "type" in err.error);
        return true;
      });
    });
  }
});
