// deployments.js - #/deployments: the caller's teams' deployments (admins
// and auditors: all): model and version (and the canary's share), state,
// ready replicas of the wanted number, team; refreshed every 5 s in place.
import { h, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { liveTable } from '../ui.js';
import { versionLabel, pagedList } from '../serving.js';
import { badge } from './admin_kit.js';

export function depState(d) {
  if (d.state === 'stopped') return badge('muted', t('deployments.state_stopped'));
  if (!d.replicas) return badge('muted', t('deployments.state_idle'));
  const ready = d.ready_replicas ?? 0;
  if (d.replicas > 0 && ready >= d.replicas) return badge('ok', t('deployments.state_serving'));
  if (ready > 0) return badge('warn', t('deployments.state_partial'));
  return badge('info', t('deployments.state_starting'));
}

export function versionText(d) {
  const main = d.alias ? `${d.alias} (${versionLabel(d.version ?? '?')})` : versionLabel(d.version ?? '?');
  return d.canary_version && d.canary_weight > 0
    ? t('deployments.with_canary', { main, canary: versionLabel(d.canary_version), pct: d.canary_weight }) : main;
}

export function render(main, ctx) {
  const msg = h('div');
  const more = h('button', { type: 'button', id: 'deployments-more', hidden: true }, t('serve.more'));
  const tb = liveTable({
    caption: t('nav.deployments'), key: (d) => d.name, empty: t('deployments.none'),
    columns: [
      { label: t('deployments.name'), cell: (d) => h('a', { href: '#/deployments/' + encodeURIComponent(d.name) }, d.name), sig: (d) => d.name },
      { label: t('deployments.model'), cell: (d) => h('a', { href: '#/models/' + encodeURIComponent(d.model) }, d.model), sig: (d) => d.model },
      { label: t('deployments.version'), cell: (d) => versionText(d) },
      { label: t('deployments.state'), cell: (d) => depState(d), sig: (d) => `${d.state}/${d.ready_replicas}/${d.replicas}` },
      { label: t('deployments.replicas'), cell: (d) => t('deployments.ready_of', { ready: d.ready_replicas ?? 0, n: d.replicas }), class: 'num' },
      { label: t('deployments.team'), cell: (d) => d.team ?? '' },
      { label: t('deployments.created'), cell: (d) => fmtTime(d.created_at), class: 'nowrap' },
    ],
  });

  const refresh = pagedList(ctx, { path: '/deployments', field: 'deployments', tb, more, msg });

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, t('nav.deployments')), h('div', { class: 'spacer' }),
      h('a', { class: 'button', href: '#/models' }, t('nav.models'))),
    h('p', { class: 'muted small' }, t('deployments.intro')),
    msg, tb.el, h('div', { class: 'foot' }, more));
  ctx.poll(refresh, 5000);
}
