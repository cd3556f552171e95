// admin_stack.mjs - what the admin pages' browser tests share (not a test
// itself: ctest runs test_*.mjs only). startStack() is a fresh `make run`
// style start (scripts/run.sh with a temporary var dir, free ports, its own
// PostgreSQL and worker, the build under test) stopped by the test's
// t.after; api() is a signed-in HTTP client for setting up data as a user
// would; openBrowser() gives pages that record console and page errors.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SRC = path.resolve(process.env.TRAINYARD_SOURCE_DIR || path.join(HERE, '../..'));
export const BUILD = path.resolve(process.env.TRAINYARD_BUILD_DIR || path.join(SRC, 'build'));
export const CHROMIUM = process.env.TRAINYARD_CHROMIUM || '/usr/bin/chromium';
export const SHOTS = path.join(BUILD, 'web-screenshots');
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const BANNER_MS = 300_000;
const STOP_MS = 90_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const bound = (ms) => new Promise((r) => setTimeout(r, ms).unref());

export async function waitFor(what, ms, fn, everyMs = 250) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch (_) { return null; }
}

function processesUsing(dir) {
  const found = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    let text = '';
    try { text = fs.readFileSync(`/proc/${d}/cmdline`, 'latin1') + '\0' + fs.readFileSync(`/proc/${d}/environ`, 'latin1'); }
    catch (_) { continue; }
    if (text.includes(dir)) found.push({ pid: Number(d), start: startTime(d) });
  }
  return found;
}

// What every test needs is part of make test: missing, it fails, never skips.
export async function requirements() {
  let chromium;
  try { ({ chromium } = await import('playwright-core')); }
  catch (e) { assert.fail(`playwright-core is not installed: run npm ci --prefix tests/web (${e.message})`); }
  assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (scripts/deps.sh test installs it)`);
  for (const bin of ['server/trainyard-server', 'worker/trainyard-worker', 'cli/trainyard'])
    assert.ok(fs.existsSync(path.join(BUILD, bin)), `no ${bin} in ${BUILD}: build first (make test)`);
  fs.mkdirSync(SHOTS, { recursive: true });
  return chromium;
}

// A fresh start; returns {base, password, varDir, dbUrl, logs()}. Stopped
// (SIGTERM, then by force) after the test, with no process left behind.
export async function startStack(t, name) {
  const varDir = fs.mkdtempSync(path.join(os.tmpdir(), `ty-web-${name}-`));
  fs.chmodSync(varDir, 0o755);
  const port = await freePort();
  let pgPort = await freePort();
  while (pgPort === port) pgPort = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TRAINYARD_')));
  Object.assign(env, { TRAINYARD_VAR_DIR: varDir, TRAINYARD_LISTEN: `127.0.0.1:${port}`, TRAINYARD_PG_PORT: String(pgPort), TRAINYARD_RUN_BUILD_DIR: BUILD });
  let out = '';
  const run = spawn('bash', [path.join(SRC, 'scripts/run.sh')], { cwd: SRC, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  run.stdout.on('data', (b) => { out += b; });
  run.stderr.on('data', (b) => { out += b; });
  const exited = new Promise((resolve) => run.on('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  exited.then(() => { gone = true; });
  const logTail = (f) => { try { return fs.readFileSync(path.join(varDir, f), 'utf8').split('\n').slice(-40).join('\n'); } catch (_) { return ''; } };
  t.after(async () => {
    const left = processesUsing(varDir);
    if (!gone) { try { process.kill(run.pid, 'SIGTERM'); } catch (_) { /* gone */ } await Promise.race([exited, bound(STOP_MS)]); }
    if (!gone) {
      try { process.kill(-run.pid, 'SIGKILL'); } catch (_) { /* gone */ }
      spawnSync(path.join(SRC, 'scripts/pg.sh'), ['stop', path.join(varDir, 'pg')], { stdio: 'ignore' });
    }
    for (const p of [...left, ...processesUsing(varDir)])
      if (startTime(p.pid) === p.start) { try { process.kill(p.pid, 'SIGKILL'); } catch (_) { /* gone */ } }
    for (const f of ['server.log', 'worker.log'])
      try { fs.copyFileSync(path.join(varDir, f), path.join(SHOTS, `${name}-${f}`)); } catch (_) { /* none */ }
    const server = logTail('server.log');
    fs.rmSync(varDir, { recursive: true, force: true });
    assert.doesNotMatch(server, /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/, 'the server log has a sanitizer report');
  });
  const banner = await waitFor('the make run banner', BANNER_MS, () => {
    if (gone) throw new Error('run.sh exited before it was ready:\n' + out + '\n' + logTail('server.log'));
    return /trainyard is running\.[\s\S]*Ctrl-C stops/.test(out) && out;
  }, 200);
  const password = banner.match(/Admin:\s+admin \/ (\S+)/)[1];
  const dbpw = fs.readFileSync(path.join(varDir, 'db-password'), 'utf8').trim();
  return {
    base: `http://127.0.0.1:${port}/`, password, varDir,
    dbUrl: `postgresql://trainyard:${dbpw}@127.0.0.1:${pgPort}/trainyard`,
    storage: path.join(varDir, 'storage'),
  };
}

