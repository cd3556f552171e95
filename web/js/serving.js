// serving.js - what the models, deployments and deploy pieces share
// (docs/serving.md): name rules, digests, the lineage chain, per-minute
// charts, and the chat call through the gateway.
import { get, qs } from './api.js';
import { h, replace } from './dom.js';
import { errorBox } from './ui.js';
import { t, has, fmtNum } from './i18n.js';
import { loadECharts } from './chart.js';

// Model and deployment names: [a-z0-9][a-z0-9._-]{0,62} (sql/023_serving.sql).
export const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;

// A name the rule accepts, made from free text (a template id, a job name).
export function toName(s, fallback) {
  const n = String(s || '').toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 63).replace(/[-._]+$/, '');
  return NAME_RE.test(n) ? n : fallback;
}

// A SHA-256 shown short, whole in its title (and copied whole).
export function digest(hex) {
  const s = String(hex || '');
  if (!s) return h('span', { class: 'muted' }, '—');
  return h('code', { class: 'digest', title: s }, s.slice(0, 12) + '…');
}

export function versionLabel(v) {
  return t('serve.version_n', { n: v });
}

// The chain dataset -> job -> output/checkpoint -> model version ->
// deployment as boxes joined by arrows (a list, so it reads in order with a
// screen reader; it wraps on a phone). v: GET /models/{m}/versions/{v}
// (or its brief row); dep: the deployment's name, when there is one.
export function lineageChain(model, v, dep) {
  const step = (kind, title, ...body) => h('li', { class: 'lin-step lin-' + kind },
    h('span', { class: 'lin-kind' }, t('serve.lin_' + kind)), h('span', { class: 'lin-title' }, title), body);
  const datasets = Array.isArray(v.datasets) ? v.datasets : [];
  const items = [];
  items.push(datasets.length
    ? step('dataset', datasets.map((d, i) => [i ? ', ' : '', d.name || d.uri || '?']),
      datasets.map((d) => h('span', { class: 'lin-sub' }, d.digest ? digest(d.digest) : h('span', { class: 'badge tone-warn' }, t('serve.no_digest')))))
    : step('dataset', h('span', { class: 'muted' }, t('serve.no_datasets'))));
  items.push(step('job', v.source_job_id ? h('a', { href: '#/jobs/' + encodeURIComponent(v.source_job_id) }, t('serve.job_n', { id: v.source_job_id })) : '—',
    v.template ? h('span', { class: 'lin-sub' }, v.template) : null));
  items.push(step(v.source_kind === 'checkpoint' ? 'checkpoint' : 'output',
    v.source_step !== null && v.source_step !== undefined ? t('serve.step_n', { n: fmtNum(v.source_step, 0) }) : t('serve.lin_' + (v.source_kind === 'checkpoint' ? 'checkpoint' : 'output')),
    h('span', { class: 'lin-sub' }, t('serve.files_n', { n: v.files ?? (Array.isArray(v.manifest) ? v.manifest.length : '?') }))));
  items.push(step('version', h('a', { href: '#/models/' + encodeURIComponent(model) }, model + ' · ' + versionLabel(v.version)),
    h('span', { class: 'lin-sub' }, digest(v.manifest_sha256))));
  if (dep) items.push(step('deployment', dep));
  const ol = h('ol', { class: 'lineage', 'aria-label': t('serve.lineage') }, items);
  const complete = v.lineage_complete === false
    ? h('p', { class: 'alert warn small', role: 'note' }, t('serve.lineage_incomplete')) : null;
  return h('div', null, ol, complete);
}

