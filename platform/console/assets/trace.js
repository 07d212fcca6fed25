// The trace of a turn (GET /v1/sessions/{id}/messages/{message}/trace): a
// collapsible timeline of its steps — retrieval, model calls, tool calls,
// delegations — with their timings and token counts. It is fetched when
// first opened.
import { api } from './api.js';
import { h } from './dom.js';

function tokens(n) {
  return Number(n || 0).toLocaleString();
}

// stepLabel names a step for its row.
function stepLabel(st, names) {
  switch (st.kind) {
    case 'retrieval':
      return ['Retrieval', ` · ${(st.hits || []).length} hit${(st.hits || []).length === 1 ? '' : 's'}`];
    case 'model':
      return ['Model ', h('code', { text: st.model || '' }), ` · ${tokens(st.prompt_tokens)} prompt + ${tokens(st.completion_tokens)} completion tokens`];
    case 'tool':
      if (st.agent_id) return ['Delegated to ', h('strong', { text: names.get(st.agent_id) || st.agent_id })];
      return ['Tool ', h('code', { text: st.tool || '' })];
  }
  return [st.kind];
}

// stepBody is what opening a step shows: a tool's arguments and result, a
// retrieval's hits.
function stepBody(st) {
  const parts = [];
  if (st.arguments) parts.push(h('div', { class: 'label', text: 'Arguments' }), h('pre', { text: st.arguments }));
  if (st.result) parts.push(h('div', { class: 'label', text: 'Result' }), h('pre', { text: st.result }));
  if (st.error) parts.push(h('div', { class: 'label', text: 'Error' }), h('pre', { class: 'error', text: st.error }));
  if (st.hits && st.hits.length) {
    parts.push(h('ol', { class: 'sources' }, st.hits.map((x) => h('li', {},
      h('strong', { text: x.document_name || x.document_id }), ' ', h('span', { class: 'score', text: 'score ' + Number(x.score).toFixed(3) }),
      x.snippet ? h('blockquote', { class: 'snippet', text: x.snippet }) : null))));
  }
  return parts;
}

// renderTrace fills el with trace t. names maps agent ids to names.
export function renderTrace(el, t, names = new Map()) {
  const total = Math.max(1, t.duration_ms || 0, ...(t.steps || []).map((s) => (s.start_ms || 0) + (s.duration_ms || 0)));
  const u = t.usage || {};
  const head = h('p', { class: 'trace-head' },
    h('span', { class: 'outcome ' + (t.outcome === 'ok' ? 'ok' : 'error'), text: t.outcome }), ` · ${t.duration_ms} ms · `,
    `${tokens(u.prompt_tokens)} prompt + ${tokens(u.completion_tokens)} completion = ${tokens(u.total_tokens)} tokens`,
    t.cost_usd ? ` · $${Number(t.cost_usd).toFixed(6)}` : '', ' · ', h('code', { text: t.model || '' }));
  const rows = (t.steps || []).map((st) => {
    const bar = h('span', { class: 'bar' });
    // Positions through the CSSOM (the policy refuses style attributes).
    bar.style.left = ((100 * (st.start_ms || 0)) / total).toFixed(2) + '%';
    bar.style.width = Math.max(0.5, (100 * (st.duration_ms || 0)) / total).toFixed(2) + '%';
    const body = stepBody(st);
    const failed = st.ok === false || (st.kind === 'retrieval' && st.error);
    const line = [h('span', { class: 'what' }, stepLabel(st, names), failed ? h('span', { class: 'error', text: ' ✗' }) : null),
      h('span', { class: 'when', text: `+${st.start_ms} ms · ${st.duration_ms} ms` }),
      h('span', { class: 'track', 'aria-hidden': 'true' }, bar)];
    const kind = st.agent_id ? 'delegate' : st.kind;
    return body.length
      ? h('li', { class: 'step', dataset: { kind } }, h('details', {}, h('summary', {}, line), body))
      : h('li', { class: 'step', dataset: { kind } }, h('div', { class: 'line' }, line));
  });
  const fb = t.feedback;
  el.replaceChildren(...[head,
    fb ? h('p', { class: 'trace-feedback', text: `Feedback: ${fb.rating > 0 ? '👍 helpful' : '👎 not helpful'}${fb.comment ? ' · ' + fb.comment : ''}` }) : null,
    t.error ? h('p', { class: 'error', text: t.error }) : null,
    h('ol', { class: 'timeline', 'aria-label': 'steps' }, rows),
    t.truncated ? h('p', { class: 'muted', text: 'Later steps were left out of this trace.' }) : null].filter(Boolean));
}

// traceBox is a collapsed "Trace" section for answer messageID of session
// sessionID; it loads the trace when first opened.
export function traceBox(sessionID, messageID, names) {
  const body = h('div', { class: 'trace-body', text: 'Loading…' });
  const d = h('details', { class: 'trace', dataset: { message: messageID } }, h('summary', { text: 'Trace' }), body);
  let loaded = false;
  d.addEventListener('toggle', async () => {
    if (!d.open || loaded) return;
    loaded = true;
    try {
      const t = await api('GET', `/v1/sessions/${encodeURIComponent(sessionID)}/messages/${encodeURIComponent(messageID)}/trace`);
      renderTrace(body, t, names);
      d.dataset.loaded = 'true';
    } catch (x) {
      body.replaceChildren(h('p', { class: 'muted', text: x.status === 404 ? 'No trace kept for this answer (traces are off or expired).' : x.message }));
      d.dataset.loaded = 'error';
      loaded = x.status === 404;
    }
  });
  return d;
}
