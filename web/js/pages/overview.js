// overview.js - #/overview: the cluster's GPUs as a heatmap by node, the
// queue length by team, running jobs, my recent jobs, and GPUs idle while
// allocated. Refreshed every 5 s; every table updates in place.
//
// Data: GET /overview (GPU states with their job, queue by team, idle
// allocated GPUs, my recent jobs) and GET /jobs?state=RUNNING.
import { get, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t, fmtNum, fmtDuration } from '../i18n.js';
import { errorBox, liveTable, section } from '../ui.js';

// A GPU cell's class and text from the server's state (free, busy, draining,
// down) and its newest utilization.
export function gpuState(g) {
  if (g.state === 'down') return { cls: 'down', text: t('overview.gpu_down') };
  if (g.state === 'draining') return { cls: 'draining', text: t('overview.gpu_draining') };
  if (g.state === 'busy') {
    const u = typeof g.util_pct === 'number' ? g.util_pct : null;
    return { cls: u === null ? 'busy' : u >= 80 ? 'busy-hot' : u >= 30 ? 'busy' : 'busy-low',
      text: u === null ? t('overview.gpu_busy') : t('overview.gpu_busy_util', { n: Math.round(u) }) };
  }
  return { cls: 'free', text: t('overview.gpu_free') };
}

function jobLink(j) { return h('a', { href: '#/jobs/' + j.id }, '#' + j.id + ' ' + j.name); }

