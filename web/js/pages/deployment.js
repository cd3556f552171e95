// deployment.js - #/deployments/{name}: one deployment (docs/serving.md).
//   header: state, stop / start;
//   summary: model and version, team, site, GPUs per replica, replicas;
//   replicas: each replica's job (linked), its state, ready or not, node,
//           version and restarts;
//   version split: the share of the main version and the canary's, a
//           slider that sets the canary's weight (PATCH canary_weight, with
//           the canary version picked beside it), "roll back" (weight 0,
//           after a confirm);
//   lineage: dataset -> job -> output/checkpoint -> model version ->
//           this deployment;
//   traffic: requests, errors and latency per minute over the last hour
//           (GET /deployments/{name}/stats, ECharts);
//   keys: create (the secret shown once, with copy), revoke, usage per key;
//           admins download the usage per key and day as CSV;
//   chat: talks to the deployment through the gateway
//           (/v1/chat/completions, stream: true), the answer drawn as its
//           pieces arrive. It uses a key of its own, "dashboard-<user>",
//           made on first use; its secret stays in this tab's
//           sessionStorage only (never localStorage), as the page says.
// The deployment is polled every 3 s, keys every 10 s, traffic every 15 s.
import { api, get, post, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t, fmtNum } from '../i18n.js';
import { errorBox, liveTable, section } from '../ui.js';
import { lineageChain, minuteChart, versionLabel, chatStream, gatewayErrorText, GatewayError } from '../serving.js';
import { badge, copyButton } from './admin_kit.js';
import { depState, versionText } from './deployments.js';

