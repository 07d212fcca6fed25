// The workflow canvas: a definition's nodes on a graph, added from a
// palette of every node kind the server serves (GET
// /v1/workflow-node-kinds), dragged, connected from a node's port to
// another node, deleted; and a form per node made from its kind's JSON
// Schema, where the server's faults are shown on the node and field they
// name. The canvas edits a plain definition object; the screen saves it.
import { api } from './api.js';
import { h, clear, field, showFieldError } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 150, H = 48;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

let kinds = null;
// nodeKinds returns the server's node kinds (fetched once).
export function nodeKinds() {
  if (!kinds) kinds = api('GET', '/v1/workflow-node-kinds').catch((x) => { kinds = null; throw x; });
  return kinds;
}

// edges lists the graph's edges [from, to, how]: depends_on, references
// to other nodes' outputs, condition branches and error branches; how is
// "control", "data" or "implied" (a node that reads nothing follows the
// start).
export function edges(nodes) {
  const ids = new Set(nodes.map((n) => n.id));
  const out = [];
  const add = (from, to, how) => {
    if (ids.has(from) && ids.has(to) && from !== to && !out.some(([a, b]) => a === from && b === to)) out.push([from, to, how]);
  };
  for (const n of nodes) {
    for (const d of n.depends_on || []) add(d, n.id, 'control');
    const own = { ...n };
    delete own.nodes;
    for (const m of JSON.stringify(own).matchAll(/nodes\.([A-Za-z_][A-Za-z0-9_]*)\./g)) add(m[1], n.id, 'data');
    for (const c of n.cases || []) for (const t of c.next || []) add(n.id, t, 'control');
    for (const t of n.else || []) add(n.id, t, 'control');
    for (const t of n.on_error?.next || []) add(n.id, t, 'control');
    for (const t of n.on_timeout || []) add(n.id, t, 'control');
  }
  const start = nodes.find((n) => n.kind === 'start');
  if (start) {
    for (const n of nodes) {
      if (n !== start && !out.some(([, b]) => b === n.id)) add(start.id, n.id, 'implied');
    }
  }
  return out;
}

// layout places nodes in layers (longest path from the start).
export function layout(nodes, W0 = W, H0 = H) {
  const es = edges(nodes);
  const layer = new Map(nodes.map((n) => [n.id, 0]));
  for (let i = 0; i < nodes.length; i++) {
    for (const [a, b] of es) if (layer.get(b) < layer.get(a) + 1) layer.set(b, layer.get(a) + 1);
  }
  const cols = [];
  for (const n of nodes) (cols[layer.get(n.id)] ||= []).push(n);
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((n, y) => pos.set(n.id, { x: 16 + x * (W0 + 50), y: 16 + y * (H0 + 24) })));
  return pos;
}

// starter is what a new node of a kind holds besides id and kind.
function starter(kind, nodes) {
  const start = nodes.find((n) => n.kind === 'start');
  const first = start && Object.keys(start.inputs || {})[0];
  const q = first ? `{{ inputs.${first} }}` : '';
  switch (kind) {
    case 'start': return { inputs: { question: { type: 'string' } } };
    case 'llm': return { prompt: q };
    case 'agent': return { agent: '', query: q };
    case 'knowledge': return { knowledge_bases: [], query: q };
    case 'template': return { template: q };
    case 'condition': return { cases: [{ id: 'yes', when: 'true', next: [] }], else: [] };
    case 'end': return { outputs: {} };
    case 'human': return { message: '' };
    case 'http': return { url: '' };
    case 'tool': return { tool: '', args: {} };
    default: return {};
  }
}

// renameRefs changes node id from into to wherever nodes name it.
function renameRefs(nodes, from, to) {
  const swap = (list) => (list || []).map((x) => (x === from ? to : x));
  const re = new RegExp(`nodes\\.${from}\\.`, 'g');
  for (let i = 0; i < nodes.length; i++) {
    let n = nodes[i];
    if (n.depends_on) n.depends_on = swap(n.depends_on);
    if (n.else) n.else = swap(n.else);
    if (n.on_timeout) n.on_timeout = swap(n.on_timeout);
    if (n.on_error?.next) n.on_error.next = swap(n.on_error.next);
    for (const c of n.cases || []) c.next = swap(c.next);
    n = JSON.parse(JSON.stringify(n).replace(re, `nodes.${to}.`));
    nodes[i] = n;
  }
}

