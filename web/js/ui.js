// ui.js - small shared widgets: error boxes, pollers, tables.
import { h } from './dom.js';
import { t } from './i18n.js';

// An error box for an ApiError (or any Error): message, field and detail.
export function errorBox(err) {
  if (!err) return null;
  const parts = [h('strong', null, err.message || String(err))];
  if (err.field) parts.push(h('div', { class: 'small' }, t('error.field') + ': ', h('code', null, err.field)));
  if (err.detail) parts.push(h('div', { class: 'small' }, t('error.detail') + ': ' + err.detail));
  if (err.status === 0) parts.push(h('div', { class: 'small' }, t('error.network')));
  return h('div', { class: 'alert error', role: 'alert' }, parts);
}

// Calls fn now and every ms milliseconds (skipped while the tab is hidden).
// Returns a stop function. fn may be async; runs never overlap.
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

// table(['a','b'], rows.map(r => [cell, cell])) ; cells may be nodes or text.
export function table(headers, rows, opts = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: opts.class || '' },
      h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
      h('tbody', null, rows.length ? rows :
        h('tr', null, h('td', { colspan: headers.length, class: 'muted center' }, opts.empty || t('common.empty'))))));
}

export function row(cells, attrs) {
  return h('tr', attrs || null, cells.map((c) => h('td', null, c)));
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', null, title) : null, children);
}

export const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export const STATES = ['QUEUED', 'PLACED', 'STARTING', 'RUNNING', 'RESTARTING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
