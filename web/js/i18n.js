// i18n.js - UI string catalogs (web/i18n/*.json). zh-CN is the default; the
// choice is kept in localStorage['ty.lang']. Keys are flat, 'prefix.name',
// with one prefix per page (web/README.md, "Strings").
//
// A key missing from the page's language is recorded in
// window.__ty.missing (the browser tests fail on any) and shown from English,
// or as the key itself when English lacks it too.
export const LANGS = ['zh-CN', 'en'];
const KEY = 'ty.lang';
let lang = LANGS.includes(localStorage.getItem(KEY)) ? localStorage.getItem(KEY) : 'zh-CN';
const catalogs = {};
const live = (window.__ty = window.__ty || {});
live.missing = live.missing || [];

async function load(l) {
  if (catalogs[l]) return catalogs[l];
  const r = await fetch('i18n/' + l + '.json', { credentials: 'same-origin' });
  catalogs[l] = r.ok ? await r.json() : {};
  return catalogs[l];
}

export async function initI18n() {
  await Promise.all([load(lang), load('en')]);
  document.documentElement.lang = lang;
}

export function getLang() { return lang; }

export async function setLang(l) {
  if (!LANGS.includes(l)) return;
  await load(l);
  lang = l;
  localStorage.setItem(KEY, l);
  document.documentElement.lang = l;
}

export function has(key) { return !!(catalogs[lang] && key in catalogs[lang]); }

// t('jobs.count', {n: 3}) -> catalog string with {n} replaced.
export function t(key, vars) {
  let s = catalogs[lang] && catalogs[lang][key];
  if (s === undefined) {
    if (!live.missing.includes(lang + ':' + key)) live.missing.push(lang + ':' + key);
    s = (catalogs.en && catalogs.en[key]) ?? key;
  }
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

// A {"zh-CN": ..., "en": ...} text (templates, datasets) in the page's
// language, English when it has none.
export function tr(texts) {
  if (texts === null || texts === undefined) return '';
  if (typeof texts === 'string') return texts;
  return texts[lang] || texts.en || '';
}

// Numbers and times in the page's language.
// Intl formatters are costly to make (a table of 1,000 rows formats
// thousands of numbers a poll): one per language and precision.
const numFormats = new Map();
export function fmtNum(v, digits) {
  if (typeof v !== 'number' || !isFinite(v)) return '—';
  const k = lang + '/' + digits;
  let f = numFormats.get(k);
  if (!f) {
    f = new Intl.NumberFormat(lang, digits === undefined ? { maximumSignificantDigits: 5 } : { maximumFractionDigits: digits });
    numFormats.set(k, f);
  }
  return f.format(v);
}

export function fmtBytes(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return fmtNum(n, i ? 1 : 0) + ' ' + u[i];
}

export function fmtDuration(s) {
  if (typeof s !== 'number' || !isFinite(s) || s < 0) return '—';
  // Round to the unit shown before splitting, so that 86,399 s reads
  // "1 d 0 h" rather than "23 h 60 min", and 59.7 s "1 min".
  const sec = Math.round(s);
  if (sec < 60) return t('common.dur_s', { n: sec });
  const min = Math.round(s / 60);
  if (min < 60) return t('common.dur_m', { n: min });
  if (min < 1440) return t('common.dur_h', { h: Math.floor(min / 60), m: min % 60 });
  const hours = Math.round(s / 3600);
  return t('common.dur_d', { d: Math.floor(hours / 24), h: hours % 24 });
}
