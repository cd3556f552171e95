// test_admin_pages.mjs - the queue, nodes, admin, account and audit pages
// walked in real Chromium after a fresh `make run` style start:
// as the admin, in zh-CN and en, at 1280x800 and at 390x844, every page
// shows its heading and data, asks for no catalog key the page's language
// lacks (window.__ty.missing), has nothing wider than the screen outside a
// box that scrolls by itself, leaves no poller running after the user moves
// on, and logs no console or page error. A screenshot of each page in each
// language and width goes to $TRAINYARD_BUILD_DIR/web-screenshots/.
// The queue lists the waiting jobs in the forecast's order, each with its
// reason in words. A refused form shows the error by its code in the page's
// language with the field marked, never the server's English. An admin
// raises a waiting job's priority from the queue page's select and the API
// shows it. A queue of more than a page shows the first 50 and the count,
// and "load more" adds the next page in the forecast's order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startStack, rest, newPage, signIn, open, untranslated, pageOverflow, waitFor, SHOTS } from './admin_stack.mjs';

// waitForSelector that says what the browser reported when it times out.
async function need(page, sel) {
  try { await page.waitForSelector(sel, { timeout: 30_000 }); }
  catch (e) { throw new Error(`${sel} never showed on ${page.url()}: ${e.message}\n${page.problems.join('\n')}`); }
}

const PAGES = ['queue', 'nodes', 'admin', 'account', 'audit'];
const SIZES = [['wide', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]];

