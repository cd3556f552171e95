// test_log_drops.mjs - a job whose output outruns the server, end to end, in
// real Chromium on a fresh `make run` style start (lib.mjs).
//
// A one-GPU job prints 300,000 lines as fast as Python can, one in ten a
// TRAINYARD_METRIC line (as a training loop with a progress bar does). The
// worker's output queue holds 65,536 lines, and no server takes 300,000
// lines in the half second the burst lasts, so the worker must drop. It
// proves:
//  1. every metric point is stored: the worker drops plain lines first;
//  2. the job's dropped_lines is exactly what is missing from its stored
//     log (lines printed less lines stored), so no line is lost uncounted;
//  3. the job page says how many lines were dropped, above the log, in
//     Chinese and in English, and no longer calls the log complete;
//  4. no console or page error, and run.sh stops cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { SHOTS, JOB_MS, startStack, newPage, signIn, api, untranslated, waitFor } from './lib.mjs';

const LINES = 300_000;
const EVERY = 10;
const PRINTER = [
  'import sys',
  'w = sys.stdout.write',
  `for i in range(${LINES}):`,
  `    if i % ${EVERY} == 0:`,
  '        w(\'TRAINYARD_METRIC {"step":%d,"loss":%.6f}\\n\' % (i, 1.0 / (i + 1)))',
  '    else:',
  "        w('epoch 1: %d/%d\\n' % (i, " + LINES + '))',
  'sys.stdout.flush()',
].join('\n');

// Rows of GET /jobs/{id}/<what>, over every page.
async function countRows(page, id, what, limit) {
  let after = 0, n = 0;
  for (;;) {
    const r = await api(page, 'GET', `/jobs/${id}/${what}?limit=${limit}&after=${after}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rows = r.body[what];
    if (!rows.length) return n;
    n += rows.length;
    after = rows[rows.length - 1].id;
  }
}

test('a job that prints faster than the server takes: metrics kept, drops counted and shown', { timeout: 600_000 }, async (t) => {
  const stack = await startStack(t, 'log-drops');
  const page = await newPage(stack);
  await signIn(page, stack.base, 'admin', stack.password);
  const teams = await api(page, 'GET', '/teams');
  assert.equal(teams.status, 200, JSON.stringify(teams.body));
  const r = await api(page, 'POST', '/jobs', {
    name: 'burst', team: teams.body.teams[0].name, command: ['/usr/bin/python3', '-c', PRINTER],
    resources: { gpus: 1 },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const id = r.body.id;
  const job = await waitFor(`job ${id} to end`, JOB_MS, async () => {
    const j = (await api(page, 'GET', `/jobs/${id}`)).body;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
  }, 500);
  assert.equal(job.state, 'SUCCEEDED', JSON.stringify(job));

  // 1 and 2: the exit report leaves the worker after every line queued
  // before it, so at SUCCEEDED all that was not dropped is stored.
  const metrics = await countRows(page, id, 'metrics', 20000);
  const logs = await countRows(page, id, 'logs', 5000);
  t.diagnostic(`printed ${LINES}, stored ${logs}, dropped_lines ${job.dropped_lines}, metric points ${metrics}`);
  assert.ok(job.dropped_lines > 0, 'a 300,000-line burst must overflow the worker\'s 65,536-line queue');
  assert.equal(metrics, LINES / EVERY, 'every metric point is stored');
  assert.equal(job.dropped_lines + logs, LINES, 'dropped_lines is exactly what the stored log lacks');

  // 3: the job page, both languages.
  const shown = job.dropped_lines.toLocaleString('en-US');
  for (const [lang, done, note] of [
    ['zh-CN', /以上是服务器收到的全部日志/, new RegExp(`节点丢弃了本作业的 ${shown} 行输出`)],
    ['en', /every line the server received/, new RegExp(`The nodes dropped ${shown} output lines`)],
  ]) {
    if (lang === 'en') {
      await page.click('#lang-toggle');
      await page.waitForFunction(() => document.documentElement.lang === 'en');
    }
    await page.goto(stack.base + `#/jobs/${id}`);
    await page.waitForSelector('#log-dropped:not([hidden])');
    assert.match(await page.textContent('#log-dropped'), note);
    await waitFor('the log status', 30_000, async () => done.test(await page.textContent('#log-status')), 200);
    assert.doesNotMatch(await page.textContent('#log-status'), /日志完整|the log is complete/);
    assert.deepEqual(await untranslated(page), [], `untranslated keys on the ${lang} job page`);
    await page.evaluate(() => document.querySelector('#log-dropped').scrollIntoView({ block: 'center' }));
    await page.screenshot({ path: path.join(SHOTS, `log-drops-job-${lang}.png`) });
  }
  assert.deepEqual(page.problems, [], 'the browser reported errors');
  await stack.stop();
});