// Canvas is the editor of one definition. opts: onChange() after any
// edit; lists() → {models, agents, tools, kbs, defaultModel} for the
// forms' choices.
export class Canvas {
  constructor(opts) {
    this.opts = opts;
    this.def = { name: '', nodes: [] };
    this.pos = new Map();
    this.selected = null;
    this.edge = null;
    this.fault = null;
    this.status = new Map();
    this.kinds = [];
    this.palette = h('ul', { class: 'wf-palette', 'aria-label': 'Node kinds' });
    this.svg = s('svg', { class: 'wf-graph wf-canvas', role: 'group', 'aria-label': 'Workflow canvas' });
    this.box = h('div', { class: 'wf-canvas-box' }, this.svg);
    this.form = h('div', { class: 'wf-node-panel', 'aria-live': 'polite' });
    this.note = h('p', { class: 'wf-canvas-note muted', role: 'status' });
    this.el = h('div', { class: 'wf-editor-canvas' },
      h('div', { class: 'wf-palette-box' }, h('h2', { text: 'Add a node' }), this.palette),
      h('div', { class: 'wf-canvas-col' }, this.box, this.note),
      this.form);
    this.bindPointer();
    this.box.addEventListener('dragover', (e) => e.preventDefault());
    this.box.addEventListener('drop', (e) => {
      e.preventDefault();
      const kind = e.dataTransfer.getData('text/x-weft-kind');
      if (kind) this.add(kind, this.point(e));
    });
  }

  // load shows the kinds' palette (once the server answered).
  async load() {
    this.kinds = await nodeKinds();
    clear(this.palette).append(...this.kinds.map((k) => h('li', {},
      h('button', { type: 'button', class: 'wf-palette-item', draggable: 'true', dataset: { kind: k.kind }, title: k.description,
        'aria-label': `Add a ${k.kind} node`,
        on: {
          click: () => this.add(k.kind),
          dragstart: (e) => e.dataTransfer.setData('text/x-weft-kind', k.kind),
        } }, k.kind))));
    this.draw();
  }

  kind(k) {
    return this.kinds.find((x) => x.kind === k);
  }

  // set replaces the definition (a copy is edited).
  set(def) {
    this.def = JSON.parse(JSON.stringify({ name: def.name || '', description: def.description, nodes: def.nodes || [] }));
    if (this.def.description === undefined) delete this.def.description;
    this.pos = layout(this.def.nodes);
    this.selected = null;
    this.edge = null;
    this.fault = null;
    this.status = new Map();
    this.draw();
    this.showForm();
  }

  changed() {
    this.fault = null;
    this.draw();
    this.opts.onChange?.();
  }

  node(id) {
    return this.def.nodes.find((n) => n.id === id);
  }

  // add puts a new node of kind at (or right of the others).
  add(kind, at) {
    const nodes = this.def.nodes;
    let n = 1;
    while (nodes.some((x) => x.id === `${kind}_${n}`) || (kind === 'start' && n === 1 && nodes.some((x) => x.id === 'start'))) n++;
    const id = (kind === 'start' || kind === 'end') && !nodes.some((x) => x.id === kind) ? kind : `${kind}_${n}`;
    nodes.push({ id, kind, ...starter(kind, nodes) });
    if (!at) at = this.freeSpot();
    this.pos.set(id, { x: Math.max(4, at.x), y: Math.max(4, at.y) });
    this.selected = id;
    this.changed();
    this.showForm();
    this.note.textContent = `Added ${kind} node ${id}.`;
  }

