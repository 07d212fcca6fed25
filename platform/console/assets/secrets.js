// Secrets: the tenant's named values that tools, MCP servers and remote
// agents reference as ${secret:NAME}. Values are write-only: the API lists
// names and dates, never values.
import { api } from './api.js';
import { h, field, clear, showFieldError, confirmButton, fmtTime } from './dom.js';

export function render(main) {
  const rows = h('tbody');
  const name = h('input', { required: true, placeholder: 'SEARCH_API_KEY', autocomplete: 'off' });
  const value = h('input', { type: 'password', required: true, autocomplete: 'new-password' });
  const err = h('p', { class: 'error', role: 'alert' });
  const ok = h('p', { class: 'ok', role: 'status' });
  const form = h('form', { class: 'secret-form' },
    h('h2', { text: 'Set a secret' }),
    field('Name', name, { name: 'name' }),
    field('Value', value, { name: 'value', hint: 'stored encrypted; never shown again. Setting an existing name replaces its value.' }),
    h('button', { type: 'submit', class: 'primary', text: 'Save secret' }), err, ok);
  const section = h('section', {}, h('h1', { text: 'Secrets' }),
    h('p', { class: 'muted' }, 'Reference a secret as ', h('code', { text: '${secret:NAME}' }), ' in an HTTP tool header, an MCP server\u2019s settings or a remote agent.'),
    h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Created', 'Updated', ''].map((c) => h('th', { text: c })))), rows));
  main.append(h('div', { class: 'keys secrets' }, section, form));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    ok.textContent = '';
    try {
      await api('PUT', '/v1/secrets', { name: name.value.trim(), value: value.value });
      showFieldError(form, null, err);
      ok.textContent = `Saved ${name.value.trim()}.`;
      form.reset();
      load();
    } catch (x) {
      showFieldError(form, x, err);
    }
  });

  async function load() {
    try {
      const list = await api('GET', '/v1/secrets');
      clear(rows);
      if (!list.length) rows.append(h('tr', {}, h('td', { colspan: 4, class: 'muted', text: 'No secrets yet.' })));
      for (const s of list) {
        rows.append(h('tr', { dataset: { name: s.name } },
          h('td', {}, h('code', { text: s.name })), h('td', { text: fmtTime(s.created_at) }), h('td', { text: fmtTime(s.updated_at) }),
          h('td', {}, confirmButton('Delete', async () => {
            await api('DELETE', '/v1/secrets/' + encodeURIComponent(s.name));
            load();
          }, { class: 'danger small', aria: 'Delete secret ' + s.name }))));
      }
    } catch (x) {
      if (x.status === 404) {
        // A server without the secrets API (an older weft serve).
        section.replaceChildren(h('h1', { text: 'Secrets' }), h('p', { class: 'muted', text: 'This server has no secrets API.' }));
        form.hidden = true;
        return;
      }
      rows.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'error', text: x.message })));
    }
  }
  load();
}
