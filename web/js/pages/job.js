// job.js - #/jobs/{id}: one job.
//   header: name, state (from the newest event, so it follows events live),
//           cancel, resubmit, clone-and-edit (#/wizard?clone=id), and deploy
//           (deploy.js) for a SUCCEEDED job whose template serves;
//   timeline: every event with its reason (by code, in the page's language);
//   loss and throughput charts (chart.js: live, LTTB-sampled);
//   logs per rank: opened at the end (a failed job's traceback shows first),
//           earlier pages on demand, then followed over SSE; pause, search,
//           download of the whole log from the server;
//   the GPUs it holds (utilization, memory), predicted vs measured memory,
//   checkpoints, restarts and why, the NCCL settings, export requests.
// Polled every 3 s while the job lives (once more after it ends); the log
// stream ends with the job. Everything stops when the user leaves.
import { get, post, qs, submitJob } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t, has, fmtNum, fmtBytes } from '../i18n.js';
import { errorBox, liveTable, section, TERMINAL } from '../ui.js';
import { reasonText } from '../errors.js';
import { liveChart } from '../chart.js';
import { deployButton } from '../deploy.js';

const MAX_LINES = 20000; // per rank kept in the page while following (earlier pages asked for are kept too)
const SHOW_LINES = 2000; // drawn at once (the newest, or the newest matches); "earlier" adds as many
const LOG_PAGE = 5000; // lines per request (the API's largest page)
// Log and metric ids are bigserial, sent as decimal strings: the cursors
// stay strings and are compared as BigInt, exact past 2^53. '' = none yet.
const rowId = (v) => ((typeof v === 'string' || typeof v === 'number') && /^[1-9][0-9]*$/.test(String(v)) ? String(v) : '');
const idAfter = (v, last) => v !== '' && (last === '' || BigInt(v) > BigInt(last));
const THROUGHPUT = ['samples_per_s', 'samples_per_sec', 'throughput', 'tokens_per_sec', 'tokens_per_s', 'images_per_s', 'it_per_s'];