export function render(main, ctx) {
  const msg = h('div');
  const heat = h('div', { class: 'heatmap', role: 'list', 'aria-label': t('overview.heatmap') });
  const heatSummary = h('p', { class: 'muted small' });
  const legend = h('ul', { class: 'legend', 'aria-label': t('overview.legend') },
    ['free', 'busy-hot', 'busy', 'busy-low', 'draining', 'down'].map((c) =>
      h('li', null, h('span', { class: 'cell gpu-' + c, 'aria-hidden': 'true' }), t('overview.legend_' + c.replace('-', '_')))));
  const queueTb = liveTable({
    caption: t('overview.queue'), key: (r) => r.team, empty: t('overview.queue_empty'),
    columns: [
      { label: t('jobs.team'), cell: (r) => r.team },
      { label: t('overview.queued_jobs'), cell: (r) => fmtNum(r.jobs), class: 'num' },
      { label: t('overview.queued_gpus'), cell: (r) => fmtNum(r.gpus), class: 'num' },
    ],
  });
  const jobCols = (withUser) => [
    { label: t('jobs.name'), cell: jobLink, sig: (j) => j.id + j.name },
    { label: t('jobs.state'), cell: (j) => stateBadge(j.state), sig: (j) => j.state },
    withUser ? { label: t('jobs.user'), cell: (j) => j.user } : { label: t('jobs.created'), cell: (j) => fmtTime(j.created_at) },
    { label: t('jobs.gpus'), cell: (j) => fmtNum(j.gpus), class: 'num' },
  ];
  const runningTb = liveTable({ caption: t('overview.running'), key: (j) => j.id, empty: t('overview.running_none'), columns: jobCols(true) });
  const mineTb = liveTable({ caption: t('overview.mine'), key: (j) => j.id, empty: t('overview.mine_none'), columns: jobCols(false) });
  const idleBox = h('div');
  const idleTb = liveTable({
    caption: t('overview.idle'), key: (r) => r.node + '/' + r.index, empty: t('overview.idle_none'),
    columns: [
      { label: t('overview.node'), cell: (r) => r.node },
      { label: t('overview.gpu'), cell: (r) => '#' + r.index },
      { label: t('overview.job'), cell: (r) => (r.job_id ? h('a', { href: '#/jobs/' + r.job_id }, '#' + r.job_id) : '—') },
      { label: t('jobs.team'), cell: (r) => r.team || '' },
      { label: t('overview.util_now'), cell: (r) => t('overview.pct', { n: fmtNum(r.avg_util_pct, 0) }), class: 'num' },
      { label: t('overview.idle_for'), cell: (r) => fmtDuration(r.idle_s), class: 'num' },
    ],
  });
  const cells = new Map(); // "node/index" -> element, kept across polls

  function drawHeat(nodes) {
    let free = 0, busy = 0, other = 0;
    const seen = new Set();
    for (const n of nodes) {
      let rowEl = heat.querySelector(`[data-node="${CSS.escape(String(n.id))}"]`);
      if (!rowEl) {
        rowEl = h('div', { class: 'heat-row', role: 'listitem', 'data-node': n.id },
          h('div', { class: 'heat-name' }, h('strong', null, n.name), ' ', stateBadge(n.state)),
          h('div', { class: 'heat-cells' }));
        heat.append(rowEl);
      }
      const badge = rowEl.querySelector('.badge');
      if (badge && badge.title !== n.state) badge.replaceWith(stateBadge(n.state));
      const box = rowEl.querySelector('.heat-cells');
      for (const g of n.gpus || []) {
        const k = n.id + '/' + g.index;
        seen.add(k);
        const st = gpuState(g);
        if (st.cls === 'free') free++; else if (st.cls.startsWith('busy')) busy++; else other++;
        const label = t('overview.gpu_cell', { node: n.name, index: g.index, state: st.text }) +
          (g.job_id ? ' · ' + t('overview.gpu_job', { job: g.job_id, team: g.team || '' }) : '');
        let c = cells.get(k);
        if (!c) { c = h('span', { class: 'cell', role: 'img' }, h('span', { class: 'cell-text', 'aria-hidden': 'true' })); cells.set(k, c); box.append(c); }
        c.className = 'cell gpu-' + st.cls;
        if (c.getAttribute('aria-label') !== label) { c.setAttribute('aria-label', label); c.title = label; }
        const short = st.cls.startsWith('busy') && typeof g.util_pct === 'number' ? Math.round(g.util_pct) + '%' : t('overview.short_' + st.cls.split('-')[0]);
        if (c.firstChild.textContent !== short) c.firstChild.textContent = short;
      }
    }
    for (const [k, c] of cells) if (!seen.has(k)) { c.remove(); cells.delete(k); }
    for (const r of [...heat.children]) if (!nodes.some((n) => String(n.id) === r.dataset.node)) r.remove();
    replace(heatSummary, nodes.length ? t('overview.heat_summary', { free, busy, other, nodes: nodes.length }) : t('overview.no_nodes'));
  }

  // GET /overview (web/README.md, "Server contract for the app") and the
  // running jobs (GET /jobs?state=RUNNING); a GPU's state comes with it.
  async function refresh() {
    try {
      const [o, run] = await Promise.all([get('/overview'), get('/jobs' + qs({ state: 'RUNNING', limit: 100 }))]);
      if (ctx.left) return;
      idleLine = { pct: o.idle_util_pct ?? 80, hours: Math.round(((o.idle_min_s ?? 3600) / 3600) * 10) / 10 };
      drawAll(o.nodes || [], o.queue_by_team || [], run.jobs || [], o.my_recent_jobs || [],
        (o.idle_allocated || []).map((g) => ({ node: g.node, index: g.index, job_id: g.job_id, team: g.team, avg_util_pct: g.util_pct, idle_s: g.low_for_s })));
      replace(msg);
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
  }

  let idleLine = { pct: 80, hours: 1 };
  function drawAll(nodes, queue, running, mine, idle) {
    drawHeat(nodes);
    // When the first full overview was drawn (bench/web reads it).
    if (!window.__ty.overviewDrawnMs) window.__ty.overviewDrawnMs = performance.now();
    ctx.loaded();
    queueTb.update(queue);
    runningTb.update(running);
    mineTb.update(mine.slice(0, 10));
    if (!idleBox.firstChild) replace(idleBox, h('p', { class: 'muted small', id: 'idle-help' }), idleTb.el);
    replace(idleBox.firstChild, t('overview.idle_help', idleLine));
    idleTb.update(idle);
  }

  main.append(
    h('div', { class: 'page-head' },
      h('h1', null, t('overview.title')), h('div', { class: 'spacer' }),
      h('a', { class: 'button primary', href: '#/wizard', id: 'start-training' }, t('overview.start'))),
    msg,
    section(t('overview.heatmap'), heatSummary, heat, legend),
    h('div', { class: 'grid2' },
      section(t('overview.queue'), queueTb.el),
      section(t('overview.idle'), idleBox)),
    h('div', { class: 'grid2' },
      section(t('overview.running'), runningTb.el),
      section(t('overview.mine'), mineTb.el)));
  ctx.poll(refresh, 5000);
}
