// test_user_path.mjs - the user's path through the dashboard in real Chromium,
// on a fresh `make run` style start (lib.mjs): the app shell, the overview,
// the wizard, the job page and the job list.
//
// It proves, in this order:
//  1. sign in on the Chinese (default) page; a hash change while the app is
//     still asking GET /me keeps the destination (the router waits for /me);
//  2. a template through the wizard in three clicks from the overview: the
//     header follows the job to RUNNING and then SUCCEEDED, and the loss
//     chart (ECharts) holds every loss step the API holds;
//  3. the keyboard alone (Tab, Enter, typing) completes the wizard, with a
//     hyperparameter changed (steps=1500) that reaches the job's spec;
//  4. on that running job: logs follow live, pause holds new lines back
//     (the page says how many) and resume shows them, search shows only
//     matching lines, download saves the rank's log;
//  5. cancel: the header and the timeline say CANCELLED with the reason in
//     Chinese;
//  6. clone and edit: the wizard opens with the job's spec, an edited
//     parameter reaches the new job's spec;
//  7. a dataset the policy refuses shows the error in Chinese, by its code,
//     on the dataset field, with none of the server's English;
//  8. leaving a page stops its pollers and streams; a polled table keeps
//     the focused element and a text selection (in-place update);
//  9. both languages, both widths (1280x800, 390x844): every page of the
//     user path has no untranslated key, no unlabelled control and no
//     horizontal scroll, and is screenshotted; the language choice survives a reload;
// 10. no console or page error all along (except the expected 401 of /me
//     before signing in), and run.sh stops cleanly;
// 11. the wizard's GPU step shows the scheduler's answer for this job now
//     (POST /queue/what-if: starts now, or when and why it would wait).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  SHOTS, JOB_MS, startStack, newPage, signIn, api, headState, untranslated, pageOverflow, unlabeled, waitFor,
} from './lib.mjs';

const ALLOW = [];

