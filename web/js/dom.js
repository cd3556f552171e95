// dom.js - tiny element builders. Server data is only ever inserted as text
// (textContent / text nodes / setAttribute), never parsed as HTML.

import { t } from './i18n.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

function applyAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' && 'value' in el) el.value = String(v);
    else if (k === 'checked' || k === 'selected' || k === 'disabled') { el[k] = true; }
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h('div', {class: 'x', onclick: fn}, 'text', child, [more]) -> HTMLElement
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// Postgres timestamptz text ("2026-01-02 03:04:05.678+00") or ISO -> local string.
export function fmtTime(s) {
  if (!s) return '';
  let iso = String(s).replace(' ', 'T');
  if (/[+-]\d\d$/.test(iso)) iso += ':00';
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(s);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function stateBadge(state) {
  const s = String(state || '');
  if (!s) return h('span', { class: 'badge' }, '…');
  const key = 'state.' + s;
  const label = t(key);
  return h('span', { class: 'badge state-' + s.toLowerCase().replace(/[^a-z]/g, ''), title: s }, label === key ? s : label);
}
