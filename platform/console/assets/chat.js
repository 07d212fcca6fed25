// The chat playground, and the chat panel the agent editor reuses.
import { api, stream } from './api.js';
import { h, field, clear, fmtTime, confirmButton } from './dom.js';
import { render as renderMarkdown, StreamRenderer } from './markdown.js';
import { traceBox } from './trace.js';

function pretty(v) {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}

// Turn is one assistant message being streamed or shown from history. Its
// parts are appended in the order events arrive; text deltas go to the
// current text segment (a StreamRenderer), so the DOM grows by appends and
// nothing before the current segment is rebuilt.
class Turn {
  constructor(container, who) {
    this.state = h('span', { class: 'state', text: '' });
    this.parts = h('div', { class: 'parts' });
    this.footer = h('div', { class: 'usage' });
    this.el = h('article', { class: 'msg assistant', dataset: { state: 'streaming' }, 'aria-label': 'answer' },
      h('div', { class: 'meta' }, h('span', { class: 'role', text: who || 'assistant' }), this.state),
      this.parts, this.footer);
    container.append(this.el);
    this.segment = null;
    this.text = '';
    this.tools = new Map();
    // Delegations nest: stack[d] is where events at depth d go.
    this.stack = [this.parts];
    this.delegateText = new Map();
  }

  setState(s, label) {
    this.el.dataset.state = s;
    this.state.textContent = label || '';
  }

  delta(text) {
    if (!this.segment) {
      const el = h('div', { class: 'body md' });
      this.parts.append(el);
      this.segment = new StreamRenderer(el);
    }
    this.text += text;
    this.segment.append(text);
  }

  // endSegment closes the current text segment: a tool call or delegation
  // comes between it and the next text.
  endSegment() {
    if (this.segment) this.segment.finish();
    this.segment = null;
  }

  sources(frags) {
    this.endSegment();
    const list = h('ol', { class: 'sources' }, frags.map((f) =>
      h('li', { class: 'source' },
        h('div', {}, h('strong', { class: 'doc', text: f.document_name || f.document_id }),
          ' ', h('span', { class: 'score', text: 'score ' + Number(f.score).toFixed(3) })),
        h('blockquote', { class: 'snippet', text: f.content.length > 400 ? f.content.slice(0, 400) + '…' : f.content }))));
    this.parts.append(h('details', { class: 'sources-box' }, h('summary', {}, `Sources (${frags.length})`), list));
  }

  toolCall(ev, depth = 0) {
    this.endSegment();
    const result = h('pre', { class: 'result', text: '…running' });
    const status = h('span', { class: 'tool-status', text: 'running' });
    const d = h('details', { class: 'tool', dataset: { tool: ev.name } },
      h('summary', {}, 'Tool ', h('code', { text: ev.name }), ' ', status),
      h('div', { class: 'label', text: 'Arguments' }), h('pre', { class: 'args', text: pretty(ev.arguments ?? {}) }),
      h('div', { class: 'label', text: 'Result' }), result);
    (this.stack[depth] || this.parts).append(d);
    this.tools.set(ev.id, { d, result, status });
  }

  toolResult(ev) {
    let t = this.tools.get(ev.id);
    if (!t) {
      this.toolCall({ id: ev.id, name: ev.name || '?', arguments: {} });
      t = this.tools.get(ev.id);
    }
    t.status.textContent = ev.ok === false ? '✗ failed' : '✓ ok';
    t.d.dataset.ok = String(ev.ok !== false);
    t.result.textContent = ev.ok === false ? (ev.error || ev.result || '') : pretty(ev.result ?? '');
  }

  delegateStart(ev, name) {
    this.endSegment();
    const depth = ev.depth || 1;
    const body = h('div', { class: 'delegate-body' });
    const text = h('div', { class: 'body md' });
    const status = h('span', { class: 'tool-status', text: 'working' });
    const d = h('details', { class: 'delegate', open: true, dataset: { depth: String(depth) } },
      h('summary', {}, 'Delegated to ', h('strong', { text: name || ev.agent_id }), ' ', status), body, text);
    (this.stack[depth - 1] || this.parts).append(d);
    this.stack[depth] = body;
    this.stack.length = depth + 1;
    this.delegateText.set(depth, { r: new StreamRenderer(text), status });
  }

