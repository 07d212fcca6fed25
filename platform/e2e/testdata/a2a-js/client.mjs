// Drives weft serve's A2A endpoint with the official A2A JavaScript SDK
// client (@a2a-js/sdk): the agent card, a multi-turn conversation through
// contextId, a stream, GetTask, a cancelled stream, a JSON-RPC error,
// resubscribing to running tasks (1.0 SubscribeToTask, 0.3
// tasks/resubscribe) and to an ended one, ListTasks in pages and by state,
// and an unauthenticated client. Prints what it saw as one JSON object; the Go
// test (platform/e2e.TestA2AJSClient) checks it.
import { randomUUID } from "node:crypto";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const base = process.env.WEFT_URL;
const key = process.env.WEFT_API_KEY;
const agent = process.env.WEFT_AGENT;

function factoryWith(fetchImpl) {
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }));
}
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${key}`);
  return fetch(url, { ...init, headers });
};

const message = (text, contextId) => ({
  messageId: randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text } }],
  ...(contextId ? { contextId } : {}),
});
const partsText = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const taskText = (task) => (task.artifacts ?? []).map((a) => partsText(a.parts)).join("");
const state = (s) => taskStateToJSON(s.state);

const out = {};
const client = await factoryWith(authFetch).createFromUrl(`${base}/a2a/agents/${agent}/`);
out.card = { name: client.agentCard.name, streaming: client.agentCard.capabilities?.streaming, protocolVersion: client.protocolVersion };

// Two blocking turns in one context.
const first = await client.sendMessage({ message: message("Remember: my name is Ada.") });
out.first = { kind: "status" in first ? "task" : "message", state: state(first.status), contextId: first.contextId, taskId: first.id, text: taskText(first) };
const second = await client.sendMessage({ message: message("What is my name?", first.contextId) });
out.second = { state: state(second.status), contextId: second.contextId, text: taskText(second), agentMessage: partsText(second.status.message?.parts), taskId: second.id };

// A streamed turn in the same context.
const stream = { kinds: [], text: "" };
for await (const ev of client.sendMessageStream({ message: message("Tell me more.", first.contextId) })) {
  const { $case, value } = ev.payload;
  stream.kinds.push($case);
  if ($case === "task") { stream.taskId = value.id; stream.contextId = value.contextId; stream.firstState = state(value.status); }
  if ($case === "artifactUpdate") stream.text += partsText(value.artifact.parts);
  if ($case === "statusUpdate") stream.state = state(value.status);
}
out.stream = stream;
const got = await client.getTask({ id: stream.taskId, historyLength: 10 });
out.got = { state: state(got.status), history: got.history.length, text: taskText(got) };

// A stream cancelled after its first chunk.
const cancel = { kinds: [] };
for await (const ev of client.sendMessageStream({ message: message("Tell me a long story.", first.contextId) })) {
  const { $case, value } = ev.payload;
  cancel.kinds.push($case);
  if ($case === "task") cancel.taskId = value.id;
  if ($case === "artifactUpdate" && !cancel.cancelState) {
    const t = await client.cancelTask({ id: cancel.taskId });
    cancel.cancelState = state(t.status);
  }
  if ($case === "statusUpdate") cancel.final = state(value.status);
}
cancel.getState = state((await client.getTask({ id: cancel.taskId })).status);
out.cancel = cancel;

// A JSON-RPC error becomes the SDK's typed error.
try {
  await client.getTask({ id: "no-such-task" });
  out.notFound = "no error";
} catch (e) {
  out.notFound = e.constructor.name;
}

// The SDK's protocol 0.3 layer: a client that asks for the card without
// A2A-Version gets the 0.3 card and speaks message/send, message/stream and
// tasks/get.
const legacyFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  if (String(url).endsWith("agent-card.json")) headers.delete("A2A-Version");
  headers.set("Authorization", `Bearer ${key}`);
  return fetch(url, { ...init, headers });
};
const legacy = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl: legacyFetch, legacyCompat: { enabled: true } })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: legacyFetch, legacyCompat: { enabled: true } }),
})).createFromUrl(`${base}/a2a/agents/${agent}/`);
const lt = await legacy.sendMessage({ message: message("Once more, in 0.3.", first.contextId) });
const ls = { kinds: [] };
for await (const ev of legacy.sendMessageStream({ message: message("And streamed.", first.contextId) })) {
  ls.kinds.push(ev.payload.$case);
  if (ev.payload.$case === "task") ls.taskId = ev.payload.value.id;
  if (ev.payload.$case === "statusUpdate") ls.state = state(ev.payload.value.status);
}
out.legacy = { protocolVersion: legacy.protocolVersion, state: state(lt.status), contextId: lt.contextId, text: taskText(lt), taskId: lt.id, streamTaskId: ls.taskId,
  streamKinds: ls.kinds, streamState: ls.state, getState: state((await legacy.getTask({ id: ls.taskId })).status) };

// Resubscribing to a task that runs on without the client (sent with
// returnImmediately): the stream starts with the task as it is, then
// carries the rest of the answer and ends with the final status.
const follow = async (c, taskId) => {
  const f = { kinds: [], text: "" };
  for await (const ev of c.resubscribeTask({ id: taskId })) {
    const { $case, value } = ev.payload;
    f.kinds.push($case);
    if ($case === "task") { f.firstState = state(value.status); f.text += taskText(value); }
    if ($case === "artifactUpdate") { f.text += partsText(value.artifact.parts); f.lastChunk = value.lastChunk; }
    if ($case === "statusUpdate") f.state = state(value.status);
  }
  return f;
};
const bg = await client.sendMessage({ message: message("Count slowly."), configuration: { returnImmediately: true } });
const resub = await follow(client, bg.id);
resub.sentState = state(bg.status);
resub.getText = taskText(await client.getTask({ id: bg.id }));
out.resubscribe = resub;
const lbg = await legacy.sendMessage({ message: message("Count slowly, in 0.3."), configuration: { returnImmediately: true } });
out.legacyResubscribe = await follow(legacy, lbg.id);
try {
  for await (const _ of client.resubscribeTask({ id: bg.id })) { /* the task has ended */ }
  out.resubscribeEnded = "no error";
} catch (e) {
  out.resubscribeEnded = e.constructor.name;
}

// ListTasks: the conversation's tasks in pages of four, newest first, and
// by state. (The SDK writes a status left out as "UNRECOGNIZED", which its
// own server refuses too: "any state" is TASK_STATE_UNSPECIFIED.)
const any = TaskState.TASK_STATE_UNSPECIFIED;
const page1 = await client.listTasks({ contextId: first.contextId, status: any, pageSize: 4 });
const page2 = await client.listTasks({ contextId: first.contextId, status: any, pageSize: 4, pageToken: page1.nextPageToken });
const canceled = await client.listTasks({ contextId: first.contextId, status: TaskState.TASK_STATE_CANCELED, includeArtifacts: true });
out.list = {
  page1: page1.tasks.map((t) => t.id), page2: page2.tasks.map((t) => t.id), next2: page2.nextPageToken,
  total: page1.totalSize, pageSize: page1.pageSize, artifacts: page1.tasks[0].artifacts.length,
  canceled: canceled.tasks.map((t) => t.id), canceledText: taskText(canceled.tasks[0]),
  all: (await client.listTasks({ status: any })).totalSize,
};

// Without the key the card is refused.
try {
  await factoryWith(fetch).createFromUrl(`${base}/a2a/agents/${agent}/`);
  out.unauthorized = "no error";
} catch (e) {
  out.unauthorized = String(e.message);
}
console.log(JSON.stringify(out));
