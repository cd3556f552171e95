// test_admin_roles.mjs - who may do what on the admin pages, in real
// Chromium after a fresh `make run` style start:
//  - a member sees no admin or audit entry, is sent away from #/admin and
//    #/audit, and finds no admin action (drain, approve, a queue priority
//    select) on the pages they may open; they change their own password
//    from the account page (a wrong current one refused with the field
//    marked) and sign in with the new one;
//  - an admin creates a site and a join token in the admin page; the worker
//    command the page shows, pasted into a shell, joins a second worker,
//    which shows up on the nodes page in that site;
//  - an export of a confidential job's output that a second admin asked for
//    is approved by the first in the admin page (with the one-time link),
//    while the second admin's own view of it offers no approve button.
// An admin's edit of a team's quota in its row is saved. No console or page
// error on any page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, rest, newPage, signIn, open, waitFor, BUILD, SHOTS } from './admin_stack.mjs';

const JOB_MS = 300_000;

test('members see no admin action; admins join a node and approve another admin\'s export', { timeout: 840_000 }, async (t) => {
  const s = await startStack(t, 'admin-roles');
  const admin = await rest(s.base, 'admin', s.password);
  const team = (await admin.call('GET', '/teams')).teams.find((x) => x.name === 'default');
  const made = {};
  for (const [name, role] of [['mia', 'member'], ['ada', 'admin']]) {
    made[name] = await admin.call('POST', '/users', { username: name, role, password: `pw-${name}-0123456789` });
    await admin.call('PUT', `/teams/${team.id}/members/${made[name].id}`);
  }

  // 1. The member.
  {
    const page = await newPage(s, { lang: 'zh-CN' });
    await signIn(page, s.base, 'mia', 'pw-mia-0123456789');
    const nav = await page.$$eval('#nav a', (as) => as.map((a) => a.getAttribute('href')));
    assert.ok(nav.includes('#/nodes') && nav.includes('#/queue') && nav.includes('#/account'), `nav: ${nav}`);
    assert.ok(!nav.includes('#/admin') && !nav.includes('#/audit'), `a member's nav offers ${nav}`);
    for (const hash of ['#/admin', '#/audit']) {
      await page.evaluate((hsh) => { location.hash = hsh; }, hash);
      await page.waitForFunction((hsh) => location.hash !== hsh && document.querySelector('main h1'), hash);
      assert.equal(await page.$('#admin-users, #chain-status'), null, `${hash} drew for a member`);
    }
    await open(page, '#/nodes');
    await page.waitForSelector('article.node');
    assert.equal(await page.$('[data-action="drain"], [data-action="undrain"]'), null, 'a member may drain');
    await open(page, '#/account');
    await page.waitForSelector('#tok-label');
    // Their own password: a wrong current one is refused with the field
    // marked, in Chinese; the right one changes it.
    page.allow.push('/api/v1/me/password'); // the refusal provoked here
    await page.fill('#pw-current', 'not-my-password');
    await page.fill('#pw-new', 'mia-new-password-42');
    await page.fill('#pw-again', 'mia-new-password-42');
    await page.click('#pw-form button[type="submit"]');
    await page.waitForSelector('#pw-current[aria-invalid="true"]');
    const refused = await page.innerText('#pw-form ~ div .alert.error');
    assert.doesNotMatch(refused, /[A-Za-z]{4,}/, `English on the Chinese page: ${refused}`);
    page.allow.pop();
    await page.fill('#pw-current', 'pw-mia-0123456789');
    await page.click('#pw-form button[type="submit"]');
    await page.waitForSelector('#pw-form ~ div .alert.ok');
    assert.equal(await page.$('#pw-current[aria-invalid="true"]'), null, 'the field stayed marked');
    await open(page, '#/queue');
    assert.equal(await page.$('[data-action]'), null, 'a member got a queue action');
    assert.deepEqual(page.problems, [], 'the member\'s browser reported errors');
    await page.context().close();
    // Signed in again with the new password (the old one no longer works).
    await assert.rejects(rest(s.base, 'mia', 'pw-mia-0123456789'), /401/);
    const again = await newPage(s, { lang: 'zh-CN' });
    await signIn(again, s.base, 'mia', 'mia-new-password-42');
    await open(again, '#/account');
    await again.waitForSelector('#tok-label');
    await again.context().close();
  }

  // 2. The admin: a team's quota edited in place (Enter in the field saves
  // it), a site, a join token, the pasted command joins a node there.
  const page = await newPage(s, { lang: 'zh-CN' });
  await signIn(page, s.base, 'admin', s.password);
  await open(page, '#/admin');
  await page.fill(`#tq-${team.id}`, '5');
  await page.press(`#tq-${team.id}`, 'Enter');
  await waitFor('the quota to be saved', 20_000, async () => Number((await admin.call('GET', '/teams/' + team.id)).gpu_quota) === 5, 250);
  await page.fill('#s-name', 'plant-b');
  await page.fill('#s-roots', s.storage + '/plant-b\n' + s.storage + '/plant-b2');
  await page.fill('#s-nets', '10.30.0.0/16');
  await page.click('#admin-sites button[type=submit]');
  await page.waitForSelector('#admin-sites tr[data-key] >> text=plant-b');
  const site = (await admin.call('GET', '/sites/plant-b'));
  assert.deepEqual(site.storage_roots, [s.storage + '/plant-b', s.storage + '/plant-b2']);
  assert.deepEqual(site.networks, ['10.30.0.0/16']);

  await page.waitForFunction(() => [...document.querySelectorAll('#j-site option')].some((o) => o.value === 'plant-b'));
  await page.selectOption('#j-site', 'plant-b');
  await page.fill('#j-name', 'gpu-b1');
  await page.click('#admin-join button[type=submit]');
  const cmd = (await page.locator('#join-command').innerText()).trim();
  // The token rides in the environment, never on the worker's command line.
  assert.match(cmd, /^TRAINYARD_JOIN_TOKEN=tyj_\S+ trainyard-worker --server http:\/\/127\.0\.0\.1:\d+\/? --name gpu-b1 --labels site=plant-b$/);
  await page.screenshot({ path: path.join(SHOTS, 'admin-roles-join-token.png'), fullPage: true });
  // Pasted into a shell on the "new node" (here: with a work dir and a fake GPU).
  const workDir = path.join(s.varDir, 'worker-b1');
  fs.mkdirSync(workDir);
  const env = Object.assign({}, process.env, { PATH: path.join(BUILD, 'worker') + ':' + process.env.PATH });
  const w = spawn('bash', ['-c', `${cmd} --work-dir ${workDir} --fake-gpus 1:8 --addr 127.0.0.1 --allowed-root ${s.storage}`], { env, stdio: 'ignore' });
  t.after(() => { try { w.kill('SIGTERM'); } catch (_) { /* gone */ } });
  await open(page, '#/nodes');
  await waitFor('gpu-b1 on the nodes page, ready in plant-b', 120_000, () => page.evaluate(() => {
    const c = document.querySelector('article.node[data-node="gpu-b1"]');
    return c && c.innerText.includes('plant-b') && c.querySelector('.badge[title="ready"]') ? true : null;
  }), 500);
  // The join tokens list: the one the command spent is used up; none shows
  // its text; a spare one is revoked from the page.
  const spare = await admin.call('POST', '/nodes/join-tokens', { uses: 2 });
  await open(page, '#/admin');
  const spareRow = `#admin-join tr[data-key="${spare.id}"]`;
  await page.waitForSelector(spareRow);
  assert.match(await page.locator(spareRow).innerText(), /0\/2/);
  const listed = await page.locator('#admin-join').innerText();
  assert.ok(!listed.includes(spare.token), 'the list shows no token text');
  const tokens = (await admin.call('GET', '/nodes/join-tokens')).join_tokens;
  assert.ok(tokens.some((x) => x.state === 'used_up'), 'the command spent its token');
  page.once('dialog', (d) => d.accept());
  await page.click(`${spareRow} button.danger`);
  await waitFor('the spare token revoked', 15_000, async () =>
    (await admin.call('GET', '/nodes/join-tokens')).join_tokens.find((x) => x.id === spare.id).state === 'revoked' || null);
  await page.waitForSelector(`${spareRow}.row-muted`);
  assert.equal(await page.locator(`${spareRow} button.danger`).count(), 0);
  await page.screenshot({ path: path.join(SHOTS, 'admin-roles-join-tokens.png'), fullPage: true });
  await open(page, '#/nodes');
  // The admin drains it from the page and undrains it again.
  page.once('dialog', (d) => d.accept());
  await page.click('article.node[data-node="gpu-b1"] [data-action="drain"]');
  await page.waitForSelector('article.node[data-node="gpu-b1"] [data-action="undrain"]');
  await page.click('article.node[data-node="gpu-b1"] [data-action="undrain"]');
  await page.waitForSelector('article.node[data-node="gpu-b1"] [data-action="drain"]');

  // 3. A confidential job's output; ada asks for it, admin approves it.
  const data = path.join(s.storage, 'secret-data');
  fs.mkdirSync(data, { recursive: true });
  await admin.call('POST', '/datasets', { name: 'secret-data', uri: data, site: 'default', classification: 'confidential', team: 'default' });
  const job = await admin.call('POST', '/jobs', { name: 'writes-model', team: 'default', command: ['/bin/sh', '-c', 'echo weights > "$TRAINYARD_OUTPUT_DIR/model.txt"'],
    resources: { gpus: 1 }, datasets: ['secret-data'], max_restarts: 0 });
  const done = await waitFor('the job to end', JOB_MS, async () => {
    const j = await admin.call('GET', '/jobs/' + job.id);
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
  }, 1000);
  assert.equal(done.state, 'SUCCEEDED', `job ended ${done.state}: ${done.reason}`);
  assert.equal(done.classification, 'confidential');
  const ada = await rest(s.base, 'ada', 'pw-ada-0123456789');
  const req = await ada.call('POST', `/jobs/${job.id}/exports`, { path: 'model.txt', reason: 'ship to plant-b' });
  assert.equal(req.state, 'pending');

  // ada's own view: the request, no approve or deny, a withdraw.
  {
    const p2 = await newPage(s, { lang: 'en' });
    await signIn(p2, s.base, 'ada', 'pw-ada-0123456789');
    await open(p2, '#/admin');
    const row = p2.locator(`#admin-exports tr[data-key="${req.id}"]`);
    await row.waitFor();
    assert.equal(await row.locator('[data-action="approve"]').count(), 0, 'an admin may approve their own request');
    assert.equal(await row.locator('[data-action="withdraw"]').count(), 1);
    assert.match(await row.innerText(), /another admin must decide/);
    assert.deepEqual(p2.problems, []);
    await p2.context().close();
  }
  await open(page, '#/admin');
  const row = page.locator(`#admin-exports tr[data-key="${req.id}"]`);
  await row.waitFor();
  await row.locator(`#note-${req.id}`).fill('ok for plant-b');
  await row.locator('[data-action="approve"]').click();
  const link = (await page.locator('#export-link').innerText()).trim();
  assert.match(link, /\/api\/v1\/exports\/download\/\S+$/);
  // Decided, it leaves the pending list; the list of all shows it approved.
  await row.waitFor({ state: 'detached' });
  await page.selectOption('#e-state', '');
  await waitFor('the request to show approved', 20_000, () => row.count().then((n) => n && row.innerText()).then((x) => x && /已批准/.test(x)));
  await page.screenshot({ path: path.join(SHOTS, 'admin-roles-export-approved.png'), fullPage: true });
  const after = await admin.call('GET', '/exports/' + req.id);
  assert.equal(after.state, 'approved');
  assert.equal(after.decided_by, 'admin');
  assert.equal(after.note, 'ok for plant-b');
  const got = await fetch(link);
  assert.equal(got.status, 200);
  assert.equal((await got.text()).trim(), 'weights');
  assert.deepEqual(page.problems, [], 'the admin\'s browser reported errors');
});