  delegateDelta(ev) {
    const t = this.delegateText.get(ev.depth || 1);
    if (t) t.r.append(ev.text || '');
  }

  delegateEnd(ev) {
    const depth = ev.depth || 1;
    const t = this.delegateText.get(depth);
    if (t) {
      t.r.finish();
      t.status.textContent = ev.ok === false ? '✗ ' + (ev.error || 'failed') : '✓ done';
    }
    this.stack.length = depth;
  }

  usage(u, latencyMS, firstTokenMS, model) {
    const bits = [];
    if (u) bits.push(`${u.prompt_tokens} prompt + ${u.completion_tokens} completion = ${u.total_tokens} tokens`);
    if (latencyMS !== undefined) bits.push(`${latencyMS} ms`);
    if (firstTokenMS !== undefined) bits.push(`first token ${firstTokenMS} ms`);
    if (model) bits.push(model);
    this.footer.textContent = bits.join(' · ');
  }

  finish() {
    this.endSegment();
    for (const { r } of this.delegateText.values()) r.finish();
  }

  // trace adds the turn's trace (collapsed, loaded when opened) below it,
  // and, for an answer, its feedback buttons.
  trace(sessionID, messageID, names, rating) {
    if (!sessionID || !messageID || this.el.querySelector('details.trace')) return;
    if (this.text) this.el.append(feedbackButtons(sessionID, messageID, rating || 0));
    this.el.append(traceBox(sessionID, messageID, names));
  }

  // setText shows a stored answer at once.
  setText(text) {
    if (!text) return;
    this.endSegment();
    this.parts.append(h('div', { class: 'body md' }, renderMarkdown(text)));
    this.text += text;
  }
}

// feedbackButtons rate an answer: thumbs up or down, stored with the
// turn (PUT /v1/sessions/{id}/messages/{message}/feedback); pressing the
// pressed one again takes the rating back.
function feedbackButtons(sessionID, messageID, rating) {
  const path = `/v1/sessions/${encodeURIComponent(sessionID)}/messages/${encodeURIComponent(messageID)}/feedback`;
  const note = h('span', { class: 'muted small', role: 'status' });
  let current = rating;
  const buttons = [[1, '👍 Helpful'], [-1, '👎 Not helpful']].map(([v, label]) =>
    h('button', { type: 'button', class: 'small feedback-' + (v > 0 ? 'up' : 'down'), 'aria-pressed': String(current === v), text: label }));
  const show = () => {
    buttons[0].setAttribute('aria-pressed', String(current === 1));
    buttons[1].setAttribute('aria-pressed', String(current === -1));
  };
  buttons.forEach((b, i) => b.addEventListener('click', async () => {
    const v = i === 0 ? 1 : -1;
    try {
      if (current === v) {
        await api('DELETE', path);
        current = 0;
      } else {
        await api('PUT', path, { rating: v });
        current = v;
      }
      note.textContent = current ? 'Thanks: feedback saved.' : 'Feedback removed.';
      show();
    } catch (x) {
      note.textContent = x.message;
    }
  }));
  return h('div', { class: 'feedback', role: 'group', 'aria-label': 'Rate this answer', dataset: { message: messageID } }, buttons, note);
}

function userMessage(container, text) {
  container.append(h('article', { class: 'msg user', 'aria-label': 'your message' },
    h('div', { class: 'meta' }, h('span', { class: 'role', text: 'you' })),
    h('div', { class: 'body', text })));
}