// A signed-in API client: await api(base, user, password) then
// c.call('POST', '/users', {...}) -> JSON (throws with the error on non-2xx).
export async function api(base, username, password) {
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
    const j = text ? JSON.parse(text) : null;
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
    return j;
  };
  const me = await call('POST', '/auth/login', { username, password });
  csrf = me.csrf_token;
  return { call, me };
}

export async function openBrowser(t, chromium) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  t.after(() => browser.close().catch(() => {}));
  return browser;
}

// A page (its own context: cookies, storage) that records problems: console
// errors (but the 401 of GET /me that tells a fresh page nobody is signed in,
// and the 403/404 answers a test provokes on purpose when allowed(url, status)
// says so) and page errors.
export async function newPage(browser, opts = {}) {
  const ctx = await browser.newContext({ viewport: opts.viewport || { width: 1280, height: 800 }, acceptDownloads: true });
  if (opts.lang) await ctx.addInitScript((l) => { if (!localStorage.getItem('ty.lang')) localStorage.setItem('ty.lang', l); }, opts.lang);
  const page = await ctx.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push('page error: ' + (e.stack || e.message)));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const where = (m.location() && m.location().url) || '';
    if (where.endsWith('/api/v1/me') && m.text().includes('401')) return;
    // The queue page asks GET /queue once; a server without the queue
    // forecast answers 404, and the page falls back to the job list.
    if (where.endsWith('/api/v1/queue') && m.text().includes('404')) return;
    if (opts.allowed && opts.allowed(where, m.text())) return;
    page.problems.push(`console error: ${m.text()} (${where})`);
  });
  return page;
}

export async function signIn(page, base, user, password) {
  await page.goto(base + '#/login');
  await page.waitForSelector('#login-user');
  await page.fill('#login-user', user);
  await page.fill('#login-pass', password);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#nav a');
}

// Opens #/path and waits for the page's h1 and for its first load to settle
// (no request in flight for a moment).
export async function open(page, hash) {
  await page.evaluate((hsh) => { location.hash = hsh; }, hash);
  await page.waitForFunction((hsh) => location.hash === hsh && document.querySelector('main h1'), hash);
  await page.waitForLoadState('networkidle').catch(() => {});
}

// Missing catalog keys recorded by js/i18n.js since the page was loaded.
export const missingKeys = (page) => page.evaluate(() => (window.__ty && window.__ty.missing) || []);

// Elements wider than the viewport that are not inside a box that scrolls
// by itself, and the page's own horizontal overflow.
export const overflow = (page) => page.evaluate(() => {
  const vw = document.documentElement.clientWidth;
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) continue;
    let p = el.parentElement, inScroller = false;
    while (p && p !== document.body) {
      const cs = getComputedStyle(p);
      if (/(auto|scroll)/.test(cs.overflowX) && p.getBoundingClientRect().right <= vw + 1) { inScroller = true; break; }
      p = p.parentElement;
    }
    if (!inScroller) bad.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${[...el.classList].join('.')} right=${Math.round(r.right)}`);
  }
  return { scrollWidth: document.documentElement.scrollWidth, width: vw, bad: bad.slice(0, 10) };
});