// Per-minute lines drawn with ECharts: chart.update(rows) with rows of
// GET /deployments/{name}/stats; series [{key, name, scale}] picks the
// values (scale turns microseconds into milliseconds).
export function minuteChart(el, opts) {
  const box = h('div', { class: 'chart-area serve-chart', role: 'img', 'aria-label': opts.label });
  const note = h('p', { class: 'muted small' }, opts.empty || '');
  el.append(box, note);
  let ec = null, last = null, disposed = false;
  const live = (window.__ty = window.__ty || {});
  live.charts = live.charts || {};
  const stat = (live.charts[opts.name] = { points: 0, renderer: 'none' });
  loadECharts().then((echarts) => {
    if (disposed) return;
    if (!echarts) { replace(note, t('serve.no_charts')); return; }
    ec = echarts.init(box, null, { renderer: 'canvas', locale: document.documentElement.lang === 'zh-CN' ? 'ZH' : 'EN' });
    ec.setOption({
      animation: false, grid: { left: 52, right: 12, top: 28, bottom: 28 },
      tooltip: { trigger: 'axis' }, legend: { top: 0, data: opts.series.map((s) => s.name) },
      xAxis: { type: 'time', axisLabel: { hideOverlap: true } },
      yAxis: { type: 'value', name: opts.unit || '', minInterval: opts.integer ? 1 : 0 },
      // A point per minute with a mark: a minute with requests between idle
      // ones (no latency) is still seen.
      series: opts.series.map((s) => ({ name: s.name, type: 'line', symbolSize: 4, connectNulls: false, data: [] })),
    });
    stat.renderer = 'echarts';
    if (last) update(last);
  });
  function update(rows) {
    last = rows;
    note.hidden = rows.some((r) => r.requests > 0);
    if (note.hidden === false && !note.textContent) replace(note, opts.empty || '');
    stat.points = rows.length;
    if (!ec) return;
    ec.setOption({
      series: opts.series.map((s) => ({
        data: rows.map((r) => [Date.parse(r.minute), r[s.key] === null || r[s.key] === undefined ? null : r[s.key] * (s.scale || 1)]),
      })),
    });
  }
  const onResize = () => { if (ec) ec.resize(); };
  window.addEventListener('resize', onResize);
  return {
    update,
    dispose() { disposed = true; window.removeEventListener('resize', onResize); if (ec) ec.dispose(); delete live.charts[opts.name]; },
  };
}

// A gateway error ({"error": {code, type, message}} in the OpenAI shape) in
// the page's language.
export class GatewayError extends Error {
  constructor(status, err) {
    super((err && err.message) || 'HTTP ' + status);
    this.status = status;
    this.code = (err && (err.code || err.type)) || '';
  }
}
export function gatewayErrorText(e) {
  const k = 'chat.err.' + (e && e.code);
  return e && e.code && has(k) ? t(k) : t('chat.err.other', { status: (e && e.status) || '?' });
}

// POST /v1/chat/completions with stream: true through the gateway, with the
// deployment's key: onDelta(text) for each piece as it arrives. The session
// cookie is not sent: the key is the credential here.
export async function chatStream(key, model, messages, onDelta, signal) {
  let r;
  try {
    r = await fetch('/v1/chat/completions', {
      method: 'POST', credentials: 'omit', signal,
      headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ model, messages, stream: true, max_tokens: 256 }),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new GatewayError(0, { code: 'network' });
  }
  if (!r.ok || !r.body) {
    let err = null;
    try { err = (await r.json()).error; } catch (_) { err = null; }
    throw new GatewayError(r.status, err);
  }
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of ev.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') return;
        let chunk;
        try { chunk = JSON.parse(data); } catch (_) { continue; }
        if (chunk.error) throw new GatewayError(502, chunk.error);
        const c = chunk.choices && chunk.choices[0];
        const piece = c && ((c.delta && c.delta.content) || c.text);
        if (piece) onDelta(piece);
      }
    }
  }
}

// A list page's rows from a paginated GET (path answers {field: [...],
// next_cursor}): refresh() re-reads every row loaded so far into tb (a
// liveTable), the "load more" button `more` adds the next page; errors go
// to msg. ctx.loaded() after the first draw.
export function pagedList(ctx, { path, field, tb, more, msg, page = 100 }) {
  let rows = [], cursor = null;
  const draw = () => { tb.update(rows); more.hidden = !cursor; };
  async function refresh() {
    try {
      let all = [], cur = null;
      do {
        const r = await get(path + qs({ limit: page, cursor: cur }));
        all = all.concat(r[field] || []);
        cur = r.next_cursor;
      } while (cur && all.length < Math.max(page, rows.length));
      if (ctx.left) return;
      rows = all;
      cursor = cur;
      draw();
      replace(msg);
      ctx.loaded();
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
  }
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const r = await get(path + qs({ limit: page, cursor }));
      rows = rows.concat(r[field] || []);
      cursor = r.next_cursor;
      draw();
    } catch (e) { replace(msg, errorBox(e)); }
    more.disabled = false;
  });
  return refresh;
}
