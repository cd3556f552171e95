// model.js - #/models/{name}: one model: its aliases and its versions, newest
// first, each with its source (job, output or checkpoint, step), manifest
// digest, size and whether its lineage is complete; a version's lineage
// (dataset -> job -> output -> version), metrics, parameters and manifest
// open on demand (GET /models/{name}/versions/{v}). Older versions by
// cursor.
import { get, qs } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t, fmtNum, fmtBytes } from '../i18n.js';
import { errorBox, section } from '../ui.js';
import { digest, lineageChain, versionLabel } from '../serving.js';
import { aliasPills } from './models.js';

export function render(main, ctx) {
  const name = ctx.params.name;
  const base = '/models/' + encodeURIComponent(name);
  const msg = h('div');
  const head = h('dl', { class: 'kv' });
  const aliases = h('div', { id: 'model-aliases' });
  const list = h('div', { class: 'versions', id: 'model-versions' });
  const more = h('button', { type: 'button', id: 'versions-more', hidden: true }, t('serve.more'));
  let cursor = null;
  const kv = (k, v) => [h('dt', null, k), h('dd', null, v ?? '—')];

  function versionCard(v) {
    const detail = h('div', { class: 'version-detail' });
    const det = h('details', { class: 'version', id: 'version-' + v.version },
      h('summary', null,
        h('strong', null, versionLabel(v.version)), ' ',
        v.lineage_complete ? h('span', { class: 'badge tone-ok' }, t('serve.lineage_ok')) : h('span', { class: 'badge tone-warn' }, t('serve.lineage_partial')), ' ',
        h('span', { class: 'muted small' }, t('models.from_job', { id: v.source_job_id ?? '—', kind: t('serve.lin_' + (v.source_kind === 'checkpoint' ? 'checkpoint' : 'output')) })), ' ',
        digest(v.manifest_sha256), ' ',
        h('span', { class: 'muted small' }, `${t('serve.files_n', { n: v.files ?? '?' })} · ${fmtBytes(v.bytes || 0)} · ${fmtTime(v.created_at)}`)),
      detail);
    let loaded = false;
    det.addEventListener('toggle', async () => {
      if (!det.open || loaded) return;
      loaded = true;
      replace(detail, h('p', { class: 'muted' }, t('common.loading')));
      try {
        const full = await get(base + '/versions/' + v.version);
        if (ctx.left) return;
        const metrics = Object.entries(full.metrics || {});
        const params = Object.entries(full.params || {});
        const manifest = Array.isArray(full.manifest) ? full.manifest : [];
        replace(detail,
          lineageChain(name, full, null),
          h('dl', { class: 'kv small' },
            kv(t('models.digest'), h('code', { class: 'wrap' }, full.manifest_sha256)),
            kv(t('models.serve_kind'), `${full.serve_kind} · ${full.serve_script}`),
            kv(t('models.by'), full.created_by),
            kv(t('models.metrics'), metrics.length ? metrics.map(([k, x]) => h('span', { class: 'pill' }, `${k} = ${typeof x === 'number' ? fmtNum(x) : x}`)) : '—'),
            kv(t('models.params'), params.length ? params.map(([k, x]) => h('span', { class: 'pill' }, `${k} = ${JSON.stringify(x)}`)) : '—')),
          h('details', { class: 'manifest' }, h('summary', null, t('models.manifest', { n: manifest.length })),
            h('div', { class: 'table-wrap' }, h('table', null,
              h('thead', null, h('tr', null, [t('models.path'), t('models.size'), 'SHA-256'].map((x) => h('th', { scope: 'col' }, x)))),
              h('tbody', null, manifest.map((m) => h('tr', null, h('td', null, h('code', { class: 'wrap' }, m.path)),
                h('td', { class: 'num nowrap' }, fmtBytes(m.size)), h('td', null, digest(m.sha256)))))))));
      } catch (e) { loaded = false; replace(detail, errorBox(e)); }
    });
    return det;
  }

  async function load(before) {
    const r = await get(base + qs({ cursor: before }));
    if (ctx.left) return null;
    for (const v of r.versions || []) list.append(versionCard(v));
    cursor = r.next_cursor ?? null;
    more.hidden = !cursor;
    return r;
  }
  more.addEventListener('click', async () => {
    more.disabled = true;
    try { await load(cursor); } catch (e) { replace(msg, errorBox(e)); }
    more.disabled = false;
  });

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, t('models.title', { name }))),
    msg,
    h('div', { class: 'grid2' }, section(t('models.summary'), head), section(t('models.aliases'), aliases)),
    section(t('models.versions'), list, h('div', { class: 'foot' }, more)));

  load().then((m) => {
    if (!m) return;
    replace(head, kv(t('models.team'), m.team), kv(t('models.site'), m.site), kv(t('models.latest'), m.latest_version ? versionLabel(m.latest_version) : '—'),
      kv(t('models.by'), m.created_by), kv(t('models.created'), fmtTime(m.created_at)), m.description ? kv(t('models.description'), m.description) : null);
    replace(aliases, h('p', null, aliasPills(m.aliases)));
    if (!(m.versions || []).length) list.append(h('p', { class: 'muted' }, t('models.no_versions')));
    ctx.loaded();
  }, (e) => { if (!ctx.left) { replace(msg, errorBox(e)); ctx.loaded(); } });
}
