// Workflows: the tenant's workflows, built on a canvas (canvas.js: nodes
// from a palette of every kind, connected and edited through forms made
// from the server's node-kind schemas) or typed as JSON or YAML; checked
// by the server when saved (a fault is shown on the node and field it
// names); a Run button with a test-run panel (inputs from the start
// node's schema, each node's status live from the run's stream, its
// inputs, outputs, duration and error); the runs history in the same view;
// a waiting run's questions as forms made from their schemas.
import { api, stream } from './api.js';
import { h, clear, append, field, showFieldError } from './dom.js';
import { Canvas, edges } from './canvas.js';
import { providerModels, ids } from './models.js';

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
    if (!p || !q) continue;
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

// stepStatus names a node record's state as the canvas marks it.
function stepStatus(n) {
  if (n.error || n.status === 'failed') return 'failed';
  if (n.status === 'running' || n.status === 'skipped' || n.status === 'waiting') return n.status;
  return 'done';
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
    const st = stepStatus(n);
    return h('li', { class: 'wf-step ' + st, 'data-key': n.key, dataset: { status: st } },
      h('div', { class: 'wf-step-head' }, h('strong', { text: n.key }), h('span', { class: 'wf-step-status', text: ' ' + st }),
        n.latency_ms !== undefined ? h('span', { class: 'muted wf-duration', text: ` ${n.latency_ms} ms` }) : null,
        n.error ? h('span', { class: 'error', text: ' ' + n.error }) : null),
      h('div', { class: 'wf-track' }, bar),
      h('details', {}, h('summary', { text: 'Inputs and outputs' }),
        h('h4', { text: 'Inputs' }), h('pre', { class: 'wf-inputs', text: pretty(n.inputs) }),
        h('h4', { text: 'Outputs' }), h('pre', { class: 'wf-outputs', text: pretty(n.outputs) })));
  }));
}

// runView shows a run: its status, error, outputs and node timeline; a
// waiting run's questions as forms, when answered (called once an answer
// was taken) is given.
function runView(run, answered) {
  return [h('h3', { text: `Run ${run.id}: ${run.status}` }),
    run.error ? h('p', { class: 'error', text: run.error }) : null,
    run.outputs ? h('pre', { class: 'wf-run-outputs', text: pretty(run.outputs) }) : null,
    run.status === 'waiting' && run.interrupts?.length && answered ? answerForms(run.interrupts, answered) : null,
    timeline(run)];
}

// answerForms renders a waiting run's questions (a human node's, a Go
// node's pause), each a form made from its output_schema whose Submit
// answers it (POST its resume route). A refused answer shows the field
// the server names and the run still waits.
function answerForms(interrupts, answered) {
  return h('section', { class: 'wf-interrupts', 'aria-label': 'Waiting for an answer' },
    h('h4', { text: 'Waiting for an answer' }),
    interrupts.map((q) => {
      const sc = q.output_schema || {};
      const props = sc.properties || {};
      const required = new Set(sc.required || []);
      const controls = Object.keys(props).map((name) => {
        const p = props[name] || {};
        // An optional field says so (the run form's label calls a field
        // without a default required).
        const c = inputControl(name, required.has(name) || p.default !== undefined ? p : { ...p, default: p.type === 'boolean' ? false : null });
        return { name, ...c };
      });
      const free = controls.length ? null : h('textarea', { rows: 3, class: 'json', spellcheck: 'false', name: 'answer', 'aria-label': 'Answer (a JSON object)' });
      const err = h('p', { class: 'error wf-answer-error', role: 'alert' });
      const button = h('button', { type: 'submit', class: 'primary', text: 'Submit' });
      const submit = async (ev) => {
        ev.preventDefault();
        err.textContent = '';
        let answer = {};
        try {
          for (const c of controls) {
            const v = c.read();
            if (v !== undefined && v !== null) answer[c.name] = v;
          }
          if (free && free.value.trim()) answer = JSON.parse(free.value);
        } catch (x) {
          err.textContent = (x.field ? x.field.replace(/^inputs\./, 'answer.') + ': ' : '') + x.message;
          return;
        }
        button.disabled = true;
        try {
          await api('POST', q.resume, { answer });
          answered();
        } catch (x) {
          err.textContent = (x.param ? x.param + ': ' : '') + x.message;
        } finally {
          button.disabled = false;
        }
      };
      return h('form', { class: 'wf-interrupt', dataset: { interrupt: q.id }, on: { submit } },
        h('p', { class: 'wf-question', text: q.message || `Node ${q.node_id} waits for an answer.` }),
        q.expires_at ? h('p', { class: 'muted', text: 'Expires ' + new Date(q.expires_at).toLocaleString() }) : null,
        ...controls.map((c) => c.el), free, err, button);
    }));
}