  // freeSpot is the first cell of a grid as wide as the visible canvas
  // that no node overlaps.
  freeSpot() {
    const cols = Math.max(1, Math.floor(((this.box.clientWidth || 720) - 16) / (W + 50)));
    const taken = [...this.pos.values()];
    for (let i = 0; ; i++) {
      const at = { x: 16 + (i % cols) * (W + 50), y: 16 + Math.floor(i / cols) * (H + 40) };
      if (!taken.some((p) => Math.abs(p.x - at.x) < W + 10 && Math.abs(p.y - at.y) < H + 10)) return at;
    }
  }

  remove(id) {
    this.def.nodes = this.def.nodes.filter((n) => n.id !== id);
    for (const n of this.def.nodes) {
      const drop = (list) => (list || []).filter((x) => x !== id);
      if (n.depends_on) n.depends_on = drop(n.depends_on);
      if (n.else) n.else = drop(n.else);
      if (n.on_timeout) n.on_timeout = drop(n.on_timeout);
      if (n.on_error?.next) n.on_error.next = drop(n.on_error.next);
      for (const c of n.cases || []) c.next = drop(c.next);
      if (n.depends_on && !n.depends_on.length) delete n.depends_on;
    }
    this.pos.delete(id);
    if (this.selected === id) this.selected = null;
    this.changed();
    this.showForm();
    this.note.textContent = `Deleted node ${id}.`;
  }

  // connect makes to follow from: a branch of a condition (its last
  // case, else its else branch), else a depends_on of to.
  connect(from, to) {
    if (from === to || !this.node(from) || !this.node(to)) return;
    const a = this.node(from), b = this.node(to);
    if (a.kind === 'condition') {
      const c = (a.cases || []).at(-1);
      const list = c ? (c.next ||= []) : (a.else ||= []);
      if (!list.includes(to)) list.push(to);
    } else {
      b.depends_on ||= [];
      if (!b.depends_on.includes(from)) b.depends_on.push(from);
    }
    this.changed();
    if (this.selected) this.showForm();
    this.note.textContent = `Connected ${from} → ${to}.`;
  }

  // disconnect removes the control edges from → to; a reference stays
  // (it is in the node's fields).
  disconnect(from, to) {
    const a = this.node(from), b = this.node(to);
    if (!a || !b) return;
    const drop = (list) => (list || []).filter((x) => x !== to);
    if (a.else) a.else = drop(a.else);
    if (a.on_timeout) a.on_timeout = drop(a.on_timeout);
    if (a.on_error?.next) a.on_error.next = drop(a.on_error.next);
    for (const c of a.cases || []) c.next = drop(c.next);
    if (b.depends_on) {
      b.depends_on = b.depends_on.filter((x) => x !== from);
      if (!b.depends_on.length) delete b.depends_on;
    }
    this.edge = null;
    this.changed();
    const still = edges(this.def.nodes).find(([x, y, how]) => x === from && y === to && how === 'data');
    this.note.textContent = still ? `${to} reads ${from}'s outputs: edit ${to}'s fields to remove that connection.` : `Removed ${from} → ${to}.`;
  }

