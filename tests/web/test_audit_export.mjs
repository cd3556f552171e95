// test_audit_export.mjs - the audit page as an auditor, in real Chromium
// after a fresh `make run` style start: the auditor pages the
// trail by keyset (older, newer, newest), filters it by action and by actor,
// finds a policy violation highlighted with the word for it, sees the chain
// intact, downloads the export in JSON Lines and in CSV and the public key
// from the page, and the CLI (`trainyard audit verify`) verifies both
// exports with that key offline, and refuses a copy with one byte changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, rest, newPage, signIn, open, waitFor, BUILD, SHOTS } from './admin_stack.mjs';

const ids = (page) => page.$$eval('.audit-table tbody tr[data-key]', (trs) => trs.map((tr) => Number(tr.dataset.key)));

test('an auditor pages, filters and exports the audit trail, and the CLI verifies the export', { timeout: 840_000 }, async (t) => {
  const s = await startStack(t, 'audit-export');
  const admin = await rest(s.base, 'admin', s.password);
  await admin.call('POST', '/users', { username: 'aud', role: 'auditor', password: 'pw-aud-0123456789' });
  // More than two pages of events: 220 API tokens (each a token.create).
  for (let i = 0; i < 220; i++) await admin.call('POST', '/tokens', { name: 'tok-' + i });
  // A policy violation: a dataset path outside the default site's roots.
  const refused = await admin.call('POST', '/jobs', { name: 'outside', team: 'default', command: ['/bin/true'], resources: { gpus: 1 }, datasets: ['/etc'] }, true);
  assert.equal(refused.status, 403);
  const page = await newPage(s, { lang: 'zh-CN' });
  await signIn(page, s.base, 'aud', 'pw-aud-0123456789');
  const nav = await page.$$eval('#nav a', (as) => as.map((a) => a.getAttribute('href')));
  assert.ok(nav.includes('#/audit') && !nav.includes('#/admin'), `an auditor's nav: ${nav}`);
  await open(page, '#/audit');
  await page.waitForSelector('#chain-status [data-valid="true"]');
  await page.waitForSelector('.audit-table tr[data-key]');

  // Keyset pages: 100 each, newest first, no overlap, and back again.
  const p1 = await ids(page);
  assert.equal(p1.length, 100);
  assert.deepEqual(p1, [...p1].sort((a, b) => b - a));
  await page.click('#audit-older');
  await page.waitForFunction((top) => Number(document.querySelector('.audit-table tbody tr[data-key]').dataset.key) < top, p1[99]);
  const p2 = await ids(page);
  assert.equal(p2.length, 100);
  assert.equal(p2[0], p1[99] - 1, 'page 2 starts right below page 1');
  await page.click('#audit-older');
  await page.waitForFunction((top) => Number(document.querySelector('.audit-table tbody tr[data-key]').dataset.key) < top, p2[99]);
  const p3 = await ids(page);
  assert.equal(p3[p3.length - 1], 1, 'the last page ends at the first event');
  assert.equal(await page.isDisabled('#audit-older'), true);
  await page.click('#audit-newer');
  await page.waitForFunction((top) => Number(document.querySelector('.audit-table tbody tr[data-key]').dataset.key) === top, p2[0]);
  await page.click('#audit-first');
  await page.waitForFunction((top) => Number(document.querySelector('.audit-table tbody tr[data-key]').dataset.key) === top, p1[0]);

  // The violation is marked in words, and "violations only" finds just it.
  const v = page.locator('.audit-table tr.row-violation');
  await v.first().waitFor();
  assert.match(await v.first().innerText(), /违规/);
  await page.click('#audit-violations');
  await waitFor('only violations listed', 20_000, () => page.$$eval('.audit-table tbody tr[data-key]', (trs) => trs.length > 0 && trs.every((tr) => tr.classList.contains('row-violation'))));
  // By actor and action.
  await page.selectOption('#a-action', 'token.');
  await page.fill('#a-actor', 'user:admin');
  await page.click('form.filters button[type=submit]');
  await waitFor('only token events of the admin', 20_000, () => page.$$eval('.audit-table tbody tr[data-key]', (trs) =>
    trs.length === 100 && trs.every((tr) => /user:admin/.test(tr.children[2].textContent) && /创建令牌/.test(tr.children[3].textContent))));
  await page.screenshot({ path: path.join(SHOTS, 'audit-export-filtered.png'), fullPage: true });
  await page.click('form.filters button[type=reset]');

  // Export both formats and the key from the page; verify them offline.
  const dir = fs.mkdtempSync(path.join(s.varDir, 'offline-'));
  const save = async (click, name) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), click()]);
    const f = path.join(dir, name);
    await dl.saveAs(f);
    return f;
  };
  const key = await save(() => page.click('#audit-key'), 'audit-public-key.json');
  assert.equal(JSON.parse(fs.readFileSync(key, 'utf8')).algorithm, 'ed25519');
  const cli = path.join(BUILD, 'cli/trainyard');
  for (const fmt of ['jsonl', 'csv']) {
    await page.selectOption('#x-format', fmt);
    assert.match(await page.locator('#verify-command').innerText(), new RegExp(`trainyard audit verify audit-export\\.${fmt} --public-key audit-public-key\\.json`));
    const f = await save(() => page.click('#audit-export-link'), 'audit-export.' + fmt);
    const text = fs.readFileSync(f, 'utf8');
    assert.ok(text.split('\n').length > 220, `the ${fmt} export is short`);
    const ok = spawnSync(cli, ['audit', 'verify', f, '--public-key', key], { encoding: 'utf8' });
    assert.equal(ok.status, 0, `trainyard audit verify ${fmt}: ${ok.stdout}${ok.stderr}`);
    // One byte changed in an event: refused.
    const bad = f + '.bad';
    fs.writeFileSync(bad, text.replace('tok-17', 'tok-18'));
    const no = spawnSync(cli, ['audit', 'verify', bad, '--public-key', key], { encoding: 'utf8' });
    assert.notEqual(no.status, 0, `a changed ${fmt} export verified: ${no.stdout}`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'audit-export-page.png'), fullPage: true });
  assert.deepEqual(page.problems, [], 'the browser reported errors');
});
