// The official MCP TypeScript SDK client against `agentc serve`'s /mcp
// endpoint (streamable HTTP) and against `agentc mcp stdio`.
//
//   AGENTC_URL=http://127.0.0.1:PORT AGENTC_TOKEN=TOKEN [AGENTC_BIN=path/to/agentc] node run.mjs
//
// Expects the server to serve examples/support/support.agent (scripted
// model): a call stops at the approval interrupt, agentc_resume or an
// elicitation answers it. The stdio checks run when AGENTC_BIN is set
// (test/conformance/run.sh sets it). The SDK client checks each result's
// structured content against the tool's output schema. Exits non-zero when
// a check fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const base = process.env.AGENTC_URL;
const token = process.env.AGENTC_TOKEN;
if (!base || !token) {
  console.error("set AGENTC_URL and AGENTC_TOKEN");
  process.exit(2);
}
const question = "prod.example.com fails with x509: certificate signed by unknown authority";
const root = resolve(import.meta.dirname, "../../..");

function http(tok = token) {
  return new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${tok}` } },
  });
}

async function connect(transport, capabilities = {}, onElicit) {
  const client = new Client({ name: "agentc-conformance", version: "1.0.0" }, { capabilities });
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  await client.connect(transport);
  return client;
}

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

// checkTools lists the tools (which also arms the client's output-schema
// checks) and checks investigate's schemas.
async function checkTools(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ["agentc_resume", "investigate"]);
  const inv = tools.find((t) => t.name === "investigate");
  assert.equal(inv.inputSchema.type, "object");
  assert.equal(inv.inputSchema.properties.input.type, "string");
  assert.deepEqual(inv.inputSchema.required, ["input"]);
  assert.equal(inv.outputSchema.type, "object");
  assert.ok(inv.outputSchema.properties.output, "output schema describes the output");
  assert.ok(inv.description.length > 0);
}

// waitThenResume starts a run, checks the waiting result and answers it
// with agentc_resume.
async function waitThenResume(client) {
  const progress = [];
  const res = await client.callTool({ name: "investigate", arguments: { input: question } }, undefined, {
    onprogress: (p) => progress.push(p),
    timeout: 30_000,
  });
  assert.equal(res.isError ?? false, false, text(res));
  assert.equal(res.structuredContent.status, "interrupted");
  const run = res.structuredContent.run;
  assert.match(run, /^run_/);
  assert.match(text(res), /Publish this report\?/);
  assert.match(text(res), /agentc_resume/);
  assert.ok(text(res).includes(run), "the text names the run");
  assert.equal(res.structuredContent.interrupts[0].schema.type, "object");
  assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, "progress increases");

  const bad = await client.callTool({ name: "agentc_resume", arguments: { run, value: { approved: "maybe" } } });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.error.code, "invalid_resume");

  const done = await client.callTool({ name: "agentc_resume", arguments: { run, value: { approved: true } } }, undefined, { timeout: 30_000 });
  assert.equal(done.isError ?? false, false, text(done));
  assert.equal(done.structuredContent.status, "completed");
  assert.equal(done.structuredContent.run, run);
  assert.ok(text(done).length > 0, "the report is the text");
  return run;
}

test("streamable HTTP: tools, structured output, progress, interrupt and resume", async () => {
  const client = await connect(http());
  try {
    await checkTools(client);
    await waitThenResume(client);
  } finally {
    await client.close();
  }
});

test("streamable HTTP: an interrupt becomes an elicitation", async () => {
  const asked = [];
  const client = await connect(http(), { elicitation: { form: {} } }, async (req) => {
    asked.push(req.params);
    return { action: "accept", content: { approved: true } };
  });
  try {
    await checkTools(client);
    const res = await client.callTool({ name: "investigate", arguments: { input: question } }, undefined, { timeout: 30_000 });
    assert.equal(res.isError ?? false, false, text(res));
    assert.equal(res.structuredContent.status, "completed");
    assert.equal(asked.length, 1);
    assert.equal(asked[0].message, "Publish this report?");
    assert.equal(asked[0].requestedSchema.properties.approved.type, "boolean");
    assert.deepEqual(asked[0].requestedSchema.required, ["approved"]);
  } finally {
    await client.close();
  }
});

test("streamable HTTP: a wrong token is refused", async () => {
  await assert.rejects(connect(http("not-a-token")), /401|nauthorized/);
});

test("stdio: the same tools from agentc mcp stdio", { skip: !process.env.AGENTC_BIN }, async () => {
  const data = mkdtempSync(join(tmpdir(), "agentc-mcp-"));
  const transport = new StdioClientTransport({
    command: process.env.AGENTC_BIN,
    args: ["mcp", "stdio", "examples/support/support.agent", "--data", data, "--user", "conformance"],
    cwd: root,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (b) => (stderr += b));
  const client = await connect(transport);
  try {
    await checkTools(client);
    await waitThenResume(client);
  } catch (err) {
    console.error(stderr);
    throw err;
  } finally {
    await client.close();
    rmSync(data, { recursive: true, force: true });
  }
});