export function render(main, ctx) {
  const id = ctx.params.id;
  const base = '/jobs/' + id;
  let job = null, lastMetricId = '', lossRank = null, tpKey = null, ended = false, stopLogs = null;
  const events = [];

  // ---- header and actions
  const title = h('h1', null, t('job.title', { id }));
  const headState = h('span', { id: 'job-state', 'aria-live': 'polite' });
  const msg = h('div');
  const cancelBtn = h('button', { type: 'button', class: 'danger', id: 'job-cancel' }, t('job.cancel'));
  const resubmitBtn = h('button', { type: 'button', id: 'job-resubmit' }, t('job.resubmit'));
  const cloneLink = h('a', { class: 'button', href: '#/wizard?clone=' + encodeURIComponent(id), id: 'job-clone' }, t('job.clone'));
  const canAct = ctx.me.role !== 'auditor';
  const deploy = deployButton(ctx);

  cancelBtn.addEventListener('click', async () => {
    if (!window.confirm(t('job.cancel_confirm', { id }))) return;
    cancelBtn.disabled = true;
    try { await post(base + '/cancel'); replace(msg); await refresh(); }
    catch (e) { replace(msg, errorBox(e)); cancelBtn.disabled = false; }
  });
  resubmitBtn.addEventListener('click', async () => {
    resubmitBtn.disabled = true;
    try {
      const spec = Object.assign({}, job.spec);
      const j = await submitJob(spec);
      location.hash = '#/jobs/' + j.id;
    } catch (e) { replace(msg, errorBox(e)); resubmitBtn.disabled = false; }
  });

  // The state shown is the newest event's: events arrive before the job row
  // is re-read, and a header behind its own timeline is wrong.
  function currentState() {
    for (let i = events.length - 1; i >= 0; i--)
      if ((!events[i].kind || events[i].kind === 'state') && events[i].to_state) return events[i].to_state;
    return job && job.state;
  }
  function drawHead() {
    const s = currentState();
    if (headState.dataset.state !== s) { headState.dataset.state = s || ''; replace(headState, stateBadge(s)); }
    if (job) replace(title, t('job.title', { id }), ' · ', job.name);
    const term = TERMINAL.includes(s);
    cancelBtn.hidden = !canAct || term;
    resubmitBtn.hidden = !canAct || !term;
    cloneLink.hidden = !canAct;
    if (job) deploy.update(Object.assign({}, job, { state: s }));
  }

  // ---- summary
  const summary = h('dl', { class: 'kv' });
  function kv(label, value) { return [h('dt', null, label), h('dd', null, value ?? '')]; }
  function drawSummary() {
    const j = job;
    const sp = j.spec || {};
    replace(summary,
      kv(t('jobs.team'), j.team), kv(t('jobs.user'), j.user),
      kv(t('jobs.state'), stateBadge(currentState())), kv(t('job.reason'), reasonText(j) || '—'),
      kv(t('job.attempt'), j.attempt), kv(t('jobs.gpus'), j.gpus_per_node ? `${j.gpus} (${t('job.per_node', { n: j.gpus_per_node })})` : j.gpus),
      kv(t('job.template'), sp.template || '—'),
      kv(t('job.strategy'), sp.strategy ? t('wizard.strategy_' + sp.strategy) : '—'),
      kv(t('job.datasets'), (sp.datasets || []).join(', ') || '—'),
      kv(t('jobs.created'), fmtTime(j.created_at)), kv(t('job.started'), fmtTime(j.started_at) || '—'),
      kv(t('job.finished'), fmtTime(j.finished_at) || '—'),
      kv(t('job.command'), h('code', { class: 'wrap' }, Array.isArray(sp.command) ? sp.command.join(' ') : '')));
  }

  // ---- timeline
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  const seenEvents = new Set();
  function drawEvents(list) {
    for (const e of list) {
      const k = e.id ?? (e.ts + e.to_state);
      if (seenEvents.has(k)) continue;
      seenEvents.add(k);
      events.push(e);
      timeline.append(h('li', { class: 'tl-' + String(e.to_state || '').toLowerCase() },
        h('span', { class: 'tl-time' }, fmtTime(e.ts)), ' ',
        e.kind && e.kind !== 'state' ? h('span', { class: 'pill' }, t('job.event_' + (e.kind === 'plan' ? 'plan' : 'other')))
          : [e.from_state ? [stateBadge(e.from_state), h('span', { 'aria-label': t('job.to') }, ' → ')] : null, stateBadge(e.to_state)], ' ',
        h('span', { class: 'tl-reason' }, reasonText(e)),
        e.actor ? h('span', { class: 'muted small' }, ' · ' + e.actor) : null));
    }
  }

  // ---- restarts
  const restartsBox = h('div');
  function drawRestarts() {
    const rs = events.filter((e) => e.to_state === 'RESTARTING');
    replace(restartsBox, h('p', null, t('job.restarts_used', { n: job.restarts ?? 0, max: job.max_restarts ?? 0 })),
      rs.length ? h('ul', null, rs.map((e) => h('li', null, fmtTime(e.ts), ' · ', reasonText(e)))) : h('p', { class: 'muted' }, t('job.no_restarts')));
  }

  // ---- charts
  const lossEl = h('div', { class: 'chart-box', id: 'chart-loss' });
  const tpEl = h('div', { class: 'chart-box', id: 'chart-throughput' });
  const latestBox = h('div', { class: 'small' });
  const lossChart = liveChart(lossEl, { name: 'loss', xLabel: t('job.step'), yLabel: t('job.loss'), label: t('job.loss_chart'), empty: t('job.no_metrics') });
  const tpChart = liveChart(tpEl, { name: 'throughput', xLabel: t('job.step'), yLabel: t('job.throughput'), label: t('job.throughput_chart'), empty: t('job.no_throughput') });
  ctx.onLeave(() => { lossChart.dispose(); tpChart.dispose(); });
  const latest = {};
  async function loadMetrics() {
    for (let round = 0; round < 11; round++) { // up to 202,000 points a poll
      // A small first page, so the first point shows soon; then big ones.
      const limit = lastMetricId ? 20000 : 2000;
      const r = await get(base + '/metrics' + qs({ after: lastMetricId || '', limit }));
      const ms = r.metrics || [];
      if (ctx.left) return;
      const lp = [], tp = [];
      for (const m of ms) {
        const mid = rowId(m.id);
        if (idAfter(mid, lastMetricId)) lastMetricId = mid;
        const v = m.values || {};
        for (const [k, x] of Object.entries(v)) if (typeof x === 'number') latest[k] = x;
        if (typeof m.step !== 'number') continue;
        // With several ranks reporting, the lowest one is drawn.
        const rank = m.rank ?? 0;
        if (typeof v.loss === 'number') { if (lossRank === null || rank < lossRank) lossRank = rank; if (rank === lossRank) lp.push([m.step, v.loss]); }
        if (!tpKey) tpKey = THROUGHPUT.find((k) => typeof v[k] === 'number') || null;
        if (tpKey && typeof v[tpKey] === 'number' && rank === (lossRank ?? rank)) tp.push([m.step, v[tpKey]]);
      }
      if (lp.length) lossChart.push(lp);
      if (tp.length) tpChart.push(tp);
      if (ms.length < limit) break;
    }
    replace(latestBox, Object.entries(latest).map(([k, v]) => h('span', { class: 'pill' }, k + ' = ' + fmtNum(v))));
  }

  // ---- logs
  // rank -> {lines: [{id, text, err}], first: id of lines[0], more: earlier
  // lines are on the server, shown: how many of the newest are drawn}
  const ranks = new Map();
  let shownRank = null, rankChosen = false, redrawPending = false, following = true, pending = 0, lastLogId = '', search = '';
  let firstPageFull = false, loadingEarlier = false;
  const rankSel = h('select', { id: 'rank-select' });
  const followBtn = h('button', { type: 'button', id: 'log-follow', 'aria-pressed': 'true' }, t('job.pause'));
  const findInput = h('input', { type: 'search', id: 'log-search', placeholder: t('job.search_ph') });
  const findCount = h('span', { class: 'muted small', id: 'log-matches', 'aria-live': 'polite' });
  // The server streams the whole log (every page, not what this page holds).
  const dlBtn = h('a', { class: 'button', id: 'log-download', href: '#', download: '' }, t('job.download'));
  const earlierBtn = h('button', { type: 'button', id: 'log-earlier', hidden: true }, t('job.log_earlier'));
  const earlierNote = h('span', { class: 'muted small', id: 'log-earlier-note', 'aria-live': 'polite' });
  const logStatus = h('span', { class: 'muted small', id: 'log-status', 'aria-live': 'polite' });
  const pre = h('pre', { class: 'log', id: 'log', tabindex: 0, 'aria-label': t('job.logs') });
  // Lines the nodes dropped because the server could not keep up: said
  // beside the log, or a gap in it (and in the loss curve) goes unexplained.
  const droppedNote = h('p', { class: 'alert warn', id: 'log-dropped', role: 'status', hidden: true });
  // "The log is complete" would not be true once lines were dropped.
  function logDoneText() { return t(Number(job && job.dropped_lines) > 0 ? 'job.log_done_dropped' : 'job.log_done'); }
  function drawDropped() {
    const n = Number(job && job.dropped_lines) || 0;
    droppedNote.hidden = n <= 0;
    if (n > 0) replace(droppedNote, t('job.dropped_lines', { n: fmtNum(n, 0) }));
  }

  function rankOf(r) {
    if (!ranks.has(r)) {
      // A rank first met in the opening page (read from the end) may have
      // earlier lines when that page was full.
      ranks.set(r, { lines: [], first: '', more: firstPageFull, shown: SHOW_LINES });
      replace(rankSel, [...ranks.keys()].sort((a, b) => a - b).map((x) => h('option', { value: x }, t('job.rank', { n: x }))));
      // The lowest rank is shown until the user picks one (rank 1's first
      // line may come before rank 0's).
      if (!rankChosen && (shownRank === null || r < shownRank)) { shownRank = r; redrawPending = true; }
      rankSel.value = String(shownRank);
    }
    return ranks.get(r);
  }
  function lineNode(l) { return l.err ? h('span', { class: 'stderr' }, l.text) : document.createTextNode(l.text); }
  function drawEarlier() {
    const b = ranks.get(shownRank);
    earlierBtn.hidden = !b || (!b.more && b.shown >= b.lines.length);
    dlBtn.href = '/api/v1' + base + '/logs/download' + qs({ rank: shownRank ?? '' });
    dlBtn.setAttribute('download', `job-${id}` + (shownRank === null ? '' : `-rank-${shownRank}`) + '.log');
  }
  function redrawLog() {
    const b = ranks.get(shownRank);
    const lines = b ? b.lines : [];
    const q = search.toLowerCase();
    const list = q ? lines.filter((l) => l.text.toLowerCase().includes(q)) : lines;
    replace(pre, list.slice(-(b ? b.shown : SHOW_LINES)).map(lineNode));
    replace(findCount, q ? t('job.matches', { n: list.length }) : '');
    pending = 0;
    if (following) pre.scrollTop = pre.scrollHeight;
    drawEarlier();
  }
  // Earlier lines of the shown rank: first those the page holds but does
  // not draw, then the page before its first line from the server. The
  // view stays on the line the user was reading.
  async function loadEarlier() {
    const b = ranks.get(shownRank);
    if (!b || loadingEarlier) return;
    loadingEarlier = true;
    earlierBtn.disabled = true;
    const rank = shownRank;
    try {
      if (b.shown < b.lines.length) b.shown += SHOW_LINES;
      else if (b.more && b.first) {
        replace(earlierNote, t('job.log_loading'));
        const r = await get(base + '/logs' + qs({ rank, before: b.first, limit: LOG_PAGE }));
        if (ctx.left) return;
        const got = (r.logs || []).map(toLine);
        b.lines.unshift(...got);
        if (got.length) b.first = got[0].id;
        b.more = r.prev_before != null && got.length > 0;
        b.shown += got.length;
      }
      replace(earlierNote, b.more ? '' : t('job.log_first'));
      if (rank === shownRank) {
        const fromBottom = pre.scrollHeight - pre.scrollTop;
        const keep = following;
        following = false; // redraw without jumping to the end
        redrawLog();
        following = keep;
        pre.scrollTop = pre.scrollHeight - fromBottom;
      }
    } catch (e) { replace(earlierNote, errorBox(e)); }
    finally { loadingEarlier = false; earlierBtn.disabled = false; drawEarlier(); }
  }
  earlierBtn.addEventListener('click', loadEarlier);
  // Scrolling to the top of the log asks for what is above it.
  pre.addEventListener('scroll', () => { if (pre.scrollTop === 0 && pre.scrollHeight > pre.clientHeight && !earlierBtn.hidden) loadEarlier(); });
  function toLine(l) {
    let text = String(l.text ?? '');
    if (!text.endsWith('\n')) text += '\n';
    return { id: rowId(l.id), text, err: l.stream === 'stderr' };
  }
  function addLines(ls) {
    let touched = false;
    for (const l of ls) {
      const idn = rowId(l.id);
      if (idn && !idAfter(idn, lastLogId)) continue;
      if (idn) lastLogId = idn;
      const b = rankOf(Number(l.rank) || 0);
      const line = toLine(l);
      const text = line.text;
      b.lines.push(line);
      if (!b.first) b.first = line.id;
      // Past the cap the oldest go (while no earlier page was asked for):
      // they are earlier lines on the server again.
      if (b.lines.length > Math.max(MAX_LINES, b.shown)) {
        b.lines.splice(0, b.lines.length - Math.max(MAX_LINES, b.shown));
        b.first = b.lines[0].id;
        b.more = true;
      }
      if ((Number(l.rank) || 0) !== shownRank) continue;
      if (!following) { pending++; continue; }
      if (search && !text.toLowerCase().includes(search.toLowerCase())) continue;
      pre.append(lineNode(line));
      touched = true;
    }
    if (redrawPending) { redrawPending = false; if (following) { redrawLog(); touched = false; } }
    if (touched) {
      const b = ranks.get(shownRank);
      while (pre.childNodes.length > b.shown) pre.removeChild(pre.firstChild);
      pre.scrollTop = pre.scrollHeight;
      if (search) replace(findCount, t('job.matches', { n: ranks.get(shownRank).lines.filter((l) => l.text.toLowerCase().includes(search.toLowerCase())).length }));
    }
    if (pending) replace(logStatus, t('job.paused_new', { n: pending }));
    drawEarlier();
  }
  rankSel.addEventListener('change', () => { shownRank = Number(rankSel.value); rankChosen = true; redrawLog(); });
  followBtn.addEventListener('click', () => {
    following = !following;
    followBtn.setAttribute('aria-pressed', String(following));
    replace(followBtn, t(following ? 'job.pause' : 'job.follow'));
    replace(logStatus, following ? (ended ? logDoneText() : t('job.following')) : t('job.paused'));
    if (following) redrawLog();
  });
  findInput.addEventListener('input', () => { search = findInput.value; redrawLog(); });

  async function startLogs() {
    try {
      // From the end: what a finished (above all a failed) job ends with is
      // what its page is opened for; earlier pages come on demand.
      const r = await get(base + '/logs' + qs({ tail: 1, limit: LOG_PAGE }));
      if (ctx.left) return;
      firstPageFull = r.prev_before != null;
      addLines(r.logs || []);
      firstPageFull = false;
      drawEarlier();
      if (!ranks.size) replace(logStatus, t('job.no_logs'));
    } catch (e) { replace(logStatus, errorBox(e)); }
    if (TERMINAL.includes(currentState())) { ended = true; replace(logStatus, logDoneText()); return; }
    // A URL per (re)connect: a stream opened again goes on after the last line held.
    stopLogs = ctx.stream(() => base + '/logs' + qs({ follow: 1, after: lastLogId || '' }), {
      log: (l) => addLines([l]),
      end: (d, _ev, close) => {
        ended = true;
        close();
        replace(logStatus, t('job.log_end', { state: t('state.' + (d && d.state)) }));
        refresh();
      },
    }, { onState: (s) => { if (!ended && following) replace(logStatus, t(s === 'open' ? 'job.following' : 'job.reconnecting')); } });
  }

  // ---- GPUs, predicted vs measured, checkpoints, NCCL, exports
  const gpuTb = liveTable({
    caption: t('job.gpus'), key: (g) => g.node + '/' + g.index, empty: t('job.no_alloc'),
    columns: [
      { label: t('job.node'), cell: (g) => g.node },
      { label: t('job.gpu'), cell: (g) => '#' + g.index },
      { label: t('job.util'), cell: (g) => (typeof g.util === 'number' ? t('overview.pct', { n: fmtNum(g.util, 0) }) : '—'), class: 'num' },
      { label: t('job.mem'), cell: (g) => (typeof g.mem === 'number' ? `${fmtBytes(g.mem * 1048576)} / ${fmtBytes((g.total || 0) * 1048576)}` : '—'), class: 'num' },
    ],
  });
  async function loadGpus() {
    const allocs = job.allocations || [];
    if (!allocs.length) { gpuTb.update([]); return; }
    const r = await get('/nodes');
    if (ctx.left) return;
    const byName = new Map((r.nodes || []).map((n) => [n.name, n]));
    const rows = [];
    for (const a of allocs) {
      const n = byName.get(a.node) || {};
      const stats = new Map((Array.isArray(n.gpu_stats) ? n.gpu_stats : []).map((s) => [s.index, s]));
      const gpus = new Map((n.gpus || []).map((g) => [g.index, g]));
      for (const i of a.gpu_indices || []) {
        const s = stats.get(i) || {};
        rows.push({ node: a.node, index: i, util: s.util_pct, mem: s.mem_used_mb, total: (gpus.get(i) || {}).memory_mb });
      }
    }
    gpuTb.update(rows);
  }
  const pvmBox = h('div');
  function drawPvm() {
    const p = job.predicted_vs_measured;
    if (!p || typeof p !== 'object') { replace(pvmBox, h('p', { class: 'muted' }, t('job.no_pvm'))); return; }
    // Each size {predicted, measured, error_pct}; gpu_mem_peak is one per rank.
    const rows = [];
    for (const [k, v] of Object.entries(p)) {
      if (Array.isArray(v)) for (const x of v) rows.push([t('job.pvm_gpu_peak', { rank: x.rank }), x]);
      else if (v && typeof v === 'object') rows.push([has('job.pvm_' + k) ? t('job.pvm_' + k) : k, v]);
    }
    replace(pvmBox, h('div', { class: 'table-wrap' }, h('table', null,
      h('thead', null, h('tr', null, [t('job.pvm_what'), t('job.pvm_pred'), t('job.pvm_meas'), t('job.pvm_err')].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, rows.map(([k, v]) => h('tr', null,
        h('td', null, k),
        h('td', { class: 'num' }, fmtBytes(v.predicted)), h('td', { class: 'num' }, fmtBytes(v.measured)),
        h('td', { class: 'num' }, typeof v.error_pct === 'number' ? fmtNum(v.error_pct, 1) + ' %' : '—')))))));
  }
  // A time in a table: date and time of day each kept whole, but on two
  // lines where the column is narrow (a phone), never cut off.
  function timeCell(ts) {
    const s = fmtTime(ts), i = s.lastIndexOf(' ');
    return i < 0 ? s : h('span', null, h('span', { class: 'nowrap' }, s.slice(0, i)), ' ', h('span', { class: 'nowrap' }, s.slice(i + 1)));
  }
  const ckptTb = liveTable({
    caption: t('job.checkpoints'), key: (c) => c.id, empty: t('job.no_checkpoints'), class: 'checkpoints',
    columns: [
      { label: t('job.step'), cell: (c) => fmtNum(c.step), class: 'num' },
      { label: t('job.attempt'), cell: (c) => c.attempt, class: 'num' },
      // A checkpoint path is long and has no spaces: it breaks anywhere, so
      // the time beside it stays inside the card at any width.
      { label: t('job.path'), cell: (c) => h('code', { class: 'wrap' }, c.path), class: 'path' },
      { label: t('job.time'), cell: (c) => timeCell(c.created_at), class: 'time' },
    ],
  });
  const ncclBox = h('div');
  function drawNccl() {
    const n = job.nccl;
    const nodes = (n && n.nodes) || [];
    if (!nodes.length) { replace(ncclBox, h('p', { class: 'muted' }, t('job.no_nccl'))); return; }
    replace(ncclBox, h('p', { class: 'muted small' }, t('job.nccl_attempt', { n: n.attempt })), nodes.map((x) => {
      const vars = Array.isArray(x.variables) ? x.variables : Object.entries(x.variables || {}).map(([name, value]) => ({ name, value }));
      return h('details', null, h('summary', null, t('job.nccl_node', { node: x.node, rank: x.node_rank })),
        h('div', { class: 'table-wrap' }, h('table', null, h('tbody', null, vars.map((v) => h('tr', null,
          h('td', null, h('code', null, v.name)), h('td', null, h('code', { class: 'wrap' }, typeof v.value === 'object' ? JSON.stringify(v.value) : String(v.value ?? ''))),
          h('td', { class: 'small muted' }, v.reason ? (typeof v.reason === 'object' ? (v.reason[document.documentElement.lang] || v.reason.en) : '') : '')))))));
    }));
  }
  const exportTb = liveTable({
    caption: t('job.exports'), key: (x) => x.id, empty: t('job.no_exports'),
    columns: [
      { label: t('job.path'), cell: (x) => h('code', { class: 'wrap' }, x.path), class: 'path' },
      { label: t('job.export_state'), cell: (x) => h('span', { class: 'badge export-' + x.state }, t('job.export_' + x.state)), sig: (x) => x.state },
      { label: t('job.export_by'), cell: (x) => x.requested_by || x.user || '' },
      { label: t('job.time'), cell: (x) => timeCell(x.created_at), class: 'time' },
    ],
  });
  const expPath = h('input', { id: 'export-path', class: 'mono', placeholder: 'final/model.pt' });
  const expReason = h('input', { id: 'export-reason' });
  const expBtn = h('button', { type: 'submit' }, t('job.export_request'));
  const expMsg = h('div');
  const expForm = h('form', { class: 'inline-form' },
    h('label', { for: 'export-path' }, t('job.export_path')), expPath,
    h('label', { for: 'export-reason' }, t('job.export_reason')), expReason, expBtn);
  expForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    expBtn.disabled = true;
    try { await post(base + '/exports', { path: expPath.value.trim(), reason: expReason.value.trim() }); replace(expMsg); expPath.value = ''; await loadExports(); }
    catch (e) { replace(expMsg, errorBox(e)); }
    expBtn.disabled = false;
  });
  async function loadExports() {
    const r = await get('/exports' + qs({ job: id }));
    if (!ctx.left) exportTb.update(r.exports || r.requests || []);
  }

  // ---- polling
  let lastRead = false;
  async function refresh() {
    try {
      // Metrics first: the chart's first point should not wait for the rest.
      const metricsP = loadMetrics();
      metricsP.catch(() => {}); // awaited below; a failure before that is not an unhandled one
      const [j, ev] = await Promise.all([get(base), get(base + '/events')]);
      if (ctx.left) return;
      job = j;
      drawEvents(ev.events || []);
      drawHead(); drawSummary(); drawRestarts(); drawPvm(); drawNccl(); drawDropped();
      await Promise.all([metricsP, loadGpus(),
        get(base + '/checkpoints').then((r) => { if (!ctx.left) ckptTb.update(r.checkpoints || []); }),
        loadExports().catch(() => {})]);
      replace(msg);
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
  }

  main.append(
    h('div', { class: 'page-head' }, title, headState, h('div', { class: 'spacer' }), deploy.el, cancelBtn, resubmitBtn, cloneLink),
    msg,
    h('div', { class: 'grid2' }, section(t('job.summary'), summary), section(t('job.timeline'), timeline)),
    h('div', { class: 'grid2' }, section(t('job.loss_chart'), lossEl, latestBox), section(t('job.throughput_chart'), tpEl)),
    section(t('job.logs'),
      h('div', { class: 'toolbar' },
        h('label', { for: 'rank-select', class: 'inline' }, t('job.rank_select')), rankSel,
        followBtn,
        h('label', { for: 'log-search', class: 'inline' }, t('job.search')), findInput, findCount,
        dlBtn, logStatus),
      droppedNote, h('div', { class: 'toolbar' }, earlierBtn, earlierNote), pre),
    h('div', { class: 'grid2' }, section(t('job.gpus'), gpuTb.el), section(t('job.pvm'), pvmBox)),
    h('div', { class: 'grid2' }, section(t('job.restarts'), restartsBox), section(t('job.checkpoints'), ckptTb.el)),
    section(t('job.nccl'), ncclBox),
    section(t('job.exports'), canAct ? [expForm, expMsg] : null, exportTb.el));
  drawHead();

  refresh().then(() => {
    if (ctx.left || !job) return;
    ctx.loaded();
    startLogs();
    const stop = ctx.poll(async () => {
      if (lastRead) return;
      const term = TERMINAL.includes(currentState());
      await refresh();
      if (term) { lastRead = true; stop(); } // one last read after the end
    }, 3000);
  });
}
