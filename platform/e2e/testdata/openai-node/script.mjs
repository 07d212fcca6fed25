// Drives the official OpenAI Node client against weft serve's
// OpenAI-compatible endpoint and prints what it saw as one JSON object,
// which platform/e2e's TestOpenAINodeClient asserts on.
//
// Environment: WEFT_BASE_URL (ending in /v1), WEFT_API_KEY, WEFT_MODEL (an
// agent name).
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.WEFT_BASE_URL,
  apiKey: process.env.WEFT_API_KEY,
  maxRetries: 0,
  timeout: 30_000,
});
const model = process.env.WEFT_MODEL;
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

// Blocking: a new session, returned in X-Weft-Session.
const first = await client.chat.completions
  .create({ model, messages: [{ role: "user", content: "What is the capital of France?" }] })
  .withResponse();
const session = first.response.headers.get("x-weft-session");
out.blocking = {
  text: first.data.choices[0].message.content,
  finish_reason: first.data.choices[0].finish_reason,
  object: first.data.object,
  usage: first.data.usage,
  session,
};

// Streamed, with usage, continuing the session.
const streamed = await client.chat.completions
  .create(
    {
      model,
      messages: [{ role: "user", content: "And of Italy?" }],
      stream: true,
      stream_options: { include_usage: true },
    },
    { headers: { "X-Weft-Session": session } },
  )
  .withResponse();
let text = "";
let usage = null;
let chunks = 0;
let finish = null;
for await (const chunk of streamed.data) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta?.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.stream = {
  text,
  usage,
  chunks,
  finish_reason: finish,
  session: streamed.response.headers.get("x-weft-session"),
};

// The SDK's helper that accumulates a stream.
const runner = client.chat.completions.stream(
  { model, messages: [{ role: "user", content: "And of Spain?" }] },
  { headers: { "X-Weft-Session": session } },
);
const final = await runner.finalChatCompletion();
out.helper = { text: final.choices[0].message.content };

// An unknown model is an API error the SDK understands.
try {
  await client.chat.completions.create({ model: "no-such-agent", messages: [{ role: "user", content: "hi" }] });
  out.error = null;
} catch (e) {
  out.error = {
    status: e.status,
    code: e.code ?? null,
    type: e.type ?? null,
    param: e.param ?? null,
    is_api_error: e instanceof OpenAI.APIError,
  };
}

// A wrong key is OpenAI's 401: invalid_request_error, invalid_api_key,
// param null, the SDK's AuthenticationError.
try {
  const stranger = new OpenAI({ baseURL: process.env.WEFT_BASE_URL, apiKey: "wk_key_nope_secret", maxRetries: 0 });
  await stranger.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
  out.auth_error = null;
} catch (e) {
  out.auth_error = {
    status: e.status,
    code: e.code ?? null,
    type: e.type ?? null,
    param: e.param === null ? "null" : (e.param ?? "absent"),
    is_auth: e instanceof OpenAI.AuthenticationError,
  };
}

// A field of the wrong JSON type is a 400 naming it in param.
out.type_errors = {};
for (const [field, value] of [
  ["temperature", "hot"],
  ["max_tokens", "many"],
  ["messages", "hi"],
]) {
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], [field]: value });
    out.type_errors[field] = null;
  } catch (e) {
    out.type_errors[field] = { status: e.status, type: e.type ?? null, param: e.param ?? null };
  }
}

// A multi-turn conversation sent as history, as every OpenAI client sends
// it: no X-Weft-Session, the client's own system message and sampling
// parameters.
const history = await client.chat.completions.create({
  model,
  messages: [
    { role: "system", content: "Be terse." },
    { role: "user", content: "My name is Ada." },
    { role: "assistant", content: "Noted, Ada." },
    { role: "user", content: "What is my name?" },
  ],
  temperature: 0.2,
  max_completion_tokens: 50,
  seed: 3,
});
out.history = { text: history.choices[0].message.content, finish_reason: history.choices[0].finish_reason };

// A structured answer through response_format json_schema.
const structured = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Capital of France as JSON." }],
  response_format: {
    type: "json_schema",
    json_schema: { name: "capital", schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  },
});
out.structured = JSON.parse(structured.choices[0].message.content);

// n > 1 is refused with OpenAI's error shape, naming the parameter.
try {
  await client.chat.completions.create({ model, n: 2, messages: [{ role: "user", content: "hi" }] });
  out.n_error = null;
} catch (e) {
  out.n_error = { status: e.status, param: e.param ?? null, type: e.type ?? null };
}

// A client-side tool round trip, as the SDK's users write it: the answer's
// tool_calls, the client's tool message, the final answer.
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];
const conv = [{ role: "user", content: "Weather in Paris?" }];
const asked = await client.chat.completions.create({ model, messages: conv, tools });
const call = asked.choices[0].message;
conv.push(call);
for (const tc of call.tool_calls ?? []) {
  conv.push({ role: "tool", tool_call_id: tc.id, content: JSON.stringify({ temp_c: 21 }) });
}
const answered = await client.chat.completions.create({ model, messages: conv, tools });
out.tools = {
  finish_first: asked.choices[0].finish_reason,
  content_first: call.content,
  id: call.tool_calls?.[0]?.id ?? null,
  name: call.tool_calls?.[0]?.function.name ?? null,
  arguments: call.tool_calls?.[0]?.function.arguments ?? null,
  text: answered.choices[0].message.content,
  finish: answered.choices[0].finish_reason,
};

// The same call streamed, accumulated by the SDK's helper.
const toolStream = client.chat.completions.stream({ model, messages: [{ role: "user", content: "Weather in Rome?" }], tools });
const streamedCall = await toolStream.finalChatCompletion();
out.tools_stream = {
  finish: streamedCall.choices[0].finish_reason,
  name: streamedCall.choices[0].message.tool_calls?.[0]?.function.name ?? null,
  arguments: streamedCall.choices[0].message.tool_calls?.[0]?.function.arguments ?? null,
};

// The same call read raw: OpenAI's tool_calls deltas — index, id, type and
// name first, then each fragment of the arguments as the model streams it.
const raw = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Weather in Madrid?" }],
  tools,
  stream: true,
});
const deltas = [];
let rawFinish = null;
for await (const chunk of raw) {
  for (const c of chunk.choices) {
    for (const tc of c.delta?.tool_calls ?? []) {
      deltas.push({
        index: tc.index,
        id: tc.id ?? null,
        type: tc.type ?? null,
        name: tc.function?.name ?? null,
        arguments: tc.function?.arguments ?? null,
      });
    }
    if (c.finish_reason) rawFinish = c.finish_reason;
  }
}
out.tools_raw = { deltas, finish: rawFinish };

process.stdout.write(JSON.stringify(out) + "\n");
