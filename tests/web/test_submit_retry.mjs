// test_submit_retry.mjs - pressing "start" again after the answer was lost
// makes no second job, in real Chromium on a fresh `make run` style start.
//
// The first POST /api/v1/jobs of the wizard reaches the real server (which
// creates the job), but the browser is told the network failed
// (Playwright's route: fetch the real answer, then abort). It proves:
//  1. the wizard shows the network error and stays on the review step;
//  2. "start" again sends the same Idempotency-Key and lands on the job the
//     lost request made: the server holds one job of that spec, not two;
//  3. once a submit was answered, the same spec submitted again from the
//     wizard is a new job (the key is retired);
//  4. no page error, and run.sh stops cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, newPage, signIn, api } from './lib.mjs';

async function openWizardOnFirstTemplate(page) {
  await page.goto(page.url().replace(/#.*$/, '') + '#/overview');
  await page.click('#start-training');
  const first = page.locator('button.tpl-card[data-template]').first();
  await first.waitFor();
  await first.click();
  await page.waitForSelector('#wizard-start');
}

async function jobsNamed(page, name) {
  const r = await api(page, 'GET', '/jobs?limit=500');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.jobs.filter((j) => j.name === name).map((j) => j.id);
}

test('start again after a lost answer lands on the job the first press made', { timeout: 600_000 }, async (t) => {
  const stack = await startStack(t, 'submit-retry');
  const page = await newPage(stack);
  await signIn(page, stack.base, 'admin', stack.password);
  await openWizardOnFirstTemplate(page);
  const name = await page.inputValue('#w-name');

  let lost = null;
  const keys = [];
  await page.route('**/api/v1/jobs', async (route) => {
    const req = route.request();
    if (req.method() !== 'POST') return route.continue();
    keys.push(req.headers()['idempotency-key']);
    if (lost !== null) return route.continue();
    const answer = await route.fetch(); // the server makes the job ...
    lost = await answer.json();
    await route.abort('connectionreset'); // ... and the browser never hears it
  });

  // 1. The lost answer: an error, still on the wizard.
  await page.click('#wizard-start');
  await page.waitForSelector('[role=alert]');
  assert.ok(lost && lost.id, 'the server made a job for the first press');
  assert.match(page.url(), /#\/(wizard|train)/, 'still on the wizard');
  assert.ok(!/#\/jobs\/\d+$/.test(page.url()));

  // 2. Start again: the same key, the same job.
  await page.click('#wizard-start');
  await page.waitForURL(/#\/jobs\/\d+$/);
  const landed = page.url().match(/#\/jobs\/(\d+)$/)[1];
  assert.equal(landed, lost.id, 'the second press lands on the job the first made');
  assert.equal(keys.length, 2);
  assert.match(keys[0], /^[0-9a-f]{32}$/);
  assert.equal(keys[1], keys[0], 'the retry sent the same Idempotency-Key');
  assert.deepEqual(await jobsNamed(page, name), [lost.id], 'one job, not two');

  // 3. The same spec again, after an answer: a new job, a new key.
  await openWizardOnFirstTemplate(page);
  assert.equal(await page.inputValue('#w-name'), name);
  await page.click('#wizard-start');
  await page.waitForURL((u) => /#\/jobs\/\d+$/.test(u.toString()) && !u.toString().endsWith('/' + lost.id));
  const second = page.url().match(/#\/jobs\/(\d+)$/)[1];
  assert.notEqual(keys[2], keys[0], 'a settled key is not sent again');
  assert.deepEqual((await jobsNamed(page, name)).sort(), [lost.id, second].sort());

  // The template jobs are not what this test is about: stop them.
  for (const id of [lost.id, second]) await api(page, 'POST', `/jobs/${id}/cancel`, {});
  // The one network error is the one this test made.
  const made = /ERR_CONNECTION_RESET \(http:\/\/127\.0\.0\.1:\d+\/api\/v1\/jobs\)$/;
  assert.equal(page.problems.filter((p) => made.test(p)).length, 1, page.problems.join('\n'));
  assert.deepEqual(page.problems.filter((p) => !made.test(p)), [], 'the browser reported errors');
  await stack.stop();
});
