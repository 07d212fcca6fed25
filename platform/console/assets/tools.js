// Tools: register HTTP, MCP and SQL tools (stdio MCP and SQL only for admin
// keys, as the API requires), list an MCP server's tools, refresh, delete.
// The API has no endpoint that runs a tool on its own, so trying a tool
// means asking an agent that has it (the agents screen's test chat).
import { api } from './api.js';
import { h, field, clear, showFieldError, confirmButton } from './dom.js';

function kv(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

function parseJSON(text, fieldName) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch (x) {
    const e = new Error(`field "${fieldName}": not valid JSON (${x.message})`);
    e.field = fieldName;
    throw e;
  }
}

export function render(main, ctx) {
  const admin = ctx.me.admin;
  const table = h('tbody');
  const err = h('p', { class: 'error', role: 'alert' });
  main.append(h('div', { class: 'tools' },
    h('section', {}, h('h1', { text: 'Tools' }),
      h('table', { class: 'tool-table' }, h('thead', {}, h('tr', {}, ['Name', 'Kind', 'Description', ''].map((c) => h('th', { text: c })))), table),
      h('p', { class: 'muted', text: 'To try a tool, whitelist it on an agent and ask that agent in its test chat: the API has no endpoint that runs a tool by itself.' })),
    registerForm()));

  function registerForm() {
    const kinds = admin ? ['http', 'mcp', 'sql'] : ['http', 'mcp'];
    const kind = h('select', {}, kinds.map((k) => h('option', { value: k, text: k.toUpperCase() })));
    const name = h('input', { required: true, pattern: '[a-zA-Z0-9_-]{1,64}' });
    const desc = h('input', {});
    const params = h('textarea', { rows: 5, placeholder: '{"type":"object","properties":{"q":{"type":"string"}}}' });
    const method = h('select', {}, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => h('option', { value: m, text: m })));
    const url = h('input', { type: 'url', placeholder: 'https://api.example.com/search' });
    const headers = h('textarea', { rows: 2, placeholder: 'Authorization=Bearer ${secret:EXAMPLE_KEY}' });
    const timeout = h('input', { type: 'number', min: 1 });
    const transport = h('select', {}, (admin ? ['http', 'stdio'] : ['http']).map((t) => h('option', { value: t, text: t })));
    const mcpURL = h('input', { type: 'url', placeholder: 'https://mcp.example.com/mcp' });
    const command = h('input', { placeholder: 'npx' });
    const args = h('input', { placeholder: 'space-separated arguments' });
    const env = h('textarea', { rows: 2, placeholder: 'NAME=value per line' });
    const driver = h('select', {}, ['postgres', 'sqlite'].map((d) => h('option', { value: d, text: d })));
    const dsnEnv = h('input', { placeholder: 'ORDERS_DSN' });
    const query = h('textarea', { rows: 3, placeholder: 'SELECT id, total FROM orders WHERE customer = $1' });
    const bind = h('input', { placeholder: 'customer' });
    const groups = {
      http: h('div', { class: 'kind-group' },
        field('Method', method, { name: 'http.method' }), field('URL', url, { name: 'http.url' }),
        field('Headers', headers, { name: 'http.headers', hint: 'one NAME=value per line; values may use ${secret:NAME}' }),
        field('Timeout (ms)', timeout, { name: 'http.timeout_ms' })),
      mcp: h('div', { class: 'kind-group' },
        field('Transport', transport, { name: 'mcp.transport' }), field('Server URL', mcpURL, { name: 'mcp.url' }),
        admin ? field('Command (stdio)', command, { name: 'mcp.command' }) : null,
        admin ? field('Arguments (stdio)', args, { name: 'mcp.args' }) : null,
        admin ? field('Environment (stdio)', env, { name: 'mcp.env' }) : null),
      sql: h('div', { class: 'kind-group' },
        field('Driver', driver, { name: 'sql.driver' }), field('DSN environment variable', dsnEnv, { name: 'sql.dsn_env' }),
        field('Query', query, { name: 'sql.query' }), field('Bind (argument names, in order)', bind, { name: 'sql.bind' })),
    };
    const paramsField = field('Parameters (JSON Schema)', params, { name: 'parameters' });
    const form = h('form', { class: 'tool-form' },
      h('h2', { text: 'Register a tool' }),
      !admin ? h('p', { class: 'muted', text: 'SQL tools and stdio MCP servers need an admin key.' }) : null,
      field('Kind', kind, { name: 'kind' }), field('Name', name, { name: 'name' }), field('Description', desc, { name: 'description' }),
      Object.values(groups), paramsField,
      h('button', { type: 'submit', class: 'primary', text: 'Register' }), err);
    const sync = () => {
      for (const [k, g] of Object.entries(groups)) g.hidden = k !== kind.value;
      paramsField.hidden = kind.value === 'mcp';
    };
    kind.addEventListener('change', sync);
    sync();
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = { name: name.value.trim(), description: desc.value.trim(), kind: kind.value };
      try {
        if (kind.value !== 'mcp') body.parameters = parseJSON(params.value, 'parameters');
        if (kind.value === 'http') {
          body.http = { method: method.value, url: url.value.trim(), headers: kv(headers.value) };
          if (timeout.value) body.http.timeout_ms = Number(timeout.value);
        } else if (kind.value === 'mcp') {
          body.mcp = transport.value === 'stdio'
            ? { transport: 'stdio', command: command.value.trim(), args: args.value.trim() ? args.value.trim().split(/\s+/) : [], env: kv(env.value) }
            : { transport: 'http', url: mcpURL.value.trim() };
        } else {
          body.sql = { driver: driver.value, dsn_env: dsnEnv.value.trim(), query: query.value, bind: bind.value.split(/[\s,]+/).filter(Boolean) };
        }
        await api('POST', '/v1/tools', body);
        showFieldError(form, null, err);
        form.reset();
        sync();
        load();
      } catch (x) {
        showFieldError(form, x, err);
      }
    });
    return form;
  }

  async function load() {
    try {
      const tools = await api('GET', '/v1/tools');
      clear(table);
      if (!tools.length) table.append(h('tr', {}, h('td', { colspan: 4, class: 'muted', text: 'No tools registered.' })));
      const children = (id) => tools.filter((t) => t.parent_id === id);
      for (const t of tools.filter((x) => !x.parent_id)) {
        const actions = h('td', { class: 'actions' });
        if (t.kind === 'mcp') {
          actions.append(h('button', {
            type: 'button', text: 'Refresh', on: {
              click: async (e) => {
                e.target.disabled = true;
                try {
                  await api('POST', `/v1/tools/${encodeURIComponent(t.id)}/refresh`);
                  err.textContent = '';
                } catch (x) {
                  err.textContent = x.message;
                }
                load();
              },
            },
          }));
        }
        actions.append(confirmButton('Delete', async () => {
          await api('DELETE', '/v1/tools/' + encodeURIComponent(t.id));
          load();
        }, { class: 'danger small', aria: 'Delete tool ' + t.name }));
        table.append(h('tr', { dataset: { id: t.id } },
          h('td', {}, h('code', { text: t.name })), h('td', { text: t.kind }), h('td', { text: t.description || '' }), actions));
        for (const c of children(t.id)) {
          table.append(h('tr', { class: 'child' },
            h('td', {}, '↳ ', h('code', { text: c.name })), h('td', { text: 'MCP tool' }),
            h('td', {}, c.description || '', c.parameters ? h('details', {}, h('summary', { text: 'parameters' }), h('pre', { text: JSON.stringify(c.parameters, null, 2) })) : null),
            h('td')));
        }
      }
    } catch (x) {
      table.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'error', text: x.message })));
    }
  }
  load();
}
