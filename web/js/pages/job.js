// job.js - one job: state, allocations, events, cancel, logs per rank (paged
// read, then followed live with EventSource) and the loss curve.
import { get, post, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox, poll, table, row, section, TERMINAL } from '../ui.js';
import { lineChart } from '../chart.js';

const MAX_LINES = 5000; // per rank kept in the page

export function render(main, ctx) {
  const id = ctx.params[0];
  const base = '/jobs/' + id;
  let job = null, es = null, lastLogId = 0, lastMetricId = 0, ended = false;
  const metrics = [];           // rows as the API returns them
  const ranks = new Map();      // rank -> {pre, lines}
  let shownRank = null;

  const msg = h('div');
  const head = h('div', { class: 'page-head' }, h('h1', null, t('job.title', { id })));
  const summary = h('div');
  const allocBox = h('div');
  const eventsBox = h('div');
  const chartBox = h('div', { class: 'chart-box' });
  const latestBox = h('div', { class: 'kv small' });
  const rankSel = h('select', { id: 'rank-select' });
  const logStatus = h('span', { class: 'muted small' });
  const logHolder = h('div', { class: 'log-holder' });
  const cancelBtn = h('button', { type: 'button', class: 'danger' }, t('job.cancel'));

  cancelBtn.addEventListener('click', async () => {
    if (!window.confirm(t('job.cancel_confirm', { id }))) return;
    cancelBtn.disabled = true;
    try {
      job = Object.assign(job || {}, await post(base + '/cancel'));
      replace(msg);
      drawJob();
    } catch (e) { replace(msg, errorBox(e)); cancelBtn.disabled = false; }
  });

  function kv(label, value) { return [h('dt', null, label), h('dd', null, value ?? '')]; }

  function drawJob() {
    const j = job;
    replace(head, h('h1', null, t('job.title', { id }), ' · ', j.name), h('div', { class: 'spacer' }),
      stateBadge(j.state), ctx.me.role !== 'auditor' ? cancelBtn : null);
    cancelBtn.disabled = cancelBtn.hidden = TERMINAL.includes(j.state);
    replace(summary, h('dl', { class: 'kv' },
      kv(t('jobs.team'), j.team), kv(t('jobs.user'), j.user),
      kv(t('jobs.state'), stateBadge(j.state)), kv(t('job.reason'), j.reason || '—'),
      kv(t('job.attempt'), j.attempt), kv(t('jobs.restarts'), `${j.restarts ?? 0} / ${j.max_restarts ?? 0}`),
      kv(t('jobs.gpus'), j.gpus_per_node ? `${j.gpus} (${t('job.per_node', { n: j.gpus_per_node })})` : j.gpus),
      kv(t('submit.priority'), t('prio.' + j.priority)),
      kv(t('jobs.created'), fmtTime(j.created_at)), kv(t('job.started'), fmtTime(j.started_at) || '—'),
      kv(t('job.finished'), fmtTime(j.finished_at) || '—'),
      kv(t('submit.command'), h('code', { class: 'wrap' }, j.spec && Array.isArray(j.spec.command) ? j.spec.command.join(' ') : ''))));
    const allocs = j.allocations || [];
    replace(allocBox, table([t('job.node'), t('job.node_rank'), t('job.gpu_indices'), t('job.rank_start')],
      allocs.map((a) => row([a.node, a.node_rank, (a.gpu_indices || []).join(', '), a.rank_start])),
      { empty: t('job.no_alloc') }));
  }

  async function loadJob() {
    job = await get(base);
    drawJob();
    const ev = await get(base + '/events');
    replace(eventsBox, table([t('job.time'), t('job.from'), t('job.to'), t('job.reason'), t('job.actor')],
      (ev.events || []).map((e) => row([h('span', { class: 'nowrap' }, fmtTime(e.ts)), e.from_state ? stateBadge(e.from_state) : '—',
        stateBadge(e.to_state), e.reason || '', e.actor || '']))));
  }

  async function loadMetrics() {
    const r = await get(base + '/metrics' + qs({ after: lastMetricId || '', limit: 20000 }));
    for (const m of r.metrics || []) { metrics.push(m); lastMetricId = Math.max(lastMetricId, Number(m.id) || 0); }
    drawMetrics();
  }

  function drawMetrics() {
    // Loss per step; with several ranks reporting, the lowest rank wins; a
    // later attempt overwrites an earlier one at the same step.
    const byStep = new Map();
    const latest = {};
    let minRank = Infinity;
    for (const m of metrics) if (m.values && typeof m.values.loss === 'number') minRank = Math.min(minRank, m.rank ?? 0);
    for (const m of metrics) {
      const v = m.values || {};
      for (const [k, x] of Object.entries(v)) if (typeof x === 'number') latest[k] = x;
      if (typeof v.loss === 'number' && (m.rank ?? 0) === minRank && typeof m.step === 'number') byStep.set(m.step, v.loss);
    }
    const pts = [...byStep.entries()].sort((a, b) => a[0] - b[0]);
    if (!pts.length) replace(chartBox, h('p', { class: 'muted' }, t('job.no_metrics')));
    else replace(chartBox, lineChart(pts, { xLabel: t('job.step'), yLabel: 'loss' }));
    replace(latestBox, Object.entries(latest).map(([k, v]) =>
      h('span', { class: 'pill' }, k + ' = ' + (Number.isInteger(v) ? v : Number(v.toPrecision(5))))));
  }

  function rankBox(rank) {
    if (!ranks.has(rank)) {
      const pre = h('pre', { class: 'log', hidden: true });
      ranks.set(rank, { pre, lines: 0 });
      logHolder.append(pre);
      const opts = [...ranks.keys()].sort((a, b) => a - b);
      const cur = shownRank;
      replace(rankSel, opts.map((r) => h('option', { value: r }, t('job.rank', { n: r }))));
      if (cur === null) showRank(rank); else rankSel.value = String(cur);
    }
    return ranks.get(rank);
  }

  function showRank(rank) {
    shownRank = rank;
    rankSel.value = String(rank);
    for (const [r, b] of ranks) b.pre.hidden = r !== rank;
    const b = ranks.get(rank);
    if (b) b.pre.scrollTop = b.pre.scrollHeight;
  }
  rankSel.addEventListener('change', () => showRank(Number(rankSel.value)));

  function addLine(l) {
    const idn = Number(l.id) || 0;
    if (idn && idn <= lastLogId) return;
    if (idn) lastLogId = idn;
    const b = rankBox(Number(l.rank) || 0);
    const pre = b.pre;
    const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    let text = String(l.text ?? '');
    if (!text.endsWith('\n')) text += '\n';
    if (l.stream === 'stderr') pre.append(h('span', { class: 'stderr' }, text));
    else pre.append(document.createTextNode(text));
    if (++b.lines > MAX_LINES) { pre.removeChild(pre.firstChild); b.lines--; }
    if (atBottom && !pre.hidden) pre.scrollTop = pre.scrollHeight;
  }

  async function loadLogs() {
    try {
      const r = await get(base + '/logs' + qs({ limit: 1000 }));
      for (const l of r.logs || []) addLine(l);
      if (!ranks.size) replace(logStatus, t('job.no_logs'));
    } catch (e) { replace(logStatus, e.message); }
    follow();
  }

  function follow() {
    if (ended) return;
    es = new EventSource('/api/v1' + base + '/logs' + qs({ follow: 1, after: lastLogId || '' }));
    es.addEventListener('open', () => replace(logStatus, t('job.following')));
    es.addEventListener('log', (ev) => {
      try { addLine(JSON.parse(ev.data)); replace(logStatus, t('job.following')); } catch (_) { /* skip a bad event */ }
    });
    es.addEventListener('end', (ev) => {
      ended = true;
      let st = '';
      try { st = JSON.parse(ev.data).state; } catch (_) { /* none */ }
      replace(logStatus, t('job.log_end', { state: st }));
      es.close();
    });
    es.addEventListener('error', () => { if (!ended) replace(logStatus, t('job.reconnecting')); });
  }

  main.append(head, msg,
    h('div', { class: 'grid2' },
      section(t('job.summary'), summary),
      section(t('job.allocations'), allocBox)),
    section(t('job.loss'), chartBox, latestBox),
    section(t('job.logs'),
      h('div', { class: 'toolbar' }, h('label', { for: 'rank-select', class: 'inline' }, t('job.rank_select')), rankSel, logStatus),
      logHolder),
    section(t('job.events'), eventsBox));

  let stopPoll = null;
  loadJob().then(() => {
    loadLogs();
    stopPoll = poll(async () => {
      const wasTerminal = job && TERMINAL.includes(job.state);
      try {
        await loadJob();
        await loadMetrics();
        replace(msg);
      } catch (e) { replace(msg, errorBox(e)); }
      if (wasTerminal && stopPoll) stopPoll(); // one last read after the end
    }, 3000);
  }).catch((e) => replace(msg, errorBox(e)));

  return () => { if (stopPoll) stopPoll(); if (es) es.close(); };
}
