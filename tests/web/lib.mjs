// lib.mjs - what the dashboard's browser tests share: a `make run` style
// start (scripts/run.sh with a temporary var dir, free ports, its own
// PostgreSQL, the build under test), Chromium through playwright-core, a
// record of console and page errors, bounded waits, and a stop that leaves
// nothing behind. See tests/web/README.md.
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
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export const BANNER_MS = 300_000; // initdb, migrations, a 600,000-round PBKDF2 under ASan
export const JOB_MS = 300_000;    // two gloo ranks on CPU on a shared machine
export const STOP_MS = 90_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A bound to race against: it must not keep node alive once the race is won.
export const bound = (ms) => new Promise((r) => setTimeout(r, ms).unref());

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

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

export function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch (_) {
    return null;
  }
}

export function processesUsing(dir) {
  const found = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    let text = '';
    try {
      text = fs.readFileSync(`/proc/${d}/cmdline`, 'latin1') + '\0' + fs.readFileSync(`/proc/${d}/environ`, 'latin1');
    } catch (_) { continue; }
    if (text.includes(dir)) found.push({ pid: Number(d), start: startTime(d), cmd: fs.readFileSync(`/proc/${d}/cmdline`, 'latin1').replace(/\0/g, ' ').trim() });
  }
  return found;
}

export const alive = (p) => startTime(p.pid) !== null && startTime(p.pid) === p.start;

