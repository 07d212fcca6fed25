// Agents: list, create, edit every field of the API, delete; a test chat
// beside the editor.
import { providerModels, ids } from './models.js';
import { api } from './api.js';
import { h, field, clear, showFieldError, confirmButton } from './dom.js';
import { ChatPanel } from './chat.js';

function num(v) {
  return v === '' || v === null || v === undefined ? null : Number(v);
}

// picks is a labelled group of checkboxes choosing ids by name.
function picks(legend, items, chosen, name, empty) {
  const box = h('fieldset', { class: 'picks', dataset: { field: name }, tabindex: '-1' },
    h('legend', { text: legend }));
  if (!items.length) box.append(h('p', { class: 'muted', text: empty }));
  for (const it of items) {
    const cb = h('input', { type: 'checkbox', value: it.id, checked: chosen.includes(it.id) });
    box.append(h('label', { class: 'check' }, cb, ' ', it.name, it.note ? h('span', { class: 'muted', text: ' ' + it.note }) : null));
  }
  // Ids chosen that no longer exist stay chosen, visibly.
  for (const idv of chosen.filter((c) => !items.some((it) => it.id === c))) {
    box.append(h('label', { class: 'check' }, h('input', { type: 'checkbox', value: idv, checked: true }), ' ', h('code', { text: idv }), h('span', { class: 'muted', text: ' (missing)' })));
  }
  const err = h('div', { class: 'field-error', role: 'alert' });
  box.id = 'p-' + name.replace(/\W/g, '-') + '-' + Math.random().toString(36).slice(2, 8);
  err.id = box.id + '-err';
  box.append(err);
  box.values = () => [...box.querySelectorAll('input:checked')].map((c) => c.value);
  return box;
}

