// models.js - #/models: the model registry (docs/serving.md): each model
// with its team, site, newest version, number of versions and aliases;
// "load more" by cursor; refreshed every 10 s in place.
import { h, fmtTime } from '../dom.js';
import { t, fmtNum } from '../i18n.js';
import { liveTable } from '../ui.js';
import { versionLabel, pagedList } from '../serving.js';

export function aliasPills(aliases) {
  const list = Object.entries(aliases || {});
  if (!list.length) return h('span', { class: 'muted' }, '—');
  return list.map(([a, v]) => h('span', { class: 'pill' }, `${a} → ${versionLabel(v)}`));
}

export function render(main, ctx) {
  const msg = h('div');
  const more = h('button', { type: 'button', id: 'models-more', hidden: true }, t('serve.more'));
  const tb = liveTable({
    caption: t('nav.models'), key: (m) => m.name, empty: t('models.none'),
    columns: [
      { label: t('models.name'), cell: (m) => h('a', { href: '#/models/' + encodeURIComponent(m.name) }, m.name), sig: (m) => m.name },
      { label: t('models.team'), cell: (m) => m.team ?? '' },
      { label: t('models.site'), cell: (m) => m.site ?? '' },
      { label: t('models.latest'), cell: (m) => (m.latest_version ? versionLabel(m.latest_version) : '—') },
      { label: t('models.versions'), cell: (m) => fmtNum(m.versions ?? 0, 0), class: 'num' },
      { label: t('models.aliases'), cell: (m) => h('span', null, aliasPills(m.aliases)), sig: (m) => JSON.stringify(m.aliases || {}) },
      { label: t('models.created'), cell: (m) => fmtTime(m.created_at), class: 'nowrap' },
    ],
  });

  const refresh = pagedList(ctx, { path: '/models', field: 'models', tb, more, msg });

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, t('nav.models')), h('div', { class: 'spacer' }),
      h('a', { class: 'button', href: '#/deployments' }, t('nav.deployments'))),
    h('p', { class: 'muted small' }, t('models.intro')),
    msg, tb.el, h('div', { class: 'foot' }, more));
  ctx.poll(refresh, 10000);
}
