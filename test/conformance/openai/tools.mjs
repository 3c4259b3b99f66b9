// Client function tools with the official openai npm client against its own
// `agentc serve tools/weather.agent` (scripted model: a question about the
// weather in Paris calls get_weather, in Rome get_weather and get_time).
// Imported by run.mjs; needs AGENTC_BIN.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";

const bin = process.env.AGENTC_BIN;
const here = dirname(fileURLToPath(import.meta.url));
const token = "tools-" + Math.random().toString(36).slice(2);
const model = "weather";
let server, data, client;

before(async () => {
  assert.ok(bin, "set AGENTC_BIN");
  data = mkdtempSync(join(tmpdir(), "agentc-tools-"));
  const env = { ...process.env };
  delete env.OPENAI_API_KEY; // the scripted model
  server = spawn(bin, ["serve", join(here, "tools", "weather.agent"), "--addr", "127.0.0.1:0", "--data", join(data, "d"), "--token", `${token}=conformance`, "--log", "off"],
    { env, stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error("agentc serve did not start: " + err)), 30_000);
    server.stderr.on("data", (b) => {
      err += b;
      const m = /serving .* on (http:\/\/127\.0\.0\.1:\d+) /.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`agentc serve exited ${code}: ${err}`)));
  });
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0, timeout: 30_000 });
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.on("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  if (data) rmSync(data, { recursive: true, force: true });
});

const getWeather = {
  type: "function",
  function: { name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};
const getTime = { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { city: { type: "string" } } } } };

test("client tools: the manual loop, non-streaming", async () => {
  const messages = [{ role: "user", content: "what is the weather in Paris" }];
  const first = await client.chat.completions.create({ model, messages, tools: [getWeather] });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, "Let me check.");
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
  assert.match(call.id, /^call_/);
  messages.push(choice.message, { role: "tool", tool_call_id: call.id, content: "Sunny, 21 C" });
  const second = await client.chat.completions.create({ model, messages, tools: [getWeather] });
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.equal(second.choices[0].message.content, "It is sunny in Paris.");
});

test("client tools: the manual loop, streaming", async () => {
  const messages = [{ role: "user", content: "what is the weather in Rome" }];
  const s = client.chat.completions.stream({ model, messages, tools: [getWeather, getTime] });
  const first = await s.finalChatCompletion();
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.deepEqual(choice.message.tool_calls.map((c) => c.function.name), ["get_weather", "get_time"]);
  messages.push(choice.message);
  for (const c of choice.message.tool_calls) messages.push({ role: "tool", tool_call_id: c.id, content: c.function.name === "get_weather" ? "Rain" : "14:00" });
  const second = await client.chat.completions.stream({ model, messages, tools: [getWeather, getTime] }).finalChatCompletion();
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.equal(second.choices[0].message.content, "It rains in Rome.");
});

test("client tools: runTools runs the loop", async () => {
  for (const stream of [false, true]) {
    const called = [];
    const runner = client.chat.completions.runTools({
      model, stream,
      messages: [{ role: "user", content: "what is the weather in Paris" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: getWeather.function.parameters, parse: JSON.parse, function: (args) => { called.push(args); return "Sunny and warm"; } } }],
    });
    assert.equal(await runner.finalContent(), "It is sunny in Paris.");
    assert.deepEqual(called, [{ city: "Paris" }]);
  }
});

test("client tools: wrong and missing ids are 400s", async () => {
  const messages = [{ role: "user", content: "what is the weather in Rome" }];
  const first = await client.chat.completions.create({ model, messages, tools: [getWeather, getTime] });
  const calls = first.choices[0].message.tool_calls;
  messages.push(first.choices[0].message);
  const cases = [
    { name: "missing", results: [{ role: "tool", tool_call_id: calls[0].id, content: "Rain" }], param: "messages", mention: calls[1].id },
    { name: "unknown", results: [{ role: "tool", tool_call_id: calls[0].id, content: "Rain" }, { role: "tool", tool_call_id: "call_nope", content: "x" }], param: "messages[3].tool_call_id", mention: "call_nope" },
  ];
  for (const c of cases) {
    await assert.rejects(client.chat.completions.create({ model, messages: [...messages, ...c.results], tools: [getWeather, getTime] }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `${c.name}: ${err}`);
      assert.equal(err.code, "invalid_value");
      assert.equal(err.param, c.param);
      assert.match(err.message, new RegExp(c.mention));
      return true;
    });
  }
  // The run still waits for both.
  const done = await client.chat.completions.create({
    model, tools: [getWeather, getTime],
    messages: [...messages, ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: c.function.name === "get_weather" ? "Rain" : "14:00" }))],
  });
  assert.equal(done.choices[0].message.content, "It rains in Rome.");
});

test("client tools: a tool given twice is a 400", async () => {
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], tools: [getWeather, getWeather] }),
    (err) => err instanceof OpenAI.BadRequestError && err.code === "invalid_value" && err.param === "tools",
  );
});