// renderTranscript shows stored messages (GET /v1/sessions/{id}/messages):
// user turns, answers with their tool rounds, partial and failed answers
// marked, each answer with its trace when opts.sessionID is given. A user
// message that no answer follows is a turn that failed before any text
// (or is still running): it is marked so, with its trace, which the server
// finds from the user message's id.
export function renderTranscript(container, messages, who, opts = {}) {
  let turn = null;
  let traceID = ''; // the answer's id, else the id of the message that started the turn
  let unanswered = false;
  const end = () => {
    if (!turn && unanswered) {
      turn = new Turn(container, who);
      turn.setState('failed', 'no answer stored');
    }
    if (!turn) return;
    turn.finish();
    turn.trace(opts.sessionID, traceID, opts.names, opts.ratings?.get(traceID));
  };
  for (const m of messages) {
    if (m.role === 'user') {
      end();
      turn = null;
      traceID = m.id || '';
      unanswered = true;
      userMessage(container, m.content);
    } else if (m.role === 'assistant') {
      unanswered = false;
      if (!turn) {
        turn = new Turn(container, who);
        turn.setState('done', '');
      }
      turn.setText(m.content);
      if (m.id) traceID = m.id;
      for (const c of m.tool_calls || []) turn.toolCall(c);
      if (m.partial) turn.setState('partial', 'partial');
      if (m.is_error) turn.setState('failed', 'failed');
    } else if (m.role === 'tool') {
      unanswered = false;
      if (!turn) {
        turn = new Turn(container, who);
        turn.setState('done', '');
      }
      turn.toolResult({ id: m.tool_call_id, name: m.name, ok: !m.is_error, result: m.content, error: m.content });
    } else if (m.role === 'system') {
      container.append(h('article', { class: 'msg system' }, h('div', { class: 'body', text: m.content })));
    }
  }
  end();
}

