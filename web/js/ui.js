// ui.js - shared widgets: translated error boxes and field marks, labelled
// form fields, tables that update in place, sections, state badges.
import { h, replace } from './dom.js';
import { t } from './i18n.js';
import { errorText, errorDetail, fieldKey } from './errors.js';

// An error box for an ApiError (or any Error) in the page's language.
export function errorBox(err) {
  if (!err) return null;
  const d = errorDetail(err);
  return h('div', { class: 'alert error', role: 'alert', 'data-code': err.code || '' },
    h('strong', null, errorText(err)), d ? h('div', { class: 'small' }, d) : null);
}

// field('wizard.gpus', control, {help, id}) -> a labelled field; the control
// gets an id (f-<name>) and the label's for=, and the hint element under it
// carries the error text (aria-describedby). Returns the wrapper; the
// control is wrapper.control, the hint wrapper.hint.
export function field(labelKey, control, opts = {}) {
  const id = opts.id || control.id || 'f-' + labelKey.replace(/[^A-Za-z0-9]+/g, '-');
  control.id = id;
  const hint = h('div', { class: 'field-error', id: id + '-err', 'aria-live': 'polite' });
  const help = opts.help ? h('div', { class: 'help', id: id + '-help' }, opts.help) : null;
  control.setAttribute('aria-describedby', [help ? id + '-help' : '', id + '-err'].join(' ').trim());
  const w = h('div', { class: 'field' + (opts.wide ? ' wide' : '') },
    h('label', { for: id }, opts.label || t(labelKey)), control, help, hint);
  w.control = control;
  w.hint = hint;
  return w;
}

// Marks the control an API error names. fields maps API field names (as the
// server writes them, "resources.gpus", "datasets[0]") or their field.* key
// to wrappers from field(); returns true when one was marked (and focused).
export function markField(fields, err, opts = {}) {
  clearMarks(fields);
  if (!err || !err.field) return false;
  const name = String(err.field);
  const w = fields[name] || fields[name.replace(/\[\d+\]/g, '')] || fields[fieldKey(name)] ||
    fields[name.split('.')[0]];
  if (!w) return false;
  w.control.classList.add('invalid');
  w.control.setAttribute('aria-invalid', 'true');
  replace(w.hint, errorText(err));
  if (opts.focus !== false) w.control.focus(); // not while the user types in it
  return true;
}

export function clearMarks(fields) {
  for (const w of new Set(Object.values(fields))) {
    w.control.classList.remove('invalid');
    w.control.removeAttribute('aria-invalid');
    replace(w.hint);
  }
}

// A table whose rows are kept by key and whose cells are only rewritten when
// their content changed, so a poll leaves focus, text selection and scroll
// alone.
//   const tb = liveTable({ caption, columns: [{label, cell: (row) => Node|text,
//     sig: (row) => string (optional: what the cell shows), class}],
//     key: (row) => id, empty: text });
//   parent.append(tb.el); tb.update(rows);
// A cell is redrawn when sig(row) (default: the cell's text or HTML) changes.
// opts.hide(row) -> true hides a row (a filter) without removing it.
export function liveTable(opts) {
  const cols = opts.columns;
  const tbody = h('tbody');
  const emptyRow = h('tr', { class: 'empty' }, h('td', { colspan: cols.length, class: 'muted center' }, opts.empty || t('common.empty')));
  const table = h('table', { class: opts.class || '' },
    opts.caption ? h('caption', { class: 'sr-only' }, opts.caption) : null,
    h('thead', null, h('tr', null, cols.map((c) => h('th', { scope: 'col', class: c.class || '' }, c.label)))),
    tbody);
  const el = h('div', { class: 'table-wrap', tabindex: opts.scroll ? 0 : null }, table);
  const rows = new Map(); // key -> {tr, sigs: []}
  tbody.append(emptyRow);

  // What a cell shows, to compare with the last poll: sig(row) when given
  // (cheap: give it for cells that build elements), else the cell's text or
  // HTML.
  function sigOf(c, r) {
    if (c.sig) return String(c.sig(r));
    const v = c.cell(r);
    return v instanceof Node ? (v.outerHTML || v.textContent) : String(v ?? '');
  }

  function update(list) {
    const seen = new Set();
    let prev = null;
    for (const r of list) {
      const k = String(opts.key(r));
      seen.add(k);
      let e = rows.get(k);
      if (!e) {
        const tr = h('tr', opts.rowAttrs ? opts.rowAttrs(r) : null);
        tr.dataset.key = k;
        e = { tr, sigs: cols.map(() => null) };
        for (let i = 0; i < cols.length; i++) tr.append(h('td', { class: cols[i].class || '' }));
        rows.set(k, e);
      }
      for (let i = 0; i < cols.length; i++) {
        const s = sigOf(cols[i], r);
        if (s !== e.sigs[i]) { e.sigs[i] = s; replace(e.tr.children[i], cols[i].cell(r)); }
      }
      // A filter hides rows rather than removing them: toggling an
      // attribute on 1,000 rows is far cheaper than detaching them.
      if (opts.hide) { const hid = !!opts.hide(r); if (e.tr.hidden !== hid) e.tr.hidden = hid; }
      // Keep order without moving rows that are already in place.
      const want = prev ? prev.nextSibling : tbody.firstChild;
      if (want !== e.tr) tbody.insertBefore(e.tr, want);
      prev = e.tr;
    }
    // Rows filtered out are detached but kept (a cleared search brings them
    // back without rebuilding them), until there are far more than shown.
    for (const [k, e] of rows) if (!seen.has(k) && e.tr.parentNode) e.tr.remove();
    if (rows.size > Math.max(5000, 4 * list.length)) for (const k of [...rows.keys()]) if (!seen.has(k)) rows.delete(k);
    const none = opts.hide ? !list.some((r) => !opts.hide(r)) : !list.length;
    if (!none) emptyRow.remove(); else if (!emptyRow.parentNode) tbody.append(emptyRow);
  }
  return { el, update, tbody };
}

// Static tables (no polling): table(['a','b'], rows.map(r => row([cell, cell]))).
export function table(headers, rows, opts = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: opts.class || '' },
      h('thead', null, h('tr', null, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, rows.length ? rows :
        h('tr', null, h('td', { colspan: headers.length, class: 'muted center' }, opts.empty || t('common.empty'))))));
}

export function row(cells, attrs) {
  return h('tr', attrs || null, cells.map((c) => h('td', null, c)));
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', null, title) : null, children);
}

// Deprecated: use ctx.poll (stopped when the user leaves the page).
export function poll(fn, ms) {
  let stopped = false, busy = false;
  const tick = async () => {
    if (stopped || busy || document.hidden) return;
    busy = true;
    try { await fn(); } catch (_) { /* the page shows its own errors */ }
    busy = false;
  };
  tick();
  const id = setInterval(tick, ms);
  return () => { stopped = true; clearInterval(id); };
}

export const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export const STATES = ['QUEUED', 'PLACED', 'STARTING', 'RUNNING', 'RESTARTING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