test('the admin pages in both languages and both widths', { timeout: 840_000 }, async (t) => {
  const s = await startStack(t, 'admin-pages');
  // Something on every page: a queued job (more GPUs than the worker has),
  // a site, a webhook, a dataset, an API token.
  const admin = await rest(s.base, 'admin', s.password);
  const site = await admin.call('POST', '/sites', { name: 'plant-a', storage_roots: [s.storage + '/plant-a'], networks: ['10.20.0.0/16'] });
  assert.equal(site.name, 'plant-a');
  // One job holds both GPUs of the worker; two more wait behind it.
  const holder = await admin.call('POST', '/jobs', { name: 'holds-gpus', team: 'default', command: ['/bin/sleep', '900'], resources: { gpus: 2 }, max_restarts: 0 });
  await waitFor('the first job to run', 120_000, async () => (await admin.call('GET', '/jobs/' + holder.id)).state === 'RUNNING', 500);
  const waiting = [];
  for (const [name, gpus] of [['waits-for-gpus', 2], ['waits-too', 1]])
    waiting.push((await admin.call('POST', '/jobs', { name, team: 'default', command: ['/bin/true'], resources: { gpus }, max_restarts: 0 })).id);
  const forecast = await waitFor('both waiting jobs in the forecast', 60_000, async () => {
    const q = await admin.call('GET', '/queue');
    return waiting.every((id) => q.jobs.some((j) => j.id === id)) && q;
  }, 500);
  await admin.call('POST', '/webhooks', { team: 'default', url: 'http://127.0.0.1:9/hook', events: ['job.failed'] });
  await admin.call('POST', '/datasets', { name: 'line3-photos', uri: s.storage + '/line3', site: 'default', classification: 'confidential', team: 'default' });
  await admin.call('POST', '/tokens', { name: 'ci' });

  for (const lang of ['zh-CN', 'en']) {
    for (const [size, viewport] of SIZES) {
      const page = await newPage(s, { viewport, lang });
      await signIn(page, s.base, 'admin', s.password);
      assert.equal(await page.evaluate(() => document.documentElement.lang), lang);
      for (const name of PAGES) {
        await open(page, '#/' + name);
        // Each page's own data, to be sure the walk sees a drawn page.
        if (name === 'queue') {
          // Each waiting job in the forecast's order, its reason in words.
          await need(page, `tr[data-key="${waiting[1]}"] .badge`);
          const shown = await page.$$eval('tbody tr[data-key]', (trs) => trs.map((tr) => ({ id: tr.dataset.key, pos: tr.children[0].textContent,
            code: tr.querySelector('.badge') && tr.querySelector('.badge').title, text: tr.querySelector('.badge') && tr.querySelector('.badge').textContent })));
          assert.deepEqual(shown.map((r) => r.id), forecast.jobs.map((j) => j.id), 'the scheduling order');
          for (const r of shown) {
            assert.ok(['gpus', 'reserved', 'priority', 'quota'].includes(r.code), `job ${r.id} waits for ${r.code}`);
            assert.ok(r.text && r.text !== r.code && !/\{|—/.test(r.text), `job ${r.id}'s reason: ${r.text}`);
          }
        }
        if (name === 'nodes') await need(page, 'article.node .gpu');
        if (name === 'admin') await need(page, '#admin-sites tr[data-key]');
        if (name === 'account') await need(page, 'tr[data-key]');
        if (name === 'audit') {
          await need(page, '.audit-table tr[data-key]');
          await need(page, '#chain-status [data-valid="true"]');
        }
        await page.screenshot({ path: path.join(SHOTS, `admin-pages-${name}-${lang}-${size}.png`), fullPage: true });
        const o = await pageOverflow(page);
        assert.ok(o.scrollWidth <= o.clientWidth && o.wide.length === 0, `${name} ${lang} ${size} scrolls sideways: ${JSON.stringify(o)}`);
        assert.deepEqual(await untranslated(page), [], `${name} ${lang}: untranslated keys`);
      }
      // Leaving a page ends its pollers: the job list is left with its own.
      await open(page, '#/nodes');
      const onNodes = await page.evaluate(() => window.__ty.pollers);
      assert.ok(onNodes >= 1, 'the nodes page polls');
      if (lang === 'zh-CN' && size === 'wide') {
        // Updated in place: the drain button keeps focus while polls redraw
        // the card's heartbeat next to it.
        await page.focus('article.node [data-action="drain"]');
        const seen = await page.innerText('article.node dl.kv');
        await waitFor('a poll to redraw the heartbeat', 30_000, async () => (await page.innerText('article.node dl.kv')) !== seen, 500);
        assert.equal(await page.evaluate(() => document.activeElement.dataset.action), 'drain', 'a poll took the focus away');
      }
      await open(page, '#/account');
      await waitFor('the nodes poller to stop', 10_000, () => page.evaluate(() => window.__ty.pollers === 0));
      assert.deepEqual(page.problems, [], `${lang} ${size}: the browser reported errors`);
      await page.context().close();
    }
  }

  // An admin raises a waiting job's priority from its row of the queue
  // (after the walk, which checks the forecast's order as it was).
  {
    const page = await newPage(s, { lang: 'en' });
    await signIn(page, s.base, 'admin', s.password);
    await open(page, '#/queue');
    const sel = `tr[data-key="${waiting[1]}"] select[data-action="priority"]`;
    await need(page, sel);
    assert.equal(await page.getAttribute(sel, 'aria-label'), `Priority of job #${waiting[1]}`);
    assert.equal(await page.$eval(sel, (e) => e.value), 'normal');
    await page.selectOption(sel, 'high');
    await waitFor('the job\'s priority to be high', 30_000, async () => (await admin.call('GET', '/jobs/' + waiting[1])).priority === 'high', 250);
    await waitFor('the row to show it', 30_000, () => page.$eval(sel, (e) => e.value === 'high' && !e.disabled), 250);
    assert.deepEqual(page.problems, [], 'the priority change: the browser reported errors');
    await page.context().close();
  }

  // A refused form, in Chinese: the code's text, the field marked, no English.
  const page = await newPage(s, { lang: 'zh-CN', allow: ['/api/v1/sites'] });
  await signIn(page, s.base, 'admin', s.password);
  await open(page, '#/admin');
  // By keyboard only: focus the field, type, Enter submits.
  await page.focus('#s-name');
  await page.keyboard.type('Bad Name!');
  await page.keyboard.press('Enter');
  const alert = page.locator('#admin-sites .alert.error');
  await alert.waitFor();
  const text = await alert.innerText();
  assert.match(text, /输入不正确/);
  assert.doesNotMatch(text, /[A-Za-z]{4,}/, `English on the Chinese page: ${text}`);
  assert.equal(await page.getAttribute('#s-name', 'aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 's-name');
  // Corrected from the keyboard: select the name, type another, Tab to the
  // roots, type one, Tab to the networks, Tab to the button, Enter.
  await page.keyboard.press('Control+A');
  await page.keyboard.type('plant-k');
  await page.keyboard.press('Tab');
  await page.keyboard.type(s.storage + '/plant-k');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.type), 'submit');
  await page.keyboard.press('Enter');
  await need(page, '#admin-sites tr[data-key] >> text=plant-k');
  assert.equal(await page.getAttribute('#s-name', 'aria-invalid'), null, 'the mark stays after the fix');
  assert.deepEqual(page.problems, []);
  await page.context().close();

  // A queue longer than a page: the first 50 in the forecast's order, the
  // count of all, "load more" adds the rest and then hides.
  {
    for (let i = 0; i < 60; i++)
      await admin.call('POST', '/jobs', { name: 'more-' + i, team: 'default', command: ['/bin/true'], resources: { gpus: 1 }, max_restarts: 0 });
    const all = async () => {
      let jobs = [], r = null, cursor;
      do {
        r = await admin.call('GET', '/queue?limit=500' + (cursor ? '&cursor=' + cursor : ''));
        jobs = jobs.concat(r.jobs);
        cursor = r.next_cursor;
      } while (cursor);
      return { ids: jobs.map((j) => j.id), total: r.total };
    };
    const q = await waitFor('all 62 waiting jobs in the forecast', 60_000, async () => { const a = await all(); return a.total === 62 && a; }, 500);
    const p2 = await newPage(s, { lang: 'en' });
    await signIn(p2, s.base, 'admin', s.password);
    await open(p2, '#/queue');
    const rows = () => p2.$$eval('tbody tr[data-key]', (trs) => trs.map((tr) => tr.dataset.key));
    await waitFor('the first page', 30_000, async () => (await rows()).length === 50, 250);
    assert.deepEqual(await rows(), q.ids.slice(0, 50), 'the first page in the scheduling order');
    assert.equal(await p2.innerText('#queue-count'), `50 of ${q.total} queued jobs`);
    assert.ok(await p2.isVisible('#queue-more'), 'load more is offered');
    await p2.click('#queue-more');
    await waitFor('the second page', 30_000, async () => (await rows()).length === 62, 250);
    assert.deepEqual(await rows(), (await all()).ids, 'both pages in the scheduling order');
    assert.equal(await p2.innerText('#queue-count'), '62 of 62 queued jobs');
    assert.ok(!(await p2.isVisible('#queue-more')), 'nothing more to load');
    // A poll (a newer forecast's time) keeps the rows loaded.
    const stamp = () => p2.innerText('.page-head .muted.small');
    const seen = await stamp();
    await waitFor('a poll to redraw the forecast time', 30_000, async () => (await stamp()) !== seen, 250);
    assert.equal((await rows()).length, 62, 'a poll dropped the second page');
    assert.deepEqual(p2.problems, [], 'the queue pages: the browser reported errors');
    await p2.context().close();
  }
});
