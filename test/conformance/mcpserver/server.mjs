// An MCP server written with the official MCP TypeScript SDK, for agentc's
// `run = mcp` tools to call (run.mjs):
//
//   node server.mjs stdio      newline-delimited JSON-RPC on stdin/stdout
//   node server.mjs http       streamable HTTP on a free loopback port; prints
//                              "listening http://127.0.0.1:PORT/mcp"
//
// Tools: lookup (structured output with an output schema, read-only hint),
// steps (progress notifications, then text), picture (text and an image),
// fail (isError), wipe (destructive hint).
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const tools = [
  {
    name: "lookup",
    description: "Looks a word up",
    annotations: { readOnlyHint: true },
    inputSchema: {
      type: "object",
      properties: { q: { type: "string" }, limit: { type: "integer" } },
      required: ["q"],
    },
    outputSchema: {
      type: "object",
      properties: { answer: { type: "string" }, score: { type: "integer" } },
      required: ["answer", "score"],
    },
  },
  {
    name: "steps",
    description: "Counts to n, reporting progress",
    inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
  },
  {
    name: "picture",
    description: "Draws a picture",
    inputSchema: { type: "object", properties: { subject: { type: "string" } }, required: ["subject"] },
  },
  {
    name: "fail",
    description: "Always fails",
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  },
  {
    name: "wipe",
    description: "Wipes a record",
    annotations: { destructiveHint: true, idempotentHint: true },
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function makeServer() {
  const server = new Server({ name: "ts-conformance", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "lookup": {
        const out = { answer: `${args.q} means ${args.q.length} letters`, score: args.limit ?? 1 };
        return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
      }
      case "steps": {
        const token = req.params._meta?.progressToken;
        for (let i = 1; i <= args.n; i++) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress: i, total: args.n, message: `step ${i}` },
            });
          }
          // Give the client time to handle the notification before the
          // result (the Go SDK handles notifications apart from responses).
          await sleep(100);
        }
        return { content: [{ type: "text", text: `did ${args.n} steps` }] };
      }
      case "picture":
        return {
          content: [
            { type: "text", text: `a picture of ${args.subject}` },
            { type: "image", data: Buffer.from(`PNG of ${args.subject}`).toString("base64"), mimeType: "image/png" },
          ],
        };
      case "fail":
        return { isError: true, content: [{ type: "text", text: `no record ${args.q}` }] };
      case "wipe":
        return { content: [{ type: "text", text: `wiped ${args.q}` }] };
    }
    throw new Error(`unknown tool ${req.params.name}`);
  });
  return server;
}

const mode = process.argv[2];
if (mode === "stdio") {
  await makeServer().connect(new StdioServerTransport());
} else if (mode === "http") {
  const sessions = new Map(); // session id → transport
  const http = createServer(async (req, res) => {
    try {
      let body;
      if (req.method === "POST") {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      }
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? sessions.get(sid) : undefined;
      if (sid && !transport) {
        res.writeHead(404).end();
        return;
      }
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  http.listen(0, "127.0.0.1", () => {
    console.log(`listening http://127.0.0.1:${http.address().port}/mcp`);
  });
  process.on("SIGTERM", () => http.close(() => process.exit(0)));
} else {
  console.error("usage: node server.mjs stdio|http");
  process.exit(2);
}