  // showFault marks the node and field a server fault names (param
  // "nodes.ID.FIELD…"); it returns whether it found the node.
  showFault(err) {
    const p = err.param || '';
    const n = this.def.nodes.find((x) => p === `nodes.${x.id}` || p.startsWith(`nodes.${x.id}.`) || p.startsWith(`nodes.${x.id}[`));
    if (!n) return false;
    const rest = p.slice(`nodes.${n.id}`.length).replace(/^\./, '');
    this.fault = { node: n.id, field: rest.split(/[.[]/)[0], message: err.message };
    this.selected = n.id;
    this.draw();
    this.showForm();
    return true;
  }

  // mark sets the run status of a node ("running", "done", "failed",
  // "skipped"), or clears all with no arguments.
  mark(id, st) {
    if (id === undefined) this.status = new Map();
    else this.status.set(id, st);
    this.draw();
  }

  point(e) {
    const r = this.svg.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  bindPointer() {
    let drag = null;
    this.svg.addEventListener('pointerdown', (e) => {
      const port = e.target.closest?.('[data-port]');
      const g = e.target.closest?.('[data-node]');
      const line = e.target.closest?.('[data-from]');
      if (port) {
        drag = { mode: 'connect', from: port.dataset.port, line: null };
      } else if (g) {
        const p = this.point(e), q = this.pos.get(g.dataset.node);
        drag = { mode: 'move', id: g.dataset.node, dx: p.x - q.x, dy: p.y - q.y, moved: false };
      } else if (line) {
        this.edge = [line.dataset.from, line.dataset.to];
        this.selected = null;
        this.draw();
        this.showForm();
        return;
      } else {
        drag = { mode: 'none' };
      }
      this.svg.setPointerCapture?.(e.pointerId);
      e.preventDefault();
    });
    this.svg.addEventListener('pointermove', (e) => {
      if (!drag) return;
      const p = this.point(e);
      if (drag.mode === 'move') {
        const q = this.pos.get(drag.id);
        const x = Math.max(4, p.x - drag.dx), y = Math.max(4, p.y - drag.dy);
        if (Math.abs(x - q.x) + Math.abs(y - q.y) > 2) drag.moved = true;
        if (drag.moved) {
          this.pos.set(drag.id, { x, y });
          this.draw();
        }
      } else if (drag.mode === 'connect') {
        const q = this.pos.get(drag.from);
        drag.line?.remove();
        drag.line = s('line', { x1: q.x + W, y1: q.y + H / 2, x2: p.x, y2: p.y, class: 'wf-edge-draft' });
        this.svg.append(drag.line);
      }
    });
    const end = (e) => {
      if (!drag) return;
      const d = drag;
      drag = null;
      d.line?.remove();
      if (d.mode === 'connect') {
        const el = document.elementFromPoint(e.clientX, e.clientY);
        const to = el?.closest?.('[data-node]')?.dataset.node;
        if (to) this.connect(d.from, to);
      } else if (d.mode === 'move' && !d.moved) {
        this.select(d.id);
      } else if (d.mode === 'none') {
        this.edge = null;
        this.select(null);
      }
    };
    this.svg.addEventListener('pointerup', end);
    this.svg.addEventListener('pointercancel', () => { drag?.line?.remove(); drag = null; });
  }

  select(id) {
    this.selected = id;
    if (id) this.edge = null;
    this.draw();
    this.showForm();
  }

  draw() {
    const nodes = this.def.nodes;
    for (const n of nodes) if (!this.pos.has(n.id)) this.pos.set(n.id, { x: 16, y: 16 + 72 * this.pos.size });
    const ps = [...this.pos.values()];
    const width = Math.max(720, ...ps.map((p) => p.x + W + 40));
    const height = Math.max(260, ...ps.map((p) => p.y + H + 40));
    this.svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    this.svg.setAttribute('width', width);
    this.svg.setAttribute('height', height);
    clear(this.svg);
    this.svg.append(s('defs', {}, s('marker', { id: 'wf-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'wf-arrow' }))));
    for (const [a, b, how] of edges(nodes)) {
      const p = this.pos.get(a), q = this.pos.get(b);
      const on = this.edge && this.edge[0] === a && this.edge[1] === b;
      this.svg.append(s('line', { x1: p.x + W, y1: p.y + H / 2, x2: q.x, y2: q.y + H / 2, 'marker-end': 'url(#wf-arrow)',
        class: `wf-edge ${how}${on ? ' selected' : ''}`, 'data-from': a, 'data-to': b }));
    }
    for (const n of nodes) {
      const p = this.pos.get(n.id);
      const st = this.status.get(n.id);
      const bad = this.fault?.node === n.id;
      const g = s('g', { class: 'wf-node' + (st ? ' ' + st : '') + (bad ? ' invalid' : '') + (this.selected === n.id ? ' selected' : ''),
        'data-node': n.id, tabindex: 0, role: 'button', 'aria-describedby': bad ? `wf-n-${n.id}-err` : null,
        'aria-pressed': String(this.selected === n.id) },
      s('rect', { x: p.x, y: p.y, width: W, height: H, rx: 6 }),
      // One text, so that the button's name is what it shows ("draft llm").
      s('text', {}, s('tspan', { x: p.x + 8, y: p.y + 18, class: 'wf-id', text: n.title || n.id }), ' ',
        s('tspan', { x: p.x + 8, y: p.y + 36, class: 'wf-kind', text: n.kind + (st ? ' · ' + st : '') })),
      n.kind === 'end' ? null : s('circle', { cx: p.x + W, cy: p.y + H / 2, r: 6, class: 'wf-port', 'data-port': n.id, 'aria-hidden': 'true' }));
      if (bad) g.append(s('title', { id: `wf-n-${n.id}-err`, text: this.fault.message }));
      g.addEventListener('keydown', (e) => {
        const q = this.pos.get(n.id);
        const step = { ArrowLeft: [-16, 0], ArrowRight: [16, 0], ArrowUp: [0, -16], ArrowDown: [0, 16] }[e.key];
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          this.select(n.id);
        } else if (e.key === 'Delete' || e.key === 'Backspace') {
          e.preventDefault();
          this.remove(n.id);
        } else if (step) {
          e.preventDefault();
          this.pos.set(n.id, { x: Math.max(4, q.x + step[0]), y: Math.max(4, q.y + step[1]) });
          this.draw();
          this.svg.querySelector(`[data-node="${n.id}"]`)?.focus();
        }
      });
      this.svg.append(g);
    }
  }

  // showForm shows the selected node's form, the selected edge's
  // actions, or a hint.
  showForm() {
    clear(this.form);
    if (this.edge) {
      const [a, b] = this.edge;
      this.form.append(h('h2', { text: `${a} → ${b}` }),
        h('button', { type: 'button', class: 'danger', id: 'wf-edge-delete', on: { click: () => this.disconnect(a, b) } }, 'Remove connection'));
      return;
    }
    const n = this.selected && this.node(this.selected);
    if (!n) {
      this.form.append(h('p', { class: 'muted', text: 'Add nodes from the palette (click or drag), drag from a node\'s right port to another node to connect them, and select a node to edit it.' }));
      return;
    }
    const k = this.kind(n.kind);
    const form = h('form', { class: 'wf-node-form', dataset: { node: n.id }, 'aria-label': `Node ${n.id}` });
    form.addEventListener('submit', (e) => e.preventDefault());
    form.append(h('h2', { text: `${n.kind} node` }), k ? h('p', { class: 'muted small', text: k.description }) : null);
    const fields = k ? k.fields : Object.keys(n);
    const props = k?.schema?.properties || {};
    const required = k?.schema?.required || [];
    for (const f of fields) {
      if (f === 'kind') continue;
      form.append(this.control(n, f, props[f] || {}, required.includes(f)));
    }
    form.append(h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'danger', id: 'wf-node-delete', on: { click: () => this.remove(n.id) } }, 'Delete node')));
    this.form.append(form);
    if (this.fault?.node === n.id) {
      if (!showFieldError(form, { field: this.fault.field, message: this.fault.message })) {
        form.prepend(h('p', { class: 'error', role: 'alert', text: this.fault.message }));
      }
    }
  }

  // control is the form control of field f of node n.
  control(n, f, prop, required) {
    const lists = this.opts.lists?.() || {};
    const label = f.replace(/_/g, ' ') + (required ? ' (required)' : '');
    const hint = prop.description;
    const set = (v) => {
      const empty = v === undefined || v === '' || (Array.isArray(v) && v.length === 0 && f !== 'knowledge_bases');
      if (f === 'id') {
        if (!v || v === n.id) return;
        if (this.node(v)) throw new Error(`a node ${v} exists`);
        const old = n.id;
        renameRefs(this.def.nodes, old, v);
        const m = this.def.nodes.find((x) => x.id === old);
        m.id = v;
        this.pos.set(v, this.pos.get(old));
        this.pos.delete(old);
        this.selected = v;
        this.changed();
        this.showForm();
        return;
      }
      const m = this.node(n.id);
      if (empty) delete m[f];
      else m[f] = v;
      this.changed();
    };
    const wrap = (control, onValue) => {
      const box = field(label, control, { name: f, hint });
      const err = box.querySelector('.field-error');
      control.addEventListener('change', () => {
        err.textContent = '';
        control.removeAttribute('aria-invalid');
        try {
          set(onValue());
        } catch (x) {
          err.textContent = x.message;
          control.setAttribute('aria-invalid', 'true');
        }
      });
      return box;
    };
    const v = n[f];
    const picks = (names, chosen, multi) => {
      const all = [...new Set([...names, ...(chosen || [])])];
      if (!multi) {
        const sel = h('select', {}, h('option', { value: '', text: '—' }), all.map((x) => h('option', { value: x, text: x, selected: x === chosen })));
        return wrap(sel, () => sel.value);
      }
      const fs = h('fieldset', { class: 'picks', dataset: { field: f } }, h('legend', { text: label }),
        all.length ? all.map((x) => h('label', { class: 'check' },
          h('input', { type: 'checkbox', value: x, checked: (chosen || []).includes(x) }), x)) : h('span', { class: 'muted', text: 'none yet' }),
        hint ? h('div', { class: 'hint', text: hint }) : null,
        h('div', { class: 'field-error', role: 'alert', id: `wf-f-${f}-err` }));
      fs.id = `wf-f-${f}`;
      fs.addEventListener('change', () => set([...fs.querySelectorAll('input:checked')].map((c) => c.value)));
      return fs;
    };
    switch (prop['x-weft']) {
      case 'template': {
        const t = h(f === 'url' ? 'input' : 'textarea', { rows: f === 'system' || f === 'prompt' || f === 'template' || f === 'message' ? 4 : 2, spellcheck: 'false', value: v || '' });
        return wrap(t, () => t.value);
      }
      case 'model': {
        const sel = h('select', {}, h('option', { value: '', text: `default${lists.defaultModel ? ': ' + lists.defaultModel : ''}` }),
          [...new Set([...(lists.models || []), ...(v ? [v] : [])])].map((m) => h('option', { value: m, text: m, selected: m === v })));
        return wrap(sel, () => sel.value);
      }
      case 'agent': return picks(lists.agents || [], v, false);
      case 'tool': return picks(lists.tools || [], v, false);
      case 'knowledge_base': return picks(lists.kbs || [], v, true);
      case 'node': return picks(this.def.nodes.map((x) => x.id).filter((x) => x !== n.id), v, true);
    }
    if (f === 'id' || (prop.type === 'string' && !prop.enum)) {
      const t = h('input', { type: 'text', value: v ?? '', spellcheck: 'false' });
      return wrap(t, () => t.value.trim());
    }
    if (prop.enum) {
      const sel = h('select', {}, h('option', { value: '', text: '—' }), prop.enum.map((x) => h('option', { value: x, text: x, selected: x === v })));
      return wrap(sel, () => sel.value);
    }
    if (prop.type === 'integer' || prop.type === 'number') {
      const t = h('input', { type: 'number', value: v ?? '' });
      return wrap(t, () => (t.value === '' ? undefined : Number(t.value)));
    }
    if (prop.type === 'boolean') {
      const c = h('input', { type: 'checkbox', checked: !!v });
      return wrap(c, () => (c.checked ? true : undefined));
    }
    // Objects, lists and values: JSON (a value that is not JSON is text).
    const t = h('textarea', { rows: 3, spellcheck: 'false', class: 'json', value: v === undefined ? '' : JSON.stringify(v, null, 2) });
    return wrap(t, () => {
      const x = t.value.trim();
      if (!x) return undefined;
      try {
        return JSON.parse(x);
      } catch (err) {
        if (prop['x-weft'] === 'value') return x;
        throw new Error('not JSON: ' + err.message);
      }
    });
  }
}
