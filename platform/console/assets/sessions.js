// Sessions browser: every session of the tenant, by agent, with its
// transcript (tool rounds included, each answer's trace a click away),
// resume in the chat, and delete.
import { api } from './api.js';
import { h, field, clear, fmtTime, confirmButton } from './dom.js';
import { renderTranscript } from './chat.js';

export function render(main, ctx) {
  const agentSel = h('select', {}, h('option', { value: '', text: 'All agents' }));
  const list = h('ul', { class: 'list', 'aria-label': 'sessions' });
  const view = h('section', { class: 'session-view', 'aria-label': 'transcript' });
  main.append(h('div', { class: 'sessions-screen' },
    h('aside', { class: 'list-side' }, h('h1', { text: 'Sessions' }), field('Agent', agentSel), list), view));
  const names = new Map();

  async function loadList() {
    const q = agentSel.value ? '?agent_id=' + encodeURIComponent(agentSel.value) : '';
    const sessions = await api('GET', '/v1/sessions' + q);
    clear(list);
    if (!sessions.length) list.append(h('li', { class: 'muted', text: 'No sessions.' }));
    for (const s of sessions) {
      list.append(h('li', { dataset: { id: s.id } }, h('a', { href: '#/sessions/' + encodeURIComponent(s.id), 'aria-current': s.id === ctx.params[0] ? 'true' : null },
        h('strong', { text: names.get(s.agent_id) || s.agent_id }), h('br'),
        h('span', { class: 'muted', text: `${fmtTime(s.updated_at)} · ${s.message_count} messages` + (s.parent_id ? ' · delegated' : '') }))));
    }
  }

  async function show(id) {
    clear(view);
    const s = await api('GET', '/v1/sessions/' + encodeURIComponent(id));
    const msgs = await api('GET', `/v1/sessions/${encodeURIComponent(id)}/messages`);
    const transcript = h('div', { class: 'transcript static' });
    view.append(
      h('div', { class: 'row' }, h('h2', { text: (names.get(s.agent_id) || s.agent_id) + ' · ' + fmtTime(s.created_at) }),
        h('a', { class: 'button', href: '#/chat/' + encodeURIComponent(s.agent_id), text: 'Open agent in chat' }),
        confirmButton('Delete session', async () => {
          await api('DELETE', '/v1/sessions/' + encodeURIComponent(id));
          ctx.navigate('#/sessions');
        })),
      h('p', { class: 'muted' }, 'Session ', h('code', { text: s.id })),
      transcript);
    renderTranscript(transcript, msgs, names.get(s.agent_id), { sessionID: s.id, names });
  }

  agentSel.addEventListener('change', () => loadList().catch(() => {}));
  (async () => {
    try {
      const agents = await api('GET', '/v1/agents');
      for (const a of agents) {
        names.set(a.id, a.name);
        agentSel.append(h('option', { value: a.id, text: a.name }));
      }
      await loadList();
      if (ctx.params[0]) await show(ctx.params[0]);
      else view.append(h('p', { class: 'muted', text: 'Pick a session to read its transcript.' }));
    } catch (x) {
      view.replaceChildren(h('p', { class: 'error', text: x.message }));
    }
  })();
}
