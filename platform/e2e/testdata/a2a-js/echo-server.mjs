// An A2A agent served by the official A2A JavaScript SDK (@a2a-js/sdk):
// its express JSON-RPC handler, agent card handler, default request handler
// and in-memory task store, with an executor that echoes the user's text
// (and counts the turns of its context, to show the context is kept) as a
// task: submitted, working, two artifact chunks, completed. It serves
// protocol 1.0 and, with the SDK's compat layer, 0.3. It prints
// "listening <port>" and serves until killed (platform/e2e.TestA2ARemoteAgent).
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { UserBuilder, agentCardHandler, jsonRpcHandler } from "@a2a-js/sdk/server/express";
import { Role, TaskState } from "@a2a-js/sdk";

const turns = new Map();
const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
    const n = (turns.get(ctx.contextId) ?? 0) + 1;
    turns.set(ctx.contextId, n);
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const part = (value) => ({ content: { $case: "text", value } });
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED }, history: [ctx.userMessage], artifacts: [] }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_WORKING } }));
    bus.publish(AgentEvent.artifactUpdate({ ...ids, append: false, lastChunk: false, artifact: { artifactId: "echo", name: "echo", parts: [part(`echo #${n}: `)] } }));
    bus.publish(AgentEvent.artifactUpdate({ ...ids, append: true, lastChunk: true, artifact: { artifactId: "echo", name: "echo", parts: [part(text)] } }));
    bus.publish(AgentEvent.statusUpdate({ ...ids, status: { state: TaskState.TASK_STATE_COMPLETED, message: { messageId: `${ctx.taskId}-done`, role: Role.ROLE_AGENT, parts: [part("done")] } } }));
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(0, "127.0.0.1", () => {
  const url = `http://127.0.0.1:${server.address().port}/`;
  const card = {
    name: "echo",
    description: "Echoes what it is told.",
    version: "1.0.0",
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
    ],
    capabilities: { streaming: process.env.ECHO_STREAMING !== "0", pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "echo", description: "Echo.", tags: ["echo"] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log(`listening ${server.address().port}`);
});
