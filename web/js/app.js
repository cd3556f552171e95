// app.js - entry point: restores the session, draws the top bar and routes
// between pages on location.hash (#/jobs, #/jobs/42, #/submit, ...).
import { api, get, post, setCsrf } from './api.js';
import { h, replace } from './dom.js';
import { initI18n, t, getLang, setLang } from './i18n.js';
import * as login from './pages/login.js';
import * as jobs from './pages/jobs.js';
import * as submit from './pages/submit.js';
import * as job from './pages/job.js';
import * as nodes from './pages/nodes.js';
import * as admin from './pages/admin.js';
import * as audit from './pages/audit.js';

const state = { me: null, cleanup: null };
const $ = (id) => document.getElementById(id);

const isAdmin = () => state.me && state.me.role === 'admin';
const canAudit = () => state.me && (state.me.role === 'admin' || state.me.role === 'auditor');

const routes = [
  { re: /^#\/login$/, page: login, open: true },
  { re: /^#\/jobs$/, page: jobs, nav: 'jobs' },
  { re: /^#\/submit$/, page: submit, nav: 'submit' },
  { re: /^#\/jobs\/(\d+)$/, page: job, nav: 'jobs' },
  { re: /^#\/nodes$/, page: nodes, nav: 'nodes' },
  { re: /^#\/admin$/, page: admin, nav: 'admin', allow: isAdmin },
  { re: /^#\/audit$/, page: audit, nav: 'audit', allow: canAudit },
];

function navItems() {
  const items = [['jobs', '#/jobs'], ['submit', '#/submit'], ['nodes', '#/nodes']];
  if (isAdmin()) items.push(['admin', '#/admin']);
  if (canAudit()) items.push(['audit', '#/audit']);
  return items;
}

function drawShell(active) {
  const signedIn = !!state.me;
  $('topbar').hidden = !signedIn;
  $('lang-corner').hidden = signedIn;
  const langBtnText = getLang() === 'zh-CN' ? 'English' : '中文';
  if (signedIn) {
    replace($('nav'), navItems().map(([k, href]) =>
      h('a', { href, class: k === active ? 'active' : '' }, t('nav.' + k))));
    replace($('who'), state.me.username, ' · ', t('role.' + state.me.role));
    $('lang-toggle').textContent = langBtnText;
    $('logout').textContent = t('nav.logout');
  } else {
    replace($('lang-corner'), h('button', { type: 'button', class: 'link', onclick: toggleLang }, langBtnText));
  }
  document.title = 'trainyard · ' + t('app.title');
}

async function toggleLang() {
  await setLang(getLang() === 'zh-CN' ? 'en' : 'zh-CN');
  route();
}

async function logout() {
  try { await post('/auth/logout'); } catch (_) { /* the session may be gone already */ }
  setCsrf('');
  state.me = null;
  location.hash = '#/login';
}

function route() {
  if (state.cleanup) { try { state.cleanup(); } catch (_) { /* ignore */ } state.cleanup = null; }
  const hash = location.hash || '#/jobs';
  let r = null, m = null;
  for (const x of routes) { m = hash.match(x.re); if (m) { r = x; break; } }
  if (!state.me && !(r && r.open)) {
    sessionStorage.setItem('ty.after', hash === '#/login' ? '#/jobs' : hash);
    location.hash = '#/login';
    return;
  }
  if (state.me && r && r.open) { location.hash = '#/jobs'; return; }
  if (!r || (r.allow && !r.allow())) { location.hash = '#/jobs'; return; }
  drawShell(r.nav);
  const main = $('main');
  replace(main);
  const ctx = {
    me: state.me,
    params: m.slice(1),
    signedIn(me) {
      state.me = me;
      const after = sessionStorage.getItem('ty.after') || '#/jobs';
      sessionStorage.removeItem('ty.after');
      location.hash = after;
    },
  };
  state.cleanup = r.page.render(main, ctx) || null;
}

async function boot() {
  await initI18n();
  $('lang-toggle').addEventListener('click', toggleLang);
  $('logout').addEventListener('click', logout);
  window.addEventListener('hashchange', route);
  window.addEventListener('ty:unauthorized', () => {
    if (!state.me) return;
    state.me = null;
    setCsrf('');
    sessionStorage.setItem('ty.after', location.hash);
    location.hash = '#/login';
  });
  try {
    const me = await api('GET', '/me');
    if (me.csrf_token) setCsrf(me.csrf_token);
    state.me = me;
  } catch (_) {
    state.me = null;
  }
  route();
}

boot();
