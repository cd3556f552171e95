// i18n.js - UI string catalogs (web/i18n/*.json). zh-CN is the default; the
// choice is kept in localStorage. English is the fallback for missing keys.

export const LANGS = ['zh-CN', 'en'];
const KEY = 'ty.lang';
let lang = LANGS.includes(localStorage.getItem(KEY)) ? localStorage.getItem(KEY) : 'zh-CN';
const catalogs = {};

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
  lang = l;
  localStorage.setItem(KEY, l);
  await load(l);
  document.documentElement.lang = l;
}

// t('jobs.count', {n: 3}) -> catalog string with {n} replaced.
export function t(key, vars) {
  let s = (catalogs[lang] && catalogs[lang][key]) ?? (catalogs.en && catalogs.en[key]) ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}
