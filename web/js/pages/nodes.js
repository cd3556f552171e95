// nodes.js - GPU nodes: state, labels, GPUs with live utilisation and memory.
import { get, post } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox, poll, table } from '../ui.js';

function bar(pct, label) {
  const p = Math.max(0, Math.min(100, Number(pct) || 0));
  return h('div', { class: 'bar', title: label },
    h('div', { class: 'bar-fill' + (p > 85 ? ' hot' : ''), style: `width:${p}%` }),
    h('span', { class: 'bar-text' }, label));
}

function gpuCell(n) {
  const stats = new Map((Array.isArray(n.gpu_stats) ? n.gpu_stats : []).map((s) => [s.index, s]));
  const gpus = n.gpus || [];
  if (!gpus.length) return h('span', { class: 'muted' }, '—');
  return h('div', { class: 'gpus' }, gpus.map((g) => {
    const s = stats.get(g.index) || {};
    const memPct = g.memory_mb ? (100 * (s.mem_used_mb || 0)) / g.memory_mb : 0;
    return h('div', { class: 'gpu' },
      h('span', { class: 'gpu-name' }, `#${g.index} ${g.model || ''} · ${Math.round((g.memory_mb || 0) / 1024)} GiB`),
      bar(s.util_pct, t('nodes.util', { n: s.util_pct ?? '—' })),
      bar(memPct, t('nodes.mem', { used: Math.round((s.mem_used_mb || 0) / 1024 * 10) / 10, total: Math.round((g.memory_mb || 0) / 1024) })));
  }));
}

export function render(main, ctx) {
  const isAdmin = ctx.me && ctx.me.role === 'admin';
  const msg = h('div');
  const body = h('div');
  const totals = h('span', { class: 'muted' });

  function drainButton(n) {
    const draining = n.state === 'draining';
    const b = h('button', { type: 'button', class: 'small-btn' + (draining ? '' : ' danger') },
      t(draining ? 'nodes.undrain' : 'nodes.drain'));
    b.addEventListener('click', async () => {
      if (!draining && !window.confirm(t('nodes.drain_confirm', { name: n.name }))) return;
      b.disabled = true;
      try { await post(`/nodes/${encodeURIComponent(n.id)}/${draining ? 'undrain' : 'drain'}`); await refresh(); }
      catch (e) { replace(msg, errorBox(e)); b.disabled = false; }
    });
    return b;
  }

  async function refresh() {
    try {
      const r = await get('/nodes');
      const nodes = r.nodes || [];
      let total = 0, used = 0;
      for (const n of nodes) { total += (n.gpus || []).length; used += Number(n.gpus_allocated) || 0; }
      replace(totals, t('nodes.totals', { nodes: nodes.length, used, total }));
      replace(body, table([t('nodes.name'), t('nodes.state'), t('nodes.labels'), t('nodes.allocated'), t('nodes.gpus'), t('nodes.seen'), isAdmin ? '' : null].filter((x) => x !== null),
        nodes.map((n) => h('tr', null,
          h('td', null, h('strong', null, n.name), h('div', { class: 'small muted' }, [n.hostname, n.addr].filter(Boolean).join(' · '))),
          h('td', null, stateBadge(n.state)),
          h('td', null, Object.entries(n.labels || {}).map(([k, v]) => h('span', { class: 'pill' }, `${k}=${v}`))),
          h('td', { class: 'num' }, `${n.gpus_allocated ?? 0} / ${(n.gpus || []).length}`),
          h('td', null, gpuCell(n)),
          h('td', { class: 'nowrap small' }, fmtTime(n.last_seen_at)),
          isAdmin ? h('td', null, drainButton(n)) : null)),
        { empty: t('nodes.none') }));
      replace(msg);
    } catch (e) { replace(msg, errorBox(e)); }
  }

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.nodes')), h('div', { class: 'spacer' }), totals), msg, body);
  return poll(refresh, 5000);
}
