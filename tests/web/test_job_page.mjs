// test_job_page.mjs - what the job page and the wizard must get right for a
// user to trust them, in real Chromium on a fresh `make run` style start
// (admin_stack.mjs). One stack, one part each:
//  1. a failed job of 12,000 lines opens at its last line (the traceback is
//     on screen, not the first page of the log); scrolling to the top and
//     "load earlier" page back to the first line; the download holds every
//     line the API holds;
//  2. the checkpoint table's time column is inside the table and the window
//     at 1280 and 390 px, in zh-CN and en (screenshots);
//  3. a malformed address (#/jobs/%E0) shows "cannot be read" and the
//     router goes on working, with no page error;
//  4. the session deleted server-side while a running job's log streams
//     (the page's poll held back, so only the stream can tell): the page
//     goes to sign-in, and signing in returns to the job;
//  5. 0 GPUs in the wizard: the field says the range (1 to 1024), the
//     forecast does not say "starts at once", and the server's refusal says
//     the range too, in zh-CN and en;
//  6. clone and edit of a job with env, working_dir, output_dir, priority,
//     max_restarts, time_limit_s, launcher, three datasets and arguments
//     with spaces and quotes, submitted unchanged: the new job's spec is the
//     old one's in every field but the name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { JOB_MS, api } from './lib.mjs';
import { startStack, newPage, open, signIn, waitFor, SHOTS, untranslated, pageOverflow } from './admin_stack.mjs';

const MARK = 'traceback-marker: loss became NaN';
const PRINTER = [
  'import json, os, sys',
  "d = os.environ['TRAINYARD_CHECKPOINT_DIR']",
  'for i in range(1, 12001):',
  "    print('step %d of training' % i)",
  '    if i % 4000 == 0:',
  "        print('TRAINYARD_CHECKPOINT ' + json.dumps({'step': i, 'path': d + '/step-%08d-model-and-optimizer-state-after-warmup.pt' % i}))",
  'sys.stdout.flush()',
  `raise RuntimeError('${MARK}')`,
].join('\n');

