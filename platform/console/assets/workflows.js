// Workflows: the tenant's workflows, an editor for a definition (JSON or
// YAML, checked by the server when saved: a fault is shown with the node
// and field it names), the workflow's graph drawn as SVG, its runs, and a
// run's node timeline with each node's inputs, outputs and timing.
import { api } from './api.js';
import { h, clear, append } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

// save sends a definition as it was typed (JSON or YAML) and returns the
// saved workflow, or throws an APIError carrying the server's param.
function save(text, id) {
  const yaml = !text.trim().startsWith('{');
  return api(id ? 'PUT' : 'POST', id ? '/v1/workflows/' + encodeURIComponent(id) : '/v1/workflows', text,
    { contentType: yaml ? 'application/yaml' : 'application/json' });
}

// edges lists the graph's edges [from, to]: depends_on, references to
// other nodes' outputs, condition branches and error branches.
export function edges(nodes) {
  const ids = new Set(nodes.map((n) => n.id));
  const out = [];
  const add = (from, to) => {
    if (ids.has(from) && ids.has(to) && from !== to && !out.some(([a, b]) => a === from && b === to)) out.push([from, to]);
  };
  for (const n of nodes) {
    for (const d of n.depends_on || []) add(d, n.id);
    const own = { ...n };
    delete own.nodes;
    for (const m of JSON.stringify(own).matchAll(/nodes\.([A-Za-z_][A-Za-z0-9_]*)\./g)) add(m[1], n.id);
    for (const c of n.cases || []) for (const t of c.next || []) add(n.id, t);
    for (const t of n.else || []) add(n.id, t);
    for (const t of n.on_error?.next || []) add(n.id, t);
  }
  // A node that only reads the run's inputs (or nothing) follows the start.
  const start = nodes.find((n) => n.kind === 'start');
  if (start) {
    for (const n of nodes) {
      if (n !== start && !out.some(([, b]) => b === n.id)) add(start.id, n.id);
    }
  }
  return out;
}

// graph draws the nodes in layers (longest path from the start) with
// their edges.
export function graph(nodes, status) {
  const es = edges(nodes);
  const layer = new Map(nodes.map((n) => [n.id, 0]));
  for (let i = 0; i < nodes.length; i++) {
    for (const [a, b] of es) if (layer.get(b) < layer.get(a) + 1) layer.set(b, layer.get(a) + 1);
  }
  const cols = [];
  for (const n of nodes) (cols[layer.get(n.id)] ||= []).push(n);
  const W = 130, H = 44, gx = 40, gy = 16;
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((n, y) => pos.set(n.id, { x: 8 + x * (W + gx), y: 8 + y * (H + gy) })));
  const width = 16 + cols.length * (W + gx), height = 16 + Math.max(...cols.map((c) => c.length)) * (H + gy);
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, width, height, class: 'wf-graph', role: 'img', 'aria-label': `graph of ${nodes.length} nodes` });
  for (const [a, b] of es) {
    const p = pos.get(a), q = pos.get(b);
    svg.append(s('line', { x1: p.x + W, y1: p.y + H / 2, x2: q.x, y2: q.y + H / 2, class: 'wf-edge', 'data-from': a, 'data-to': b }));
  }
  for (const n of nodes) {
    const p = pos.get(n.id);
    const st = status?.get(n.id);
    svg.append(s('g', { class: 'wf-node' + (st ? ' ' + st : ''), 'data-node': n.id },
      s('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6 }),
      s('text', { x: p.x + 8, y: p.y + 18, class: 'wf-id', text: n.id }),
      s('text', { x: p.x + 8, y: p.y + 34, class: 'wf-kind', text: n.kind })));
  }
  return svg;
}

// graphs draws the workflow's graph, then the sub-graph of each iteration
// node (what runs for every item), nested iterations included.
export function graphs(nodes, status) {
  const out = h('div', { class: 'wf-graphs' }, graph(nodes, status));
  for (const n of nodes) {
    if (n.kind !== 'iteration' || !(n.nodes || []).length) continue;
    out.append(h('figure', { class: 'wf-sub', dataset: { iteration: n.id } },
      h('figcaption', { text: `${n.id}: for each item (at most ${n.concurrency || 1} at a time)` }),
      graphs(n.nodes, status)));
  }
  return out;
}

function pretty(v) {
  return v === undefined || v === null ? '' : JSON.stringify(v, null, 2);
}

