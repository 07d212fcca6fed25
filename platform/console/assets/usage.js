// Usage: the tenant's tokens and cost per day over the last 30 days (an SVG
// bar chart, drawn here without a library), the same by agent and model,
// and the budgets with what their period has spent.
import { api } from './api.js';
import { h, clear } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

// s creates an SVG element with attributes (text through textContent).
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

function usd(v) {
  if (!v) return '$0';
  return v < 0.01 ? '$' + v.toFixed(6) : '$' + v.toFixed(2);
}

function num(n) {
  return new Intl.NumberFormat().format(n);
}

// days lists the days from from to to (YYYY-MM-DD, UTC), both included.
function days(from, to) {
  const out = [];
  for (let d = new Date(from + 'T00:00:00Z'); d <= new Date(to + 'T00:00:00Z'); d.setUTCDate(d.getUTCDate() + 1)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

// chart draws one bar per day of measure ('cost_usd' or 'total_tokens').
export function chart(report, measure) {
  const byDay = new Map(report.rows.map((r) => [r.day, r]));
  const all = days(report.from, report.to);
  const W = 600, H = 160, pad = 24, bw = (W - pad) / all.length;
  const maxV = Math.max(...all.map((d) => (byDay.get(d) || {})[measure] || 0), 0);
  const fmt = measure === 'cost_usd' ? usd : num;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H + 20}`, role: 'img', class: 'usage-chart', 'aria-label': `${measure === 'cost_usd' ? 'cost' : 'tokens'} per day, ${report.from} to ${report.to}` });
  svg.append(s('line', { x1: pad, y1: H, x2: W, y2: H, class: 'axis' }));
  svg.append(s('text', { x: 0, y: 10, class: 'tick', text: fmt(maxV) }));
  all.forEach((d, i) => {
    const v = (byDay.get(d) || {})[measure] || 0;
    const bh = maxV > 0 ? Math.max((v / maxV) * (H - 14), v > 0 ? 1 : 0) : 0;
    const bar = s('rect', { x: (pad + i * bw + 1).toFixed(1), y: (H - bh).toFixed(1), width: Math.max(bw - 2, 1).toFixed(1), height: bh.toFixed(1), class: 'bar', 'data-day': d },
      s('title', { text: `${d}: ${fmt(v)}` }));
    svg.append(bar);
    if (i === 0 || i === all.length - 1) svg.append(s('text', { x: pad + i * bw, y: H + 14, class: 'tick', text: d.slice(5) }));
  });
  return svg;
}

function table(rows, cols) {
  return h('table', {},
    h('thead', {}, h('tr', {}, cols.map(([label]) => h('th', { text: label })))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {}, cols.map(([, f]) => h('td', { text: f(r) }))))
      : h('tr', {}, h('td', { colspan: cols.length, class: 'muted', text: 'No usage in this period.' }))));
}

export function render(main) {
  const box = h('section', { class: 'usage' }, h('h1', { text: 'Usage' }), h('p', { class: 'muted', text: 'Loading…' }));
  main.append(box);
  (async () => {
    try {
      const [byDay, byAgent, budgets] = await Promise.all([
        api('GET', '/v1/usage?group_by=day'),
        api('GET', '/v1/usage?group_by=agent,model'),
        api('GET', '/v1/budgets').catch(() => []),
      ]);
      const priced = byDay.total.cost_usd > 0;
      clear(box);
      box.append(
        h('h1', { text: 'Usage' }),
        h('p', { class: 'muted', text: `${byDay.from} to ${byDay.to} (UTC): ${num(byDay.total.turns)} turns, ${num(byDay.total.total_tokens)} tokens, ${usd(byDay.total.cost_usd)}.` }),
        h('h2', { text: priced ? 'Cost per day' : 'Tokens per day' }),
        chart(byDay, priced ? 'cost_usd' : 'total_tokens'),
        h('h2', { text: 'By agent and model' }),
        table(byAgent.rows, [['Agent', (r) => r.agent_name || r.agent_id], ['Model', (r) => r.model], ['Turns', (r) => num(r.turns)],
          ['Tokens', (r) => num(r.total_tokens)], ['Cost', (r) => usd(r.cost_usd)]]));
      if (budgets.length) {
        box.append(h('h2', { text: 'Budgets' }), table(budgets, [
          ['Scope', (b) => (b.key_id ? 'key ' + b.key_id : 'tenant')], ['Period', (b) => b.period],
          ['Limit', (b) => [b.max_tokens ? num(b.max_tokens) + ' tokens' : '', b.max_cost_usd ? usd(b.max_cost_usd) : ''].filter(Boolean).join(', ')],
          ['Spent', (b) => `${num(b.tokens)} tokens, ${usd(b.cost_usd)}`], ['State', (b) => (b.exceeded ? 'exceeded' : 'ok')]]));
      }
    } catch (x) {
      clear(box);
      box.append(h('h1', { text: 'Usage' }), h('p', { class: x.status === 404 ? 'muted' : 'error', text: x.status === 404 ? 'This server has no usage API.' : x.message }));
    }
  })();
}