// inputControl is the run-form control of a start input of schema sc.
function inputControl(name, sc = {}) {
  const type = sc.type || '';
  let c;
  if (sc.enum) c = h('select', {}, sc.enum.map((x) => h('option', { value: JSON.stringify(x), text: String(x) })));
  else if (type === 'boolean') c = h('input', { type: 'checkbox', checked: !!sc.default });
  else if (type === 'integer' || type === 'number') c = h('input', { type: 'number', step: type === 'integer' ? '1' : 'any', value: sc.default ?? '' });
  else if (type === 'string') c = h('textarea', { rows: 2, value: sc.default ?? '' });
  else c = h('textarea', { rows: 3, class: 'json', spellcheck: 'false', value: sc.default === undefined ? '' : JSON.stringify(sc.default) });
  c.name = name;
  const read = () => {
    if (sc.enum) return JSON.parse(c.value);
    if (type === 'boolean') return c.checked;
    if (type === 'integer' || type === 'number') return c.value === '' ? undefined : Number(c.value);
    if (type === 'string') return c.value === '' && sc.default === undefined ? undefined : c.value;
    const x = c.value.trim();
    if (!x) return undefined;
    try {
      return JSON.parse(x);
    } catch {
      throw Object.assign(new Error('not JSON'), { field: 'inputs.' + name });
    }
  };
  const label = name + (sc.default === undefined ? ' (required)' : '') + (type ? ` · ${type}` : '');
  return { el: field(label, c, { name: 'inputs.' + name, hint: sc.description }), read };
}

const blank = {
  name: '',
  nodes: [
    { id: 'start', kind: 'start', inputs: { question: { type: 'string' } } },
    { id: 'end', kind: 'end', outputs: {} },
  ],
};

