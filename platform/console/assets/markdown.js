// A small Markdown renderer for model output. It builds DOM nodes and sets
// all text with text nodes: it never parses HTML, so raw HTML in a model's
// answer (<script>, <img onerror=…>) shows as the literal text it is. Links
// are kept only when their URL is http, https or mailto; anything else
// (javascript:, data:, relative) renders as plain text.
//
// Supported: ATX headings, paragraphs, fenced and indented code, block
// quotes, ordered and unordered lists (one level of nesting by indent),
// horizontal rules, and inline code, **strong**, *emphasis*, ~~strike~~,
// [links](url) and bare http(s) URLs.

// safeURL returns url when its scheme is allowed, else null.
export function safeURL(url) {
  const u = String(url || '').trim();
  if (!/^(https?:|mailto:)/i.test(u)) return null;
  try {
    const p = new URL(u);
    return ['http:', 'https:', 'mailto:'].includes(p.protocol) ? p.href : null;
  } catch {
    return null;
  }
}

// render returns a DocumentFragment for the Markdown text.
export function render(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  blocks(lines, frag);
  return frag;
}

const fenceRe = /^ {0,3}(```+|~~~+)\s*([\w+#.-]*)/;
const headingRe = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const hrRe = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const quoteRe = /^ {0,3}>\s?(.*)$/;
const ulRe = /^( {0,3})([-*+])\s+(.*)$/;
const olRe = /^( {0,3})(\d{1,9})[.)]\s+(.*)$/;

function blocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) {
      i++;
      continue;
    }
    let m;
    if ((m = fenceRe.exec(line))) {
      const close = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(close)) body.push(lines[i++]);
      i++;
      const code = document.createElement('code');
      if (m[2]) code.dataset.lang = m[2];
      code.textContent = body.join('\n');
      const pre = document.createElement('pre');
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || (/^\s*$/.test(lines[i]) && i + 1 < lines.length && /^( {4}|\t)/.test(lines[i + 1])))) {
        body.push(lines[i].replace(/^( {4}|\t)/, ''));
        i++;
      }
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      code.textContent = body.join('\n');
      pre.append(code);
      parent.append(pre);
      continue;
    }
    if ((m = headingRe.exec(line))) {
      const el = document.createElement('h' + Math.min(6, m[1].length + 2));
      el.className = 'md-h' + m[1].length;
      inline(m[2], el);
      parent.append(el);
      i++;
      continue;
    }
    if (hrRe.test(line)) {
      parent.append(document.createElement('hr'));
      i++;
      continue;
    }
    if (quoteRe.test(line)) {
      const body = [];
      while (i < lines.length && (m = quoteRe.exec(lines[i]))) {
        body.push(m[1]);
        i++;
      }
      const q = document.createElement('blockquote');
      blocks(body, q);
      parent.append(q);
      continue;
    }
    if (ulRe.test(line) || olRe.test(line)) {
      i = list(lines, i, parent);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !startsBlock(lines[i])) para.push(lines[i++]);
    if (para.length === 0) para.push(lines[i++]);
    const p = document.createElement('p');
    para.forEach((l, k) => {
      if (k > 0) p.append(document.createElement('br'));
      inline(l.trim(), p);
    });
    parent.append(p);
  }
}

function startsBlock(line) {
  return fenceRe.test(line) || headingRe.test(line) || hrRe.test(line) || quoteRe.test(line) || ulRe.test(line) || olRe.test(line);
}

function list(lines, i, parent) {
  const ordered = olRe.test(lines[i]);
  const re = ordered ? olRe : ulRe;
  const el = document.createElement(ordered ? 'ol' : 'ul');
  const first = re.exec(lines[i]);
  if (ordered && first[2] !== '1') el.start = Number(first[2]);
  while (i < lines.length) {
    const m = re.exec(lines[i]);
    if (!m) break;
    const item = document.createElement('li');
    const body = [m[3]];
    i++;
    // Continuation and nested lines are indented.
    while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !re.test(lines[i])) body.push(lines[i++].replace(/^\s{2,4}/, ''));
    if (body.length === 1) {
      inline(body[0], item);
    } else {
      blocks(body, item);
    }
    el.append(item);
  }
  parent.append(el);
  return i;
}

// inline renders one line of inline Markdown into parent.
export function inline(text, parent) {
  let rest = text;
  while (rest.length) {
    const m = /(`+)|(\*\*|__)|(~~)|(\*|_)|(\[)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|(\\[\\`*_{}[\]()#+\-.!~>])/.exec(rest);
    if (!m) {
      parent.append(rest);
      return;
    }
    if (m.index > 0) parent.append(rest.slice(0, m.index));
    rest = rest.slice(m.index);
    const tok = m[0];
    if (m[7]) {
      parent.append(tok.slice(1));
      rest = rest.slice(2);
      continue;
    }
    if (m[1]) {
      const end = rest.indexOf(tok, tok.length);
      if (end > 0) {
        const c = document.createElement('code');
        c.textContent = rest.slice(tok.length, end).trim() || rest.slice(tok.length, end);
        parent.append(c);
        rest = rest.slice(end + tok.length);
      } else {
        parent.append(tok);
        rest = rest.slice(tok.length);
      }
      continue;
    }
    if (m[2] || m[3] || m[4]) {
      // As in CommonMark, "_" inside a word (snake_case, __init__) is text.
      const before = text[text.length - rest.length - 1];
      const end = tok[0] === '_' && /\w/.test(before || '') ? -1 : closing(rest, tok);
      if (end > tok.length) {
        const el = document.createElement(m[2] ? 'strong' : m[3] ? 's' : 'em');
        inline(rest.slice(tok.length, end), el);
        parent.append(el);
        rest = rest.slice(end + tok.length);
      } else {
        parent.append(tok);
        rest = rest.slice(tok.length);
      }
      continue;
    }
    if (m[5]) {
      const lm = /^\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/.exec(rest);
      if (lm) {
        link(lm[1], lm[2], parent);
        rest = rest.slice(lm[0].length);
      } else {
        parent.append('[');
        rest = rest.slice(1);
      }
      continue;
    }
    if (m[6]) {
      link(null, tok, parent);
      rest = rest.slice(tok.length);
    }
  }
}

// closing finds the delimiter that closes an emphasis opened at 0, or -1.
function closing(s, tok) {
  let from = tok.length;
  for (;;) {
    const j = s.indexOf(tok, from);
    if (j < 0) return -1;
    // A single * or _ must not be the start of a double one.
    if (tok.length === 1 && s[j + 1] === tok) {
      from = j + 2;
      continue;
    }
    if (tok[0] === '_' && /\w/.test(s[j + tok.length] || '')) {
      from = j + 1;
      continue;
    }
    if (s[j - 1] !== ' ') return j;
    from = j + 1;
  }
}

// link appends a link to url labelled with inline Markdown label (a bare
// URL, shown as itself, when label is null).
function link(label, url, parent) {
  const href = safeURL(url);
  if (!href) {
    // Not an allowed scheme: the label and URL stay visible, inert.
    parent.append(label === null ? url : `${label} (${url})`);
    return;
  }
  const a = document.createElement('a');
  a.href = href;
  a.rel = 'noopener noreferrer nofollow';
  a.target = '_blank';
  if (label === null) a.textContent = url;
  else inline(label, a);
  parent.append(a);
}

// StreamRenderer renders a Markdown answer as it streams in, without
// re-rendering what is done: text up to the last blank line outside a code
// fence is rendered once into "done"; only the unfinished tail is rebuilt,
// at most once per animation frame.
export class StreamRenderer {
  constructor(el) {
    this.el = el;
    this.done = document.createElement('div');
    this.tail = document.createElement('div');
    this.done.className = 'md-done';
    this.tail.className = 'md-tail';
    el.replaceChildren(this.done, this.tail);
    this.text = '';
    this.committed = 0;
    this.scheduled = false;
  }

  append(delta) {
    this.text += delta;
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => this.flush());
    }
  }

  flush() {
    this.scheduled = false;
    const pending = this.text.slice(this.committed);
    let inFence = false;
    let boundary = -1;
    let pos = 0;
    for (const line of pending.split('\n')) {
      const next = pos + line.length + 1;
      if (fenceRe.test(line)) inFence = !inFence;
      else if (!inFence && line.trim() === '' && next <= pending.length && pos > 0) boundary = next;
      pos = next;
    }
    if (boundary > 0) {
      this.done.append(render(pending.slice(0, boundary)));
      this.committed += boundary;
    }
    this.tail.replaceChildren(render(this.text.slice(this.committed)));
  }

  // finish renders whatever is pending now.
  finish() {
    this.flush();
  }
}
