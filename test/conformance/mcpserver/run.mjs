// An agentc workflow calling an MCP server written with the official MCP
// TypeScript SDK (server.mjs), over stdio and streamable HTTP:
//
//   AGENTC_BIN=path/to/agentc node run.mjs
//
// agentc mcp lock pins the server's tools, validate checks the workflow
// against the pin offline (and refuses a declared effect weaker than the
// server's destructive hint), and agentc run calls every tool: structured
// results with an output schema, progress notifications as tool_progress
// events, an image saved as an artifact, isError as a tool_error.
// test/conformance/run.sh runs it (AGENTC_URL and AGENTC_TOKEN are not
// used). Exits non-zero when a check fails.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { once } from "node:events";

const bin = process.env.AGENTC_BIN;
if (!bin) {
  console.error("set AGENTC_BIN");
  process.exit(2);
}
const server = resolve(import.meta.dirname, "server.mjs");

// The HTTP server, on a free port.
const http = spawn(process.execPath, [server, "http"], { stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((ok, fail) => {
  let out = "";
  http.stdout.on("data", (b) => {
    out += b;
    const m = out.match(/listening (http:\/\/\S+)/);
    if (m) ok(m[1]);
  });
  http.on("exit", (code) => fail(new Error(`the HTTP server exited ${code}`)));
});
const dir = mkdtempSync(join(tmpdir(), "agentc-mcpserver-"));
after(async () => {
  http.kill("SIGTERM");
  await once(http, "exit");
  rmSync(dir, { recursive: true, force: true });
});
mkdirSync(join(dir, ".git"));

const stdio = `command = ["${process.execPath}", ${JSON.stringify(server)}, "stdio"]`;
const source = `workflow tsmcp "Calls the tools of an MCP server written with the official TypeScript SDK"

type Answer { answer: string, score: int }

tool lookup_http "Looks a word up (streamable HTTP)" {
  input  { q: string, limit: int = 3 }
  output Answer
  run    = mcp { url = env("TS_MCP_URL"), tool = "lookup" }
}

tool lookup_stdio "Looks a word up (stdio)" {
  input  { q: string, limit: int = 3 }
  output Answer
  run    = mcp { ${stdio}, tool = "lookup" }
}

tool steps_http "Counts" {
  input  { n: int }
  effect = read_only
  run    = mcp { url = env("TS_MCP_URL"), tool = "steps", timeout = 20s }
}

tool picture_stdio "Draws" {
  input  { subject: string }
  effect = read_only
  run    = mcp { ${stdio}, tool = "picture" }
}

tool fail_http "Fails" {
  input  { q: string }
  effect = read_only
  run    = mcp { url = env("TS_MCP_URL"), tool = "fail" }
}

tool wipe_stdio "Wipes" {
  input  { q: string }
  run    = mcp { ${stdio}, tool = "wipe" }
}

state S { q: string, a: Answer?, b: Answer?, s: string = "", p: string = "", w: string = "" }

graph calls(S) input q output p {
  node a = tool lookup_http { q = q } into a
  node b = tool lookup_stdio { q = q } into b
  node s = tool steps_http { n = 3 } into s
  node p = tool picture_stdio { subject = q } into p
  node w = tool wipe_stdio { q = q } into w
  start -> a
  a -> b
  b -> s
  s -> p
  p -> w
  w -> end
}

state F { q: string, r: string = "" }

graph failing(F) input q output r {
  node f = tool fail_http { q = q } into r
  start -> f
  f -> end
}
`
writeFileSync(join(dir, "tsmcp.agent"), source);
const env = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  TS_MCP_URL: url,
  AGENTC_ALLOW_HOSTS: new URL(url).host,
  AGENTC_DATA: join(dir, "data"),
};

function agentc(...args) {
  const r = spawnSync(bin, args, { cwd: dir, env, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("agentc mcp lock pins the TypeScript server's tools over stdio and HTTP", () => {
  const r = agentc("mcp", "lock", "tsmcp.agent");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /wrote tsmcp\.mcp\.lock/);
  const lock = JSON.parse(readFileSync(join(dir, "tsmcp.mcp.lock"), "utf8"));
  assert.equal(lock.agentc_mcp_lock, 1);
  assert.equal(lock.servers.length, 2);
  for (const s of lock.servers) {
    assert.equal(s.name, "ts-conformance");
    assert.deepEqual(s.tools.map((t) => t.name), ["fail", "lookup", "picture", "steps", "wipe"]);
    const lookup = s.tools.find((t) => t.name === "lookup");
    assert.deepEqual(lookup.annotations, { readOnlyHint: true });
    assert.deepEqual(lookup.input_schema.required, ["q"]);
    assert.deepEqual(lookup.output_schema.required, ["answer", "score"]);
    assert.equal(s.tools.find((t) => t.name === "wipe").annotations.destructiveHint, true);
  }
  assert.ok(lock.servers.some((s) => s.url === 'env("TS_MCP_URL")'));
  assert.ok(lock.servers.some((s) => s.command?.[2] === "stdio"));
  // The same server gives the same bytes.
  const again = agentc("mcp", "lock", "tsmcp.agent");
  assert.match(again.stdout, /tsmcp\.mcp\.lock unchanged/);
});

test("validate checks against the pin offline", () => {
  let r = agentc("validate", "tsmcp.agent");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  // A declared effect weaker than the server's destructive hint.
  writeFileSync(join(dir, "weak.agent"), source.replace('input  { q: string }\n  run    = mcp { ' + stdio + ', tool = "wipe" }',
    'input  { q: string }\n  effect = read_only\n  run    = mcp { ' + stdio + ', tool = "wipe" }'));
  writeFileSync(join(dir, "weak.mcp.lock"), readFileSync(join(dir, "tsmcp.mcp.lock")));
  r = agentc("validate", "weak.agent");
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /P523: tool wipe_stdio declares effect read_only, but the server marks wipe destructive/);
});

test("agentc run calls every tool", () => {
  const r = agentc("run", "tsmcp.agent", "--run", "calls", "--input", "cats", "--json");
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  const result = (name) => events.find((e) => e.kind === "tool_result" && e.tool_call.name === name);
  for (const name of ["lookup_http", "lookup_stdio"]) {
    assert.deepEqual(result(name).result, { answer: "cats means 4 letters", score: 3 }, name);
  }
  const progress = events.filter((e) => e.kind === "tool_progress");
  assert.ok(progress.length >= 1, "at least one tool_progress event");
  assert.equal(progress[0].tool_call.name, "steps_http");
  assert.equal(progress[0].progress.total, 3);
  assert.match(progress[0].progress.message, /^step \d$/);
  const steps = events.findIndex((e) => e.kind === "tool_result" && e.tool_call.name === "steps_http");
  assert.ok(events.indexOf(progress.at(-1)) < steps, "progress precedes the result");
  assert.equal(result("steps_http").result, "did 3 steps");
  assert.match(result("picture_stdio").result, /^a picture of cats\n\[artifact mcp\/picture_stdio\/\S+-1\.png revision 1: image\/png, 11 bytes\]$/);
  assert.equal(result("wipe_stdio").result, "wiped cats");
  const fin = events.at(-1);
  assert.equal(fin.kind, "run_finished");
  assert.equal(fin.status, "completed");
});

test("isError is a tool_error", () => {
  const r = agentc("run", "tsmcp.agent", "--run", "failing", "--input", "x1");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /tool_error/);
  assert.match(r.stderr, /no record x1/);
});
