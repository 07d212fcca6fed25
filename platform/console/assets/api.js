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

async function errorOf(resp) {
  let code = 'http_' + resp.status;
  let message = resp.statusText || 'request failed';
  let param = '';
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
      param = body.error.param || '';
    }
  } catch {
    // Not JSON: keep the status text.
  }
  if (resp.status === 401) unauthorized();
  return new APIError(resp.status, code, message, param);
}

// api calls method path with a JSON body; it returns the decoded answer
// (null for 204) or throws an APIError.
export async function api(method, path, body, opts = {}) {
  const init = { method, headers: headers(body !== undefined ? { 'Content-Type': 'application/json' } : {}), signal: opts.signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (!resp.ok) throw await errorOf(resp);
  if (resp.status === 204) return null;
  return resp.json();
}

// stream POSTs body to path asking for server-sent events, and calls
// onEvent(name, data) for each frame as it arrives. It resolves when the
// stream ends; it rejects with an APIError for a non-2xx answer, or with
// the abort error when signal aborts.
export async function stream(path, body, onEvent, signal) {
  const resp = await fetch(path, {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify(body),
    signal,
  });
  if (!resp.ok) throw await errorOf(resp);
  const parser = new SSEParser(onEvent);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
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
// cannot report upload progress.
export function upload(kbID, file, name, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/knowledge-bases/${encodeURIComponent(kbID)}/documents`);
    xhr.setRequestHeader('Authorization', 'Bearer ' + (getKey() || ''));
    xhr.responseType = 'json';
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(xhr.response);
        return;
      }
      const e = (xhr.response && xhr.response.error) || {};
      if (xhr.status === 401) unauthorized();
      reject(new APIError(xhr.status, e.code || 'http_' + xhr.status, e.message || 'upload failed', e.param));
    });
    xhr.addEventListener('error', () => reject(new APIError(0, 'network', 'network error')));
    const form = new FormData();
    form.append('name', name);
    form.append('file', file, name);
    xhr.send(form);
  });
}
