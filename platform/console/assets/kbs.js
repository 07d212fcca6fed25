// Knowledge bases: create and delete; upload files and folders (drag and
// drop or pickers) with per-file progress and what each upload did (added,
// replaced N chunks, unchanged); documents with their status;
// a search that shows hybrid, vector and keyword results side by side.
import { api, upload } from './api.js';
import { h, field, clear, showFieldError, confirmButton, fmtBytes, fmtTime } from './dom.js';

export function render(main, ctx) {
  const list = h('ul', { class: 'list', 'aria-label': 'knowledge bases' });
  const detail = h('section', { class: 'kb-detail' });
  const name = h('input', { required: true, placeholder: 'handbook' });
  const chunk = h('input', { type: 'number', min: 32, max: 8192, placeholder: 'default' });
  const overlap = h('input', { type: 'number', min: 0, placeholder: 'default' });
  const emb = h('input', { placeholder: 'server default' });
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'kb-create' },
    h('h2', { text: 'New knowledge base' }),
    field('Name', name, { name: 'name' }),
    h('details', {}, h('summary', { text: 'Chunking and embeddings' }),
      field('Chunk size (tokens)', chunk, { name: 'chunk_size' }),
      field('Chunk overlap (tokens)', overlap, { name: 'chunk_overlap' }),
      field('Embedding model', emb, { name: 'embedding_model', hint: 'empty: the server default; none configured means keyword-only search' })),
    h('button', { type: 'submit', class: 'primary', text: 'Create' }), err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim() };
    if (chunk.value) body.chunk_size = Number(chunk.value);
    if (overlap.value) body.chunk_overlap = Number(overlap.value);
    if (emb.value.trim()) body.embedding_model = emb.value.trim();
    try {
      const kb = await api('POST', '/v1/knowledge-bases', body);
      showFieldError(form, null, err);
      name.value = '';
      ctx.navigate('#/knowledge/' + encodeURIComponent(kb.id));
    } catch (x) {
      showFieldError(form, x, err);
    }
  });
  main.append(h('div', { class: 'kbs' },
    h('aside', { class: 'list-side' }, h('h1', { text: 'Knowledge bases' }), list, form),
    detail));

  let poll = null;
  let alive = true;

  async function loadList() {
    const kbs = await api('GET', '/v1/knowledge-bases');
    clear(list);
    if (!kbs.length) list.append(h('li', { class: 'muted', text: 'None yet.' }));
    for (const kb of kbs) {
      list.append(h('li', {}, h('a', { href: '#/knowledge/' + encodeURIComponent(kb.id), 'aria-current': kb.id === ctx.params[0] ? 'true' : null },
        h('strong', { text: kb.name }), h('span', { class: 'muted', text: kb.embedding_model ? ' ' + kb.embedding_model : ' keyword-only' }))));
    }
    return kbs;
  }

  function showKB(kb) {
    clear(detail);
    const docs = h('tbody');
    const progress = h('ul', { class: 'progress', 'aria-label': 'uploads' });
    const summary = h('p', { class: 'upload-summary muted', role: 'status' });
    // tally sums up the uploads so far: "5 files: 3 added, 1 replaced, …".
    const tally = () => {
      const n = {};
      const items = [...progress.children];
      for (const li of items) {
        const o = li.dataset.outcome || 'pending';
        n[o] = (n[o] || 0) + 1;
      }
      summary.textContent = items.length ? `${items.length} file${items.length === 1 ? '' : 's'}: ` +
        ['added', 'replaced', 'unchanged', 'failed', 'pending'].filter((o) => n[o]).map((o) => `${n[o]} ${o}`).join(', ') : '';
    };
    const fileInput = h('input', { type: 'file', multiple: true, id: 'kb-files', class: 'visually-hidden' });
    const dirInput = h('input', { type: 'file', multiple: true, webkitdirectory: true, id: 'kb-folder', class: 'visually-hidden' });
    const drop = h('div', { class: 'drop', tabindex: '0', role: 'group', 'aria-label': 'Drop files or folders here' },
      h('p', { text: 'Drop files or folders here, or ' },
        h('label', { for: 'kb-files', class: 'button', text: 'choose files' }), ' ',
        h('label', { for: 'kb-folder', class: 'button', text: 'choose a folder' })),
      fileInput, dirInput);
    const q = h('input', { type: 'search', placeholder: 'Search this knowledge base' });
    const topK = h('input', { type: 'number', min: 1, max: 100, value: 5 });
    const results = h('div', { class: 'results' });
    const search = h('form', { class: 'search', role: 'search' },
      field('Query', q), field('Top k', topK), h('button', { type: 'submit', text: 'Search' }));
    // Renaming keeps the id, the documents and the agents that use it
    // (PUT /v1/knowledge-bases/{id}); chunking and embeddings cannot change.
    const title = h('h1', { text: kb.name });
    const newName = h('input', { required: true, maxlength: 128, value: kb.name });
    const renameErr = h('p', { class: 'error', role: 'alert' });
    const rename = h('form', { class: 'kb-rename', hidden: true },
      field('New name', newName, { name: 'name' }),
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', class: 'primary', text: 'Save name' }),
        h('button', { type: 'button', text: 'Cancel', on: { click: () => { rename.hidden = true; } } })),
      renameErr);
    rename.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        const out = await api('PUT', '/v1/knowledge-bases/' + encodeURIComponent(kb.id), { name: newName.value.trim() });
        kb.name = out.name;
        title.textContent = out.name;
        showFieldError(rename, null, renameErr);
        rename.hidden = true;
        await loadList();
      } catch (x) {
        showFieldError(rename, x, renameErr);
      }
    });
    detail.append(
      h('div', { class: 'row' }, title,
        h('button', { type: 'button', class: 'small', text: 'Rename', 'aria-label': 'Rename knowledge base', on: { click: () => { rename.hidden = false; newName.focus(); } } }),
        confirmButton('Delete knowledge base', async () => {
          await api('DELETE', '/v1/knowledge-bases/' + encodeURIComponent(kb.id));
          ctx.navigate('#/knowledge');
        })),
      rename,
      h('p', { class: 'muted', text: `chunks of ${kb.chunk_size} tokens, overlap ${kb.chunk_overlap}; ` + (kb.embedding_model ? 'embeddings: ' + kb.embedding_model : 'keyword-only (no embedding model)') }),
      drop, summary, progress,
      h('h2', { text: 'Documents' }),
      h('table', { class: 'docs' }, h('thead', {}, h('tr', {}, ['Name', 'Status', 'Chunks', 'Size', 'Updated', ''].map((c) => h('th', { text: c })))), docs),
      h('h2', { text: 'Search' }), search, results);

    async function loadDocs() {
      const list = await api('GET', `/v1/knowledge-bases/${encodeURIComponent(kb.id)}/documents`);
      clear(docs);
      if (!list.length) docs.append(h('tr', {}, h('td', { colspan: 6, class: 'muted', text: 'No documents yet.' })));
      for (const d of list) {
        docs.append(h('tr', { dataset: { id: d.id, status: d.status } },
          h('td', { text: d.name }),
          h('td', {}, h('span', { class: 'status ' + d.status, text: d.status }), d.error ? h('div', { class: 'error', text: d.error }) : null),
          h('td', { text: String(d.chunks ?? '') }),
          h('td', { text: d.bytes ? fmtBytes(d.bytes) : '' }),
          h('td', { text: fmtTime(d.updated_at) }),
          h('td', {}, confirmButton('Delete', async () => {
            await api('DELETE', `/v1/knowledge-bases/${encodeURIComponent(kb.id)}/documents/${encodeURIComponent(d.id)}`);
            loadDocs();
          }, { class: 'danger small', aria: 'Delete ' + d.name }))));
      }
      clearTimeout(poll);
      if (alive && list.some((d) => d.status === 'queued' || d.status === 'indexing')) poll = setTimeout(() => loadDocs().catch(() => {}), 700);
    }

    async function send(files) {
      const jobs = files.map(({ file, name: n }) => {
        const bar = h('progress', { max: 1, value: 0, 'aria-label': 'upload of ' + n });
        const st = h('span', { class: 'muted', text: 'waiting' });
        const li = h('li', { dataset: { name: n } }, h('span', { text: n }), bar, st);
        progress.append(li);
        return { file, n, bar, st, li };
      });
      tally();
      // Three at a time: a folder of hundreds of files should not open
      // hundreds of connections.
      let next = 0;
      const worker = async () => {
        while (next < jobs.length) {
          const j = jobs[next++];
          j.st.textContent = 'uploading';
          try {
            const res = await upload(kb.id, j.file, j.n, (p) => { j.bar.value = p; });
            const outcome = (res && res.outcome) || 'added';
            j.li.dataset.outcome = outcome;
            j.st.textContent = outcomeText(outcome, res && res.replaced_chunks);
            j.st.className = outcome === 'unchanged' ? 'muted' : 'ok';
          } catch (x) {
            j.li.dataset.outcome = 'failed';
            j.st.textContent = x.message;
            j.st.className = 'error';
          }
          tally();
          loadDocs().catch(() => {});
        }
      };
      await Promise.all([worker(), worker(), worker()]);
    }

    fileInput.addEventListener('change', () => {
      send([...fileInput.files].map((f) => ({ file: f, name: f.name })));
      fileInput.value = '';
    });
    dirInput.addEventListener('change', () => {
      send([...dirInput.files].map((f) => ({ file: f, name: f.webkitRelativePath || f.name })));
      dirInput.value = '';
    });
    drop.addEventListener('dragover', (e) => {
      e.preventDefault();
      drop.classList.add('over');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', async (e) => {
      e.preventDefault();
      drop.classList.remove('over');
      const entries = [...e.dataTransfer.items].map((it) => it.webkitGetAsEntry && it.webkitGetAsEntry()).filter(Boolean);
      if (!entries.length) {
        send([...e.dataTransfer.files].map((f) => ({ file: f, name: f.name })));
        return;
      }
      const files = [];
      for (const en of entries) await walk(en, files);
      send(files);
    });
    drop.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        fileInput.click();
      }
    });

    search.addEventListener('submit', async (e) => {
      e.preventDefault();
      const query = q.value.trim();
      if (!query) return;
      clear(results);
      await Promise.all(['hybrid', 'vector', 'keyword'].map(async (mode) => {
        const col = h('section', { class: 'result-col', dataset: { mode } }, h('h3', { text: mode }));
        results.append(col);
        try {
          const out = await api('POST', `/v1/knowledge-bases/${encodeURIComponent(kb.id)}/search`, { query, mode, top_k: Number(topK.value) || 5 });
          if (!out.results.length) col.append(h('p', { class: 'muted', text: 'No results.' }));
          col.append(h('ol', {}, out.results.map((r) => h('li', { class: 'result' },
            h('div', {}, h('strong', { text: r.document_name }), ' ', h('span', { class: 'score', text: Number(r.score).toFixed(3) })),
            h('blockquote', { class: 'snippet', text: r.content.length > 300 ? r.content.slice(0, 300) + '…' : r.content })))));
        } catch (x) {
          col.append(h('p', { class: 'muted', text: x.message }));
        }
      }));
    });

    loadDocs().catch((x) => docs.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'error', text: x.message }))));
  }

  (async () => {
    try {
      const kbs = await loadList();
      const idp = ctx.params[0];
      const kb = kbs.find((k) => k.id === idp);
      if (kb) showKB(kb);
      else if (kbs.length) ctx.navigate('#/knowledge/' + encodeURIComponent(kbs[0].id));
      else detail.append(h('p', { class: 'muted', text: 'Create a knowledge base, then drop files or a folder on it.' }));
    } catch (x) {
      detail.replaceChildren(h('p', { class: 'error', text: x.message }));
    }
  })();
  return () => {
    alive = false;
    clearTimeout(poll);
  };
}

// outcomeText says what an upload did to its document.
function outcomeText(outcome, replaced) {
  switch (outcome) {
    case 'replaced':
      return `replaced ${replaced || 0} chunk${replaced === 1 ? '' : 's'}`;
    case 'unchanged':
      return 'unchanged';
    default:
      return 'added';
  }
}

// walk collects the files under a dropped entry, named by their path.
async function walk(entry, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, name: entry.fullPath.replace(/^\//, '') });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = entry.createReader();
  for (;;) {
    const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
    if (!batch.length) break;
    for (const e of batch) await walk(e, out);
  }
}
