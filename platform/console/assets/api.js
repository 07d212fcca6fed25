// The console's client of the Weft API. The key lives in sessionStorage
// (gone when the tab closes) and is sent only in the Authorization header.

const KEY = 'weft.apiKey';

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(k) {
  sessionStorage.setItem(KEY, k);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

// APIError is a non-2xx answer: status, code, message, and the field at
// fault: the error's param, else the field the message names
// ("field \"x\": …"), when it names one.
export class APIError extends Error {
  constructor(status, code, message, param) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param || '';
    const m = /field "([^"]+)"/.exec(message || '');
    this.field = m ? m[1] : param || '';
  }
}

function headers(extra) {
  const hd = { Authorization: 'Bearer ' + (getKey() || ''), ...extra };
  return hd;
}

// unauthorized ends the session: the key was revoked or is wrong.
function unauthorized() {
  window.dispatchEvent(new CustomEvent('weft:unauthorized'));
}

// Every request of the console goes through one pacer: a token bucket
// kept below the server's default limit per API key (20 requests a second,
// bursts of 40), so that a console session — a folder of hundreds of files
// included — stays within it and leaves room for the key's other clients.
// A 429 answer (the server refused before doing anything) is retried after
// its Retry-After, and holds every other request of the tab for that long:
// the bucket empties and its rate halves, then grows back with each
// request the server takes. Other failures are retried only for
// idempotent requests: a network error or a 502, 503 or 504, with
// exponential backoff.
const pacing = {
  // rate is the requests per second now allowed; it halves on a 429
  // (down to minRate) and grows back towards maxRate.
  rate: 10,
  maxRate: 10,
  minRate: 0.5,
  burst: 20,
  // retries429 bounds how often one request is retried after a 429;
  // retriesIdempotent how often an idempotent one is retried after a
  // network error or 502/503/504 (backoff 0.5 s, 1 s, 2 s).
  retries429: 8,
  retriesIdempotent: 3,
};

let tokens = pacing.burst;
let refilled = performance.now();
let heldUntil = 0;
let timer = null;
const waiting = [];

// pump lets waiting requests go while the bucket has tokens and no 429 is
// being waited out, then sleeps until the next token.
function pump() {
  clearTimeout(timer);
  timer = null;
  const now = performance.now();
  tokens = Math.min(pacing.burst, tokens + ((now - refilled) / 1000) * pacing.rate);
  refilled = now;
  while (waiting.length) {
    const w = waiting[0];
    if (w.signal && w.signal.aborted) {
      waiting.shift();
      w.reject(w.signal.reason);
      continue;
    }
    if (now < heldUntil || tokens < 1) break;
    tokens -= 1;
    waiting.shift();
    w.resolve();
  }
  if (waiting.length) {
    const wait = Math.max(heldUntil - now, ((1 - tokens) / pacing.rate) * 1000, 1);
    timer = setTimeout(pump, wait);
  }
}

// slot waits for the pacer's turn (first, for a retry, which keeps its
// place ahead of newer requests).
function slot(signal, first) {
  return new Promise((resolve, reject) => {
    const w = { resolve, reject, signal };
    if (first) waiting.unshift(w);
    else waiting.push(w);
    if (signal) signal.addEventListener('abort', pump, { once: true });
    pump();
  });
}

// rateLimited records a 429: nothing goes out for wait ms, and the rate
// halves.
function rateLimited(waitMS) {
  heldUntil = Math.max(heldUntil, performance.now() + waitMS);
  tokens = 0;
  pacing.rate = Math.max(pacing.minRate, pacing.rate / 2);
}

