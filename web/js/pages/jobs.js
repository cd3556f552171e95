// jobs.js - #/jobs: the job list. State filter (kept for the tab), a name
// search over the loaded rows, "load more" by cursor, refreshed every 3 s in
// place (liveTable): a poll rewrites only the cells that changed, so 1,000
// rows stay responsive and focus and selection survive.
import { get, qs } from '../api.js';
import { h, replace, fmtTime, stateBadge } from '../dom.js';
import { t, fmtNum } from '../i18n.js';
import { errorBox, liveTable, STATES } from '../ui.js';

const PAGE = 100;
const MAX_REFRESH = 1000; // rows re-read by one refresh

export function render(main, ctx) {
  let jobs = [], cursor = null, filter = sessionStorage.getItem('ty.jobs.state') || '', search = '';
  const msg = h('div');
  const more = h('button', { type: 'button', id: 'jobs-more' }, t('jobs.more'));
  const stamp = h('span', { class: 'muted small', 'aria-live': 'off' });
  const count = h('span', { class: 'muted small', id: 'jobs-count' });
  const sel = h('select', { id: 'state-filter' },
    h('option', { value: '' }, t('jobs.all_states')),
    STATES.map((s) => h('option', { value: s, selected: s === filter }, t('state.' + s))));
  const find = h('input', { id: 'jobs-search', type: 'search', placeholder: t('jobs.search_ph') });
  const tb = liveTable({
    caption: t('nav.jobs'), key: (j) => j.id, empty: t('jobs.none'), hide: (j) => !matches(j),
    columns: [
      { label: t('jobs.id'), cell: (j) => h('a', { href: '#/jobs/' + j.id }, j.id), sig: (j) => j.id },
      { label: t('jobs.name'), cell: (j) => h('a', { href: '#/jobs/' + j.id }, j.name), sig: (j) => j.name },
      { label: t('jobs.team'), cell: (j) => j.team, sig: (j) => j.team },
      { label: t('jobs.user'), cell: (j) => j.user, sig: (j) => j.user },
      { label: t('jobs.state'), cell: (j) => stateBadge(j.state), sig: (j) => j.state },
      { label: t('jobs.gpus'), cell: (j) => fmtNum(j.gpus), sig: (j) => j.gpus, class: 'num' },
      { label: t('jobs.restarts'), cell: (j) => `${j.restarts ?? 0} / ${j.max_restarts ?? 0}`, sig: (j) => `${j.restarts}/${j.max_restarts}`, class: 'num' },
      { label: t('jobs.created'), cell: (j) => fmtTime(j.created_at), sig: (j) => j.created_at, class: 'nowrap' },
    ],
  });

  const matches = (j) => {
    const q = search.trim().toLowerCase();
    return !q || String(j.name).toLowerCase().includes(q) || String(j.id) === q;
  };
  function draw() {
    tb.update(jobs);
    replace(count, t('jobs.count', { shown: jobs.filter(matches).length, loaded: jobs.length }));
    more.hidden = !cursor;
  }

  // A refresh re-reads every row loaded so far (up to MAX_REFRESH), so rows
  // already shown stay current.
  async function refresh() {
    try {
      let all = [], cur = null;
      const want = Math.min(MAX_REFRESH, Math.max(PAGE, jobs.length));
      do {
        const r = await get('/jobs' + qs({ limit: Math.min(500, want - all.length), state: filter, cursor: cur }));
        all = all.concat(r.jobs || []);
        cur = r.next_cursor;
      } while (cur && all.length < want);
      if (ctx.left) return;
      jobs = all;
      cursor = cur;
      replace(msg);
      replace(stamp, t('common.updated', { time: fmtTime(new Date().toISOString()) }));
      draw();
      ctx.loaded();
    } catch (e) { if (!ctx.left) replace(msg, errorBox(e)); }
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
    draw();
    refresh();
  });
  find.addEventListener('input', () => { search = find.value; draw(); });

  main.append(
    h('div', { class: 'page-head' },
      h('h1', null, t('nav.jobs')),
      h('div', { class: 'spacer' }),
      h('label', { for: 'state-filter', class: 'inline' }, t('jobs.filter')), sel,
      h('label', { for: 'jobs-search', class: 'inline' }, t('jobs.search')), find,
      h('a', { class: 'button primary', href: '#/wizard' }, t('nav.wizard'))),
    msg, tb.el, h('div', { class: 'foot' }, more, count, stamp));
  draw();
  ctx.poll(refresh, 3000);
}
