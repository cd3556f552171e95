// app.js - entry point: restores the session, draws the top bar and routes
// between pages on location.hash with the table in routes.js.
//
// Start-up: nothing is routed until GET /me has answered, so a hash change
// while the app is starting only moves location.hash, and the first route()
// afterwards reads the latest one (the destination is never lost). A page
// asked for while signed out is remembered in sessionStorage['ty.after'] and
// opened after signing in.
//
// Each route() gets a fresh ctx (ctx.js) whose pollers, streams and leave
// handlers are all stopped before the next page is drawn; a render that
// finishes after the user has moved on finds its ctx already left.
import { api, post, setCsrf } from './api.js';
import { h, replace } from './dom.js';
import { initI18n, t, getLang, setLang } from './i18n.js';
import { ROUTES, HOME } from './routes.js';
import { makeCtx } from './ctx.js';
import { errorBox } from './ui.js';

const state = { me: null, ready: false, ctx: null, gen: 0 };
const $ = (id) => document.getElementById(id);

const compiled = ROUTES.map((r) => {
  const names = [];
  const src = r.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, (_, n) => { names.push(n); return '([^/]+)'; });
  return Object.assign({ re: new RegExp('^#' + src + '$'), names }, r);
});

const allowed = (r) => !r.roles || (state.me && r.roles.includes(state.me.role));

// A capture that is not valid percent-encoding (#/jobs/%E0, from a link cut
// short or typed by hand) makes the whole address a bad one: {bad: true}.
function match(hash) {
  const [path, q] = hash.split('?');
  for (const r of compiled) {
    const m = path.match(r.re);
    if (!m) continue;
    let caps;
    try { caps = m.slice(1).map(decodeURIComponent); } catch (_) { return { bad: true }; }
    const params = Object.assign([...caps], Object.fromEntries(r.names.map((n, i) => [n, caps[i]])));
    return { route: r, params, query: new URLSearchParams(q || '') };
  }
  return null;
}

function drawShell(active) {
  const signedIn = !!state.me;
  $('topbar').hidden = !signedIn;
  $('lang-corner').hidden = signedIn;
  const other = getLang() === 'zh-CN' ? 'en' : 'zh-CN';
  const langText = other === 'en' ? 'English' : '中文';
  const langLabel = t('nav.lang_switch');
  if (signedIn) {
    const seen = new Set();
    const items = compiled.filter((r) => r.nav && !r.open && allowed(r) && !seen.has(r.nav) && seen.add(r.nav));
    replace($('nav'), items.map((r) => h('a', {
      href: r.navTo || '#' + r.path,
      class: r.nav === active ? 'active' : '',
      'aria-current': r.nav === active ? 'page' : null,
    }, t('nav.' + r.nav))));
    replace($('who'), state.me.username, ' · ', t('role.' + state.me.role));
    $('lang-toggle').textContent = langText;
    $('lang-toggle').setAttribute('lang', other);
    $('lang-toggle').setAttribute('aria-label', langLabel);
    $('logout').textContent = t('nav.logout');
    $('nav').setAttribute('aria-label', t('nav.main'));
  } else {
    replace($('lang-corner'), h('button', { type: 'button', class: 'link', id: 'lang-corner-btn', lang: other, 'aria-label': langLabel, onclick: toggleLang }, langText));
  }
  $('skip').textContent = t('nav.skip');
  document.title = 'trainyard · ' + t('app.title');
}

async function toggleLang() {
  await setLang(getLang() === 'zh-CN' ? 'en' : 'zh-CN');
  route();
  const b = $(state.me ? 'lang-toggle' : 'lang-corner-btn');
  if (b) b.focus();
}

async function logout() {
  try { await post('/auth/logout'); } catch (_) { /* the session may be gone already */ }
  setCsrf('');
  state.me = null;
  location.hash = '#/login';
}

function leave() {
  if (state.ctx) { state.ctx._leave(); state.ctx = null; }
}

async function route() {
  if (!state.ready) return; // boot() routes once /me has answered
  leave();
  const gen = ++state.gen;
  const hash = location.hash || HOME;
  const m = match(hash);
  if (!state.me && !(m && m.route && m.route.open)) {
    if (hash !== '#/login' && !(m && m.bad)) sessionStorage.setItem('ty.after', hash);
    location.hash = '#/login';
    return;
  }
  if (state.me && m && m.route && m.route.open) { location.hash = takeAfter(); return; }
  if (m && m.bad) { badAddress(hash); return; }
  if (!m || !allowed(m.route)) { location.hash = HOME; return; }
  drawShell(m.route.nav);
  const main = $('main');
  replace(main);
  main.setAttribute('aria-busy', 'true');
  delete main.dataset.loaded;
  const ctx = makeCtx({
    me: state.me, params: m.params, query: m.query,
    loaded() { if (!ctx.left) main.dataset.loaded = '1'; },
    signedIn(me) { state.me = me; location.hash = takeAfter(); },
  });
  state.ctx = ctx;
  let mod;
  try {
    mod = await import('./pages/' + m.route.module);
  } catch (e) {
    if (gen === state.gen) { main.removeAttribute('aria-busy'); replace(main, errorBox({ code: 'page_load' })); }
    return;
  }
  if (gen !== state.gen) return; // the user moved on while the module loaded
  main.removeAttribute('aria-busy');
  const cleanup = mod.render(main, ctx);
  if (typeof cleanup === 'function') ctx.onLeave(cleanup);
  // Keyboard and screen-reader users land on the new page's heading.
  const h1 = main.querySelector('h1');
  if (h1 && !main.contains(document.activeElement)) { h1.tabIndex = -1; h1.focus({ preventScroll: true }); }
}

// The page for an address that cannot be read: said in words, with the way
// home; the router goes on working (the next hash change routes as usual).
function badAddress(hash) {
  drawShell(null);
  const main = $('main');
  main.removeAttribute('aria-busy');
  replace(main,
    h('div', { class: 'page-head' }, h('h1', { id: 'bad-address' }, t('common.bad_address'))),
    h('div', { class: 'alert error', role: 'alert' }, t('common.bad_address_help'), ' ', h('code', { class: 'wrap' }, hash)),
    h('p', null, h('a', { href: HOME, class: 'button' }, t('common.go_home'))));
  main.dataset.loaded = '1';
  const h1 = main.querySelector('h1');
  h1.tabIndex = -1;
  h1.focus({ preventScroll: true });
}

function takeAfter() {
  const after = sessionStorage.getItem('ty.after');
  sessionStorage.removeItem('ty.after');
  return after && after !== '#/login' ? after : HOME;
}

async function boot() {
  window.addEventListener('hashchange', route);
  await initI18n();
  $('lang-toggle').addEventListener('click', toggleLang);
  $('logout').addEventListener('click', logout);
  // The skip link must not change the hash (that would route away).
  $('skip').addEventListener('click', (ev) => { ev.preventDefault(); $('main').focus(); });
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
  state.ready = true;
  document.documentElement.dataset.ready = '1';
  route();
}

boot();
