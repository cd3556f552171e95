// test_serving_pages.mjs - from a finished job to a service in the
// dashboard, in real Chromium on a fresh `make run` style start
// (admin_stack.mjs) with the real registry, deployments, gateway, worker and
// model server (examples/serve_echo.py, what ddp-mlp-demo's template serves):
//  1. a tiny ddp-mlp-demo job SUCCEEDS; its page offers "部署"; two clicks
//     (部署, 确认部署) register its output as version 1 and create the
//     deployment, and land on the deployment's page (at most three clicks);
//  2. a replica becomes ready on that page (job link, node);
//  3. the chat box, in Chinese, gets the echo model's answer through the
//     gateway, streamed (more than one piece drawn); its key is
//     "dashboard-admin", its secret in sessionStorage and nowhere in
//     localStorage; the key table shows it with its requests;
//  4. a second version (the same job's output registered again, through the
//     API) becomes the canary: the slider sets its weight (PATCH), the split
//     shows it, "回滚" after a confirm sets it back to 0;
//  5. the traffic charts are ECharts and the stats route counts the chat;
//  6. the models list, the model page (versions, lineage with the job link,
//     manifest digest) and the deployments list show it;
//  7. Deploy again with the deployment's name taken: the refusal is in
//     Chinese on the name field; the version that confirm registered is the
//     one the next confirm (another name) deploys, not registered twice;
//  8. every page above in zh-CN and en at 1280 and 390 px: no untranslated
//     key, no control without a name, no sideways scroll, screenshots; no
//     console or page error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { JOB_MS, api, unlabeled } from './lib.mjs';
import { startStack, newPage, open, signIn, waitFor, SHOTS, untranslated, pageOverflow } from './admin_stack.mjs';

const MODEL = 'ddp-mlp-demo';
const QUESTION = '你好，训练场！请原样回答。';

async function layout(page, what) {
  const over = await pageOverflow(page);
  assert.ok(over.scrollWidth <= over.clientWidth, `${what}: no sideways scroll: ${JSON.stringify(over)}`);
  assert.deepEqual(await untranslated(page), [], `${what}: untranslated keys`);
  assert.deepEqual(await unlabeled(page), [], `${what}: controls without a name`);
}

