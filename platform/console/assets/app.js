// The console's shell: sign-in, navigation and the hash router. Each
// screen is a module exporting render(main, ctx) → optional cleanup.
import { api, getKey, setKey, clearKey } from './api.js';
import { h, field, clear } from './dom.js';
import * as chat from './chat.js';
import * as agents from './agents.js';
import * as kbs from './kbs.js';
import * as tools from './tools.js';
import * as sessions from './sessions.js';
import * as keys from './keys.js';
import * as secrets from './secrets.js';
import * as usage from './usage.js';
import * as workflows from './workflows.js';

// Each screen names the least role that may see it (the server checks
// every request itself; this only leaves out what would be refused).
const screens = [
  { path: 'chat', label: 'Chat', mod: chat, role: 'end_user' },
  { path: 'agents', label: 'Agents', mod: agents, role: 'viewer' },
  { path: 'knowledge', label: 'Knowledge', mod: kbs, role: 'viewer' },
  { path: 'tools', label: 'Tools', mod: tools, role: 'viewer' },
  { path: 'sessions', label: 'Sessions', mod: sessions, role: 'viewer' },
  { path: 'secrets', label: 'Secrets', mod: secrets, role: 'builder' },
  { path: 'workflows', label: 'Workflows', mod: workflows, role: 'viewer' },
  { path: 'usage', label: 'Usage', mod: usage, role: 'viewer' },
  { path: 'keys', label: 'API keys', mod: keys, role: 'owner' },
];
const roles = ['end_user', 'viewer', 'builder', 'admin', 'owner'];
const allowed = (s) => roles.indexOf(me.role) >= roles.indexOf(s.role);

const root = document.getElementById('app');
let me = null;
let cleanup = null;

function signOut(reason) {
  clearKey();
  me = null;
  if (cleanup) cleanup();
  cleanup = null;
  showSignIn(reason);
}

window.addEventListener('weft:unauthorized', () => {
  if (me) signOut('Your API key was refused (revoked or invalid). Sign in again.');
});

function showSignIn(message) {
  document.title = 'Sign in · Weft';
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'wk_…' });
  const err = h('p', { class: 'error', role: 'alert', text: message || '' });
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', text: 'Weft console' }),
    h('p', { class: 'muted', text: 'Sign in with an API key. `weft serve` prints the admin key on first start and keeps it in <data dir>/admin.key. The key stays in this tab only.' }),
    field('API key', input),
    h('button', { type: 'submit', class: 'primary', text: 'Sign in' }),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const k = input.value.trim();
    if (!k) return;
    setKey(k);
    try {
      me = await api('GET', '/v1/me');
    } catch (x) {
      clearKey();
      err.textContent = x.status === 401 ? 'That key was refused.' : x.message;
      return;
    }
    if (!location.hash) location.hash = '#/chat';
    showShell();
  });
  root.replaceChildren(h('main', { class: 'center' }, form));
  input.focus();
}

let main;
let nav;

function showShell() {
  const who = h('div', { class: 'who' },
    h('span', { class: 'tenant', title: 'tenant', text: me.tenant }),
    me.admin ? h('span', { class: 'badge', text: 'admin' }) : h('span', { class: 'badge role', text: me.role }),
    h('span', { class: 'muted', text: me.key_name }),
    h('button', { type: 'button', class: 'link', id: 'signout', on: { click: () => signOut('Signed out.') } }, 'Sign out'));
  nav = h('nav', { 'aria-label': 'Screens' },
    h('ul', {}, screens.filter(allowed).map((s) =>
      h('li', {}, h('a', { href: '#/' + s.path, dataset: { screen: s.path } }, s.label)))));
  main = h('main', { id: 'main', tabindex: '-1' });
  root.replaceChildren(
    h('header', { class: 'top' }, h('a', { class: 'brand', href: '#/chat', text: 'Weft' }), nav, who),
    main);
  route();
}

function route() {
  if (!me) return;
  const [path, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const s = screens.find((x) => x.path === path && allowed(x)) || screens[0];
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.screen === s.path) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (cleanup) cleanup();
  cleanup = null;
  clear(main);
  main.dataset.screen = s.path;
  document.title = s.label + ' · Weft';
  // Each render gets a signal that aborts when the screen is left: its
  // requests stop, and what it would still do (navigate, fill a form)
  // must not happen over the screen that replaced it — a list that
  // answers late must not open its first item over "New agent".
  const left = new AbortController();
  const ctx = {
    me,
    params: rest.map(decodeURIComponent),
    signal: left.signal,
    navigate: (hash, opts = {}) => {
      if (left.signal.aborted) return;
      if (opts.replace) location.replace(hash);
      else location.hash = hash;
    },
  };
  const done = s.mod.render(main, ctx);
  cleanup = () => {
    left.abort();
    if (done) done();
  };
}

window.addEventListener('hashchange', route);

async function start() {
  if (!getKey()) {
    showSignIn();
    return;
  }
  try {
    me = await api('GET', '/v1/me');
  } catch (x) {
    clearKey();
    showSignIn(x.status === 401 ? 'Your saved key was refused. Sign in again.' : x.message);
    return;
  }
  showShell();
}

start();