export function render(main, ctx = {}) {
  const signal = ctx.signal;
  const list = h('ul', { class: 'wf-list', 'aria-label': 'Saved workflows' });
  const editor = h('textarea', { class: 'wf-editor', rows: 18, spellcheck: 'false', 'aria-label': 'Workflow definition (JSON or YAML)' });
  const status = h('p', { class: 'wf-status', role: 'status' });
  const subs = h('div', { class: 'wf-picture' });
  const runs = h('div', { class: 'wf-runs' });
  const detail = h('div', { class: 'wf-run' });
  const runPanel = h('section', { class: 'wf-runpanel', 'aria-label': 'Test run', hidden: true });
  const nameInput = h('input', { type: 'text', id: 'wf-name', spellcheck: 'false', placeholder: 'triage' });
  const lists = { models: [], agents: [], tools: [], kbs: [], defaultModel: ctx.me?.default_model || '' };
  let current = null;
  let dirty = false;
  let view = 'canvas';
  let running = null;

  const canvas = new Canvas({
    lists: () => lists,
    onChange: () => {
      dirty = true;
      subsDraw();
      status.className = 'wf-status muted';
      status.textContent = (current ? `${current.name}: version ${current.version}` : 'New workflow') + ' · changed, not saved';
    },
  });
  const textBox = h('div', { class: 'wf-text', hidden: true }, editor);
  const viewButtons = ['canvas', 'text'].map((v) => h('button', { type: 'button', class: 'wf-view', dataset: { view: v }, 'aria-pressed': String(v === view),
    on: { click: () => setView(v) } }, v === 'canvas' ? 'Canvas' : 'JSON / YAML'));

  function subsDraw() {
    clear(subs);
    for (const n of canvas.def.nodes) {
      if (n.kind !== 'iteration' || !(n.nodes || []).length) continue;
      subs.append(h('figure', { class: 'wf-sub', dataset: { iteration: n.id } },
        h('figcaption', { text: `${n.id}: for each item (at most ${n.concurrency || 1} at a time)` }),
        graphs(n.nodes, canvas.status)));
    }
  }

  // definition returns what is to be saved: the canvas's definition, or
  // the text as typed.
  function definition() {
    if (view === 'text') return editor.value;
    return JSON.stringify({ ...canvas.def, name: nameInput.value.trim() }, null, 2);
  }

  function setView(v) {
    if (v === view) return;
    if (v === 'canvas') {
      const text = editor.value.trim();
      if (text && !text.startsWith('{')) {
        status.className = 'wf-status error';
        status.textContent = 'The canvas reads JSON: save the YAML first (the server converts it), or paste JSON.';
        return;
      }
      if (text) {
        try {
          const def = JSON.parse(text);
          canvas.set(def);
          nameInput.value = def.name || '';
        } catch (x) {
          status.className = 'wf-status error';
          status.textContent = 'Not JSON: ' + x.message;
          return;
        }
      }
    } else {
      editor.value = definition();
    }
    view = v;
    for (const b of viewButtons) b.setAttribute('aria-pressed', String(b.dataset.view === v));
    canvas.el.hidden = v !== 'canvas';
    textBox.hidden = v !== 'text';
  }

  const showError = (x) => {
    status.className = 'wf-status error';
    status.textContent = (x.param ? x.param + ': ' : '') + x.message;
    if (view === 'canvas' && x.param === 'name') {
      nameInput.setAttribute('aria-invalid', 'true');
      nameInput.focus();
    } else if (view === 'canvas') {
      canvas.showFault(x);
    }
  };

  async function openRun(wf, id) {
    clear(detail);
    try {
      const run = await api('GET', `/v1/workflows/${encodeURIComponent(wf.id)}/runs/${encodeURIComponent(id)}`, undefined, { signal });
      canvas.mark();
      for (const n of run.nodes || []) canvas.status.set(n.node_id, stepStatus(n));
      canvas.draw();
      subsDraw();
      detail.append(...runView(run, () => {
        openRun(wf, id);
        loadRuns(wf).catch(() => {});
      }).filter(Boolean));
    } catch (x) {
      if (!signal?.aborted) detail.append(h('p', { class: 'error', text: x.message }));
    }
  }

  async function loadRuns(wf) {
    const all = await api('GET', `/v1/workflows/${encodeURIComponent(wf.id)}/runs?limit=20`, undefined, { signal });
    clear(runs).append(h('h2', { text: 'Runs' }), all.length ? h('ul', { 'aria-label': 'Runs' }, all.map((r) => h('li', {},
      h('button', { type: 'button', class: 'link wf-run-link', dataset: { run: r.id }, on: { click: () => openRun(wf, r.id) } },
        `${r.id} · ${r.status} · ${new Date(r.created_at).toLocaleString()}`)))) : h('p', { class: 'muted', text: 'No runs yet.' }));
  }

  function select(wf) {
    current = wf;
    dirty = false;
    const def = { ...wf };
    for (const k of ['id', 'version', 'created_at', 'updated_at']) delete def[k];
    editor.value = JSON.stringify(def, null, 2);
    nameInput.value = wf.name;
    nameInput.removeAttribute('aria-invalid');
    canvas.set(def);
    subsDraw();
    status.className = 'wf-status muted';
    status.textContent = `${wf.name}: version ${wf.version}`;
    runPanel.hidden = true;
    clear(detail);
    clear(runs);
    loadRuns(wf).catch((x) => !signal?.aborted && runs.append(h('p', { class: 'error', text: x.message })));
  }

  async function refresh(selectID) {
    const all = await api('GET', '/v1/workflows', undefined, { signal });
    append(clear(list), all.map((wf) => h('li', {}, h('button', { type: 'button', class: 'link', dataset: { workflow: wf.name }, on: { click: () => select(wf) } }, `${wf.name} (v${wf.version})`))));
    const pick = all.find((w) => w.id === selectID);
    if (pick) select(pick);
    return pick;
  }

  async function saveNow() {
    nameInput.removeAttribute('aria-invalid');
    const text = definition();
    const yaml = !text.trim().startsWith('{');
    const id = current && current.id;
    const wf = await api(id ? 'PUT' : 'POST', id ? '/v1/workflows/' + encodeURIComponent(id) : '/v1/workflows', text,
      { contentType: yaml ? 'application/yaml' : 'application/json', signal });
    const keepView = view;
    await refresh(wf.id);
    if (keepView === 'text') editor.value = text;
    return wf;
  }

  const saveButton = h('button', { type: 'button', class: 'primary', id: 'wf-save', on: { click: async () => {
    try {
      await saveNow();
    } catch (x) {
      if (!signal?.aborted) showError(x);
    }
  } } }, 'Check and save');

  // openRunPanel shows the inputs form of the saved version's start node.
  function openRunPanel() {
    const start = (current.nodes || []).find((n) => n.kind === 'start');
    const inputs = Object.entries(start?.inputs || {}).map(([name, sc]) => ({ name, ...inputControl(name, sc) }));
    const live = h('div', { class: 'wf-live' });
    const err = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'wf-run-form', 'aria-label': 'Run inputs' },
      inputs.length ? inputs.map((x) => x.el) : h('p', { class: 'muted', text: 'This workflow takes no inputs.' }),
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', class: 'primary', id: 'wf-run-start' }, 'Start run'),
        h('button', { type: 'button', id: 'wf-run-close', on: { click: () => { running?.abort(); runPanel.hidden = true; } } }, 'Close')),
      err);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const values = {};
      try {
        for (const x of inputs) {
          const v = x.read();
          if (v !== undefined) values[x.name] = v;
        }
      } catch (x) {
        showFieldError(form, x, err);
        return;
      }
      showFieldError(form, null, err);
      await testRun(current, values, form, err, live);
    });
    clear(runPanel).append(h('h2', { text: `Test run of ${current.name} (version ${current.version})` }), form, live);
    runPanel.hidden = false;
    (form.querySelector('textarea, input, select') || form.querySelector('button'))?.focus();
  }

  // testRun streams a run: the canvas marks each node as it starts and
  // finishes, and the panel lists each finished node.
  async function testRun(wf, inputs, form, err, live) {
    running?.abort();
    const ctl = new AbortController();
    running = ctl;
    signal?.addEventListener('abort', () => ctl.abort(), { once: true });
    const run = { id: '', status: 'running', nodes: [], created_at: new Date().toISOString(), started_at: new Date().toISOString() };
    const head = h('p', { class: 'wf-run-state', role: 'status', text: 'Starting…' });
    const out = h('div', { class: 'wf-live-run' });
    clear(live).append(head, out);
    canvas.mark();
    const show = () => {
      head.textContent = `Run ${run.id || '…'}: ${run.status}`;
      clear(out).append(...runView(run, () => {
        clear(live);
        openRun(wf, run.id);
        loadRuns(wf).catch(() => {});
      }).slice(1).filter(Boolean));
    };
    const button = form.querySelector('#wf-run-start');
    button.disabled = true;
    try {
      await stream(`/v1/workflows/${encodeURIComponent(wf.id)}/runs`, { inputs, stream: true }, (name, d) => {
        switch (name) {
          case 'workflow.started':
            run.id = d.run_id;
            break;
          case 'node.started':
            if (!d.key.includes('[')) canvas.mark(d.node_id, 'running');
            break;
          case 'node.finished': {
            const rec = { ...d, finished_at: new Date().toISOString() };
            rec.started_at = new Date(Date.now() - (d.latency_ms || 0)).toISOString();
            run.nodes.push(rec);
            if (!d.key.includes('[')) canvas.mark(d.node_id, stepStatus(d));
            break;
          }
          case 'workflow.finished':
            run.status = 'succeeded';
            run.outputs = d.outputs;
            break;
          case 'workflow.waiting':
            run.status = 'waiting';
            run.interrupts = d.interrupts;
            break;
          case 'error':
            run.status = d.error?.code === 'cancelled' ? 'cancelled' : 'failed';
            run.error = d.error?.message;
            break;
        }
        show();
      }, ctl.signal);
    } catch (x) {
      if (ctl.signal.aborted) return;
      if (x.param?.startsWith('inputs')) showFieldError(form, { field: x.param, message: x.message }, err);
      else err.textContent = x.message;
      run.status = 'failed';
    } finally {
      button.disabled = false;
      if (running === ctl) running = null;
    }
    show();
    loadRuns(wf).catch(() => {});
  }

  const runButton = h('button', { type: 'button', id: 'wf-run', on: { click: async () => {
    try {
      if (!current || dirty || view === 'text') await saveNow();
    } catch (x) {
      if (!signal?.aborted) showError(x);
      return;
    }
    openRunPanel();
  } } }, 'Run');

  const newButton = h('button', { type: 'button', id: 'wf-new', on: { click: () => {
    current = null;
    dirty = false;
    editor.value = JSON.stringify(blank, null, 2);
    nameInput.value = '';
    canvas.set(blank);
    status.className = 'wf-status muted';
    status.textContent = 'New workflow: name it, add nodes, then save (saving checks it).';
    clear(subs);
    clear(runs);
    clear(detail);
    runPanel.hidden = true;
  } } }, 'New');

  canvas.el.hidden = false;
  main.append(h('section', { class: 'workflows' },
    h('h1', { text: 'Workflows' }),
    h('div', { class: 'wf-cols' },
      h('div', {}, h('h2', { text: 'Saved' }), list, newButton),
      h('div', { class: 'wf-main' },
        h('div', { class: 'row wf-toolbar' },
          field('Name', nameInput, { name: 'name' }),
          h('div', { class: 'buttons', role: 'group', 'aria-label': 'View' }, viewButtons),
          h('div', { class: 'buttons' }, saveButton, runButton)),
        status, canvas.el, textBox, subs)),
    runPanel, runs, detail));
  nameInput.addEventListener('input', () => { dirty = true; });
  canvas.set(blank);
  canvas.load().catch((x) => !signal?.aborted && canvas.note.append(h('span', { class: 'error', text: ' Node kinds: ' + x.message })));
  const opts = { signal };
  Promise.all([
    api('GET', '/v1/agents', undefined, opts).catch(() => []),
    api('GET', '/v1/tools', undefined, opts).catch(() => []),
    api('GET', '/v1/knowledge-bases', undefined, opts).catch(() => []),
    providerModels(ctx.me),
  ]).then(([agents, tools, kbs, pm]) => {
    lists.agents = agents.map((a) => a.name);
    lists.tools = tools.map((t) => t.name);
    lists.kbs = kbs.map((k) => k.name);
    lists.models = ids(pm, 'chat');
    lists.defaultModel = pm.default_model || lists.defaultModel;
    if (!signal?.aborted && !canvas.form.contains(document.activeElement)) canvas.showForm();
  });
  refresh().catch((x) => !signal?.aborted && list.append(h('li', { class: x.status === 404 ? 'muted' : 'error', text: x.status === 404 ? 'This server has no workflows API.' : x.message })));
  return () => running?.abort();
}
