// test_chat_widget.mjs - the public chat widget as a visitor meets it, in
// real Chromium on a fresh `make run` style start (lib.mjs): a ddp-mlp-demo
// job trained and its output deployed with examples/serve_echo.py, the
// widget enabled for a host page that this test serves on another origin.
// At 1280 and 390 px, in zh-CN: the host page embeds widget.js, the button
// opens the chat, the greeting and suggested questions show, a suggested
// question is answered (streamed from the gateway), asking for 人工 shows
// that a person will follow up and a local receiver gets the WeCom-format
// message with the conversation; no console error. In English, with the
// deployment stopped, the failure is one friendly English sentence. A host
// on an origin the widget does not allow cannot frame the page. Screenshots in
// build/web-screenshots/chat-widget-*.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { JOB_MS, SHOTS, freePort, newPage, startStack, waitFor } from './lib.mjs';
import { rest } from './admin_stack.mjs';

function serve(handler) {
  return new Promise((resolve) => {
    const s = http.createServer(handler);
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

test('the chat widget on another site: greeting, streamed answer, handoff, framing', { timeout: 840_000 }, async (t) => {
  const stack = await startStack(t, 'chat-widget');
  const admin = await rest(stack.base, 'admin', stack.password);

  // The receiver of the handoff webhook, and the company's own site.
  const got = [];
  const receiver = await serve((req, res) => {
    let body = '';
    req.on('data', (b) => { body += b; });
    req.on('end', () => { got.push(JSON.parse(body)); res.end('ok'); });
  });
  t.after(() => receiver.close());
  const hostPort = await freePort();
  const hostPage = (lang) => `<!doctype html><html lang="${lang}"><head><meta charset="utf-8">
<title>示例商店</title></head><body style="font-family:'Noto Sans CJK SC',sans-serif">
<h1>示例商店 Example shop</h1><p>欢迎光临。</p>
<script src="${stack.base}chat/helpdesk/widget.js" defer></script></body></html>`;
  const site = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(hostPage('zh-CN'));
  });
  await new Promise((r) => site.listen(hostPort, '127.0.0.1', r));
  t.after(() => site.close());
  const origin = `http://127.0.0.1:${hostPort}`;

  // A model to serve: a tiny training run, registered and deployed.
  const team = (await admin.call('GET', '/teams')).teams[0].name;
  const job = await admin.call('POST', '/jobs', { name: 'tiny', team, template: 'ddp-mlp-demo', params: { steps: 2, checkpoint_every: 2 }, resources: { gpus: 1 } });
  const done = await waitFor('the training job to end', JOB_MS, async () => {
    const j = await admin.call('GET', `/jobs/${job.id}`);
    return ['SUCCEEDED', 'FAILED'].includes(j.state) && j;
  }, 1000);
  assert.equal(done.state, 'SUCCEEDED', stack.logTail('worker.log'));
  await admin.call('POST', '/models/helper/versions', { job_id: job.id, source: 'output' });
  await admin.call('POST', '/deployments', { name: 'helpdesk', model: 'helper', version: 1, replicas: 1 });
  await waitFor('the replica ready', 120_000, async () => (await admin.call('GET', '/deployments/helpdesk')).ready_replicas === 1, 500);
  const hook = await admin.call('POST', '/webhooks', { team, url: `http://127.0.0.1:${receiver.address().port}/hook`, format: 'wecom', events: ['job.failed'] });
  await admin.call('PUT', '/deployments/helpdesk/widget', {
    enabled: true, title: '示例商店 在线客服',
    greeting: { 'zh-CN': '您好！我是示例商店的智能助手，请问有什么可以帮您？', en: 'Hello! How can we help?' },
    suggestions: ['怎么申请退货？', '营业时间是几点？'],
    allowed_origins: [origin],
    handoff: { keywords: ['人工', '转人工', 'human'], webhook_id: hook.id },
  });
  // The gateway's view has the replica once the public key gets an answer.
  const cfg = await (await fetch(stack.base + 'chat/helpdesk/config')).json();
  await waitFor('the gateway to route to the replica', 60_000, async () => (await fetch(stack.base + 'v1/models', { headers: { Authorization: 'Bearer ' + cfg.key } })).ok &&
    (await fetch(stack.base + 'v1/chat/completions', { method: 'POST', headers: { Authorization: 'Bearer ' + cfg.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'helpdesk', messages: [{ role: 'user', content: 'ping' }] }) })).status === 200, 500);

  for (const [w, h] of [[1280, 800], [390, 844]]) {
    const page = await newPage(stack, { viewport: { width: w, height: h } });
    await page.goto(origin + '/');
    await page.click('button[data-trainyard-widget=button]');
    const frame = page.frameLocator('iframe[data-trainyard-widget=frame]');
    await frame.locator('li.bot .bubble', { hasText: '智能助手' }).waitFor({ timeout: 30_000 });
    assert.equal(await frame.locator('#title').textContent(), '示例商店 在线客服');
    await frame.locator('#suggestions button', { hasText: '怎么申请退货？' }).click();
    // serve_echo answers with the question, one character per event.
    await frame.locator('li.bot .bubble', { hasText: /^怎么申请退货？$/ }).waitFor({ timeout: 60_000 });
    await frame.locator('#input').fill('我要转人工');
    await frame.locator('#send').click();
    await frame.locator('li.notice .bubble', { hasText: '人工客服' }).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(SHOTS, `chat-widget-${w}.png`) });
    const received = await waitFor('the handoff message at the receiver', 60_000, () => got.length >= (w === 1280 ? 1 : 2) && got[got.length - 1]);
    assert.equal(received.msgtype, 'text');
    assert.match(received.text.content, /访客请求人工客服/);
    assert.match(received.text.content, /怎么申请退货？[\s\S]*我要转人工/);
    assert.deepEqual(page.problems, []);
    const box = await page.locator('iframe[data-trainyard-widget=frame]').boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= w + 1, `the chat fits the window at ${w} px: ${JSON.stringify(box)}`);
    await page.context().close();
  }

  // A visitor whose browser speaks English, after the deployment stopped:
  // the greeting in English, and the gateway's 503 as one friendly sentence
  // that names nothing internal.
  await admin.call('POST', '/deployments/helpdesk/stop', {});
  await waitFor('the gateway to have no replica', 60_000, async () => (await fetch(stack.base + 'v1/chat/completions', { method: 'POST', headers: { Authorization: 'Bearer ' + cfg.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'helpdesk', messages: [{ role: 'user', content: 'ping' }] }) })).status === 503, 500);
  const ctx = await stack.st.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  const en = await ctx.newPage();
  const problems = [];
  en.on('pageerror', (e) => problems.push('page error: ' + e.message));
  en.on('console', (m) => { if (m.type() === 'error' && !/status of 503/.test(m.text())) problems.push(m.text()); });
  await en.goto(origin + '/');
  assert.equal(await en.textContent('button[data-trainyard-widget=button]'), 'Chat');
  await en.click('button[data-trainyard-widget=button]');
  const ef = en.frameLocator('iframe[data-trainyard-widget=frame]');
  await ef.locator('li.bot .bubble', { hasText: 'Hello! How can we help?' }).waitFor({ timeout: 30_000 });
  assert.equal(await ef.locator('#send').textContent(), 'Send');
  await ef.locator('#input').fill('Where is my order?');
  await ef.locator('#send').click();
  await ef.locator('li.error .bubble', { hasText: 'Sorry, the service is unavailable right now.' }).waitFor({ timeout: 30_000 });
  const shown = await ef.locator('#log').textContent();
  assert.doesNotMatch(shown, /replica|503|helper|version|error/i);
  await en.screenshot({ path: path.join(SHOTS, 'chat-widget-en-unavailable.png') });
  assert.deepEqual(problems, []);
  await ctx.close();

  // An origin the widget does not name cannot frame the page: localhost is
  // another origin than 127.0.0.1 for the browser.
  const other = await newPage(stack);
  await other.goto(`http://localhost:${hostPort}/`);
  await other.click('button[data-trainyard-widget=button]');
  await waitFor('the refused frame', 30_000, () => other.problems.some((p) => /frame-ancestors/.test(p)));
  const inner = other.frames().find((f) => f !== other.mainFrame());
  assert.ok(!inner || !(await inner.$('#log').catch(() => null)), 'the page was framed by an origin it does not allow');
  await other.context().close();

  await stack.stop();
});