// accepted grows the rate back after a request the server took.
function accepted() {
  if (pacing.rate < pacing.maxRate) pacing.rate = Math.min(pacing.maxRate, pacing.rate + 0.25);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

// retryAfterMS reads a Retry-After header (seconds, or an HTTP date); one
// second when absent.
function retryAfterMS(v) {
  if (v && /^\d+$/.test(v.trim())) return Number(v) * 1000;
  const t = v ? Date.parse(v) : NaN;
  return isNaN(t) ? 1000 : Math.max(0, t - Date.now());
}

// send runs attempt() — one HTTP exchange, resolving to {status,
// retryAfter, code, ...} — through the pacer, retrying as the comment on
// pacing says. It returns the last answer; it throws the abort reason when
// signal aborts, and an APIError for a network failure it gives up on.
async function send(attempt, { idempotent, signal }) {
  let limited = 0;
  let failed = 0;
  for (;;) {
    await slot(signal, limited + failed > 0);
    let res;
    try {
      res = await attempt();
    } catch (x) {
      if (signal && signal.aborted) throw signal.reason;
      if (x && x.name === 'AbortError') throw x;
      if (idempotent && failed < pacing.retriesIdempotent) {
        await sleep(500 * 2 ** failed++, signal);
        continue;
      }
      throw new APIError(0, 'network', 'network error: the server could not be reached');
    }
    if (res.status === 429 && res.code === 'rate_limited' && limited < pacing.retries429) {
      limited++;
      rateLimited(res.retryAfter);
      continue;
    }
    if (idempotent && (res.status === 502 || res.status === 503 || res.status === 504) && failed < pacing.retriesIdempotent) {
      await sleep(500 * 2 ** failed++, signal);
      continue;
    }
    if (res.status !== 429) accepted();
    return res;
  }
}

// errorBody reads an error answer's JSON body: {code, message, param}.
async function errorBody(resp) {
  try {
    const body = await resp.json();
    if (body && body.error) return body.error;
  } catch {
    // Not JSON: the status text stands.
  }
  return {};
}

// fetchAttempt is one fetch, answered as send wants it: an error answer's
// body is read (its code tells a rate limit from a spent budget).
async function fetchAttempt(path, init) {
  const resp = await fetch(path, init);
  if (resp.ok) return { status: resp.status, resp };
  const e = await errorBody(resp);
  return { status: resp.status, resp, retryAfter: retryAfterMS(resp.headers.get('Retry-After')), code: e.code || '', error: e };
}

function failure(res) {
  if (res.status === 401) unauthorized();
  const e = res.error || {};
  return new APIError(res.status, e.code || 'http_' + res.status, e.message || res.resp?.statusText || 'request failed', e.param || '');
}

// api calls method path with a JSON body; it returns the decoded answer
// (null for 204) or throws an APIError. opts.signal aborts it;
// opts.contentType sends body as it is (a string) with that type;
// opts.idempotent says a failed exchange may be repeated (default: for
// GET, HEAD and PUT).
export async function api(method, path, body, opts = {}) {
  const hd = {};
  let payload;
  if (opts.contentType) {
    hd['Content-Type'] = opts.contentType;
    payload = body;
  } else if (body !== undefined) {
    hd['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const idempotent = opts.idempotent ?? ['GET', 'HEAD', 'PUT'].includes(method);
  const res = await send(() => fetchAttempt(path, { method, headers: headers(hd), body: payload, signal: opts.signal }), { idempotent, signal: opts.signal });
  if (res.status < 200 || res.status > 299) throw failure(res);
  if (res.status === 204) return null;
  return res.resp.json();
}

// stream POSTs body to path asking for server-sent events, and calls
// onEvent(name, data) for each frame as it arrives. It resolves when the
// stream ends; it rejects with an APIError for a non-2xx answer, or with
// the abort error when signal aborts. A rate-limited start is retried
// (nothing ran); a stream that breaks is not.
export async function stream(path, body, onEvent, signal) {
  const init = {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify(body),
    signal,
  };
  const res = await send(() => fetchAttempt(path, init), { idempotent: false, signal });
  if (res.status < 200 || res.status > 299) throw failure(res);
  const parser = new SSEParser(onEvent);
  const reader = res.resp.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.push(value);
  }
  parser.end();
}

// SSEParser splits a text/event-stream into frames (WHATWG rules: lines end
// in \n, \r\n or \r; "event:" and "data:" fields; comments start with ':';
// a blank line dispatches). Data is parsed as JSON.
export class SSEParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buf = '';
    this.event = '';
    this.data = [];
  }

  push(text) {
    this.buf += text;
    let start = 0;
    for (;;) {
      const i = this.buf.slice(start).search(/\r\n|\r|\n/);
      if (i < 0) break;
      const line = this.buf.slice(start, start + i);
      let len = 1;
      if (this.buf[start + i] === '\r' && this.buf[start + i + 1] === '\n') len = 2;
      // A lone \r at the end of the buffer may be half of \r\n: wait.
      if (this.buf[start + i] === '\r' && start + i + 1 === this.buf.length) break;
      start += i + len;
      this.line(line);
    }
    this.buf = this.buf.slice(start);
  }

  line(line) {
    if (line === '') {
      if (this.data.length) {
        const raw = this.data.join('\n');
        let data;
        try {
          data = JSON.parse(raw);
        } catch {
          data = { text: raw };
        }
        this.onEvent(this.event || (data && data.type) || 'message', data);
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const c = line.indexOf(':');
    const name = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.event = value;
    else if (name === 'data') this.data.push(value);
  }

  end() {
    if (this.buf) this.line(this.buf);
    this.buf = '';
    this.line('');
  }
}

// upload sends one file to a knowledge base as multipart form data and
// reports progress (0..1) to onProgress. XMLHttpRequest, because fetch
// cannot report upload progress. It goes through the pacer and is retried
// like an idempotent request: the server keys a document by its name and
// answers "unchanged" to the same content sent again, so a repeat does no
// harm.
export async function upload(kbID, file, name, onProgress, signal) {
  const res = await send(() => uploadAttempt(kbID, file, name, onProgress, signal), { idempotent: true, signal });
  if (res.status < 200 || res.status > 299) throw failure(res);
  onProgress(1);
  return res.body;
}

function uploadAttempt(kbID, file, name, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/knowledge-bases/${encodeURIComponent(kbID)}/documents`);
    xhr.setRequestHeader('Authorization', 'Bearer ' + (getKey() || ''));
    xhr.responseType = 'json';
    onProgress(0);
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve({ status: xhr.status, body: xhr.response });
        return;
      }
      const e = (xhr.response && xhr.response.error) || {};
      resolve({ status: xhr.status, retryAfter: retryAfterMS(xhr.getResponseHeader('Retry-After')), code: e.code || '', error: { ...e, message: e.message || 'upload failed' } });
    });
    xhr.addEventListener('error', () => reject(new TypeError('network error')));
    xhr.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
    if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
    const form = new FormData();
    form.append('name', name);
    form.append('file', file, name);
    xhr.send(form);
  });
}