export function render(main, ctx) {
  const list = h('ul', { class: 'list', 'aria-label': 'agents' });
  const editor = h('section', { class: 'editor', 'aria-label': 'agent editor' });
  const chatBox = h('section', { class: 'side-chat', 'aria-label': 'test chat' });
  const panel = new ChatPanel();
  main.append(h('div', { class: 'agents' },
    h('aside', { class: 'list-side' },
      h('div', { class: 'row' }, h('h1', { text: 'Agents' }), h('a', { class: 'button primary', href: '#/agents/new', text: 'New agent' })),
      list),
    editor, chatBox));

  let agents = [];
  let kbs = [];
  let tools = [];
  let workflows = [];
  let chatModels = [];

  async function load() {
    const opts = { signal: ctx.signal };
    const [a, k, t, w, pm] = await Promise.all([
      api('GET', '/v1/agents', undefined, opts),
      api('GET', '/v1/knowledge-bases', undefined, opts).catch(() => []),
      api('GET', '/v1/tools', undefined, opts).catch(() => []),
      api('GET', '/v1/workflows', undefined, opts).catch(() => []),
      providerModels(ctx.me),
    ]);
    chatModels = ids(pm, 'chat');
    agents = a;
    kbs = k;
    tools = t;
    workflows = w;
    clear(list);
    if (!agents.length) list.append(h('li', { class: 'muted', text: 'No agents yet.' }));
    for (const ag of agents) {
      list.append(h('li', { dataset: { id: ag.id } },
        h('a', { href: '#/agents/' + encodeURIComponent(ag.id), 'aria-current': ag.id === ctx.params[0] ? 'true' : null },
          h('strong', { text: ag.name }), h('span', { class: 'muted', text: ' ' + (ag.model || ctx.me.default_model) + (ag.enabled ? '' : ' · disabled') }))));
    }
  }

  function showEditor(agent) {
    clear(editor);
    const isNew = !agent.id;
    const f = {
      name: h('input', { value: agent.name || '', required: true, maxlength: 128 }),
      system_prompt: h('textarea', { rows: 5, value: agent.system_prompt || '' }),
      // The configured providers' models, the models other agents use,
      // and the agent's own.
      model: h('select', {}, h('option', { value: '', text: `server default (${ctx.me.default_model})` }),
        [...new Set([...chatModels, ...agents.map((a) => a.model).filter(Boolean), ...(agent.model ? [agent.model] : [])])]
          .map((m) => h('option', { value: m, text: m, selected: m === agent.model }))),
      temperature: h('input', { type: 'number', step: '0.1', min: 0, max: 2, value: agent.temperature ?? '', placeholder: 'model default' }),
      max_tokens: h('input', { type: 'number', min: 1, value: agent.max_tokens ?? '', placeholder: 'model default' }),
      context_window_tokens: h('input', { type: 'number', min: 256, value: agent.context_window_tokens ?? 4096 }),
      reserve_tokens: h('input', { type: 'number', min: 0, value: agent.reserve_tokens ?? 512 }),
      top_k: h('input', { type: 'number', min: 1, max: 100, value: agent.retrieval?.top_k ?? 5 }),
      mode: h('select', {}, ['hybrid', 'vector', 'keyword'].map((m) => h('option', { value: m, text: m, selected: (agent.retrieval?.mode || 'hybrid') === m }))),
      min_score: h('input', { type: 'number', step: '0.01', min: 0, value: agent.retrieval?.min_score ?? 0 }),
      max_tool_rounds: h('input', { type: 'number', min: 0, max: 50, value: agent.max_tool_rounds ?? 5 }),
      max_delegate_depth: h('input', { type: 'number', min: 0, max: 10, value: agent.max_delegate_depth ?? 3 }),
      first_token_ms: h('input', { type: 'number', min: 100, value: agent.timeouts?.first_token_ms ?? '', placeholder: 'default' }),
      idle_ms: h('input', { type: 'number', min: 100, value: agent.timeouts?.idle_ms ?? '', placeholder: 'default' }),
      turn_ms: h('input', { type: 'number', min: 100, value: agent.timeouts?.turn_ms ?? '', placeholder: 'default' }),
      enabled: h('input', { type: 'checkbox', checked: agent.enabled ?? true }),
      remote_protocol: h('select', {}, [['weft', 'Weft server'], ['a2a', 'A2A agent']].map(([v, label]) =>
        h('option', { value: v, text: label, selected: (agent.remote?.protocol || 'weft') === v }))),
      remote_url: h('input', { type: 'url', value: agent.remote?.url || '', placeholder: 'https://other-weft.example' }),
      remote_agent: h('input', { value: agent.remote?.agent_id || '' }),
      // The key as a tenant secret (api_key: ${secret:NAME}), or, for
      // admins, a server environment variable (api_key_env).
      remote_secret: h('input', { value: /^\$\{secret:(.+)\}$/.exec(agent.remote?.api_key || '')?.[1] || '', placeholder: 'REMOTE_KEY' }),
      remote_env: h('input', { value: agent.remote?.api_key_env || '', placeholder: 'WEFT_REMOTE_KEY' }),
    };
    const kbPick = picks('Knowledge bases', kbs.map((k) => ({ id: k.id, name: k.name })), agent.knowledge_base_ids || [], 'knowledge_base_ids', 'No knowledge bases yet.');
    const toolPick = picks('Tools', tools.filter((t) => t.kind !== 'mcp').map((t) => ({ id: t.id, name: t.name, note: t.kind })), agent.tool_ids || [], 'tool_ids', 'No tools registered.');
    const delPick = picks('Delegates', agents.filter((a) => a.id !== agent.id).map((a) => ({ id: a.id, name: a.name })), agent.delegate_agent_ids || [], 'delegate_agent_ids', 'No other agents.');
    const wfPick = picks('Workflows (run as tools)', workflows.map((w) => ({ id: w.id, name: w.name })), agent.workflow_ids || [], 'workflow_ids', 'No workflows yet.');
    const formErr = h('p', { class: 'error', role: 'alert' });
    const saved = h('p', { class: 'ok', role: 'status' });
    const form = h('form', { class: 'agent-form', novalidate: true },
      h('h2', { text: isNew ? 'New agent' : 'Edit ' + agent.name }),
      h('div', { class: 'grid' },
        field('Name', f.name, { name: 'name' }),
        field('Model', f.model, { name: 'model', hint: 'the models of the server\'s configured providers' }),
        field('System prompt', f.system_prompt, { name: 'system_prompt', wide: true }),
        field('Temperature', f.temperature, { name: 'temperature', hint: '0 to 2' }),
        field('Max output tokens', f.max_tokens, { name: 'max_tokens' }),
        field('Context window (tokens)', f.context_window_tokens, { name: 'context_window_tokens' }),
        field('Reserved for the answer (tokens)', f.reserve_tokens, { name: 'reserve_tokens' }),
        field('Retrieval: top k', f.top_k, { name: 'retrieval.top_k' }),
        field('Retrieval: mode', f.mode, { name: 'retrieval.mode' }),
        field('Retrieval: minimum score', f.min_score, { name: 'retrieval.min_score' }),
        field('Max tool rounds', f.max_tool_rounds, { name: 'max_tool_rounds' }),
        field('Max delegation depth', f.max_delegate_depth, { name: 'max_delegate_depth' }),
        field('Timeout: first token (ms)', f.first_token_ms, { name: 'timeouts.first_token_ms' }),
        field('Timeout: idle between chunks (ms)', f.idle_ms, { name: 'timeouts.idle_ms' }),
        field('Timeout: whole turn (ms)', f.turn_ms, { name: 'timeouts.turn_ms' }),
        h('div', { class: 'field' }, h('label', { class: 'check' }, f.enabled, ' Enabled'))),
      kbPick, toolPick, delPick, wfPick,
      h('details', { class: 'remote', open: !!agent.remote },
        h('summary', { text: 'Remote agent (optional): run this agent on another Weft server or any A2A agent' }),
        h('div', { class: 'grid' },
          field('Remote protocol', f.remote_protocol, { name: 'remote.protocol' }),
          field('Remote URL', f.remote_url, { name: 'remote', hint: 'the Weft server, or the A2A agent\'s card or base URL' }),
          field('Remote agent id', f.remote_agent, { name: 'remote.agent_id', hint: 'Weft servers only' }),
          field('API key secret', f.remote_secret, { name: 'remote.api_key', hint: 'the name of a tenant secret (Secrets)' }),
          field('API key environment variable', f.remote_env, { name: 'remote.api_key_env', hint: 'admins only, instead of a secret' }))),
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', class: 'primary', text: isNew ? 'Create agent' : 'Save' }),
        isNew ? null : confirmButton('Delete', async () => {
          try {
            await api('DELETE', '/v1/agents/' + encodeURIComponent(agent.id));
            ctx.navigate('#/agents');
          } catch (x) {
            formErr.textContent = x.message;
          }
        })),
      formErr, saved);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      saved.textContent = '';
      const body = {
        name: f.name.value,
        system_prompt: f.system_prompt.value,
        model: f.model.value.trim(),
        temperature: num(f.temperature.value),
        max_tokens: num(f.max_tokens.value),
        context_window_tokens: num(f.context_window_tokens.value) ?? 0,
        reserve_tokens: num(f.reserve_tokens.value) ?? 0,
        knowledge_base_ids: kbPick.values(),
        retrieval: { top_k: num(f.top_k.value) ?? 0, mode: f.mode.value, min_score: num(f.min_score.value) ?? 0 },
        tool_ids: toolPick.values(),
        delegate_agent_ids: delPick.values(),
        workflow_ids: wfPick.values(),
        max_tool_rounds: num(f.max_tool_rounds.value) ?? 0,
        max_delegate_depth: num(f.max_delegate_depth.value) ?? 0,
        timeouts: { first_token_ms: num(f.first_token_ms.value) ?? 0, idle_ms: num(f.idle_ms.value) ?? 0, turn_ms: num(f.turn_ms.value) ?? 0 },
        enabled: f.enabled.checked,
        remote: f.remote_url.value.trim() || f.remote_agent.value.trim()
          ? {
            protocol: f.remote_protocol.value,
            url: f.remote_url.value.trim(),
            agent_id: f.remote_protocol.value === 'weft' ? f.remote_agent.value.trim() : '',
            api_key: f.remote_secret.value.trim() ? '${secret:' + f.remote_secret.value.trim() + '}' : '',
            api_key_env: f.remote_env.value.trim(),
          }
          : null,
      };
      try {
        const out = isNew
          ? await api('POST', '/v1/agents', body)
          : await api('PUT', '/v1/agents/' + encodeURIComponent(agent.id), body);
        showFieldError(form, null, formErr);
        if (isNew) {
          ctx.navigate('#/agents/' + encodeURIComponent(out.id));
        } else {
          saved.textContent = 'Saved.';
          await load();
        }
      } catch (x) {
        showFieldError(form, x, formErr);
      }
    });
    editor.append(form);
    f.name.focus();

    clear(chatBox);
    if (isNew) {
      chatBox.append(h('h2', { text: 'Test chat' }), h('p', { class: 'muted', text: 'Create the agent to try it here.' }));
    } else {
      panel.setAgent(agent.id, agent.name);
      chatBox.append(h('h2', { text: 'Test chat' }), panel.el);
    }
  }

  (async () => {
    try {
      await load();
      const idp = ctx.params[0];
      if (idp === 'new') {
        showEditor({});
      } else if (idp) {
        const agent = await api('GET', '/v1/agents/' + encodeURIComponent(idp), undefined, { signal: ctx.signal });
        showEditor(agent);
      } else if (agents.length) {
        ctx.navigate('#/agents/' + encodeURIComponent(agents[0].id), { replace: true });
      } else {
        showEditor({});
      }
    } catch (x) {
      if (!ctx.signal.aborted) editor.replaceChildren(h('p', { class: 'error', text: x.message }));
    }
  })();
  return () => panel.abort();
}
