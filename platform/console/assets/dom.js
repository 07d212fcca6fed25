// DOM helpers. Text always goes in through text nodes or textContent, and
// event handlers through addEventListener: the console never builds HTML
// from strings (its Content-Security-Policy requires Trusted Types, so an
// HTML sink would throw).

// h creates an element. attrs: "class", "text", "on" ({event: handler}),
// "dataset", boolean properties (checked, disabled, …), and plain
// attributes. Children: nodes, strings (as text), arrays, null/false
// (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k === 'text') {
      el.textContent = v;
    } else if (k === 'class') {
      el.className = v;
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'multiple' || k === 'open') {
      el[k] = v;
    } else if (k.startsWith('on')) {
      throw new Error('inline handler attribute ' + k);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings, arrays) to el.
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// clear removes every child of el.
export function clear(el) {
  el.replaceChildren();
  return el;
}

let uid = 0;
// id returns a fresh element id with the given prefix.
export function id(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

// field wraps a control with its label and an error slot, so that an API
// validation error can be shown next to it (see showFieldError).
export function field(label, control, opts = {}) {
  if (!control.id) control.id = id('f');
  const err = h('div', { class: 'field-error', role: 'alert', id: control.id + '-err' });
  control.setAttribute('aria-describedby', err.id);
  if (opts.name) control.dataset.field = opts.name;
  return h('div', { class: 'field' + (opts.wide ? ' wide' : '') },
    h('label', { for: control.id, text: label }),
    control,
    opts.hint ? h('div', { class: 'hint', text: opts.hint }) : null,
    err);
}

// showFieldError puts an API error next to the control whose data-field
// it names (or in fallback when none matches). It returns whether it found
// the field.
export function showFieldError(form, err, fallback) {
  for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
  for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
  if (!err) {
    if (fallback) fallback.textContent = '';
    return true;
  }
  const name = err.field;
  if (name) {
    const control = [...form.querySelectorAll('[data-field]')].find((c) => c.dataset.field === name);
    if (control) {
      control.setAttribute('aria-invalid', 'true');
      document.getElementById(control.id + '-err').textContent = err.message;
      control.focus();
      return true;
    }
  }
  if (fallback) fallback.textContent = err.message;
  return false;
}

// fmtTime formats an ISO time for lists.
export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// fmtBytes formats a byte count.
export function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KB';
  return (n / (1 << 20)).toFixed(1) + ' MB';
}

// confirmButton is a button that asks for a second press before it runs
// action (no modal dialogs: they trap keyboard users and tests alike).
export function confirmButton(label, action, opts = {}) {
  const b = h('button', { type: 'button', class: opts.class || 'danger', text: label, 'aria-label': opts.aria || label });
  let armed = false;
  let timer;
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = 'Confirm ' + label.toLowerCase();
      b.classList.add('armed');
      timer = setTimeout(() => {
        armed = false;
        b.textContent = label;
        b.classList.remove('armed');
      }, 4000);
      return;
    }
    clearTimeout(timer);
    b.disabled = true;
    try {
      await action();
    } finally {
      b.disabled = false;
      armed = false;
      b.textContent = label;
      b.classList.remove('armed');
    }
  });
  return b;
}
