// admin_stack.mjs - what the admin pages' browser tests add to lib.mjs (not
// a test itself: ctest runs test_*.mjs only): the stack's database URL and
// storage root, a signed-in REST client in node for setting up data as a
// user would, pages in a chosen language, and opening a page by its hash.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as lib from './lib.mjs';

export const { waitFor, BUILD, SHOTS, untranslated, pageOverflow, signIn } = lib;

// The queue page asks GET /queue; a server without the queue forecast
// answers 404 there (the page then lists the job list's queued jobs).
const ALLOW = ['/api/v1/queue'];

// lib.startStack plus the CLI this suite needs, the database URL (for
// bench/web's bulk insert) and the storage root of the default site.
export async function startStack(t, tag) {
  assert.ok(fs.existsSync(path.join(BUILD, 'cli/trainyard')), `no cli/trainyard in ${BUILD}: build first (make test)`);
  const s = await lib.startStack(t, tag);
  const pgPort = Number(fs.readFileSync(path.join(s.varDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const dbpw = fs.readFileSync(path.join(s.varDir, 'db-password'), 'utf8').trim();
  return Object.assign(s, {
    dbUrl: `postgresql://trainyard:${dbpw}@127.0.0.1:${pgPort}/trainyard`,
    storage: path.join(s.varDir, 'storage'),
  });
}

// A page (own cookies and storage) in lang ('zh-CN' or 'en'), recording
// console and page errors in page.problems (lib.newPage).
export async function newPage(stack, opts = {}) {
  const page = await lib.newPage(stack, { viewport: opts.viewport, allow: ALLOW.concat(opts.allow || []) });
  const lang = opts.lang || 'zh-CN';
  await page.context().addInitScript((l) => { if (!sessionStorage.getItem('ty.lang.set')) { localStorage.setItem('ty.lang', l); sessionStorage.setItem('ty.lang.set', '1'); } }, lang);
  return page;
}

// A signed-in REST client in node: c.call('POST', '/users', {...}) -> JSON
// (throws on a non-2xx answer), c.call(m, p, body, true) -> the Response.
export async function rest(base, username, password) {
  let cookie = '', csrf = '';
  const call = async (method, p, body, raw) => {
    const headers = { Accept: 'application/json', Cookie: cookie };
    if (csrf) headers['X-CSRF-Token'] = csrf;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(base + 'api/v1' + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const set = r.headers.get('set-cookie');
    if (set) cookie = set.split(';')[0];
    if (raw) return r;
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const me = await call('POST', '/auth/login', { username, password });
  csrf = me.csrf_token;
  return { call, me };
}

// Opens #/path and waits until the page has drawn its first data (<main
// data-loaded>, ctx.loaded()).
export async function open(page, hash) {
  await page.evaluate((hsh) => { location.hash = hsh; }, hash);
  await page.waitForFunction((hsh) => location.hash === hsh && document.querySelector('main[data-loaded] h1'), hash, { timeout: 60_000 });
}
