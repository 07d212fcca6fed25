// API keys (owner): list, create — the key is shown once — re-role and
// revoke.
import { api } from './api.js';
import { h, field, clear, showFieldError, confirmButton, fmtTime } from './dom.js';

export function render(main, ctx) {
  const rows = h('tbody');
  const name = h('input', { required: true, placeholder: 'ci' });
  const tenant = h('input', { placeholder: ctx.me.tenant });
  const roleNames = ['owner', 'admin', 'builder', 'viewer', 'end_user'];
  const role = h('select', {}, roleNames.map((r) => h('option', { value: r, text: r, selected: r === 'admin' })));
  const err = h('p', { class: 'error', role: 'alert' });
  const shown = h('div', { class: 'shown-once', role: 'status' });
  const form = h('form', { class: 'key-form' },
    h('h2', { text: 'New key' }),
    field('Name', name, { name: 'name' }),
    field('Role', role, { name: 'role' }),
    ctx.me.admin ? field('Tenant', tenant, { name: 'tenant', hint: 'empty: this tenant; another name creates that tenant if new' }) : null,
    h('button', { type: 'submit', class: 'primary', text: 'Create key' }), err, shown);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim(), role: role.value };
    if (tenant.value.trim()) body.tenant = tenant.value.trim();
    try {
      const k = await api('POST', '/v1/api-keys', body);
      showFieldError(form, null, err);
      form.reset();
      const out = h('input', { readonly: true, value: k.key, class: 'mono', 'aria-label': 'new key' });
      shown.replaceChildren(
        h('p', {}, h('strong', { text: 'Copy this key now: ' }), 'it is shown only once.'),
        out,
        h('button', { type: 'button', text: 'Copy', on: { click: () => navigator.clipboard.writeText(k.key).catch(() => out.select()) } }));
      out.select();
      load();
    } catch (x) {
      showFieldError(form, x, err);
    }
  });
  main.append(h('div', { class: 'keys' },
    h('section', {}, h('h1', { text: 'API keys' }),
      h('table', {}, h('thead', {}, h('tr', {}, ['Name', 'Id', 'Tenant', 'Role', 'Created', ''].map((c) => h('th', { text: c })))), rows)),
    form));

  async function load() {
    try {
      const keys = await api('GET', '/v1/api-keys');
      clear(rows);
      for (const k of keys) {
        const own = k.id === ctx.me.key_id;
        rows.append(h('tr', { dataset: { id: k.id } },
          h('td', { text: k.name + (own ? ' (this key)' : '') }), h('td', {}, h('code', { text: k.id })), h('td', { text: k.tenant }),
          h('td', {}, k.admin || own ? h('span', { text: k.role + (k.admin ? ' (operator)' : '') })
            : h('select', { 'aria-label': 'Role of key ' + k.name, on: { change: async (e) => {
              try {
                await api('PATCH', '/v1/api-keys/' + encodeURIComponent(k.id), { role: e.target.value });
              } catch (x) {
                err.textContent = x.message;
              }
              load();
            } } }, roleNames.map((r) => h('option', { value: r, text: r, selected: r === k.role })))),
          h('td', { text: fmtTime(k.created_at) }),
          h('td', {}, confirmButton('Revoke', async () => {
            try {
              await api('DELETE', '/v1/api-keys/' + encodeURIComponent(k.id));
            } catch (x) {
              err.textContent = x.message;
              return;
            }
            // Revoking the key in use ends the session: the next call
            // would be refused anyway.
            if (own) window.dispatchEvent(new CustomEvent('weft:unauthorized'));
            else load();
          }, { class: 'danger small', aria: 'Revoke key ' + k.name }))));
      }
    } catch (x) {
      rows.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'error', text: x.message })));
    }
  }
  load();
}
