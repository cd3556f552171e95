// test_first_run.mjs - the first job of a new user, in real Chromium.
//
// A fresh `make run` style start (scripts/run.sh with a temporary var dir, a
// free port, its own PostgreSQL on a free port, and the sanitizer build of
// make test), then as the printed admin on the Chinese (default) page: sign
// in, land on the overview, then three clicks: "start training", the first
// template card, "start"; and watch the job
// page until the job SUCCEEDED and its loss chart has every loss point the
// API holds. Any console error or page error fails the test, except the one
// 401 of GET /api/v1/me with which the page learns that nobody is signed in.
// Screenshots of the three pages go to $TRAINYARD_BUILD_DIR/web-screenshots/.
// At the end run.sh is stopped with SIGTERM and everything it started (server,
// worker, PostgreSQL) must be gone, and no sanitizer may have reported.
//
// Run through ctest (web.test_first_run) or: node --test tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The paths, bounds and process helpers the browser tests share (lib.mjs).
import {
  SRC, BUILD, CHROMIUM, SHOTS, CHROMIUM_ARGS, BANNER_MS, JOB_MS, STOP_MS, bound, waitFor,
  freePort, startTime, processesUsing, alive,
} from './lib.mjs';

test('a new user runs the first template to SUCCEEDED in Chromium after a fresh make run', { timeout: 840_000 }, async (t) => {
  // What the test needs is part of make test: missing, it fails, never skips.
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
  const t0 = Date.now();
  const mark = (what) => t.diagnostic(`${what} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const varDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ty-web-first-run-'));
  fs.chmodSync(varDir, 0o755); // the managed PostgreSQL runs as the postgres user
  const port = await freePort();
  let pgPort = await freePort();
  while (pgPort === port) pgPort = await freePort();
  // Only what run.sh documents: nothing of the caller's trainyard settings.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TRAINYARD_')));
  Object.assign(env, {
    TRAINYARD_VAR_DIR: varDir, TRAINYARD_LISTEN: `127.0.0.1:${port}`,
    TRAINYARD_PG_PORT: String(pgPort), TRAINYARD_RUN_BUILD_DIR: BUILD,
  });
  let out = '';
  // Its own process group, so that a failed test can still clean up all of it.
  const run = spawn('bash', [path.join(SRC, 'scripts/run.sh')], { cwd: SRC, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  run.stdout.on('data', (b) => { out += b; });
  run.stderr.on('data', (b) => { out += b; });
  const exited = new Promise((resolve) => run.on('exit', (code, signal) => resolve({ code, signal })));
  let runGone = false;
  exited.then(() => { runGone = true; });

  let browser = null;
  let started = [];
  const logTail = (name) => {
    try { return fs.readFileSync(path.join(varDir, name), 'utf8').split('\n').slice(-40).join('\n'); } catch (_) { return ''; }
  };
  t.after(async () => {
    if (browser) await browser.close().catch(() => {});
    // A test that failed half way: stop run.sh as a user would, then by force.
    if (!runGone) {
      try { process.kill(run.pid, 'SIGTERM'); } catch (_) { /* gone */ }
      await Promise.race([exited, bound(STOP_MS)]);
    }
    if (!runGone) {
      try { process.kill(-run.pid, 'SIGKILL'); } catch (_) { /* gone */ }
      spawnSync(path.join(SRC, 'scripts/pg.sh'), ['stop', path.join(varDir, 'pg')], { stdio: 'ignore' });
    }
    // Ranks run in process groups of their own; their env names varDir.
    for (const p of [...started, ...processesUsing(varDir)])
      if (alive(p)) { try { process.kill(p.pid, 'SIGKILL'); } catch (_) { /* gone */ } }
    for (const f of ['server.log', 'worker.log'])
      try { fs.copyFileSync(path.join(varDir, f), path.join(SHOTS, 'first-run-' + f)); } catch (_) { /* none */ }
    fs.rmSync(varDir, { recursive: true, force: true });
  });

  // 1. The banner: the dashboard URL and the admin's login.
  const banner = await waitFor('the make run banner', BANNER_MS, () => {
    if (runGone) throw new Error('run.sh exited before it was ready:\n' + out + '\n' + logTail('server.log'));
    return /trainyard is running\.[\s\S]*Ctrl-C stops/.test(out) && out;
  }, 200);
  mark('make run banner');
  const password = banner.match(/Admin:\s+admin \/ (\S+)/)[1];
  const base = banner.match(/\(also (http:\/\/127\.0\.0\.1:\d+\/)\)/)[1];
  assert.equal(base, `http://127.0.0.1:${port}/`);
  const postmaster = Number(fs.readFileSync(path.join(varDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  started = processesUsing(varDir);
  started.push({ pid: postmaster, start: startTime(postmaster), cmd: 'postgres (postmaster)' });

  // 2. Chromium, on the default (Chinese) page.
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  let signedIn = false;
  page.on('pageerror', (e) => problems.push('page error: ' + (e.stack || e.message)));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const where = (m.location() && m.location().url) || '';
    // Before signing in the page asks GET /me and gets 401: that is how it
    // learns nobody is signed in, and Chromium logs every 401 as an error.
    if (!signedIn && where.endsWith('/api/v1/me') && m.text().includes('401')) return;
    problems.push(`console error: ${m.text()} (${where})`);
  });

  await page.goto(base);
  await page.waitForSelector('#login-user');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.screenshot({ path: path.join(SHOTS, 'first-run-1-login.png') });
  await page.fill('#login-user', 'admin');
  await page.fill('#login-pass', password);
  signedIn = true;
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('#start-training');
  assert.equal(new URL(page.url()).hash, '#/overview', 'signing in lands on the overview');

  // 3. Three clicks from the overview: "start training", the first template
  // (in Chinese, with its defaults and the admin's team), "start".
  const templates = await page.evaluate(async () => (await (await fetch('/api/v1/templates')).json()).templates);
  assert.ok(templates.length > 0, 'the server offers no templates');
  await page.click('#start-training');                       // click 1
  const first = page.locator('button.tpl-card[data-template]').first();
  await first.waitFor();
  assert.equal(await first.getAttribute('data-template'), templates[0].id);
  assert.match(await first.innerText(), new RegExp(templates[0].name['zh-CN'].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  await page.screenshot({ path: path.join(SHOTS, 'first-run-2-submit.png'), fullPage: true });
  await first.click();                                        // click 2
  await page.waitForSelector('#wizard-start');
  assert.equal(await page.inputValue('#w-team'), 'default', "the team select starts at the admin's team");
  assert.ok(path.isAbsolute(templates[0].job.command[1]), 'the script path is absolute');
  await page.click('#wizard-start');                          // click 3
  await page.waitForURL(/#\/jobs\/\d+$/);
  const jobId = page.url().match(/#\/jobs\/(\d+)$/)[1];
  mark(`job ${jobId} submitted`);

  // 4. The job page: SUCCEEDED, then every loss point of the API on the chart.
  const state = await waitFor('the job to end', JOB_MS, () => page.evaluate(() => {
    const s = document.querySelector('#job-state') && document.querySelector('#job-state').dataset.state;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(s) && s;
  }), 500);
  if (state !== 'SUCCEEDED') {
    const job = await page.evaluate(async (id) => (await fetch('/api/v1/jobs/' + id)).json(), jobId);
    const logs = await page.evaluate(async (id) => (await fetch(`/api/v1/jobs/${id}/logs?limit=40`)).json(), jobId);
    await page.screenshot({ path: path.join(SHOTS, 'first-run-3-job.png'), fullPage: true });
    assert.fail(`job ${jobId} ended ${state}: ${job.reason}\n${JSON.stringify(logs.logs, null, 1)}`);
  }
  mark(`job ${jobId} SUCCEEDED`);
  const job = await page.evaluate(async (id) => (await fetch('/api/v1/jobs/' + id)).json(), jobId);
  assert.equal(job.restarts, 0, 'the first template ran at the first attempt');
  const metrics = await page.evaluate(async (id) => (await fetch(`/api/v1/jobs/${id}/metrics?limit=20000`)).json(), jobId);
  const steps = new Set(metrics.metrics.filter((m) => typeof m.values.loss === 'number').map((m) => m.step));
  assert.ok(steps.size > 0, 'the job reported no loss');
  const points = await waitFor(`${steps.size} points on the loss chart`, 30_000, () => page.evaluate(() => {
    const c = window.__ty && window.__ty.charts && window.__ty.charts.loss;
    return c && c.drawn > 0 ? c.points : 0;
  }).then((n) => (n === steps.size ? n : 0)), 500);
  assert.equal(points, steps.size);
  await page.screenshot({ path: path.join(SHOTS, 'first-run-3-job.png'), fullPage: true });
  assert.deepEqual(problems, [], 'the browser reported errors');
  await browser.close();
  browser = null;

  // 5. Stop run.sh as Ctrl-C would; everything it started must be gone.
  assert.ok(started.some((p) => p.cmd.includes('trainyard-server')), 'no server process found');
  assert.ok(started.some((p) => p.cmd.includes('trainyard-worker')), 'no worker process found');
  assert.ok(alive(started[started.length - 1]), 'no PostgreSQL found');
  process.kill(run.pid, 'SIGTERM');
  const how = await Promise.race([exited, bound(STOP_MS).then(() => null)]);
  assert.ok(how, 'run.sh did not stop within ' + STOP_MS + ' ms:\n' + out);
  assert.match(out, /trainyard stopped\./);
  mark('run.sh stopped');
  const left = await waitFor('every process run.sh started to end', 30_000, () => {
    const l = started.filter(alive);
    return l.length === 0 ? [] : null;
  }).catch(() => started.filter(alive));
  assert.deepEqual(left.map((p) => p.cmd), [], 'processes left behind');
  for (const f of ['server.log', 'worker.log']) {
    const text = fs.readFileSync(path.join(varDir, f), 'utf8');
    assert.doesNotMatch(text, /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/, `${f} has a sanitizer report:\n${logTail(f)}`);
  }
});