// Starts run.sh; returns {base, password, varDir, stop(), started, logTail}.
// t.after() stops it even when the test failed half way.
export async function startStack(t, tag) {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    assert.fail(`playwright-core is not installed: run npm ci --prefix tests/web (${e.message})`);
  }
  assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (scripts/deps.sh test installs it)`);
  for (const bin of ['server/trainyard-server', 'worker/trainyard-worker'])
    assert.ok(fs.existsSync(path.join(BUILD, bin)), `no ${bin} in ${BUILD}: build first (make test)`);
  fs.mkdirSync(SHOTS, { recursive: true });
  const varDir = fs.mkdtempSync(path.join(os.tmpdir(), `ty-web-${tag}-`));
  fs.chmodSync(varDir, 0o755);
  const port = await freePort();
  let pgPort = await freePort();
  while (pgPort === port) pgPort = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TRAINYARD_')));
  Object.assign(env, {
    TRAINYARD_VAR_DIR: varDir, TRAINYARD_LISTEN: `127.0.0.1:${port}`,
    TRAINYARD_PG_PORT: String(pgPort), TRAINYARD_RUN_BUILD_DIR: BUILD,
  });
  let out = '';
  const run = spawn('bash', [path.join(SRC, 'scripts/run.sh')], { cwd: SRC, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  run.stdout.on('data', (b) => { out += b; });
  run.stderr.on('data', (b) => { out += b; });
  const exited = new Promise((resolve) => run.on('exit', (code, signal) => resolve({ code, signal })));
  let runGone = false;
  exited.then(() => { runGone = true; });
  const st = { browser: null, started: [] };
  const logTail = (name) => {
    try { return fs.readFileSync(path.join(varDir, name), 'utf8').split('\n').slice(-40).join('\n'); } catch (_) { return ''; }
  };
  t.after(async () => {
    if (st.browser) await st.browser.close().catch(() => {});
    if (!runGone) {
      try { process.kill(run.pid, 'SIGTERM'); } catch (_) { /* gone */ }
      await Promise.race([exited, bound(STOP_MS)]);
    }
    if (!runGone) {
      try { process.kill(-run.pid, 'SIGKILL'); } catch (_) { /* gone */ }
      spawnSync(path.join(SRC, 'scripts/pg.sh'), ['stop', path.join(varDir, 'pg')], { stdio: 'ignore' });
    }
    for (const p of [...st.started, ...processesUsing(varDir)])
      if (alive(p)) { try { process.kill(p.pid, 'SIGKILL'); } catch (_) { /* gone */ } }
    for (const f of ['server.log', 'worker.log'])
      try { fs.copyFileSync(path.join(varDir, f), path.join(SHOTS, `${tag}-${f}`)); } catch (_) { /* none */ }
    fs.rmSync(varDir, { recursive: true, force: true });
  });
  const banner = await waitFor('the make run banner', BANNER_MS, () => {
    if (runGone) throw new Error('run.sh exited before it was ready:\n' + out + '\n' + logTail('server.log'));
    return /trainyard is running\.[\s\S]*Ctrl-C stops/.test(out) && out;
  }, 200);
  const password = banner.match(/Admin:\s+admin \/ (\S+)/)[1];
  const base = banner.match(/\(also (http:\/\/127\.0\.0\.1:\d+\/)\)/)[1];
  const postmaster = Number(fs.readFileSync(path.join(varDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  st.started = processesUsing(varDir);
  st.started.push({ pid: postmaster, start: startTime(postmaster), cmd: 'postgres (postmaster)' });
  st.browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });

  // Stops run.sh as Ctrl-C would and checks nothing is left and no sanitizer spoke.
  async function stop() {
    if (st.browser) { await st.browser.close(); st.browser = null; }
    process.kill(run.pid, 'SIGTERM');
    const how = await Promise.race([exited, bound(STOP_MS).then(() => null)]);
    assert.ok(how, 'run.sh did not stop within ' + STOP_MS + ' ms:\n' + out);
    assert.match(out, /trainyard stopped\./);
    const left = await waitFor('every process run.sh started to end', 30_000, () => {
      const l = st.started.filter(alive);
      return l.length === 0 ? [] : null;
    }).catch(() => st.started.filter(alive));
    assert.deepEqual(left.map((p) => p.cmd), [], 'processes left behind');
    for (const f of ['server.log', 'worker.log']) {
      const text = fs.readFileSync(path.join(varDir, f), 'utf8');
      assert.doesNotMatch(text, /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/, `${f} has a sanitizer report:\n${logTail(f)}`);
    }
  }
  return { base, password, varDir, stop, st, logTail, out: () => out };
}

// A page that records console and page errors in page.problems. Before
// signing in the app asks GET /me and gets 401: that is how it learns nobody
// is signed in (Chromium logs every 4xx as an error); `allow` adds URL
// suffixes whose 4xx are expected.
export async function newPage(stack, opts = {}) {
  const ctx = await stack.st.browser.newContext({ viewport: opts.viewport || { width: 1280, height: 800 }, locale: 'zh-CN' });
  const page = await ctx.newPage();
  page.problems = [];
  page.signedIn = false;
  // URL parts whose 4xx are expected now; a test may push and pop (a
  // refusal it provokes on purpose).
  const allow = (page.allow = [...(opts.allow || [])]);
  page.on('pageerror', (e) => page.problems.push('page error: ' + (e.stack || e.message)));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const where = (m.location() && m.location().url) || '';
    if (where.endsWith('/api/v1/me') && /40[13]/.test(m.text()) && !page.signedIn) return;
    if (allow.some((a) => where.includes(a)) && /status of 4\d\d/.test(m.text())) return;
    page.problems.push(`console error: ${m.text()} (${where})`);
  });
  return page;
}

export async function signIn(page, base, user, password) {
  await page.goto(base);
  await page.waitForSelector('#login-user');
  await page.fill('#login-user', user);
  await page.fill('#login-pass', password);
  page.signedIn = true;
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#nav a[href="#/overview"]');
}

export async function api(page, method, url, body) {
  return page.evaluate(async ([m, u, b]) => {
    const r = await fetch('/api/v1' + u, {
      method: m, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': sessionStorage.getItem('ty.csrf') || '' },
      body: b === undefined ? undefined : JSON.stringify(b),
    });
    return { status: r.status, body: await r.json().catch(() => null) };
  }, [method, url, body]);
}

// The page's state badge in the header (data-state follows the events).
export const headState = (page) => page.evaluate(() => {
  const s = document.querySelector('#job-state');
  return s ? s.dataset.state : '';
});

// Every text node, attribute label and placeholder on the page that looks
// like an untranslated key ('area.name'), and the keys the app recorded as
// missing (window.__ty.missing).
export async function untranslated(page) {
  return page.evaluate(() => {
    const bad = [...((window.__ty && window.__ty.missing) || [])];
    const keyLike = /^(nav|common|state|role|prio|error|field|reason|overview|wizard|job|jobs|login|queue|nodes|admin|account|audit|submit|models|deployments|deployment|deploy|serve|chat)\.[a-z0-9_.-]+$/;
    const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) if (keyLike.test(n.textContent.trim())) bad.push('text: ' + n.textContent.trim());
    for (const el of document.querySelectorAll('[aria-label],[placeholder],[title]'))
      for (const a of ['aria-label', 'placeholder', 'title'])
        if (el.hasAttribute(a) && keyLike.test(el.getAttribute(a).trim())) bad.push(`${a}: ${el.getAttribute(a)}`);
    return bad;
  });
}

// No horizontal scroll of the page itself (wide tables scroll in their box).
export const pageOverflow = (page) => page.evaluate(() => {
  const d = document.documentElement;
  const wide = [...document.querySelectorAll('main *')].filter((e) => {
    const r = e.getBoundingClientRect();
    if (r.right <= d.clientWidth + 1) return false;
    for (let p = e.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return p.tagName === 'HTML' || p.tagName === 'BODY';
    }
    return true;
  }).slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className} right=${Math.round(e.getBoundingClientRect().right)}`);
  return { scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, wide };
});

// Controls without an accessible name: inputs, selects and text areas
// without a <label for>, a wrapping label, aria-label or aria-labelledby;
// buttons and links without text or aria-label.
export const unlabeled = (page) => page.evaluate(() => {
  const bad = [];
  const visible = (e) => e.getClientRects().length > 0;
  for (const e of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    if (!visible(e)) continue;
    const ok = e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || e.closest('label') ||
      (e.id && document.querySelector(`label[for="${CSS.escape(e.id)}"]`));
    if (!ok) bad.push(`${e.tagName.toLowerCase()}#${e.id || '?'}`);
  }
  for (const e of document.querySelectorAll('button, a[href]')) {
    if (!visible(e)) continue;
    if (!(e.textContent.trim() || e.getAttribute('aria-label'))) bad.push(`${e.tagName.toLowerCase()}.${e.className}`);
  }
  return bad;
});
