// nodes.js - #/nodes: each node as a card with its state and health, site,
// labels, GPUs (utilisation and memory), interconnect and the NCCL probe's
// bus bandwidth; admins drain and undrain. Polled every 5 s; each part of a
// card is redrawn only when its data changed, so focus stays put.
import { get, post } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { showError, badge, patch, tOr } from './admin_kit.js';

const STATE_TONE = { ready: 'ok', draining: 'warn', down: 'bad' };

function bar(pct, label) {
  const p = Math.max(0, Math.min(100, Number(pct) || 0));
  return h('div', { class: 'bar', role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.round(p)), 'aria-label': label },
    h('div', { class: 'bar-fill' + (p > 85 ? ' hot' : ''), style: `width:${p}%` }),
    h('span', { class: 'bar-text' }, label));
}

// Seconds since the last heartbeat, and what the page makes of it.
function health(n) {
  const seen = n.last_seen_at ? Date.parse(String(n.last_seen_at).replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')) : NaN;
  const age = Number.isFinite(seen) ? Math.max(0, Math.round((Date.now() - seen) / 1000)) : null;
  if (n.state === 'down') return badge('bad', t('nodes.health.down'));
  if (age === null) return badge('muted', t('nodes.health.never'));
  if (age > 30) return badge('warn', t('nodes.health.late', { s: age }));
  const caps = n.capabilities || {};
  if (caps.probe && caps.probe !== 'ok') return badge('warn', t('nodes.health.probe', { probe: caps.probe }));
  return badge('ok', t('nodes.health.ok'));
}

function gpuList(n) {
  const stats = new Map((Array.isArray(n.gpu_stats) ? n.gpu_stats : []).map((s) => [s.index, s]));
  const gpus = n.gpus || [];
  if (!gpus.length) return h('p', { class: 'muted small' }, t('nodes.no_gpus'));
  return h('ul', { class: 'gpus plain' }, gpus.map((g) => {
    const s = stats.get(g.index) || {};
    const memPct = g.memory_mb ? (100 * (s.mem_used_mb || 0)) / g.memory_mb : 0;
    return h('li', { class: 'gpu' },
      h('span', { class: 'gpu-name' }, `#${g.index} ${g.model || ''} · ${Math.round((g.memory_mb || 0) / 1024)} GiB` +
        (g.compute_capability ? ` · sm ${g.compute_capability}` : '')),
      bar(s.util_pct, t('nodes.util', { n: s.util_pct ?? '—' })),
      bar(memPct, t('nodes.mem', { used: Math.round((s.mem_used_mb || 0) / 1024 * 10) / 10, total: Math.round((g.memory_mb || 0) / 1024) })));
  }));
}

function interconnect(n) {
  const ic = n.interconnect;
  if (!ic || typeof ic !== 'object') return h('span', { class: 'muted' }, t('nodes.not_reported'));
  const parts = [];
  for (const i of ic.interfaces || []) {
    if (i.loopback) continue;
    parts.push(h('span', { class: 'pill' }, `${i.name} ${i.speed_mbps ? (i.speed_mbps / 1000) + ' Gb/s' : ''} ${tOr('nodes.link.' + i.state, null, i.state || '')}`.trim()));
  }
  for (const p of ic.infiniband || [])
    parts.push(h('span', { class: 'pill' }, `${p.hca}:${p.port} ${p.link_layer || 'IB'} ${p.rate_gbps || '?'} Gb/s ${p.state || ''}`.trim()));
  const nv = (ic.gpus || []).reduce((a, g) => a + (Number(g.nvlinks) || 0), 0);
  if (nv) parts.push(h('span', { class: 'pill' }, t('nodes.nvlinks', { n: nv })));
  return parts.length ? parts : h('span', { class: 'muted' }, t('nodes.not_reported'));
}

// The probe's best bus bandwidth over all sizes and variants.
function probeBw(n) {
  const p = n.nccl_probe;
  if (!p || typeof p !== 'object') return h('span', { class: 'muted' }, t('nodes.no_probe'));
  let best = 0, bytes = 0;
  const scan = (rs) => { for (const r of rs || []) if (Number(r.busbw_gbs) > best) { best = Number(r.busbw_gbs); bytes = r.bytes; } };
  scan(p.results);
  for (const v of p.variants || []) scan(v.results);
  return t('nodes.busbw', { bw: best.toFixed(1), gpus: p.gpus ?? '?', size: bytes >= 1 << 20 ? Math.round(bytes / (1 << 20)) + ' MiB' : bytes + ' B' });
}

export function render(main, ctx) {
  const isAdmin = ctx.me && ctx.me.role === 'admin';
  const msg = h('div');
  const list = h('div', { class: 'node-list' });
  const totals = h('span', { class: 'muted', 'aria-live': 'polite' });
  const cards = new Map();
  const empty = h('p', { class: 'muted' }, t('nodes.none'));

  function drainButton(n) {
    const draining = n.state === 'draining';
    const b = h('button', { type: 'button', class: 'small-btn' + (draining ? '' : ' danger'), 'data-action': draining ? 'undrain' : 'drain' },
      t(draining ? 'nodes.undrain' : 'nodes.drain'));
    b.setAttribute('aria-label', t(draining ? 'nodes.undrain_named' : 'nodes.drain_named', { name: n.name }));
    b.addEventListener('click', async () => {
      if (!draining && !window.confirm(t('nodes.drain_confirm', { name: n.name }))) return;
      b.disabled = true;
      try { await post(`/nodes/${encodeURIComponent(n.id)}/${draining ? 'undrain' : 'drain'}`); showError(msg, null); await refresh(); }
      catch (e) { showError(msg, e); b.disabled = false; }
    });
    return b;
  }

  function cardFor(n) {
    let c = cards.get(n.id);
    if (!c) {
      c = { head: h('div', { class: 'node-head' }), info: h('dl', { class: 'kv' }), gpus: h('div') };
      c.el = h('article', { class: 'card node', 'data-node': n.name, 'aria-label': n.name }, c.head, c.info, c.gpus);
      cards.set(n.id, c);
    }
    patch(c.head, [n.name, n.hostname, n.addr, n.state, isAdmin], () => [
      h('h2', null, n.name), badge(STATE_TONE[n.state] || 'muted', tOr('state.' + n.state, null, n.state), n.state),
      h('span', { class: 'small muted' }, [n.hostname, n.addr].filter(Boolean).join(' · ')),
      h('span', { class: 'spacer' }), isAdmin ? drainButton(n) : null]);
    const seenMin = String(n.last_seen_at || '').slice(0, 19);
    patch(c.info, [n.site, n.labels, n.interconnect, n.nccl_probe, n.capabilities, n.state, seenMin, n.gpus_allocated, (n.gpus || []).length], () => [
      h('dt', null, t('nodes.health')), h('dd', null, health(n), ' ', h('span', { class: 'small muted' }, t('nodes.seen_at', { time: fmtTime(n.last_seen_at) }))),
      h('dt', null, t('nodes.site')), h('dd', null, n.site || '—'),
      h('dt', null, t('nodes.labels')), h('dd', null, Object.keys(n.labels || {}).length ? Object.entries(n.labels).map(([k, v]) => h('span', { class: 'pill' }, `${k}=${v}`)) : '—'),
      h('dt', null, t('nodes.allocated')), h('dd', null, `${n.gpus_allocated ?? 0} / ${(n.gpus || []).length}`),
      h('dt', null, t('nodes.interconnect')), h('dd', null, interconnect(n)),
      h('dt', null, t('nodes.probe')), h('dd', null, probeBw(n))]);
    patch(c.gpus, [n.gpus, n.gpu_stats], () => gpuList(n));
    return c.el;
  }

  async function refresh() {
    try {
      const r = await get('/nodes');
      const nodes = r.nodes || [];
      let total = 0, used = 0;
      for (const n of nodes) { total += (n.gpus || []).length; used += Number(n.gpus_allocated) || 0; }
      replace(totals, t('nodes.totals', { nodes: nodes.length, used, total }));
      const keep = new Set(nodes.map((n) => n.id));
      for (const [id, c] of cards) if (!keep.has(id)) { c.el.remove(); cards.delete(id); }
      let prev = null;
      for (const n of nodes) {
        const el = cardFor(n);
        const want = prev ? prev.nextSibling : list.firstChild;
        if (want !== el) list.insertBefore(el, want);
        prev = el;
      }
      if (nodes.length) empty.remove(); else if (!empty.parentNode) list.append(empty);
      showError(msg, null);
      ctx.loaded();
    } catch (e) { showError(msg, e); }
  }

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.nodes')), h('div', { class: 'spacer' }), totals), msg, list);
  ctx.poll(refresh, 5000);
}