// Tab until `selector` has focus (at most `max` presses): keyboard only.
async function tabTo(page, selector, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => { const a = document.activeElement; return !!a && a.matches(s); }, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

async function jobIdFromUrl(page) {
  await page.waitForURL(/#\/jobs\/\d+$/);
  return page.url().match(/#\/jobs\/(\d+)$/)[1];
}

test('the user path: sign in, wizard, job page, logs, cancel, clone, policy, languages, widths', { timeout: 840_000 }, async (t) => {
  const stack = await startStack(t, 'user-path');
  const mark = (what) => t.diagnostic(what);
  const page = await newPage(stack, { allow: ALLOW });
  page.on('dialog', (d) => d.accept());
  const { base, password } = stack;

  // 1. Sign in (zh-CN by default), then the router fix.
  await page.goto(base);
  await page.waitForSelector('#login-user');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await signIn(page, base, 'admin', password);
  assert.equal(new URL(page.url()).hash, '#/overview');
  // Hold GET /me back, change the hash meanwhile: the app must open the
  // latest hash once /me answers, not its start page.
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route('**/api/v1/me', async (route) => { await held; await route.continue(); });
  await page.goto('about:blank'); // a fresh start of the app, not a hash change
  await page.goto(base + '#/overview');
  await page.evaluate(() => {
    window.__hashes = [];
    window.addEventListener('hashchange', () => window.__hashes.push(location.hash));
    location.hash = '#/wizard';
  });
  release();
  await page.waitForFunction(() => document.documentElement.dataset.ready === '1');
  await page.waitForSelector('main[data-loaded] .tpl-card');
  assert.equal(new URL(page.url()).hash, '#/wizard', 'the hash changed during start-up was kept');
  assert.deepEqual(await page.evaluate(() => window.__hashes), ['#/wizard'], 'no detour through another page while starting');
  await page.unroute('**/api/v1/me');
  mark('signed in; start-up hash kept');

  // 2. The overview shows every GPU of GET /nodes; then three clicks.
  await page.goto(base + '#/overview');
  await page.waitForSelector('main[data-loaded] .heat-row');
  const gpus = (await api(page, 'GET', '/nodes')).body.nodes.reduce((s, n) => s + n.gpus.length, 0);
  assert.equal(await page.locator('.heat-cells .cell').count(), gpus, 'one heatmap cell per GPU');
  assert.match(await page.getAttribute('.heat-cells .cell', 'aria-label'), /GPU 0：空闲|GPU 0：使用中/);
  const templates = (await api(page, 'GET', '/templates')).body.templates;
  await page.click('#start-training');                              // 1
  await page.locator('button.tpl-card[data-template]').first().click(); // 2
  await page.click('#wizard-start');                                 // 3
  const jobA = await jobIdFromUrl(page);
  const seen = new Set();
  const endA = await waitFor(`job ${jobA} to end`, JOB_MS, async () => {
    const s = await headState(page);
    seen.add(s);
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(s) && s;
  }, 200);
  assert.equal(endA, 'SUCCEEDED', `job ${jobA} ended ${endA}`);
  assert.ok(seen.has('RUNNING'), `the header showed RUNNING on the way (saw ${[...seen]})`);
  const mA = (await api(page, 'GET', `/jobs/${jobA}/metrics?limit=5000`)).body.metrics;
  const lossSteps = new Set(mA.filter((m) => typeof m.values.loss === 'number' && m.rank === Math.min(...mA.map((x) => x.rank ?? 0))).map((m) => m.step));
  assert.ok(lossSteps.size > 0, 'the job reported no loss');
  const chart = await waitFor('every loss point on the chart', 30_000, () => page.evaluate(() => window.__ty.charts.loss)
    .then((c) => (c && c.points === lossSteps.size && c.drawn > 0 ? c : null)), 300);
  assert.equal(chart.renderer, 'echarts', 'the loss chart is drawn by ECharts');
  const canvas = await page.evaluate(() => {
    const c = document.querySelector('#chart-loss canvas');
    return c ? { w: c.getBoundingClientRect().width, h: c.getBoundingClientRect().height } : null;
  });
  assert.ok(canvas && canvas.w > 200 && canvas.h > 150, `the loss chart is drawn at a visible size (${JSON.stringify(canvas)})`);
  const tp = await page.evaluate(() => window.__ty.charts.throughput);
  assert.ok(tp && tp.points > 0, 'the throughput chart has points');
  assert.equal((await api(page, 'GET', `/jobs/${jobA}`)).body.spec.template, templates[0].id);
  mark(`job ${jobA}: three clicks, RUNNING, SUCCEEDED, ${chart.points} loss points`);

  // 3. Keyboard only: the wizard with steps changed to 1500.
  await page.goto(base + '#/overview');
  await page.waitForSelector('#start-training');
  await tabTo(page, '#start-training');
  await page.keyboard.press('Enter');
  await page.waitForSelector('button.tpl-card[data-template]');
  await tabTo(page, `button.tpl-card[data-template="${templates[0].id}"]`);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#wizard-start');
  await tabTo(page, '.step[data-step="params"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#w-p-steps');
  await tabTo(page, '#w-p-steps');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('1500');
  await page.keyboard.press('Tab');
  await tabTo(page, '.step[data-step="review"]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#wizard-start');
  const focusVisible = await page.evaluate(() => {
    const b = document.querySelector('#wizard-start');
    b.focus();
    return getComputedStyle(b).outlineStyle !== 'none' && getComputedStyle(b).outlineWidth !== '0px';
  });
  assert.ok(focusVisible, 'focus is visible on the start button');
  await page.keyboard.press('Enter');
  const jobB = await jobIdFromUrl(page);
  assert.equal((await api(page, 'GET', `/jobs/${jobB}`)).body.spec.params.steps, 1500, 'the typed steps reached the spec');
  mark(`job ${jobB}: wizard by keyboard alone`);

  // 4. Logs of the running job: follow, pause, search, download.
  await waitFor(`job ${jobB} RUNNING`, JOB_MS, async () => (await headState(page)) === 'RUNNING', 200);
  const lines = () => page.evaluate(() => document.querySelector('#log').childNodes.length);
  const n0 = await waitFor('log lines to arrive', JOB_MS, async () => ((await lines()) > 5 ? lines() : 0), 200);
  assert.equal(await page.inputValue('#rank-select'), '0', 'the log shows rank 0 until the user picks another');
  await waitFor('more lines while following', JOB_MS, async () => (await lines()) > n0, 200);
  await page.click('#log-follow');
  assert.equal(await page.getAttribute('#log-follow', 'aria-pressed'), 'false');
  const nPaused = await lines();
  const held2 = await waitFor('new lines held back while paused', JOB_MS, () => page.evaluate(() => {
    const m = document.querySelector('#log-status').textContent.match(/(\d+)/);
    return m && Number(m[1]) > 0 ? Number(m[1]) : 0;
  }), 200);
  assert.equal(await lines(), nPaused, 'a paused log does not grow');
  await page.click('#log-follow');
  assert.ok((await lines()) >= nPaused + Math.min(held2, 1), 'resuming shows the held lines');
  await page.fill('#log-search', 'TRAINYARD_METRIC');
  const shown = await page.evaluate(() => [...document.querySelector('#log').childNodes].map((n) => n.textContent));
  assert.ok(shown.length > 0 && shown.every((l) => l.includes('TRAINYARD_METRIC')), 'search shows only matching lines');
  assert.match(await page.textContent('#log-matches'), /\d+/);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#log-download')]);
  const file = path.join(SHOTS, `user-path-job-${jobB}.log`);
  await dl.saveAs(file);
  assert.match(fs.readFileSync(file, 'utf8'), /TRAINYARD_METRIC/, 'the download holds the log');
  await page.fill('#log-search', '');
  mark(`job ${jobB}: logs followed, paused (${held2} held), searched, downloaded`);

  // 5. Cancel.
  await page.click('#job-cancel');
  await waitFor(`job ${jobB} CANCELLED in the header`, JOB_MS, async () => (await headState(page)) === 'CANCELLED', 200);
  const tl = await page.textContent('#timeline');
  assert.match(tl, /用户取消|已取消，所有 rank 已停止/, 'the cancel reason is in Chinese on the timeline');
  assert.doesNotMatch(tl, /cancelled by user|every rank/, 'no English reason on the Chinese timeline');
  mark(`job ${jobB}: cancelled`);

  // 6. Clone and edit.
  await page.click('#job-clone');
  await page.waitForSelector('#wizard-start');
  assert.match(await page.inputValue('#w-name'), /副本/);
  await page.click('.step[data-step="params"]');
  await page.fill('#w-p-steps', '40');
  await page.press('#w-p-steps', 'Tab');
  await page.click('.step[data-step="review"]');
  await page.click('#wizard-start');
  const jobC = await jobIdFromUrl(page);
  const specC = (await api(page, 'GET', `/jobs/${jobC}`)).body.spec;
  assert.equal(specC.params.steps, 40, 'the edited value reached the clone');
  assert.equal(specC.template, templates[0].id);
  mark(`job ${jobC}: clone of ${jobB} with steps 40`);

  // 7. A dataset the policy refuses.
  await page.goto(base + '#/wizard');
  await page.locator('button.tpl-card[data-template]').first().click();
  await page.click('.step[data-step="dataset"]');
  await page.selectOption('#w-dataset', '__path');
  await page.fill('#w-dataset-path', '/etc/trainyard-not-allowed');
  await page.press('#w-dataset-path', 'Tab');
  await page.click('.step[data-step="review"]');
  page.allow.push('/api/v1/jobs'); // the 403 this step provokes
  await page.click('#wizard-start');
  const alert = page.locator('.alert.error[data-code="policy_violation"]');
  await alert.waitFor();
  page.allow.pop();
  const text = await alert.innerText();
  assert.match(text, /违反数据驻留策略/, 'the refusal is shown in Chinese');
  assert.doesNotMatch(text, /[a-z]{4,} [a-z]{4,}/, `no English sentence in the Chinese refusal: ${text}`);
  assert.equal(await page.getAttribute('#w-dataset-path', 'aria-invalid'), 'true', 'the dataset field is marked');
  assert.equal(new URL(page.url()).hash, '#/wizard', 'nothing was submitted');
  await page.screenshot({ path: path.join(SHOTS, 'user-path-refused-dataset-zh-CN.png'), fullPage: true });
  mark('refused dataset shown in Chinese on its field');

  // 8. Leaving stops pollers and streams; polled tables keep focus.
  await page.goto(base + `#/jobs/${jobC}`);
  await waitFor('the job page streaming', 60_000, () => page.evaluate(() => window.__ty.streams === 1 || window.__ty.pollers === 1), 200);
  await page.goto(base + '#/jobs');
  await page.waitForSelector(`#jobs-search`);
  const live = await page.evaluate(() => ({ pollers: window.__ty.pollers, streams: window.__ty.streams }));
  assert.deepEqual(live, { pollers: 1, streams: 0 }, 'only the job list polls after leaving the job page');
  await page.waitForSelector(`tr[data-key="${jobA}"] a`);
  await page.focus(`tr[data-key="${jobA}"] a`);
  await page.evaluate(() => {
    document.activeElement.dataset.mark = 'kept';
    // And a text selection in another cell of the same row.
    const cell = document.activeElement.closest('tr').children[2];
    const r = document.createRange();
    r.selectNodeContents(cell);
    getSelection().removeAllRanges();
    getSelection().addRange(r);
  });
  const selected = await page.evaluate(() => getSelection().toString());
  const stamp = await page.textContent('.foot .muted:last-child');
  await waitFor('a refresh of the job list', 30_000, async () => (await page.textContent('.foot .muted:last-child')) !== stamp, 300);
  assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.dataset.mark), 'kept', 'focus survived the poll');
  assert.ok(selected.length > 0 && (await page.evaluate(() => getSelection().toString())) === selected, 'the text selection survived the poll');
  mark('pollers and streams stop on leaving; focus survives a poll');

  // 9. Both languages and widths: untranslated keys, overflow, screenshots.
  const pages = [['overview', '#/overview', '#start-training'], ['wizard', '#/wizard', '.tpl-card'],
    ['wizard-review', null, '#wizard-start'], ['wizard-dataset', null, '#w-dataset'], ['wizard-gpus', null, '#w-gpus'],
    ['wizard-strategy', null, '#w-strategy'], ['wizard-params', null, '#w-p-steps'],
    ['jobs', '#/jobs', '#jobs-search'], ['job', `#/jobs/${jobA}`, '#timeline li'], ['job-cancelled', `#/jobs/${jobB}`, '#timeline li']];
  const problems = [];
  for (const lang of ['zh-CN', 'en']) {
    for (const [w, hgt] of [[1280, 800], [390, 844]]) {
      await page.setViewportSize({ width: w, height: hgt });
      for (const [name, hash, sel] of pages) {
        if (hash) await page.goto(base + hash);
        else if (name === 'wizard-review') await page.locator('button.tpl-card[data-template]').first().click();
        else await page.click(`.step[data-step="${name.split('-')[1]}"]`);
        await page.waitForSelector('main[data-loaded] ' + sel);
        // Steps that ask the server (forecast, advisor) have answered.
        await page.waitForFunction(() => !/加载中…|Loading…/.test(document.querySelector('main').innerText), null, { timeout: 60_000 });
        if (name === 'wizard-gpus') {
          const reason = await page.locator('#forecast').getAttribute('data-reason', { timeout: 30_000 });
          assert.ok(['none', 'gpus', 'quota', 'priority', 'reserved', 'draining'].includes(reason), `forecast reason ${reason}`);
        }
        assert.equal(await page.evaluate(() => document.documentElement.lang), lang);
        const bad = await untranslated(page);
        if (bad.length) problems.push(`${lang} ${w} ${name}: untranslated ${bad.join(', ')}`);
        const nameless = await unlabeled(page);
        if (nameless.length) problems.push(`${lang} ${w} ${name}: controls without a label ${nameless.join(', ')}`);
        const o = await pageOverflow(page);
        if (o.scrollWidth > o.clientWidth || o.wide.length) problems.push(`${lang} ${w} ${name}: scrolls sideways ${JSON.stringify(o)}`);
        await page.screenshot({ path: path.join(SHOTS, `user-path-${name}-${lang}-${w}.png`), fullPage: true });
      }
    }
    if (lang === 'zh-CN') {
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(base + '#/overview');
      await page.click('#lang-toggle');
      await page.waitForFunction(() => document.documentElement.lang === 'en');
      await page.reload();
      await page.waitForSelector('#start-training');
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'en', 'the language is remembered');
      assert.equal((await page.textContent('#start-training')).trim(), 'Start training');
    }
  }
  // The sign-in page, signed out, in both languages and widths.
  const anon = await newPage(stack);
  await anon.goto(base);
  for (const lang of ['zh-CN', 'en']) {
    await anon.waitForSelector('main[data-loaded] #login-user');
    assert.equal(await anon.evaluate(() => document.documentElement.lang), lang);
    for (const [w, hgt] of [[1280, 800], [390, 844]]) {
      await anon.setViewportSize({ width: w, height: hgt });
      const bad = await untranslated(anon);
      if (bad.length) problems.push(`${lang} ${w} login: untranslated ${bad.join(', ')}`);
      const o = await pageOverflow(anon);
      if (o.scrollWidth > o.clientWidth || o.wide.length) problems.push(`${lang} ${w} login: scrolls sideways ${JSON.stringify(o)}`);
      await anon.screenshot({ path: path.join(SHOTS, `user-path-login-${lang}-${w}.png`), fullPage: true });
    }
    if (lang === 'zh-CN') { await anon.click('#lang-corner-btn'); await anon.waitForFunction(() => document.documentElement.lang === 'en'); }
  }
  assert.deepEqual(anon.problems, [], 'the browser reported errors on the sign-in page');
  assert.deepEqual(problems, [], 'language and width walk');
  mark('both languages and widths walked');

  // 10. No console errors; everything stops.
  assert.deepEqual(page.problems, [], 'the browser reported errors');
  await stack.stop();
});