test('serving in the dashboard: deploy from a job, replicas, chat, canary and roll back, models and deployments', { timeout: 1_500_000 }, async (t) => {
  const stack = await startStack(t, 'serving');
  const page = await newPage(stack, { lang: 'zh-CN' });
  await signIn(page, stack.base, 'admin', stack.password);
  const team = (await api(page, 'GET', '/teams')).body.teams[0].name;

  const sub = await api(page, 'POST', '/jobs', {
    name: 'serve-source', team, template: MODEL, params: { steps: 6, checkpoint_every: 3 }, resources: { gpus: 1 },
  });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  const jobId = sub.body.id;
  const job = await waitFor(`job ${jobId} to end`, JOB_MS, async () => {
    const j = (await api(page, 'GET', `/jobs/${jobId}`)).body;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
  }, 500);
  assert.equal(job.state, 'SUCCEEDED', JSON.stringify(job));
  const depName = `${MODEL}-${jobId}`;

  await t.test('deploy in at most three clicks from the job page', async () => {
    await open(page, `#/jobs/${jobId}`);
    await page.waitForSelector('#job-deploy:not([hidden])', { timeout: 30_000 });
    let clicks = 0;
    await page.click('#job-deploy'); clicks++;
    await page.waitForSelector('#deploy-dialog[open]');
    assert.equal(await page.inputValue('#deploy-model'), MODEL, 'the model is named after the template');
    assert.equal(await page.inputValue('#deploy-name'), depName);
    assert.equal(await page.inputValue('#deploy-replicas'), '1');
    assert.equal(await page.inputValue('#deploy-gpus'), '1');
    assert.match(await page.textContent('#deploy-version'), new RegExp(`#${jobId}`));
    await layout(page, 'deploy dialog zh-CN 1280');
    await page.screenshot({ path: path.join(SHOTS, 'serving-deploy-dialog-zh-CN-1280.png') });
    await page.click('#deploy-confirm'); clicks++;
    await page.waitForFunction((n) => location.hash === '#/deployments/' + n && document.querySelector('main[data-loaded] h1'), depName, { timeout: 60_000 });
    assert.ok(clicks <= 3, `${clicks} clicks`);
    const m = (await api(page, 'GET', `/models/${MODEL}`)).body;
    assert.deepEqual(m.versions.map((v) => [v.version, v.source_job_id]), [[1, String(jobId)]]);
    const d = (await api(page, 'GET', `/deployments/${depName}`)).body;
    assert.equal(d.version, 1);
    assert.equal(d.replicas, 1);
  });

  await t.test('a replica becomes ready, with its job and node', async () => {
    await page.waitForSelector('.replica-ready[data-ready="true"]', { timeout: JOB_MS });
    const row = await page.evaluate(() => {
      const tr = document.querySelector('table.replicas tbody tr:not(.empty)');
      return { link: tr.querySelector('a[href^="#/jobs/"]').getAttribute('href'), text: tr.textContent };
    });
    const d = (await api(page, 'GET', `/deployments/${depName}`)).body;
    const rep = d.replicas_detail[0];
    assert.equal(row.link, `#/jobs/${rep.job_id}`);
    assert.ok(rep.node && row.text.includes(rep.node), `the node is shown: ${row.text}`);
    assert.match(row.text, /就绪/);
  });

  await t.test('the chat box answers through the gateway, streamed, with a session-only key', async () => {
    await page.fill('#chat-input', QUESTION);
    await page.evaluate(() => {
      // Count the pieces drawn into the answer as they come.
      window.__chatPieces = 0;
      new MutationObserver((ms) => { for (const m of ms) window.__chatPieces += m.addedNodes.length; })
        .observe(document.querySelector('#chat-log'), { childList: true, subtree: true });
    });
    await page.press('#chat-input', 'Enter');
    await page.waitForSelector('.chat-bot[data-done="true"]', { timeout: 120_000 });
    const err = await page.textContent('#chat-msg');
    assert.equal(err.trim(), '', `no chat error: ${err}`);
    assert.equal((await page.textContent('.chat-bot .chat-text')).trim(), QUESTION, 'the echo model answers the question');
    assert.ok(await page.evaluate(() => document.querySelector('.chat-bot .chat-text').childNodes.length) > 1, 'the answer was drawn piece by piece');
    const store = await page.evaluate((n) => ({
      session: sessionStorage.getItem('ty.chat.' + n) || '',
      local: Object.keys(localStorage).map((k) => localStorage.getItem(k)).join('\n'),
    }), depName);
    assert.ok(store.session.startsWith('tysk_'), 'the key is in sessionStorage');
    assert.ok(!store.local.includes(store.session) && !store.local.includes('tysk_'), 'no key in localStorage');
    const keys = (await api(page, 'GET', `/deployments/${depName}/keys`)).body.keys;
    assert.deepEqual(keys.map((k) => k.name), ['dashboard-admin']);
    await page.waitForFunction(() => [...document.querySelectorAll('table.keys tbody tr')].some((tr) => tr.textContent.includes('dashboard-admin')));
    assert.match(await page.textContent('#chat-note'), /sessionStorage/);
  });

  await t.test('a second version as canary: the slider sets its weight, roll back sets 0', async () => {
    const v2 = await api(page, 'POST', `/models/${MODEL}/versions`, { job_id: String(jobId), source: 'output' });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    assert.equal(v2.body.version, 2);
    await page.waitForSelector('#canary-version option[value="2"]', { state: 'attached', timeout: 30_000 });
    await page.fill('#canary-weight', '30');
    await waitFor('canary weight 30', 30_000, async () => {
      const d = (await api(page, 'GET', `/deployments/${depName}`)).body;
      return d.canary_weight === 30 && d.canary_version === 2;
    });
    await page.waitForFunction(() => /30%/.test(document.querySelector('#version-split').textContent));
    assert.match(await page.textContent('#version-split'), /金丝雀 v2 · 30%/);
    await page.screenshot({ path: path.join(SHOTS, 'serving-canary-zh-CN-1280.png') });
    let asked = '';
    page.once('dialog', (dlg) => { asked = dlg.message(); dlg.accept(); });
    await page.click('#canary-rollback');
    await waitFor('canary weight 0', 30_000, async () => (await api(page, 'GET', `/deployments/${depName}`)).body.canary_weight === 0);
    assert.match(asked, /回滚/);
    await page.waitForFunction(() => !/金丝雀/.test(document.querySelector('#version-split').textContent));
    assert.equal(await page.isVisible('#canary-rollback'), false, 'nothing left to roll back');
  });

  await t.test('the traffic charts are drawn with ECharts and count the chat', async () => {
    await waitFor('the chat in the stats', 60_000, async () => {
      const s = (await api(page, 'GET', `/deployments/${depName}/stats?minutes=10`)).body;
      return s.series.reduce((a, r) => a + r.requests, 0) >= 1;
    }, 1000);
    const charts = await page.evaluate(() => ['serve-requests', 'serve-errors', 'serve-latency'].map((n) => (window.__ty.charts[n] || {}).renderer));
    assert.deepEqual(charts, ['echarts', 'echarts', 'echarts']);
  });

  await t.test('models, a model with its versions and lineage, deployments', async () => {
    await open(page, '#/models');
    await page.waitForSelector(`a[href="#/models/${MODEL}"]`);
    await open(page, `#/models/${MODEL}`);
    await page.waitForSelector('#version-2');
    const v1 = (await api(page, 'GET', `/models/${MODEL}/versions/1`)).body;
    await page.click('#version-1 > summary');
    await page.waitForSelector(`#version-1 ol.lineage a[href="#/jobs/${jobId}"]`);
    const digests = await page.$$eval('#version-1 code', (cs) => cs.map((c) => c.getAttribute('title') || c.textContent));
    assert.ok(digests.includes(v1.manifest_sha256), 'the manifest digest is shown');
    await open(page, '#/deployments');
    await page.waitForSelector(`a[href="#/deployments/${depName}"]`);
  });

  await t.test('a refusal shows in Chinese on its field; the version it registered is used again', async () => {
    await open(page, `#/jobs/${jobId}`);
    await page.waitForSelector('#job-deploy:not([hidden])');
    await page.click('#job-deploy');
    await page.waitForSelector('#deploy-dialog[open]');
    page.allow.push('/api/v1/deployments'); // the 409 provoked here
    await page.click('#deploy-confirm'); // the deployment's name is taken
    await page.waitForSelector('#deploy-msg .alert.error');
    const shown = await page.textContent('#deploy-msg .alert.error');
    assert.match(shown, /[\u4e00-\u9fff]/, `the refusal is in Chinese: ${shown}`);
    assert.doesNotMatch(shown, /already exists/, 'not the server\'s English');
    assert.equal(await page.getAttribute('#deploy-name', 'aria-invalid'), 'true', 'the deployment name is marked');
    const after = (await api(page, 'GET', `/models/${MODEL}`)).body.versions.map((v) => v.version);
    assert.deepEqual(after, [3, 2, 1], 'the confirm registered version 3');
    await page.fill('#deploy-name', `${depName}-b`);
    await page.fill('#deploy-replicas', '0');
    await page.click('#deploy-confirm');
    await page.waitForFunction((n) => location.hash === '#/deployments/' + n, `${depName}-b`, { timeout: 60_000 });
    page.allow.pop();
    assert.deepEqual((await api(page, 'GET', `/models/${MODEL}`)).body.versions.map((v) => v.version), [3, 2, 1], 'no version registered twice');
    assert.equal((await api(page, 'GET', `/deployments/${depName}-b`)).body.version, 3);
  });

  await t.test('every serving page in zh-CN and en at 1280 and 390 px', async () => {
    const pages = [['deployment', `#/deployments/${depName}`], ['deployments', '#/deployments'], ['models', '#/models'], ['model', `#/models/${MODEL}`]];
    for (const lang of ['zh-CN', 'en']) {
      if (lang === 'en') { await page.evaluate(() => localStorage.setItem('ty.lang', 'en')); await page.reload(); }
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 });
        for (const [name, hash] of pages) {
          await open(page, hash);
          if (name === 'deployment') await page.waitForSelector('.replica-ready[data-ready="true"]');
          if (name === 'model') { await page.click('#version-1 > summary'); await page.waitForSelector('#version-1 ol.lineage'); }
          await layout(page, `${name} ${lang} ${width}`);
          await page.screenshot({ path: path.join(SHOTS, `serving-${name}-${lang}-${width}.png`), fullPage: true });
        }
        await open(page, `#/jobs/${jobId}`);
        await page.waitForSelector('#job-deploy:not([hidden])');
        await page.click('#job-deploy');
        await page.waitForSelector('#deploy-dialog[open]');
        await layout(page, `deploy dialog ${lang} ${width}`);
        await page.screenshot({ path: path.join(SHOTS, `serving-deploy-dialog-${lang}-${width}.png`) });
        await page.click('#deploy-cancel');
      }
    }
    assert.deepEqual(page.problems, [], 'the browser reported errors');
  });
});
