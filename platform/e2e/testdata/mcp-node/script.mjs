// Drives the official MCP TypeScript SDK v1 client (@modelcontextprotocol/sdk,
// which negotiates 2025-11-25 and holds a session) against weft serve's /mcp
// endpoint and prints what it saw as one JSON object, which platform/e2e's
// TestMCPNodeClient asserts on.
//
// Environment: WEFT_URL (the server's root URL), WEFT_API_KEY, WEFT_AGENT
// (the name of an agent whose model answers three turns, the third slowly).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const base = process.env.WEFT_URL;
const key = process.env.WEFT_API_KEY;
const agent = process.env.WEFT_AGENT;
const out = {};

const transport = new StreamableHTTPClientTransport(new URL(base + "/mcp"), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "weft-e2e", version: "1.0.0" });
let changed = 0;
let onChanged = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  onChanged();
});
await client.connect(transport);
out.version = transport.protocolVersion ?? null;
out.server = client.getServerVersion()?.name ?? null;
out.list_changed_capability = client.getServerCapabilities()?.tools?.listChanged ?? false;

const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name).sort();
const tool = tools.tools.find((t) => t.name === agent);
out.input_required = tool?.inputSchema?.required ?? null;

// Turn 1: a new conversation.
const first = await client.callTool({ name: agent, arguments: { query: "What is the capital of France?" } });
out.first = { text: first.content?.[0]?.text ?? null, structured: first.structuredContent ?? null, is_error: first.isError ?? false };
const session = first.structuredContent?.session_id;

// Turn 2: the same conversation, streamed as progress notifications.
const progress = [];
const second = await client.callTool(
  { name: agent, arguments: { query: "And of Italy?", session_id: session } },
  undefined,
  { onprogress: (p) => progress.push({ progress: p.progress, message: p.message ?? "" }) },
);
out.second = { text: second.content?.[0]?.text ?? null, structured: second.structuredContent ?? null, progress };

// A new agent changes the tool list: the server says so.
const listChanged = new Promise((resolve) => {
  onChanged = resolve;
  if (changed > 0) resolve();
});
const created = await fetch(base + "/v1/agents", {
  method: "POST",
  headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
  body: JSON.stringify({ name: "added agent" }),
});
out.created_status = created.status;
let timer;
const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), 30_000)));
out.list_changed = (await Promise.race([listChanged.then(() => "changed"), timeout])) === "changed";
clearTimeout(timer);
out.tools_after = (await client.listTools()).tools.map((t) => t.name).sort();

// Turn 3: cancelled by the client after the first streamed piece.
const abort = new AbortController();
let pieces = 0;
try {
  await client.callTool(
    { name: agent, arguments: { query: "Tell me everything.", session_id: session } },
    undefined,
    {
      signal: abort.signal,
      onprogress: () => {
        if (++pieces === 1) abort.abort("enough");
      },
    },
  );
  out.cancel = { completed: true, pieces };
} catch (e) {
  out.cancel = { completed: false, pieces, error: String(e?.message ?? e) };
}
out.session = session;

await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
