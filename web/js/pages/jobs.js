// jobs.js - the job list: state filter, "load more" by cursor, refresh every 3 s.
import { get, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox, poll, table, STATES } from '../ui.js';

const PAGE = 50;

export function render(main) {
  let jobs = [], cursor = null, filter = sessionStorage.getItem('ty.jobs.state') || '';
  const msg = h('div');
  const body = h('div');
  const more = h('button', { type: 'button' }, t('jobs.more'));
  const stamp = h('span', { class: 'muted small' });
  const sel = h('select', { id: 'state-filter' },
    h('option', { value: '' }, t('jobs.all_states')),
    STATES.map((s) => h('option', { value: s, selected: s === filter }, t('state.' + s))));

  function draw() {
    const rows = jobs.map((j) => h('tr', null,
      h('td', null, h('a', { href: '#/jobs/' + j.id }, j.id)),
      h('td', null, h('a', { href: '#/jobs/' + j.id }, j.name)),
      h('td', null, j.team), h('td', null, j.user),
      h('td', null, stateBadge(j.state)),
      h('td', { class: 'num' }, j.gpus),
      h('td', { class: 'num' }, `${j.restarts ?? 0} / ${j.max_restarts ?? 0}`),
      h('td', { class: 'nowrap' }, fmtTime(j.created_at))));
    replace(body, table([t('jobs.id'), t('jobs.name'), t('jobs.team'), t('jobs.user'), t('jobs.state'),
      t('jobs.gpus'), t('jobs.restarts'), t('jobs.created')], rows, { empty: t('jobs.none') }));
    more.hidden = !cursor;
  }

  // A refresh re-reads everything loaded so far, so rows already shown stay current.
  async function refresh() {
    const limit = Math.min(500, Math.max(PAGE, jobs.length));
    try {
      const r = await get('/jobs' + qs({ limit, state: filter }));
      jobs = r.jobs || [];
      cursor = r.next_cursor;
      replace(msg);
      replace(stamp, t('common.updated', { time: fmtTime(new Date().toISOString()) }));
      draw();
    } catch (e) { replace(msg, errorBox(e)); }
  }

  more.addEventListener('click', async () => {
    if (!cursor) return;
    more.disabled = true;
    try {
      const r = await get('/jobs' + qs({ limit: PAGE, state: filter, cursor }));
      const seen = new Set(jobs.map((j) => j.id));
      jobs = jobs.concat((r.jobs || []).filter((j) => !seen.has(j.id)));
      cursor = r.next_cursor;
      draw();
    } catch (e) { replace(msg, errorBox(e)); }
    more.disabled = false;
  });
  sel.addEventListener('change', () => {
    filter = sel.value;
    sessionStorage.setItem('ty.jobs.state', filter);
    jobs = [];
    cursor = null;
    refresh();
  });

  main.append(
    h('div', { class: 'page-head' },
      h('h1', null, t('nav.jobs')),
      h('div', { class: 'spacer' }),
      h('label', { for: 'state-filter', class: 'inline' }, t('jobs.filter')), sel,
      h('a', { class: 'button primary', href: '#/submit' }, t('nav.submit'))),
    msg, body, h('div', { class: 'foot' }, more, stamp));
  draw();
  return poll(refresh, 3000);
}
