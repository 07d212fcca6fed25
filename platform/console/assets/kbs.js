// Knowledge bases: create and delete; upload files and folders (drag and
// drop or pickers), each drop with its own summary, each file with its
// progress, what its upload did (added, replaced N chunks, unchanged) and
// its document's status on the server, a failed one with Retry; documents
// with their status; a search that shows hybrid, vector and keyword
// results side by side (keyword only for a keyword-only knowledge base).
import { providerModels, ids } from './models.js';
import { api, upload } from './api.js';
import { h, field, clear, showFieldError, confirmButton, fmtBytes, fmtTime } from './dom.js';

export function render(main, ctx) {
  const list = h('ul', { class: 'list', 'aria-label': 'knowledge bases' });
  const detail = h('section', { class: 'kb-detail' });
  const name = h('input', { required: true, placeholder: 'handbook' });
  const chunk = h('input', { type: 'number', min: 32, max: 8192, placeholder: 'default' });
  const overlap = h('input', { type: 'number', min: 0, placeholder: 'default' });
  const emb = h('select', {}, h('option', { value: '', text: 'server default' }));
  providerModels(ctx.me).then((pm) => {
    const def = pm.default_embedding_model;
    emb.replaceChildren(h('option', { value: '', text: def ? `server default (${def})` : 'server default (none: keyword-only)' }),
      ...ids(pm, 'embedding').filter((m) => m !== def).map((m) => h('option', { value: m, text: m })),
      h('option', { value: 'none', text: 'none (keyword-only search)' }));
  });
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'kb-create' },
    h('h2', { text: 'New knowledge base' }),
    field('Name', name, { name: 'name' }),
    h('details', {}, h('summary', { text: 'Chunking and embeddings' }),
      field('Chunk size (tokens)', chunk, { name: 'chunk_size' }),
      field('Chunk overlap (tokens)', overlap, { name: 'chunk_overlap' }),
      field('Embedding model', emb, { name: 'embedding_model', hint: 'embeddings make search hybrid (keywords and meaning); without, search is keyword-only' })),
    h('button', { type: 'submit', class: 'primary', text: 'Create' }), err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = { name: name.value.trim() };
    if (chunk.value) body.chunk_size = Number(chunk.value);
    if (overlap.value) body.chunk_overlap = Number(overlap.value);
    if (emb.value === 'none') body.embedding_model = '';
    else if (emb.value) body.embedding_model = emb.value;
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
    const uploads = h('div', { class: 'uploads' });
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
      drop, h('p', { class: 'muted hint', text: 'A folder\'s files are named by their path inside it (sub/notes.md), a file by its name, as weft kb ingest names them. Uploading a name again replaces that document; the same content again changes nothing.' }), uploads,
      h('h2', { text: 'Documents' }),
      h('table', { class: 'docs' }, h('thead', {}, h('tr', {}, ['Name', 'Status', 'Chunks', 'Size', 'Updated', ''].map((c) => h('th', { text: c })))), docs),
      h('h2', { text: 'Search' }), search, results);

    // Uploads: every drop (or pick) is a batch with its own summary; the
    // files of all batches go up three at a time through the API's pacer
    // (which waits out the rate limit), and each file's row follows its
    // document on the server — queued, indexing, ready or failed with the
    // reason — until it is done. A failed file keeps its row with a Retry
    // button.
    const queue = [];
    const jobs = []; // every upload's job, of every batch
    let active = 0;
    let batches = 0;
    let docTimer = null;
    let docsBusy = false;
    let docsAgain = false;

    function renderDocs(list) {
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
    }

    // loadDocs reads the documents, shows them, and brings each upload's
    // row up to date; it polls again while any is queued or indexing.
    async function loadDocs() {
      clearTimeout(docTimer);
      docTimer = null;
      docsBusy = true;
      let list;
      try {
        list = await api('GET', `/v1/knowledge-bases/${encodeURIComponent(kb.id)}/documents`);
      } finally {
        docsBusy = false;
      }
      if (!alive) return;
      if (docsAgain) {
        docsAgain = false;
        scheduleDocs(700);
      }
      renderDocs(list);
      const byID = new Map(list.map((d) => [d.id, d]));
      const batchesSeen = new Set();
      for (const j of jobs) {
        if (!j.docID || j.state !== 'sent') continue;
        const d = byID.get(j.docID);
        if (d) setDocStatus(j, d.status, d.error, d.chunks);
        batchesSeen.add(j.batch);
      }
      for (const b of batchesSeen) b.tally();
      if (list.some((d) => d.status === 'queued' || d.status === 'indexing')) scheduleDocs(1000);
    }

    // scheduleDocs asks for the documents within ms, once however often it
    // is called meanwhile.
    function scheduleDocs(ms) {
      if (docsBusy) docsAgain = true;
      if (!alive || docTimer || docsBusy) return;
      docTimer = setTimeout(() => loadDocs().catch(() => scheduleDocs(2000)), ms);
    }

    function setDocStatus(j, status, error, chunks) {
      j.li.dataset.status = status;
      const what = outcomeText(j.outcome, j.replaced);
      switch (status) {
        case 'ready':
          j.st.textContent = `${what} · ready, ${chunks} chunk${chunks === 1 ? '' : 's'}`;
          j.st.className = 'ok';
          break;
        case 'failed':
          j.st.textContent = `${what} · indexing failed: ${error || 'no reason given'}`;
          j.st.className = 'error';
          break;
        default:
          j.st.textContent = `${what} · ${status}`;
          j.st.className = 'muted';
      }
      j.retry.hidden = status !== 'failed';
    }

    function newBatch(count) {
      batches += 1;
      const n = batches;
      const list = h('ul', { class: 'progress', 'aria-label': `files of upload ${n}` });
      const summary = h('p', { class: 'upload-summary', role: 'status' });
      const retryAll = h('button', { type: 'button', class: 'small', hidden: true, text: 'Retry failed' });
      const box = h('section', { class: 'upload-batch', dataset: { batch: String(n) }, 'aria-label': `Upload ${n}: ${count} file${count === 1 ? '' : 's'}` },
        h('div', { class: 'row' }, summary, retryAll), list);
      const batch = { n, list, box, jobs: [] };
      // tally sums up this batch: "5 files: 3 added, 1 replaced, …", then
      // where indexing stands.
      batch.tally = () => {
        const counts = {};
        const st = {};
        let failed = 0;
        for (const j of batch.jobs) {
          const o = j.state === 'failed' ? 'failed' : j.outcome || 'pending';
          counts[o] = (counts[o] || 0) + 1;
          if (j.state === 'sent') {
            const s = j.li.dataset.status || 'queued';
            st[s] = (st[s] || 0) + 1;
            if (s === 'failed') failed++;
          } else if (j.state === 'failed') failed++;
        }
        const total = batch.jobs.length;
        let text = `${total} file${total === 1 ? '' : 's'}: ` +
          ['added', 'replaced', 'unchanged', 'failed', 'pending'].filter((o) => counts[o]).map((o) => `${counts[o]} ${o}`).join(', ');
        const indexing = (st.queued || 0) + (st.indexing || 0);
        const parts = [st.ready ? `${st.ready} ready` : '', indexing ? `${indexing} indexing` : '', st.failed ? `${st.failed} failed to index` : ''].filter(Boolean);
        if (parts.length) text += '; ' + parts.join(', ');
        summary.textContent = text;
        box.dataset.done = String(batch.jobs.every((j) => j.state === 'failed' || (j.state === 'sent' && ['ready', 'failed'].includes(j.li.dataset.status))));
        retryAll.hidden = failed < 2;
        retryAll.textContent = `Retry ${failed} failed`;
      };
      retryAll.addEventListener('click', () => {
        for (const j of batch.jobs) if (j.state === 'failed' || j.li.dataset.status === 'failed') enqueue(j);
      });
      uploads.prepend(box);
      return batch;
    }

    function enqueue(j) {
      j.state = 'waiting';
      j.outcome = '';
      delete j.li.dataset.outcome;
      delete j.li.dataset.status;
      j.li.classList.remove('failed');
      j.bar.hidden = false;
      j.bar.value = 0;
      j.st.textContent = 'waiting';
      j.st.className = 'muted';
      j.retry.hidden = true;
      queue.push(j);
      j.batch.tally();
      kick();
    }

    function kick() {
      while (active < 3 && queue.length) {
        active++;
        const j = queue.shift();
        uploadOne(j).finally(() => {
          active--;
          kick();
        });
      }
    }

    async function uploadOne(j) {
      j.state = 'uploading';
      j.st.textContent = 'uploading';
      try {
        const res = await upload(kb.id, j.file, j.name, (p) => { j.bar.value = p; });
        j.state = 'sent';
        j.outcome = (res && res.outcome) || 'added';
        j.replaced = res && res.replaced_chunks;
        j.docID = res && res.id;
        j.li.dataset.outcome = j.outcome;
        setDocStatus(j, (res && res.status) || 'queued', res && res.error, res && res.chunks);
        scheduleDocs(700);
      } catch (x) {
        j.state = 'failed';
        j.li.dataset.outcome = 'failed';
        j.li.classList.add('failed');
        j.bar.hidden = true;
        j.st.textContent = x.message;
        j.st.className = 'error';
        j.retry.hidden = false;
      }
      j.batch.tally();
    }

    function send(files) {
      if (!files.length) return;
      const batch = newBatch(files.length);
      for (const { file, name: n } of files) {
        const bar = h('progress', { max: 1, value: 0, 'aria-label': 'upload of ' + n });
        const st = h('span', { class: 'muted', text: 'waiting' });
        const li = h('li', { dataset: { name: n } }, h('span', { class: 'name', text: n }), bar, st);
        const j = { file, name: n, li, bar, st, batch, state: 'waiting', outcome: '' };
        j.retry = h('button', { type: 'button', class: 'small', hidden: true, text: 'Retry', 'aria-label': 'Retry ' + n, on: { click: () => enqueue(j) } });
        li.append(j.retry);
        batch.list.append(li);
        batch.jobs.push(j);
        jobs.push(j);
      }
      for (const j of batch.jobs) enqueue(j);
    }

    fileInput.addEventListener('change', () => {
      send([...fileInput.files].map((f) => ({ file: f, name: f.name })));
      fileInput.value = '';
    });
    dirInput.addEventListener('change', () => {
      send([...dirInput.files].map((f) => ({ file: f, name: inFolder(f.webkitRelativePath || f.name) })));
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
      for (const en of entries) await walk(en, files, en.isDirectory ? en.fullPath.replace(/\/?$/, '/') : '');
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
      // A keyword-only knowledge base (no embedding model) has one kind
      // of search: its results are headed so, not "hybrid".
      const modes = kb.embedding_model ? ['hybrid', 'vector', 'keyword'] : ['keyword'];
      if (!kb.embedding_model) results.append(h('p', { class: 'muted wide', text: 'Keyword search only: this knowledge base has no embedding model.' }));
      await Promise.all(modes.map(async (mode) => {
        const col = h('section', { class: 'result-col', dataset: { mode }, 'aria-label': mode + ' results' }, h('h3', { text: mode }));
        results.append(col);
        try {
          const out = await api('POST', `/v1/knowledge-bases/${encodeURIComponent(kb.id)}/search`, { query, mode, top_k: Number(topK.value) || 5 }, { idempotent: true });
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
      else if (kbs.length) ctx.navigate('#/knowledge/' + encodeURIComponent(kbs[0].id), { replace: true });
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

// inFolder names a file picked with its folder as weft kb ingest does: by
// its path inside the folder ("docs/sub/x.md" is "sub/x.md").
function inFolder(relative) {
  const i = relative.indexOf('/');
  return i < 0 ? relative : relative.slice(i + 1);
}

// walk collects the files under a dropped entry. A dropped file is named
// by its name; a dropped folder's files by their path inside it (root is
// the folder's path with a trailing slash), as weft kb ingest names them.
async function walk(entry, out, root) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, name: root && entry.fullPath.startsWith(root) ? entry.fullPath.slice(root.length) : entry.name });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = entry.createReader();
  for (;;) {
    const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
    if (!batch.length) break;
    for (const e of batch) await walk(e, out, root);
  }
}