// ChatPanel is a transcript with a composer and a Stop button, bound to
// one agent at a time.
export class ChatPanel {
  constructor({ onTurnEnd, agentNames } = {}) {
    this.agentID = '';
    this.agentName = '';
    this.sessionID = '';
    this.onTurnEnd = onTurnEnd || (() => {});
    this.agentNames = agentNames || new Map();
    this.transcript = h('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'aria-label': 'conversation' });
    this.input = h('textarea', { rows: 3, placeholder: 'Ask something… (Enter sends, Shift+Enter for a new line)' });
    this.send = h('button', { type: 'submit', class: 'primary', text: 'Send' });
    this.stopBtn = h('button', { type: 'button', class: 'stop', text: 'Stop', disabled: true, on: { click: () => this.stop() } });
    this.status = h('div', { class: 'error', role: 'status' });
    this.form = h('form', { class: 'composer' }, field('Message', this.input), h('div', { class: 'buttons' }, this.send, this.stopBtn), this.status);
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.ask(this.input.value);
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.ask(this.input.value);
      }
    });
    this.el = h('section', { class: 'chat-panel' }, this.transcript, this.form);
    this.running = null;
  }

  setAgent(id, name) {
    if (id !== this.agentID) this.reset();
    this.agentID = id;
    this.agentName = name || id;
  }

  reset() {
    this.abort();
    this.sessionID = '';
    clear(this.transcript);
    this.status.textContent = '';
  }

  async load(sessionID) {
    this.reset();
    this.sessionID = sessionID;
    try {
      const [msgs, fb] = await Promise.all([
        api('GET', `/v1/sessions/${encodeURIComponent(sessionID)}/messages`),
        api('GET', `/v1/sessions/${encodeURIComponent(sessionID)}/feedback`).catch(() => []),
      ]);
      const ratings = new Map(fb.map((f) => [f.message_id, f.rating]));
      renderTranscript(this.transcript, msgs, this.agentName, { sessionID, names: this.agentNames, ratings });
      this.transcript.scrollTop = this.transcript.scrollHeight;
    } catch (x) {
      this.status.textContent = x.message;
    }
  }

  abort() {
    if (this.running) this.running.controller.abort();
    this.running = null;
  }

  async stop() {
    const r = this.running;
    if (!r) return;
    r.stopped = true;
    this.stopBtn.disabled = true;
    const body = r.messageID ? { message_id: r.messageID } : { session_id: r.sessionID || this.sessionID };
    try {
      if (body.message_id || body.session_id) await api('POST', '/v1/chat/cancel', body);
    } catch {
      // Aborting the stream below stops the turn too.
    }
    r.controller.abort();
  }

  async ask(text) {
    const query = text.trim();
    if (!query || this.running || !this.agentID) {
      if (!this.agentID) this.status.textContent = 'Pick an agent first.';
      return;
    }
    this.status.textContent = '';
    this.input.value = '';
    userMessage(this.transcript, query);
    const turn = new Turn(this.transcript, this.agentName);
    turn.setState('streaming', 'streaming…');
    const r = { controller: new AbortController(), messageID: '', sessionID: this.sessionID, stopped: false, failed: false };
    const isNew = !this.sessionID;
    this.running = r;
    this.send.disabled = true;
    this.stopBtn.disabled = false;
    const t0 = performance.now();
    let first;
    const follow = () => {
      const t = this.transcript;
      if (t.scrollHeight - t.scrollTop - t.clientHeight < 120) t.scrollTop = t.scrollHeight;
    };
    const body = { query, stream: true };
    if (this.sessionID) body.session_id = this.sessionID;
    try {
      await stream(`/v1/agents/${encodeURIComponent(this.agentID)}/chat`, body, (ev, d) => {
        switch (ev) {
          case 'chat.created':
            r.messageID = d.message_id;
            r.sessionID = d.session_id;
            if (this.running === r) this.sessionID = d.session_id;
            break;
          case 'retrieval':
            turn.sources(d.rag_fragments || []);
            break;
          case 'message.delta':
            if (first === undefined) first = Math.round(performance.now() - t0);
            turn.delta(d.text || '');
            break;
          case 'tool.call':
            turn.toolCall(d);
            break;
          case 'tool.result':
            turn.toolResult(d);
            break;
          case 'delegate.start':
            turn.delegateStart(d, this.agentNames.get(d.agent_id));
            break;
          case 'delegate.delta':
            turn.delegateDelta(d);
            break;
          case 'delegate.end':
            turn.delegateEnd(d);
            break;
          case 'chat.completed':
            turn.finish();
            if (!turn.text && d.answer) turn.setText(d.answer);
            turn.usage(d.usage, d.latency_ms, first, d.model);
            turn.setState('done', '');
            r.completed = true;
            break;
          case 'error':
            r.failed = true;
            turn.finish();
            if (r.stopped || d.code === 'cancelled') {
              turn.setState('stopped', turn.text ? 'stopped · partial' : 'stopped');
            } else {
              turn.setState('failed', (turn.text ? 'partial · ' : '') + 'failed: ' + d.message);
            }
            break;
        }
        follow();
      }, r.controller.signal);
      if (!r.completed && !r.failed) {
        turn.finish();
        turn.setState(r.stopped ? 'stopped' : 'failed', r.stopped ? 'stopped' : 'the stream ended early');
      }
    } catch (x) {
      turn.finish();
      if (r.stopped || x.name === 'AbortError') {
        turn.setState('stopped', turn.text ? 'stopped · partial' : 'stopped');
      } else {
        turn.setState('failed', (turn.text ? 'partial · ' : '') + 'failed: ' + x.message);
      }
    } finally {
      turn.trace(r.sessionID, r.messageID, this.agentNames);
      if (this.running === r) this.running = null;
      this.send.disabled = false;
      this.stopBtn.disabled = true;
      // A new session is titled from its first message (renamable in
      // the sessions list).
      if (isNew && r.sessionID) {
        await api('PUT', '/v1/sessions/' + encodeURIComponent(r.sessionID), { title: sessionTitle(query) }).catch(() => {});
      }
      this.onTurnEnd(r.sessionID);
      follow();
    }
  }
}

// sessionTitle makes a title of a first message: its first line, at most
// 60 characters, cut at a word.
export function sessionTitle(text) {
  const line = text.trim().split('\n')[0].replace(/\s+/g, ' ');
  if (line.length <= 60) return line;
  const cut = line.slice(0, 60);
  return cut.slice(0, cut.lastIndexOf(' ') > 30 ? cut.lastIndexOf(' ') : 60) + '…';
}

