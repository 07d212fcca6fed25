// Tools: register HTTP, MCP and SQL tools (stdio MCP and SQL only for admin
// keys, as the API requires), list an MCP server's tools, refresh, delete,
// and try a tool with JSON arguments (POST /v1/tools/{id}/invoke runs it as
// a turn would), the arguments checked against its parameters first.
import { api } from './api.js';
import { h, field, clear, showFieldError, confirmButton } from './dom.js';

// checkSchema returns the places where value breaks the JSON Schema subset
// tool parameters use (type, properties, required, items, enum,
// additionalProperties: false), as "path: problem" strings. Anything else
// in the schema is left to the tool.
function checkSchema(schema, value, path = 'arguments', out = []) {
  if (!schema || typeof schema !== 'object') return out;
  const kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  const k = kind(value);
  if (types.length && !types.some((t) => t === k || (t === 'number' && k === 'integer'))) {
    out.push(`${path}: want ${types.join(' or ')}, got ${k}`);
    return out;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    out.push(`${path}: want one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if (k === 'object') {
    const props = schema.properties || {};
    for (const r of schema.required || []) {
      if (value[r] === undefined || value[r] === null) out.push(`${path}.${r}: required`);
    }
    for (const [name, v] of Object.entries(value)) {
      if (props[name]) checkSchema(props[name], v, `${path}.${name}`, out);
      else if (schema.additionalProperties === false) out.push(`${path}.${name}: not a parameter of this tool`);
    }
  }
  if (k === 'array' && schema.items) value.forEach((v, i) => checkSchema(schema.items, v, `${path}[${i}]`, out));
  return out;
}

// skeleton is a starting argument object: each property with a value of
// its type (its first enum value or default when it has one).
function skeleton(schema) {
  const out = {};
  for (const [name, p] of Object.entries((schema && schema.properties) || {})) {
    const t = [].concat(p.type || 'string')[0];
    if (p.default !== undefined) out[name] = p.default;
    else if (Array.isArray(p.enum) && p.enum.length) out[name] = p.enum[0];
    else out[name] = { string: '', number: 0, integer: 0, boolean: false, array: [], object: {} }[t] ?? null;
  }
  return out;
}

function kv(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

// lines is a NAME=value map as the form's one-per-line text.
function lines(m) {
  return Object.entries(m || {}).map(([k, v]) => k + '=' + v).join('\n');
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
  const tryBox = h('section', { class: 'tool-try', hidden: true, 'aria-label': 'try a tool' });
  main.append(h('div', { class: 'tools' },
    h('section', {}, h('h1', { text: 'Tools' }),
      h('table', { class: 'tool-table' }, h('thead', {}, h('tr', {}, ['Name', 'Kind', 'Description', ''].map((c) => h('th', { text: c })))), table),
      err,
      h('p', { class: 'muted', text: 'Try runs a tool with your arguments the way an agent\'s turn runs it: the same outbound rules, secrets and limits.' }),
      tryBox),
    toolForm()));

  // showTry opens the try panel for tool t.
  function showTry(t) {
    clear(tryBox);
    tryBox.hidden = false;
    tryBox.dataset.tool = t.name;
    const schema = t.parameters || { type: 'object', properties: {} };
    const args = h('textarea', { rows: 6, spellcheck: 'false', class: 'mono' });
    args.value = JSON.stringify(skeleton(schema), null, 2);
    const run = h('button', { type: 'submit', class: 'primary', text: 'Run' });
    const status = h('p', { class: 'try-status', role: 'status' });
    const out = h('pre', { class: 'try-result', hidden: true });
    const form = h('form', { class: 'try-form' },
      h('div', { class: 'row' }, h('h2', {}, 'Try ', h('code', { text: t.name })),
        h('button', { type: 'button', class: 'small', text: 'Close', on: { click: () => { tryBox.hidden = true; } } })),
      t.description ? h('p', { class: 'muted', text: t.description }) : null,
      h('details', {}, h('summary', { text: 'Parameters (JSON Schema)' }), h('pre', { text: JSON.stringify(schema, null, 2) })),
      field('Arguments (JSON)', args, { name: 'arguments', hint: 'checked against the parameters before it runs' }),
      h('div', { class: 'buttons' }, run), status, out);
    const check = () => {
      let v;
      try {
        v = JSON.parse(args.value.trim() || '{}');
      } catch (x) {
        return [`not valid JSON (${x.message})`];
      }
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return ['arguments: want a JSON object'];
      const problems = checkSchema(schema, v);
      return problems.length ? problems : v;
    };
    const showCheck = () => {
      const v = check();
      const bad = Array.isArray(v);
      const errEl = document.getElementById(args.id + '-err');
      errEl.textContent = bad ? v.join('; ') : '';
      if (bad) args.setAttribute('aria-invalid', 'true');
      else args.removeAttribute('aria-invalid');
      return bad ? null : v;
    };
    args.addEventListener('input', showCheck);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const v = showCheck();
      if (!v) return;
      run.disabled = true;
      status.className = 'try-status muted';
      status.textContent = 'running…';
      out.hidden = true;
      delete tryBox.dataset.ok;
      try {
        const res = await api('POST', `/v1/tools/${encodeURIComponent(t.id)}/invoke`, { arguments: v });
        tryBox.dataset.ok = String(res.ok);
        status.className = 'try-status ' + (res.ok ? 'ok' : 'error');
        status.textContent = (res.ok ? '✓ ok' : '✗ failed') + ` · ${res.duration_ms} ms` + (res.truncated ? ' · result truncated' : '');
        let text = res.ok ? res.result || '' : res.error || '';
        try {
          text = JSON.stringify(JSON.parse(text), null, 2);
        } catch {
          // Not JSON: shown as it came.
        }
        out.textContent = text;
        out.hidden = false;
      } catch (x) {
        tryBox.dataset.ok = 'false';
        status.className = 'try-status error';
        status.textContent = x.message;
      } finally {
        run.disabled = false;
      }
    });
    tryBox.append(form);
    showCheck();
    args.focus();
  }

  // toolForm registers a tool, or, given tool t, edits it in place
  // (PUT /v1/tools/{id}: the id, and so the agents that list it, stay; the
  // kind cannot change).
  function toolForm(t) {
    const editing = !!t;
    const kinds = admin ? ['http', 'mcp', 'sql'] : ['http', 'mcp'];
    const kind = h('select', { disabled: editing }, (editing && !kinds.includes(t.kind) ? [...kinds, t.kind] : kinds).map((k) =>
      h('option', { value: k, text: k.toUpperCase(), selected: editing && t.kind === k })));
    const name = h('input', { required: true, pattern: '[a-zA-Z0-9_-]{1,64}', value: t?.name || '' });
    const desc = h('input', { value: t?.description || '' });
    const params = h('textarea', { rows: 5, placeholder: '{"type":"object","properties":{"q":{"type":"string"}}}',
      value: t?.parameters ? JSON.stringify(t.parameters, null, 2) : '' });
    const method = h('select', {}, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => h('option', { value: m, text: m, selected: t?.http?.method === m })));
    const url = h('input', { type: 'url', placeholder: 'https://api.example.com/search', value: t?.http?.url || '' });
    const headers = h('textarea', { rows: 2, placeholder: 'Authorization=Bearer ${secret:EXAMPLE_KEY}', value: lines(t?.http?.headers) });
    const timeout = h('input', { type: 'number', min: 1, value: t?.http?.timeout_ms || '' });
    const transport = h('select', {}, (admin || t?.mcp?.transport === 'stdio' ? ['http', 'stdio'] : ['http']).map((x) =>
      h('option', { value: x, text: x, selected: t?.mcp?.transport === x })));
    const mcpURL = h('input', { type: 'url', placeholder: 'https://mcp.example.com/mcp', value: t?.mcp?.url || '' });
    const command = h('input', { placeholder: 'npx', value: t?.mcp?.command || '' });
    const args = h('input', { placeholder: 'space-separated arguments', value: (t?.mcp?.args || []).join(' ') });
    const env = h('textarea', { rows: 2, placeholder: 'NAME=value per line', value: lines(t?.mcp?.env) });
    const driver = h('select', {}, ['postgres', 'sqlite'].map((d) => h('option', { value: d, text: d, selected: t?.sql?.driver === d })));
    const dsnEnv = h('input', { placeholder: 'ORDERS_DSN', value: t?.sql?.dsn_env || '' });
    const query = h('textarea', { rows: 3, placeholder: 'SELECT id, total FROM orders WHERE customer = $1', value: t?.sql?.query || '' });
    const bind = h('input', { placeholder: 'customer', value: (t?.sql?.bind || []).join(', ') });
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
    const formErr = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'tool-form', dataset: { editing: editing ? t.id : '' } },
      h('h2', { text: editing ? 'Edit tool ' + t.name : 'Register a tool' }),
      !admin ? h('p', { class: 'muted', text: 'SQL tools and stdio MCP servers need an admin key.' }) : null,
      editing ? h('p', { class: 'muted', text: 'Saving keeps the tool\'s id, so the agents that list it keep it.' }) : null,
      field('Kind', kind, { name: 'kind' }), field('Name', name, { name: 'name' }), field('Description', desc, { name: 'description' }),
      Object.values(groups), paramsField,
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', class: 'primary', text: editing ? 'Save' : 'Register' }),
        editing ? h('button', { type: 'button', text: 'Cancel', on: { click: () => form.replaceWith(toolForm()) } }) : null),
      formErr);
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
        if (editing) {
          await api('PUT', '/v1/tools/' + encodeURIComponent(t.id), body);
          form.replaceWith(toolForm());
        } else {
          await api('POST', '/v1/tools', body);
          showFieldError(form, null, formErr);
          form.reset();
          sync();
        }
        load();
      } catch (x) {
        showFieldError(form, x, formErr);
      }
    });
    return form;
  }

  // editButton opens tool t in the form, to change it in place.
  function editButton(t) {
    return h('button', {
      type: 'button', class: 'small edit', text: 'Edit', 'aria-label': 'Edit tool ' + t.name, on: {
        click: () => {
          const f = main.querySelector('form.tool-form');
          const next = toolForm(t);
          f.replaceWith(next);
          next.querySelector('[data-field=name]')?.focus();
        },
      },
    });
  }

  function tryButton(t) {
    return h('button', { type: 'button', class: 'small try', text: 'Try', 'aria-label': 'Try tool ' + t.name, on: { click: () => showTry(t) } });
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
            type: 'button', text: 'Refresh', class: 'small refresh', 'aria-label': 'Refresh MCP server ' + t.name, title: 'List the server\'s tools again', on: {
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
        if (t.kind !== 'mcp') actions.append(tryButton(t));
        actions.append(editButton(t));
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
            h('td', { class: 'actions' }, tryButton(c))));
        }
      }
    } catch (x) {
      table.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'error', text: x.message })));
    }
  }
  load();
}
