// audit_page.mjs - the audit page's page time with 1,000,000 events
// (bench/web/README.md). A fresh `make run` style start
// (tests/web/admin_stack.mjs) on the build in TRAINYARD_BUILD_DIR; EVENTS
// audit events are inserted with one SQL statement (generate_series, not
// through the API: the chain's hashes are not real, so the page's chain
// check says broken, which does not matter here); then in Chromium, as the
// admin, each case opens a page of 100 events and the page's own timer
// (data-ms on the table: from the request to the rows drawn) is read, REPS
// times per case, median and max.
// Prints a markdown table.
//
// Usage: node bench/web/audit_page.mjs   (env EVENTS=1000000 REPS=5)
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { startStack, newPage, signIn, open, rest, waitFor } from '../../tests/web/admin_stack.mjs';

const EVENTS = Number(process.env.EVENTS || 1_000_000);
const REPS = Number(process.env.REPS || 5);
const afters = [];
const t = { after: (fn) => afters.push(fn) };

function psql(url, sql) {
  const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql: ${r.stderr}`);
  return r.stdout.trim();
}

// EVENTS events after the server's own, like a busy site's: 200 users,
// 40 actions, jobs and nodes as targets, 1 in 100 refused, 1 in 500 a
// policy violation, over the last 180 days.
const INSERT = (n) => `
BEGIN;
-- The head's lock first, as the server's appends take it: none runs
-- between reading the head and moving it.
SELECT seq FROM audit_head FOR UPDATE;
WITH base AS (SELECT seq FROM audit_head), g AS (
  SELECT b.seq + i AS id, i, now() - interval '180 days' + (i * interval '180 days' / ${n}) AS ts
  FROM base b, generate_series(1, ${n}) i)
INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, outcome, details, prev_hash, hash)
SELECT id, ts, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  'user:u' || (i % 200), '10.0.' || (i % 250) || '.' || (i % 7),
  CASE WHEN i % 500 = 0 THEN 'policy.violation' ELSE (ARRAY['job.submit','job.state','job.state','job.state','job.cancel','auth.login','node.state','token.create','export.request','dataset.create'])[1 + i % 10] END,
  CASE WHEN i % 3 = 0 THEN 'node:gpu-' || (i % 64) ELSE 'job:' || (i / 4 + 1) END,
  CASE WHEN i % 100 = 0 OR i % 500 = 0 THEN 'denied' ELSE 'success' END,
  '{"n":' || i || '}', repeat('0', 64), encode(sha256(int8send(id)), 'hex')
FROM g;
UPDATE audit_head SET seq = (SELECT max(id) FROM audit_events), hash = (SELECT hash FROM audit_events ORDER BY id DESC LIMIT 1);
COMMIT;
ANALYZE audit_events;`;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function main() {
  const s = await startStack(t, 'bench-audit');
  // The worker first: its join waits on the audit head, which the insert holds.
  const admin = await rest(s.base, 'admin', s.password);
  await waitFor('the worker to be ready', 120_000, async () => (await admin.call('GET', '/nodes')).nodes.some((n) => n.state === 'ready'), 500);
  const t0 = Date.now();
  psql(s.dbUrl, INSERT(EVENTS));
  const insertS = (Date.now() - t0) / 1000;
  const total = Number(psql(s.dbUrl, 'SELECT count(*) FROM audit_events'));
  const maxId = Number(psql(s.dbUrl, 'SELECT max(id) FROM audit_events'));
  const page = await newPage(s, {});
  await signIn(page, s.base, 'admin', s.password);
  await open(page, '#/audit');
  await page.waitForSelector('.audit-table tr[data-key]');

  // Each case: what to do on the page, then wait for a fresh page of rows.
  const wrap = '.audit-table';
  const loads = () => page.evaluate((w) => Number(document.querySelector(w).closest('.table-wrap').dataset.loads || 0), wrap);
  const pageMs = async (act) => {
    const before = await loads();
    await act();
    await page.waitForFunction(([w, n]) => Number(document.querySelector(w).closest('.table-wrap').dataset.loads || 0) > n, [wrap, before], { timeout: 300_000 });
    return Number(await page.evaluate((w) => document.querySelector(w).closest('.table-wrap').dataset.ms, wrap));
  };
  // A filter: cleared (which loads the newest page; waited for), filled in,
  // then the measured part: submitting it.
  const filter = (f) => [async () => {
    await pageMs(() => page.click('form.filters button[type=reset]'));
    if (f.actor) await page.fill('#a-actor', f.actor);
    if (f.action) await page.selectOption('#a-action', f.action);
    if (f.target) await page.fill('#a-target', f.target);
    if (f.since) await page.fill('#a-since', f.since);
    if (f.until) await page.fill('#a-until', f.until);
  }, () => page.click('form.filters button[type=submit]')];
  const jump = (id) => [() => page.fill('#audit-jump', String(id)), () => page.click('form.jump button[type=submit]')];
  const d = (days) => new Date(Date.now() - days * 86400e3).toISOString().slice(0, 19);
  const cases = [
    ['newest page, no filter', filter({})],
    ['next page (older)', [async () => { const [p, a] = filter({}); await p(); await pageMs(a); }, () => page.click('#audit-older')]],
    ['page at event #500,000', jump(Math.round(maxId / 2))],
    ['page at event #100 (the oldest end)', jump(100)],
    ['actor = user:u7', filter({ actor: 'user:u7' })],
    ['action = policy.violation (1 in 500)', filter({ action: 'policy.violation' })],
    ['action group job.*', filter({ action: 'job.' })],
    ['target = node:gpu-9', filter({ target: 'node:gpu-9' })],
    ['target = job:1000 (a rare target: 2 events)', filter({ target: 'job:1000' })],
    ['time range: one day, 90 days ago', filter({ since: d(90), until: d(89) })],
  ];
  const rows = [];
  for (const [name, [prep, act]] of cases) {
    const ms = [];
    for (let i = 0; i < REPS; i++) {
      await prep();
      ms.push(await pageMs(act));
    }
    const n = await page.$$eval('.audit-table tbody tr[data-key]', (trs) => trs.length);
    rows.push([name, n, median(ms), Math.max(...ms)]);
  }
  const cpus = os.cpus();
  console.log(`### Audit page time at ${total.toLocaleString('en')} events\n`);
  console.log(`Machine: ${os.type()} ${os.release()}, ${cpus.length} x ${cpus[0].model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB; date ${new Date().toISOString().slice(0, 10)}; build ${process.env.TRAINYARD_BUILD_DIR || 'build'}; ${EVENTS.toLocaleString('en')} events inserted by SQL in ${insertS.toFixed(1)} s; ${REPS} runs per case; page time = the page's own timer, from the request to the 100 rows drawn, in headless Chromium on loopback.\n`);
  console.log('| case | rows | median ms | max ms |');
  console.log('|---|---:|---:|---:|');
  for (const [name, n, med, max] of rows) console.log(`| ${name} | ${n} | ${med.toFixed(1)} | ${max.toFixed(1)} |`);
}

main().then(async () => { for (const fn of afters.reverse()) await fn(); }, async (e) => {
  console.error(e);
  for (const fn of afters.reverse()) { try { await fn(); } catch (_) { /* keep stopping */ } }
  process.exitCode = 1;
});