// timeline shows a run's nodes in the order they finished, each with a bar
// placed on the run's time axis, and its inputs and outputs.
function timeline(run) {
  const t0 = new Date(run.started_at || run.created_at).getTime();
  const nodes = run.nodes || [];
  const end = Math.max(t0 + 1, ...nodes.map((n) => new Date(n.finished_at || n.started_at || t0).getTime()));
  const span = end - t0;
  return h('ol', { class: 'wf-timeline' }, nodes.map((n) => {
    const a = new Date(n.started_at || t0).getTime() - t0;
    const b = new Date(n.finished_at || n.started_at || t0).getTime() - t0;
    const bar = h('span', { class: 'wf-bar' + (n.error ? ' failed' : ''), title: `${a} ms → ${b} ms` });
    bar.style.marginLeft = ((100 * a) / span).toFixed(1) + '%';
    bar.style.width = Math.max((100 * (b - a)) / span, 0.5).toFixed(1) + '%';
    return h('li', { class: 'wf-step', 'data-key': n.key },
      h('div', { class: 'wf-step-head' }, h('strong', { text: n.key }), h('span', { class: 'muted', text: ` ${n.latency_ms} ms` }),
        n.error ? h('span', { class: 'error', text: ' ' + n.error }) : null),
      h('div', { class: 'wf-track' }, bar),
      h('details', {}, h('summary', { text: 'Inputs and outputs' }),
        h('h4', { text: 'Inputs' }), h('pre', { class: 'wf-inputs', text: pretty(n.inputs) }),
        h('h4', { text: 'Outputs' }), h('pre', { class: 'wf-outputs', text: pretty(n.outputs) })));
  }));
}

const blank = JSON.stringify({
  name: 'echo',
  nodes: [
    { id: 'start', kind: 'start', inputs: { text: { type: 'string' } } },
    { id: 'shout', kind: 'template', template: 'You said: {{ inputs.text }}' },
    { id: 'end', kind: 'end', outputs: { reply: '{{ nodes.shout.outputs.text }}' } },
  ],
}, null, 2);

export function render(main) {
  const list = h('ul', { class: 'wf-list' });
  const editor = h('textarea', { class: 'wf-editor', rows: 18, spellcheck: 'false', 'aria-label': 'Workflow definition (JSON or YAML)' });
  const status = h('p', { class: 'wf-status', role: 'status' });
  const picture = h('div', { class: 'wf-picture' });
  const runs = h('div', { class: 'wf-runs' });
  const detail = h('div', { class: 'wf-run' });
  let current = null;

  const showError = (x) => {
    status.className = 'wf-status error';
    status.textContent = (x.param ? x.param + ': ' : '') + x.message;
  };

  async function openRun(wf, id) {
    clear(detail);
    try {
      const run = await api('GET', `/v1/workflows/${encodeURIComponent(wf.id)}/runs/${encodeURIComponent(id)}`);
      const st = new Map((run.nodes || []).map((n) => [n.node_id, n.error ? 'failed' : 'done']));
      clear(picture).append(graphs(wf.nodes || [], st));
      detail.append(h('h3', { text: `Run ${run.id}: ${run.status}` }),
        run.error ? h('p', { class: 'error', text: run.error }) : null,
        h('pre', { class: 'wf-run-outputs', text: pretty(run.outputs) }), timeline(run));
    } catch (x) {
      detail.append(h('p', { class: 'error', text: x.message }));
    }
  }

  async function loadRuns(wf) {
    clear(runs);
    const all = await api('GET', `/v1/workflows/${encodeURIComponent(wf.id)}/runs?limit=20`);
    runs.append(h('h2', { text: 'Runs' }), all.length ? h('ul', {}, all.map((r) => h('li', {},
      h('button', { type: 'button', class: 'link wf-run-link', dataset: { run: r.id }, on: { click: () => openRun(wf, r.id) } },
        `${r.id} · ${r.status} · ${new Date(r.created_at).toLocaleString()}`)))) : h('p', { class: 'muted', text: 'No runs yet.' }));
  }

  function select(wf) {
    current = wf;
    const def = { ...wf };
    for (const k of ['id', 'version', 'created_at', 'updated_at']) delete def[k];
    editor.value = JSON.stringify(def, null, 2);
    status.className = 'wf-status muted';
    status.textContent = `${wf.name}: version ${wf.version}`;
    clear(picture).append(graphs(wf.nodes || []));
    clear(detail);
    loadRuns(wf).catch((x) => runs.append(h('p', { class: 'error', text: x.message })));
  }

  async function refresh(selectID) {
    const all = await api('GET', '/v1/workflows');
    append(clear(list), all.map((wf) => h('li', {}, h('button', { type: 'button', class: 'link', dataset: { workflow: wf.name }, on: { click: () => select(wf) } }, `${wf.name} (v${wf.version})`))));
    const pick = all.find((w) => w.id === selectID);
    if (pick) select(pick);
  }

  const saveButton = h('button', { type: 'button', class: 'primary', id: 'wf-save', on: { click: async () => {
    try {
      const wf = await save(editor.value, current && current.id);
      await refresh(wf.id);
    } catch (x) {
      showError(x);
    }
  } } }, 'Check and save');
  const newButton = h('button', { type: 'button', id: 'wf-new', on: { click: () => {
    current = null;
    editor.value = blank;
    status.textContent = 'New workflow: saving checks it.';
    clear(picture);
    clear(runs);
    clear(detail);
  } } }, 'New');

  main.append(h('section', { class: 'workflows' },
    h('h1', { text: 'Workflows' }),
    h('div', { class: 'wf-cols' },
      h('div', {}, h('h2', { text: 'Saved' }), list, newButton),
      h('div', {}, editor, h('div', {}, saveButton), status)),
    picture, runs, detail));
  refresh().catch((x) => list.append(h('li', { class: x.status === 404 ? 'muted' : 'error', text: x.status === 404 ? 'This server has no workflows API.' : x.message })));
}