// render is the chat playground: agent picker, sessions, chat.
export function render(main, ctx) {
  const picker = h('select', {}, h('option', { value: '', text: 'Loading…' }));
  const sessionsList = h('ul', { class: 'sessions' });
  const agentNames = new Map();
  const panel = new ChatPanel({ onTurnEnd: () => loadSessions(), agentNames });
  const newChat = h('button', { type: 'button', text: 'New chat', on: { click: () => { panel.reset(); markCurrent(); panel.input.focus(); } } });
  const side = h('aside', { class: 'chat-side' },
    field('Agent', picker), newChat,
    h('h2', { text: 'Sessions' }), sessionsList);
  main.append(h('div', { class: 'chat' }, side, panel.el));

  function markCurrent() {
    for (const li of sessionsList.children) {
      if (li.dataset.id === panel.sessionID) li.setAttribute('aria-current', 'true');
      else li.removeAttribute('aria-current');
    }
  }

  async function loadSessions() {
    if (!picker.value) return;
    try {
      const list = await api('GET', '/v1/sessions?agent_id=' + encodeURIComponent(picker.value));
      clear(sessionsList);
      if (!list.length) sessionsList.append(h('li', { class: 'muted', text: 'No sessions yet.' }));
      for (const s of list) {
        const rename = h('form', { class: 'session-rename', hidden: true, 'aria-label': 'Rename session' },
          h('input', { type: 'text', value: s.title || '', maxlength: 200, 'aria-label': 'Session title' }),
          h('button', { type: 'submit', class: 'small', text: 'Save' }));
        rename.addEventListener('submit', async (e) => {
          e.preventDefault();
          try {
            await api('PUT', '/v1/sessions/' + encodeURIComponent(s.id), { title: rename.querySelector('input').value });
            loadSessions();
          } catch (x) {
            rename.append(h('span', { class: 'error', role: 'alert', text: x.message }));
          }
        });
        sessionsList.append(h('li', { dataset: { id: s.id } },
          h('button', { type: 'button', class: 'link resume', title: s.id, on: { click: () => { panel.load(s.id).then(markCurrent); } } },
            s.title ? h('span', { class: 'session-title', text: s.title }) : null, s.title ? h('br') : null,
            h('span', { class: s.title ? 'muted small' : '', text: `${fmtTime(s.updated_at)} · ${s.message_count} messages` })),
          h('button', { type: 'button', class: 'small session-rename-open', 'aria-label': 'Rename session ' + (s.title || s.id),
            on: { click: () => { rename.hidden = !rename.hidden; if (!rename.hidden) rename.querySelector('input').focus(); } } }, 'Rename'),
          rename,
          confirmButton('Delete', async () => {
            await api('DELETE', '/v1/sessions/' + encodeURIComponent(s.id));
            if (panel.sessionID === s.id) panel.reset();
            loadSessions();
          }, { class: 'danger small', aria: 'Delete session ' + s.id })));
      }
      markCurrent();
    } catch (x) {
      sessionsList.replaceChildren(h('li', { class: 'error', text: x.message }));
    }
  }

  picker.addEventListener('change', () => {
    const opt = picker.selectedOptions[0];
    panel.setAgent(picker.value, opt ? opt.textContent : '');
    sessionStorage.setItem('weft.chatAgent', picker.value);
    loadSessions();
  });

  (async () => {
    try {
      const agents = await api('GET', '/v1/agents');
      clear(picker);
      for (const a of agents) agentNames.set(a.id, a.name);
      if (!agents.length) {
        picker.append(h('option', { value: '', text: 'No agents yet' }));
        panel.status.replaceChildren('No agents yet: ', h('a', { href: '#/agents/new', text: 'create one' }), '.');
        return;
      }
      for (const a of agents) picker.append(h('option', { value: a.id, text: a.name + (a.enabled ? '' : ' (disabled)') }));
      const want = ctx.params[0] || sessionStorage.getItem('weft.chatAgent');
      if (want && agents.some((a) => a.id === want)) picker.value = want;
      picker.dispatchEvent(new Event('change'));
      panel.input.focus();
    } catch (x) {
      panel.status.textContent = x.message;
    }
  })();
  return () => panel.abort();
}
