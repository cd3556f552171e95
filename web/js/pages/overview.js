// overview.js - #/overview: the cluster's GPUs as a heatmap by node, the
// queue length by team, running jobs, my recent jobs, and GPUs idle while
// allocated. Refreshed every 5 s; every table updates in place.
//
// Data: GET /nodes and GET /jobs (with each live job's allocations). Without the
// server's utilization history, "idle for over an hour" cannot be known, so
// the idle section says that it needs it instead of guessing.
import { get, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t, fmtNum } from '../i18n.js';
import { errorBox, liveTable, section } from '../ui.js';

const LIVE = ['PLACED', 'STARTING', 'RUNNING', 'RESTARTING'];

// A GPU cell's state and text: free, busy (utilization), down, draining.
export function gpuState(node, g, stat, allocated) {
  if (node.state === 'down') return { cls: 'down', text: t('overview.gpu_down') };
  if (allocated) {
    const u = stat && typeof stat.util_pct === 'number' ? stat.util_pct : null;
    return { cls: u === null ? 'busy' : u >= 80 ? 'busy-hot' : u >= 30 ? 'busy' : 'busy-low',
      text: u === null ? t('overview.gpu_busy') : t('overview.gpu_busy_util', { n: Math.round(u) }) };
  }
  if (node.state === 'draining') return { cls: 'draining', text: t('overview.gpu_draining') };
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
      { label: t('overview.avg_util'), cell: (r) => t('overview.pct', { n: fmtNum(r.avg_util_pct, 0) }), class: 'num' },
      { label: t('overview.idle_for'), cell: (r) => t('common.dur_m', { n: Math.round((r.idle_s || 0) / 60) }), class: 'num' },
    ],
  });
  const cells = new Map(); // "node/index" -> element, kept across polls

  function drawHeat(nodes, allocatedBy) {
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
      const stats = new Map((Array.isArray(n.gpu_stats) ? n.gpu_stats : []).map((s) => [s.index, s]));
      const alloc = allocatedBy(n);
      for (const g of n.gpus || []) {
        const k = n.id + '/' + g.index;
        seen.add(k);
        const st = gpuState(n, g, stats.get(g.index), alloc.has(g.index));
        if (st.cls === 'free') free++; else if (st.cls.startsWith('busy')) busy++; else other++;
        const label = t('overview.gpu_cell', { node: n.name, index: g.index, state: st.text });
        let c = cells.get(k);
        if (!c) { c = h('span', { class: 'cell', role: 'img' }, h('span', { class: 'cell-text' })); cells.set(k, c); box.append(c); }
        c.className = 'cell gpu-' + st.cls;
        if (c.getAttribute('aria-label') !== label) { c.setAttribute('aria-label', label); c.title = label; }
        const short = st.cls.startsWith('busy') && stats.get(g.index) && typeof stats.get(g.index).util_pct === 'number'
          ? Math.round(stats.get(g.index).util_pct) + '%' : t('overview.short_' + st.cls.split('-')[0]);
        if (c.firstChild.textContent !== short) c.firstChild.textContent = short;
      }
    }
    for (const [k, c] of cells) if (!seen.has(k)) { c.remove(); cells.delete(k); }
    for (const r of [...heat.children]) if (!nodes.some((n) => String(n.id) === r.dataset.node)) r.remove();
    replace(heatSummary, nodes.length ? t('overview.heat_summary', { free, busy, other, nodes: nodes.length }) : t('overview.no_nodes'));
  }

  function queueByTeam(queued) {
    const by = new Map();
    for (const j of queued) {
      const r = by.get(j.team) || { team: j.team, jobs: 0, gpus: 0 };
      r.jobs++; r.gpus += Number(j.gpus) || 0;
      by.set(j.team, r);
    }
    return [...by.values()].sort((a, b) => b.jobs - a.jobs || a.team.localeCompare(b.team));
  }

  async function refresh() {
    try {
      const [nodes, live, queued, mine] = await Promise.all([
        get('/nodes'),
        get('/jobs' + qs({ limit: 200 })),
        get('/jobs' + qs({ state: 'QUEUED', limit: 500 })),
        get('/jobs' + qs({ user: ctx.me.username, limit: 10 })),
      ]);
      if (ctx.left) return;
      const running = (live.jobs || []).filter((j) => LIVE.includes(j.state));
      // Which GPU indices are held comes with each live job's allocations.
      const details = await Promise.all(running.slice(0, 50).map((j) => get('/jobs/' + j.id).catch(() => null)));
      if (ctx.left) return;
      const held = new Map(); // node name -> Set(index)
      for (const d of details) for (const a of (d && d.allocations) || []) {
        if (!held.has(a.node)) held.set(a.node, new Set());
        for (const i of a.gpu_indices || []) held.get(a.node).add(i);
      }
      drawAll(nodes.nodes || [], queueByTeam(queued.jobs || []), running, mine.jobs || [], null, (n) => held.get(n.name) || new Set());
      replace(msg);
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
  }

  function drawAll(nodes, queue, running, mine, idle, allocatedBy) {
    drawHeat(nodes, allocatedBy);
    // When the first full overview was drawn (bench/web reads it).
    if (!window.__ty.overviewDrawnMs) window.__ty.overviewDrawnMs = performance.now();
    ctx.loaded();
    queueTb.update(queue);
    runningTb.update(running);
    mineTb.update(mine.slice(0, 10));
    if (Array.isArray(idle)) {
      replace(idleBox, h('p', { class: 'muted small' }, t('overview.idle_help')), idleTb.el);
      idleTb.update(idle);
    } else if (!idleBox.firstChild) {
      replace(idleBox, h('p', { class: 'muted' }, t('overview.idle_unknown')));
    }
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