export function render(main, ctx) {
  const name = ctx.params.name;
  const base = '/deployments/' + encodeURIComponent(name);
  const canAct = ctx.me.role !== 'auditor';
  const isAdmin = ctx.me.role === 'admin';
  let dep = null, versions = null, lineageKey = '';

  // ---- header
  const stateEl = h('span', { id: 'dep-state', 'aria-live': 'polite' });
  const msg = h('div');
  const stopBtn = h('button', { type: 'button', class: 'danger', id: 'dep-stop', hidden: true }, t('deployment.stop'));
  const startBtn = h('button', { type: 'button', id: 'dep-start', hidden: true }, t('deployment.start'));
  stopBtn.addEventListener('click', async () => {
    if (!window.confirm(t('deployment.stop_confirm', { name }))) return;
    stopBtn.disabled = true;
    try { await post(base + '/stop'); replace(msg); await refresh(); } catch (e) { replace(msg, errorBox(e)); }
    stopBtn.disabled = false;
  });
  startBtn.addEventListener('click', async () => {
    startBtn.disabled = true;
    try { await post(base + '/start'); replace(msg); await refresh(); } catch (e) { replace(msg, errorBox(e)); }
    startBtn.disabled = false;
  });

  // ---- summary
  const summary = h('dl', { class: 'kv' });
  const kv = (k, v) => [h('dt', null, k), h('dd', null, v ?? '—')];
  function drawSummary() {
    const d = dep;
    replace(summary,
      kv(t('deployments.model'), h('a', { href: '#/models/' + encodeURIComponent(d.model) }, d.model)),
      kv(t('deployments.version'), versionText(d)),
      kv(t('deployments.team'), d.team), kv(t('deployment.site'), d.site),
      kv(t('deployment.gpus'), fmtNum(d.gpus_per_replica, 0)),
      kv(t('deployments.replicas'), t('deployment.replicas_range', { ready: d.ready_replicas ?? 0, n: d.replicas, min: d.min_replicas, max: d.max_replicas })),
      kv(t('deployment.engine'), d.engine), kv(t('deployments.created'), fmtTime(d.created_at)));
  }

  // ---- replicas
  const repTb = liveTable({
    caption: t('deployment.replicas'), key: (r) => r.job_id, empty: t('deployment.no_replicas'), class: 'replicas',
    columns: [
      { label: t('deployment.replica_job'), cell: (r) => h('a', { href: '#/jobs/' + encodeURIComponent(r.job_id) }, `#${r.job_id} ${r.name || ''}`), sig: (r) => r.job_id + r.name },
      { label: t('deployment.replica_state'), cell: (r) => stateBadge(r.state), sig: (r) => r.state },
      { label: t('deployment.replica_ready'), sig: (r) => String(!!r.ready),
        cell: (r) => h('span', { class: 'replica-ready', 'data-ready': String(!!r.ready) }, r.ready ? badge('ok', t('deployment.ready')) : badge('warn', t('deployment.not_ready'))) },
      { label: t('deployment.node'), cell: (r) => r.node || '—' },
      { label: t('deployments.version'), cell: (r) => versionLabel(r.version) },
      { label: t('deployment.restarts'), cell: (r) => fmtNum(r.restarts ?? 0, 0), class: 'num' },
    ],
  });

  // ---- version split and canary
  const splitBar = h('div', { class: 'split', id: 'version-split', role: 'img' });
  const canarySel = h('select', { id: 'canary-version' });
  const slider = h('input', { type: 'range', id: 'canary-weight', min: 0, max: 100, step: 5, value: 0 });
  const sliderOut = h('output', { for: 'canary-weight', id: 'canary-weight-out' }, '0 %');
  const rollback = h('button', { type: 'button', class: 'danger', id: 'canary-rollback', hidden: true }, t('deployment.rollback'));
  const canaryMsg = h('div', { id: 'canary-msg' });
  const canaryForm = h('div', { class: 'canary' },
    h('div', { class: 'field' }, h('label', { for: 'canary-version' }, t('deployment.canary_version')), canarySel),
    h('div', { class: 'field' }, h('label', { for: 'canary-weight' }, t('deployment.canary_weight')),
      h('div', { class: 'slider-row' }, slider, sliderOut)),
    h('div', { class: 'actions' }, rollback), canaryMsg);
  let sliding = false;
  function drawSplit() {
    const d = dep;
    const w = d.canary_version ? d.canary_weight : 0;
    const mainLabel = t('deployment.split_main', { v: versionLabel(d.version ?? '?'), pct: 100 - w });
    const segs = [h('div', { class: 'split-main', style: `flex:${100 - w}` }, mainLabel)];
    if (w > 0) segs.push(h('div', { class: 'split-canary', style: `flex:${w}` }, t('deployment.split_canary', { v: versionLabel(d.canary_version), pct: w })));
    splitBar.setAttribute('aria-label', segs.map((s) => s.textContent).join(', '));
    if (splitBar.dataset.sig !== `${d.version}/${d.canary_version}/${w}`) { splitBar.dataset.sig = `${d.version}/${d.canary_version}/${w}`; replace(splitBar, segs); }
    if (!sliding && document.activeElement !== slider) { slider.value = String(w); replace(sliderOut, w + ' %'); }
    rollback.hidden = !canAct || w <= 0;
    canaryForm.hidden = !canAct;
    drawCanaryVersions();
  }
  function drawCanaryVersions() {
    if (!versions || !dep) return;
    const others = versions.filter((v) => v.version !== dep.version);
    const want = String(dep.canary_version ?? canarySel.value ?? '');
    const sig = others.map((v) => v.version).join(',') + '|' + want;
    if (canarySel.dataset.sig === sig) return;
    canarySel.dataset.sig = sig;
    replace(canarySel, others.length ? others.map((v) => h('option', { value: v.version }, versionLabel(v.version))) : h('option', { value: '' }, t('deployment.no_other_version')));
    if (others.some((v) => String(v.version) === want)) canarySel.value = want;
    slider.disabled = !others.length;
  }
  async function setCanary(weight) {
    const body = { canary_weight: weight };
    if (weight > 0 || dep.canary_version) body.canary_version = Number(canarySel.value || dep.canary_version);
    if (weight > 0 && !body.canary_version) return;
    slider.disabled = true;
    try {
      await api('PATCH', base, body);
      replace(canaryMsg, h('p', { class: 'muted small', role: 'status' }, t('deployment.canary_set', { pct: weight })));
      await refresh();
    } catch (e) { replace(canaryMsg, errorBox(e)); if (dep) { slider.value = String(dep.canary_weight || 0); replace(sliderOut, slider.value + ' %'); } }
    slider.disabled = false;
  }
  slider.addEventListener('input', () => { sliding = true; replace(sliderOut, slider.value + ' %'); });
  slider.addEventListener('change', async () => { sliding = false; await setCanary(Number(slider.value)); });
  canarySel.addEventListener('change', () => { if (dep && dep.canary_weight > 0) setCanary(Number(slider.value)); });
  rollback.addEventListener('click', async () => {
    if (!window.confirm(t('deployment.rollback_confirm', { v: versionLabel(dep.version ?? '?') }))) return;
    rollback.disabled = true;
    await setCanary(0);
    rollback.disabled = false;
  });

  // ---- lineage
  const lineageBox = h('div', { id: 'dep-lineage' }, h('p', { class: 'muted' }, t('common.loading')));
  async function drawLineage() {
    const key = `${dep.model}/${dep.version}`;
    if (key === lineageKey || !dep.version) return;
    lineageKey = key;
    try {
      const v = await get('/models/' + encodeURIComponent(dep.model) + '/versions/' + dep.version);
      if (!ctx.left) replace(lineageBox, lineageChain(dep.model, v, name));
    } catch (e) { lineageKey = ''; if (!ctx.left) replace(lineageBox, errorBox(e)); }
  }
  async function loadVersions() {
    try {
      const m = await get('/models/' + encodeURIComponent(dep.model) + qs({ limit: 100 }));
      if (ctx.left) return;
      versions = m.versions || [];
      drawCanaryVersions();
    } catch (_) { /* the slider stays without choices; the page shows the rest */ }
  }

  // ---- traffic
  const chartEls = ['requests', 'errors', 'latency'].map((k) => h('div', { class: 'chart-box', id: 'dep-chart-' + k }));
  const trafficMsg = h('div');
  const charts = [
    minuteChart(chartEls[0], { name: 'serve-requests', label: t('deployment.chart_requests'), empty: t('deployment.no_traffic'), integer: true, unit: t('deployment.per_min'),
      series: [{ key: 'requests', name: t('deployment.requests') }] }),
    minuteChart(chartEls[1], { name: 'serve-errors', label: t('deployment.chart_errors'), empty: t('deployment.no_traffic'), integer: true, unit: t('deployment.per_min'),
      series: [{ key: 'errors', name: t('deployment.errors') }] }),
    minuteChart(chartEls[2], { name: 'serve-latency', label: t('deployment.chart_latency'), empty: t('deployment.no_traffic'), unit: 'ms',
      series: [{ key: 'p50_latency_us', name: 'p50', scale: 0.001 }, { key: 'p99_latency_us', name: 'p99', scale: 0.001 }] }),
  ];
  ctx.onLeave(() => charts.forEach((c) => c.dispose()));
  async function loadStats() {
    try {
      const r = await get(base + '/stats' + qs({ minutes: 60 }));
      if (ctx.left) return;
      charts.forEach((c) => c.update(r.series || []));
      replace(trafficMsg);
    } catch (e) { if (!ctx.left) replace(trafficMsg, errorBox(e)); }
  }

  // ---- keys
  const keyName = h('input', { id: 'key-name', maxlength: 64, autocomplete: 'off' });
  const keyBtn = h('button', { type: 'submit' }, t('deployment.key_create'));
  const keyMsg = h('div', { id: 'key-msg' });
  const keyForm = h('form', { class: 'inline-form' }, h('label', { for: 'key-name' }, t('deployment.key_name')), keyName, keyBtn);
  const keyTb = liveTable({
    caption: t('deployment.keys'), key: (k) => k.id, empty: t('deployment.no_keys'), class: 'keys',
    columns: [
      { label: t('deployment.key_name'), cell: (k) => k.name },
      { label: t('deployment.key_prefix'), cell: (k) => h('code', null, (k.prefix || '') + '…'), sig: (k) => k.prefix },
      { label: t('deployment.key_state'), cell: (k) => (k.revoked_at ? badge('muted', t('deployment.key_revoked')) : badge('ok', t('deployment.key_active'))), sig: (k) => k.revoked_at || '' },
      { label: t('deployment.requests'), cell: (k) => fmtNum(k.requests ?? 0, 0), class: 'num' },
      { label: t('deployment.errors'), cell: (k) => fmtNum(k.errors ?? 0, 0), class: 'num' },
      { label: t('deployment.tokens'), cell: (k) => fmtNum((Number(k.prompt_tokens) || 0) + (Number(k.completion_tokens) || 0), 0), class: 'num' },
      { label: t('deployment.key_by'), cell: (k) => h('span', null, k.created_by || '', h('br'), h('span', { class: 'muted small' }, fmtTime(k.created_at))), sig: (k) => k.created_by + k.created_at },
      { label: '', sig: (k) => String(!!k.revoked_at), cell: (k) => {
        if (k.revoked_at || !canAct) return '';
        const b = h('button', { type: 'button', class: 'danger small-btn', 'aria-label': t('deployment.key_revoke_named', { name: k.name }) }, t('deployment.key_revoke'));
        b.addEventListener('click', async () => {
          if (!window.confirm(t('deployment.key_revoke_confirm', { name: k.name }))) return;
          b.disabled = true;
          try { await api('DELETE', base + '/keys/' + encodeURIComponent(k.id)); replace(keyMsg); await loadKeys(); } catch (e) { replace(keyMsg, errorBox(e)); b.disabled = false; }
        });
        return b;
      } },
    ],
  });
  keyForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    keyBtn.disabled = true;
    try {
      const k = await post(base + '/keys', { name: keyName.value.trim() || 'key' });
      keyName.value = '';
      const secret = h('code', { class: 'wrap', id: 'key-secret' }, k.secret);
      replace(keyMsg, h('div', { class: 'alert ok', role: 'status' },
        h('p', null, t('deployment.key_once', { name: k.name })), h('p', null, secret, ' ', copyButton(() => k.secret, t('deployment.key_copy')))));
      await loadKeys();
    } catch (e) { replace(keyMsg, errorBox(e)); }
    keyBtn.disabled = false;
  });
  async function loadKeys() {
    if (!canAct) return;
    try {
      const r = await get(base + '/keys');
      if (!ctx.left) keyTb.update(r.keys || []);
    } catch (e) { if (!ctx.left) replace(keyMsg, errorBox(e)); }
  }
  const usageLink = isAdmin ? h('a', { class: 'button', id: 'usage-csv', href: '/api/v1' + base + '/usage?format=csv', download: `usage-${name}.csv` }, t('deployment.usage_csv')) : null;

  // ---- chat
  const KEY_SLOT = 'ty.chat.' + name; // sessionStorage only: gone with the tab
  const chatLog = h('div', { class: 'chat-log', id: 'chat-log', 'aria-live': 'polite', role: 'log', tabindex: 0, 'aria-label': t('chat.log') });
  const chatIn = h('textarea', { id: 'chat-input', rows: 2, placeholder: t('chat.placeholder') });
  const chatBtn = h('button', { type: 'submit', class: 'primary', id: 'chat-send' }, t('chat.send'));
  const chatStop = h('button', { type: 'button', id: 'chat-stop', hidden: true }, t('chat.stop'));
  const chatMsg = h('div', { id: 'chat-msg' });
  const chatForm = h('form', { class: 'chat-form' }, h('label', { for: 'chat-input', class: 'sr-only' }, t('chat.input')), chatIn, h('div', { class: 'actions' }, chatBtn, chatStop));
  const history = [];
  let abort = null;
  ctx.onLeave(() => { if (abort) abort.abort(); });
  async function chatKey(fresh) {
    let k = fresh ? '' : sessionStorage.getItem(KEY_SLOT);
    if (k) return k;
    const made = await post(base + '/keys', { name: 'dashboard-' + ctx.me.username });
    sessionStorage.setItem(KEY_SLOT, made.secret);
    loadKeys();
    return made.secret;
  }
  chatIn.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); chatForm.requestSubmit(); } });
  chatStop.addEventListener('click', () => { if (abort) abort.abort(); });
  chatForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const text = chatIn.value.trim();
    if (!text || abort) return;
    chatIn.value = '';
    replace(chatMsg);
    history.push({ role: 'user', content: text });
    chatLog.append(h('div', { class: 'chat-msg chat-user' }, h('span', { class: 'sr-only' }, t('chat.you')), text));
    const answer = h('div', { class: 'chat-msg chat-bot', 'data-done': 'false' }, h('span', { class: 'sr-only' }, t('chat.bot')));
    const answerText = h('span', { class: 'chat-text' });
    answer.append(answerText);
    chatLog.append(answer);
    chatBtn.disabled = true;
    chatStop.hidden = false;
    abort = new AbortController();
    let got = '';
    const onDelta = (s) => { got += s; answerText.append(s); chatLog.scrollTop = chatLog.scrollHeight; };
    try {
      let key = await chatKey(false);
      try { await chatStream(key, name, history, onDelta, abort.signal); }
      catch (e) {
        // A key revoked (or made in another tab's session): one new key, once.
        if (e.code !== 'invalid_api_key' || got) throw e;
        sessionStorage.removeItem(KEY_SLOT);
        key = await chatKey(true);
        await chatStream(key, name, history, onDelta, abort.signal);
      }
      history.push({ role: 'assistant', content: got });
    } catch (e) {
      history.pop();
      if (e.name === 'AbortError') answer.append(h('span', { class: 'muted small' }, ' ' + t('chat.stopped')));
      else replace(chatMsg, e instanceof GatewayError ? h('div', { class: 'alert error', role: 'alert', 'data-code': e.code || '' }, gatewayErrorText(e)) : errorBox(e));
    } finally {
      answer.dataset.done = 'true';
      abort = null;
      chatBtn.disabled = false;
      chatStop.hidden = true;
    }
  });

  // ---- polling
  async function refresh() {
    try {
      const d = await get(base);
      if (ctx.left) return;
      dep = d;
      replace(stateEl, depState(d));
      stopBtn.hidden = !canAct || d.state !== 'active';
      startBtn.hidden = !canAct || d.state === 'active';
      drawSummary();
      repTb.update(d.replicas_detail || d.replica_list || []);
      drawSplit();
      drawLineage();
      replace(msg);
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
  }

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, t('deployment.title', { name })), stateEl, h('div', { class: 'spacer' }), startBtn, stopBtn),
    msg,
    h('div', { class: 'grid2' }, section(t('deployment.summary'), summary), section(t('deployment.split'), splitBar, canaryForm)),
    section(t('deployment.replicas'), repTb.el),
    section(t('serve.lineage'), lineageBox),
    section(t('deployment.traffic'), trafficMsg, h('div', { class: 'grid3 charts' }, chartEls.map((el, i) =>
      h('div', null, h('h3', null, [t('deployment.chart_requests'), t('deployment.chart_errors'), t('deployment.chart_latency')][i]), el)))),
    h('div', { class: 'grid2' },
      canAct ? section(t('chat.title'), chatLog, chatForm, chatMsg, h('p', { class: 'muted small', id: 'chat-note' }, t('chat.key_note', { name: 'dashboard-' + ctx.me.username }))) : null,
      canAct ? section(t('deployment.keys'), keyForm, keyMsg, keyTb.el, usageLink ? h('div', { class: 'foot' }, usageLink) : null) : null));

  refresh().then(async () => {
    if (ctx.left) return;
    ctx.loaded();
    if (!dep) return;
    ctx.poll(refresh, 3000);
    // A version registered since (a canary to be) shows within 5 s.
    ctx.poll(() => Promise.all([loadKeys(), loadVersions()]), 5000);
    ctx.poll(loadStats, 15000);
  });
}