function psql(url, sql) {
  const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql: ${r.stderr}`);
  return r.stdout.trim();
}

// Every stored line of a rank, through the API's forward pages.
async function allLines(page, id, rank) {
  const out = [];
  let after = '';
  for (;;) {
    const r = await api(page, 'GET', `/jobs/${id}/logs?rank=${rank}&limit=5000` + (after ? '&after=' + after : ''));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    out.push(...r.body.logs.map((l) => (l.text.endsWith('\n') ? l.text : l.text + '\n')));
    if (r.body.logs.length < 5000) return out;
    after = r.body.next_after;
  }
}

const logText = (page) => page.evaluate(() => document.querySelector('#log').textContent);

test('the job page and the wizard: long logs, layout, bad address, expired session, GPU range, clone', { timeout: 840_000 }, async (t) => {
  const stack = await startStack(t, 'job-page');
  const page = await newPage(stack);
  await signIn(page, stack.base, 'admin', stack.password);
  const team = (await api(page, 'GET', '/teams')).body.teams[0].name;
  const submit = async (spec) => {
    const r = await api(page, 'POST', '/jobs', spec);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id;
  };
  const failed = await submit({ name: 'long-failure', team, command: ['/usr/bin/python3', '-c', PRINTER], resources: { gpus: 1 }, max_restarts: 0 });
  const job = await waitFor(`job ${failed} to end`, JOB_MS, async () => {
    const j = (await api(page, 'GET', `/jobs/${failed}`)).body;
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
  }, 500);
  assert.equal(job.state, 'FAILED', JSON.stringify(job));
  const lines = await allLines(page, failed, 0);
  // The held-back poll's requests of part 4 go on after it, and get 401.
  let heldJob = null;
  const expected = (x) => /status of 400/.test(x) || (heldJob && /status of 401/.test(x) && x.includes(`/api/v1/jobs/${heldJob}`));
  assert.ok(lines.length >= 12000, `the job printed ${lines.length} lines`);
  assert.equal(job.dropped_lines || 0, 0);

  await t.test('a long failed log opens at its end, pages back, downloads whole', async () => {
    await open(page, `#/jobs/${failed}`);
    await waitFor('the traceback in the log', 60_000, async () => (await logText(page)).includes(MARK));
    const view = await page.evaluate(() => {
      const pre = document.querySelector('#log');
      pre.scrollIntoView({ block: 'center' });
      const last = pre.lastChild;
      const range = document.createRange();
      range.selectNodeContents(last);
      const r = range.getBoundingClientRect(), p = pre.getBoundingClientRect();
      return { atEnd: pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 2, lastText: last.textContent, inside: r.bottom <= p.bottom + 1 && r.top >= p.top - 1, vh: innerHeight, bottom: r.bottom };
    });
    assert.ok(view.atEnd, 'the log is scrolled to its end');
    assert.ok(view.inside && view.bottom <= view.vh, `the last line is on screen (${JSON.stringify(view)})`);
    assert.match(view.lastText, new RegExp(MARK));
    await page.screenshot({ path: path.join(SHOTS, 'job-page-failed-log-end.png') });
    assert.ok(!(await logText(page)).startsWith('step 1 of training\n'), 'the page opened at the end, not the start');
    assert.ok(await page.isVisible('#log-earlier'), 'earlier lines are offered');

    // Scrolling to the top asks for more; then the button, to the first line.
    const before = (await logText(page)).length;
    await page.evaluate(() => { const pre = document.querySelector('#log'); pre.scrollTop = 0; pre.dispatchEvent(new Event('scroll')); });
    await waitFor('earlier lines after scrolling up', 30_000, async () => (await logText(page)).length > before);
    for (let i = 0; i < 20 && await page.isVisible('#log-earlier'); i++) {
      const n = (await logText(page)).length;
      await page.click('#log-earlier');
      await waitFor('an earlier page', 30_000, async () => (await logText(page)).length > n || !(await page.isVisible('#log-earlier')));
    }
    assert.equal(await page.isVisible('#log-earlier'), false, 'every earlier page was loaded');
    assert.equal(await logText(page), lines.join(''), 'the page holds every line, in order');

    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#log-download')]);
    const file = path.join(SHOTS, `job-page-${failed}.log`);
    await dl.saveAs(file);
    const text = fs.readFileSync(file, 'utf8');
    assert.equal(text.split('\n').length - 1, lines.length, 'the download has every line');
    assert.equal(text, lines.join(''));
  });

  await t.test('the checkpoint table\'s time column is inside the table and the window', async () => {
    for (const lang of ['zh-CN', 'en']) {
      const p = await newPage(stack, { lang });
      await signIn(p, stack.base, 'admin', stack.password);
      for (const width of [1280, 390]) {
        await p.setViewportSize({ width, height: width === 1280 ? 800 : 844 });
        await open(p, `#/jobs/${failed}`);
        // The table by its caption (what a screen reader announces).
        await p.evaluate(() => {
          const tb = [...document.querySelectorAll('table')].find((x) => x.caption && /^(检查点|Checkpoints)$/.test(x.caption.textContent.trim()));
          if (tb) tb.dataset.test = 'checkpoints';
        });
        await p.waitForSelector('table[data-test=checkpoints] tbody tr:not(.empty)');
        const cells = await p.evaluate(() => {
          const tb = document.querySelector('table[data-test=checkpoints]');
          tb.scrollIntoView({ block: 'center' });
          const wrap = tb.closest('.table-wrap').getBoundingClientRect();
          const vw = document.documentElement.clientWidth;
          return [...tb.querySelectorAll('tbody tr')].map((tr) => {
            const td = tr.lastElementChild, r = td.getBoundingClientRect();
            return { text: td.textContent, left: r.left, right: r.right, wrapLeft: wrap.left, wrapRight: wrap.right, vw, clipped: td.scrollWidth > td.clientWidth + 1 };
          });
        });
        assert.equal(cells.length, 3, 'three checkpoints');
        for (const c of cells) {
          assert.ok(c.text.trim(), 'the time is shown');
          assert.ok(c.left >= c.wrapLeft - 1 && c.right <= c.wrapRight + 1 && c.right <= c.vw + 1 && !c.clipped,
            `${lang} ${width}px: the time cell is inside the table and the window: ${JSON.stringify(c)}`);
        }
        const over = await pageOverflow(p);
        assert.ok(over.scrollWidth <= over.clientWidth, `${lang} ${width}px: no sideways scroll: ${JSON.stringify(over)}`);
        assert.deepEqual(await untranslated(p), [], `untranslated keys (${lang})`);
        await p.screenshot({ path: path.join(SHOTS, `job-page-checkpoints-${lang}-${width}.png`) });
      }
      assert.deepEqual(p.problems, [], 'the browser reported errors');
      await p.context().close();
    }
  });

  await t.test('a malformed address says so and the router keeps working', async () => {
    await page.evaluate(() => { location.hash = '#/jobs/%E0'; });
    await page.waitForSelector('#bad-address');
    assert.match(await page.textContent('main'), /无法识别的地址/);
    assert.deepEqual(page.problems, [], 'no page error');
    await open(page, '#/jobs');
    await open(page, `#/jobs/${failed}`);
    assert.deepEqual(page.problems, [], 'no page error');
  });

  await t.test('the session ends while the log streams: the page goes to sign-in', async () => {
    const running = await submit({ name: 'streams', team, command: ['/usr/bin/python3', '-c', "import time\nprint('alive', flush=True)\nwhile True: time.sleep(1)"], resources: { gpus: 1 }, max_restarts: 0 });
    await open(page, `#/jobs/${running}`);
    await waitFor('the running job\'s line', JOB_MS, async () => (await logText(page)).includes('alive'), 500);
    assert.equal(await page.evaluate(() => window.__ty.streams), 1, 'the log streams');
    // Hold the page's poll back (its requests never answer): only the
    // stream can tell the page that the session ended.
    const held = (u) => u.pathname.startsWith(`/api/v1/jobs/${running}`) && !u.pathname.endsWith('/logs');
    heldJob = running;
    await page.route(held, () => {});
    const n = page.problems.length;
    page.signedIn = false; // the 401s of /me and the stream are expected now
    psql(stack.dbUrl, 'DELETE FROM sessions');
    await page.waitForFunction(() => location.hash === '#/login', null, { timeout: 90_000 });
    await page.unroute(held);
    const extra = page.problems.splice(n).filter((p) => !/401|Unauthorized/.test(p));
    assert.deepEqual(extra, [], 'only the expected 401s');
    await page.fill('#login-user', 'admin');
    await page.fill('#login-pass', stack.password);
    page.signedIn = true;
    await page.click('form.login button[type=submit]');
    await page.waitForFunction((id) => location.hash === '#/jobs/' + id, running, { timeout: 30_000 });
    await page.waitForSelector('main[data-loaded]');
    assert.equal((await api(page, 'POST', `/jobs/${running}/cancel`)).status, 202);
  });

  await t.test('0 GPUs: the range is said, no "starts at once"', async () => {
    for (const [lang, range, now] of [['zh-CN', /1 到 1024 之间的整数/, '现在提交会立即开始'], ['en', /from 1 to 1024/, 'it starts at once']]) {
      const p = await newPage(stack, { lang, allow: ['/api/v1/jobs', '/api/v1/queue'] });
      await signIn(p, stack.base, 'admin', stack.password);
      await open(p, '#/wizard');
      await p.locator('button.tpl-card[data-template]').first().click();
      await p.click('button.step[data-step=gpus]');
      await p.fill('#w-gpus', '0');
      await p.press('#w-gpus', 'Tab');
      await waitFor('the range on the GPU field', 10_000, async () => range.test(await p.textContent('#w-gpus-err')));
      await waitFor('the forecast to wait for a valid count', 30_000, async () => p.isVisible('#forecast-invalid'));
      assert.ok(!(await p.textContent('main')).includes(now), 'no "would start now" for 0 GPUs');
      await p.click('button.step[data-step=review]');
      await p.click('#wizard-start');
      await p.waitForSelector('.alert.error[data-code=invalid_argument]');
      assert.match(await p.textContent('.alert.error[data-code=invalid_argument]'), range, 'the refusal says the range');
      assert.match(await p.textContent('#w-gpus-err'), range);
      assert.deepEqual(await untranslated(p), []);
      await p.screenshot({ path: path.join(SHOTS, `job-page-wizard-gpus-0-${lang}.png`) });
      assert.deepEqual(p.problems.filter((x) => !/status of 400/.test(x)), [], 'the browser reported errors');
      await p.context().close();
    }
  });

  await t.test('clone and edit carries the whole spec', async () => {
    // A page of its own: this part does not depend on the session above.
    const p = await newPage(stack);
    await signIn(p, stack.base, 'admin', stack.password);
    const root = stack.storage;
    const spec = {
      name: 'clone-source', team, resources: { gpus: 1 },
      command: ['/usr/bin/python3', '-c', 'import sys; print(sys.argv)', '--sep', ' ', '  padded  ', '"quoted"', 'a\tb', '--flag=x y'],
      env: { CLONE_A: '1', CLONE_B: 'two words' },
      working_dir: root + '/clone/work', output_dir: root + '/clone/out',
      datasets: [root + '/data/a', root + '/data/b', root + '/data/c'],
      priority: 'high', max_restarts: 7, time_limit_s: 7200, launcher: 'torchrun', strategy: 'ddp',
    };
    const r = await api(p, 'POST', '/jobs', spec);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const src = r.body.id;
    const old = (await api(p, 'GET', `/jobs/${src}`)).body.spec;
    for (const [k, v] of Object.entries(spec)) if (k !== 'team' && k !== 'resources') assert.deepEqual(old[k], v, `the source job kept ${k}`);
    assert.equal(old.resources.gpus, 1);
    await open(p, `#/jobs/${src}`);
    await p.click('#job-clone');
    await p.waitForSelector('main[data-loaded] #wizard-start');
    const carried = await p.evaluate(() => (document.querySelector('#wizard-carried') || {}).textContent || '');
    await p.screenshot({ path: path.join(SHOTS, 'job-page-clone-review.png'), fullPage: true });
    await p.click('#wizard-start');
    await p.waitForFunction((id) => /^#\/jobs\/\d+$/.test(location.hash) && location.hash !== '#/jobs/' + id, src);
    const copy = Number(new URL(p.url()).hash.split('/')[2]);
    const got = (await api(p, 'GET', `/jobs/${copy}`)).body.spec;
    const { name: n1, ...a } = old;
    const { name: n2, ...b } = got;
    assert.deepEqual(b, a, 'the clone\'s spec is the source\'s');
    assert.notEqual(n1, n2);
    // What the steps cannot edit is listed on the review step.
    for (const x of ['CLONE_B=two words', '/clone/work', '/clone/out', '/data/b', '/data/c', 'torchrun', '7200'])
      assert.ok(carried.includes(x), `the review lists ${x}: ${carried}`);
    await api(p, 'POST', `/jobs/${src}/cancel`);
    await api(p, 'POST', `/jobs/${copy}/cancel`);
    assert.deepEqual(p.problems, [], 'the browser reported errors');
    await p.context().close();
  });

  assert.deepEqual(page.problems.filter((x) => !expected(x)), [], 'the browser reported errors');
  await stack.stop();
});
