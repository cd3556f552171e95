// admin_kit.js - what the queue, nodes, admin, account and audit pages share
// on top of js/ui.js: forms whose API errors mark the field by its
// data-field, tables given as one cells(row) array, copy buttons, badges
// that say their state in words as well as colour, parts of a card redrawn
// only when their data changed.
import { h, replace } from '../dom.js';
import { t, has } from '../i18n.js';
import { errorBox, field as uiField, markField, clearMarks, liveTable as uiLiveTable } from '../ui.js';

// t(key, vars) when the catalog has key, else fallback (never recorded as a
// missing key: used for codes the server may add later).
export function tOr(key, vars, fallback) {
  return has(key) ? t(key, vars) : fallback;
}

// The field wrappers of a form by their control's data-field (an API field name).
function fieldsOf(form) {
  const out = {};
  if (!form) return out;
  for (const el of form.querySelectorAll('[data-field]')) {
    const w = el.closest('.field');
    if (w && w.control) out[el.getAttribute('data-field')] = w;
  }
  return out;
}

// Shows err (translated, by code) in box and marks the field of form it
// names; showError(box, null, form) clears both.
export function showError(box, err, form) {
  const fields = fieldsOf(form);
  if (!err) { replace(box); clearMarks(fields); return; }
  replace(box, errorBox(err));
  markField(fields, err);
}

export function okBox(box, ...kids) {
  replace(box, h('div', { class: 'alert ok', role: 'status' }, kids));
}

// A labelled control (ui.js field()) whose label is already translated.
export function field(labelText, control, help) {
  return uiField('', control, { label: labelText, help, id: control.id });
}

export function input(id, fieldName, attrs) {
  return h('input', Object.assign({ id, name: id, 'data-field': fieldName }, attrs || {}));
}

export function select(id, fieldName, options, attrs) {
  return h('select', Object.assign({ id, name: id, 'data-field': fieldName }, attrs || {}),
    options.map(([v, label]) => h('option', { value: v }, label)));
}

export function copyButton(getText, label) {
  const b = h('button', { type: 'button', class: 'small-btn' }, t('common.copy'));
  if (label) b.setAttribute('aria-label', label);
  b.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(getText()); b.textContent = t('common.copied'); }
    catch (_) { b.textContent = t('common.copy_failed'); }
    setTimeout(() => { b.textContent = t('common.copy'); }, 1500);
  });
  return b;
}

export function shellQuote(s) {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : "'" + String(s).replace(/'/g, "'\\''") + "'";
}

// A badge that says its state in words and colour: kind picks the colour
// (ok, warn, bad, info, muted).
export function badge(kind, text, title) {
  return h('span', { class: 'badge tone-' + kind, title: title || text }, text);
}

// ui.js liveTable given columns [{label, cls}] and cells(row) -> one value
// per column; rowClass(row) is applied on every update.
export function liveTable(spec) {
  const cache = new WeakMap();
  const cellsOf = (r) => { let c = cache.get(r); if (!c) { c = spec.cells(r); cache.set(r, c); } return c; };
  const sig = spec.sig || (() => '');
  const tb = uiLiveTable({
    caption: spec.caption, empty: spec.empty, key: spec.key, class: spec.class, scroll: true,
    columns: spec.columns.map((c, i) => ({
      label: c.label, class: c.cls,
      cell: (r) => cellsOf(r)[i],
      sig: (r) => { const v = cellsOf(r)[i]; return sig(r) + '|' + (v instanceof Node ? v.outerHTML : JSON.stringify(v ?? '', (k, x) => (x instanceof Node ? x.outerHTML : x))); },
    })),
  });
  if (spec.caption) tb.el.setAttribute('aria-label', spec.caption);
  tb.el.setAttribute('role', 'region');
  return {
    el: tb.el, tbody: tb.tbody,
    update(rows) {
      tb.update(rows);
      if (!spec.rowClass) return;
      for (const r of rows) {
        const tr = tb.tbody.querySelector(`tr[data-key="${CSS.escape(String(spec.key(r)))}"]`);
        if (tr) tr.className = spec.rowClass(r) || '';
      }
    },
  };
}

// A card with a heading that names it.
let secSeq = 0;
export function card(title, ...kids) {
  const id = 'sec-' + (++secSeq);
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), kids);
}

// Fills slot with make() when sig differs from the last fill: parts of a
// card that did not change keep their DOM, and with it focus and selection.
export function patch(slot, sig, make) {
  const s = typeof sig === 'string' ? sig : JSON.stringify(sig);
  if (slot.__sig === s) return slot;
  slot.__sig = s;
  replace(slot, make());
  return slot;
}
