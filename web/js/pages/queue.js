// queue.js - #/queue: queued jobs in scheduling order, each with its
// estimated start and the reason it waits (GET /api/v1/queue, the queue
// forecast). A server without the forecast answers 404 there; the page then
// lists the queued jobs from GET /api/v1/jobs?state=QUEUED, oldest first,
// and says that no estimate is available instead of making one up.
//
// Paged as the job list is: the first PAGE jobs, "load more" for the next
// page by cursor, and each poll re-reads every row loaded so far (up to
// MAX_REFRESH) from the first page, so the rows shown are one forecast. A
// next page of a forecast the leader has replaced since is a 409
// forecast_changed: the rows are then read again from the first page.
//
// Admins change a waiting job's priority from a labelled select in its row
// (PATCH /api/v1/jobs/{id}); the queue is fetched again at once. Members see
// the priority as text.
import { api, get, qs } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t, fmtDuration, fmtNum } from '../i18n.js';
import { showError, liveTable, badge, tOr } from './admin_kit.js';

const PAGE = 50; // the API's default page
const MAX_REFRESH = 1000; // rows re-read by one poll
const TRIES = 3; // reads from the first page when the forecast changes meanwhile

const REASON_TONE = { none: 'ok', gpus: 'warn', quota: 'warn', priority: 'info', reserved: 'info', site_too_small: 'bad', draining: 'warn' };

// The reason a job waits, in the page's language, with its parameters.
export function reasonText(reason) {
  if (!reason || !reason.code) return t('queue.reason.unknown');
  const p = Object.assign({}, reason.params || {});
  // A member is not told which job of another team is in the way.
  if ((reason.code === 'priority' || reason.code === 'reserved') && (p.other_job_id === null || p.other_job_id === undefined))
    return t('queue.reason.' + reason.code + '_hidden');
  for (const k of Object.keys(p)) if (p[k] === null || p[k] === undefined) p[k] = '—';
  return tOr('queue.reason.' + reason.code, p, t('queue.reason.other', { code: reason.code }));
}

// The predicted run time and where it came from.
function predictionText(pr) {
  if (!pr || typeof pr.run_s !== 'number') return t('queue.run_unknown');
  return t('queue.run', { d: fmtDuration(pr.run_s), source: tOr('queue.source.' + pr.source, null, pr.source || '') });
}

function startText(j, now) {
  if (!j.estimated_start) return j.reason && j.reason.code === 'site_too_small' ? t('queue.never') : t('queue.unknown_start');
  const at = Date.parse(j.estimated_start);
  if (!Number.isFinite(at)) return t('queue.unknown_start');
  if (at <= now + 1000) return t('queue.now');
  return t('queue.in', { d: fmtDuration((at - now) / 1000), at: fmtTime(j.estimated_start) });
}

// Whether the server has the forecast: learnt from the first answer of
// GET /queue (a 404 there means no), then kept for this page load.
let hasForecast = true;

export function render(main, ctx) {
  const msg = h('div');
  const note = h('p', { class: 'muted small', id: 'queue-note' });
  const stamp = h('span', { class: 'muted small', 'aria-live': 'polite' });
  let forecast = hasForecast;
  const isAdmin = ctx.me && ctx.me.role === 'admin';

  // data-priority holds the server's value: the row's signature (its cells'
  // HTML) changes, and the select is drawn again, only when the job's does.
  function prioSelect(j) {
    const sel = h('select', { class: 'small', 'data-action': 'priority', 'data-priority': j.priority || '', 'aria-label': t('queue.priority_named', { id: j.id }) },
      ['low', 'normal', 'high'].map((p) => h('option', { value: p, selected: p === j.priority }, t('prio.' + p))));
    sel.addEventListener('change', async () => {
      sel.disabled = true;
      try { await api('PATCH', '/jobs/' + encodeURIComponent(j.id), { priority: sel.value }); showError(msg, null); }
      catch (e) { sel.value = j.priority; showError(msg, e); }
      await refresh();
      sel.disabled = false; // still drawn when the change was refused
    });
    return sel;
  }
  const cols = [
    { label: t('queue.position'), cls: 'num' }, { label: t('queue.job') }, { label: t('queue.team') },
    { label: t('queue.user') }, { label: t('queue.priority') }, { label: t('queue.gpus'), cls: 'num' },
    { label: t('queue.submitted') }, { label: t('queue.start') }, { label: t('queue.reason') }, { label: t('queue.prediction') },
  ];
  const tb = liveTable({
    caption: t('queue.title'), columns: cols, empty: t('queue.empty'), key: (j) => j.id,
    sig: () => String(forecast) + Math.floor(Date.now() / 60000),
    cells: (j) => {
      const now = Date.now();
      const r = j.reason || null;
      return [
        j.position === undefined ? '—' : String(Number(j.position) + 1),
        h('a', { href: '#/jobs/' + j.id }, '#' + j.id + ' ', j.name || ''),
        j.team || '', j.user || '',
        isAdmin ? prioSelect(j) : tOr('prio.' + j.priority, null, j.priority || ''),
        String(j.gpus ?? ''),
        h('span', { class: 'nowrap' }, fmtTime(j.submitted_at || j.created_at)),
        forecast ? startText(j, now) : h('span', { class: 'muted' }, t('queue.no_estimate')),
        forecast && r ? badge(REASON_TONE[r.code] || 'muted', reasonText(r), r.code) : h('span', { class: 'muted' }, '—'),
        forecast ? predictionText(j.prediction) : h('span', { class: 'muted' }, '—'),
      ];
    },
  });

  // Up to want jobs of one forecast, from the first page: {jobs, r (the
  // last answer), next}. A refresh between two pages reads again.
  async function readForecast(want) {
    for (let tries = 1; ; tries++) {
      let jobs = [], r = null, cursor = null;
      try {
        do {
          r = await get('/queue' + qs({ limit: Math.min(500, want - jobs.length), cursor }));
          jobs = jobs.concat(r.jobs || []);
          cursor = r.next_cursor || null;
        } while (cursor && jobs.length < want);
        return { jobs, r, next: cursor };
      } catch (e) {
        if (e.code !== 'forecast_changed' || tries >= TRIES) throw e;
      }
    }
  }

  let loaded = [], next = null, total = 0;
  const more = h('button', { type: 'button', id: 'queue-more', hidden: true }, t('queue.more'));
  const count = h('span', { class: 'muted small', id: 'queue-count' });
  function draw() {
    tb.update(loaded);
    more.hidden = !forecast || !next;
    replace(count, forecast && total > 0 ? t('queue.count', { shown: fmtNum(loaded.length), total: fmtNum(total) }) : '');
  }

  async function refresh() {
    try {
      if (forecast) {
        try {
          const got = await readForecast(Math.min(MAX_REFRESH, Math.max(PAGE, loaded.length)));
          if (ctx.left) return;
          loaded = got.jobs;
          next = got.next;
          total = got.r.total ?? loaded.length;
          replace(stamp, t('queue.generated', { time: fmtTime(got.r.generated_at) }));
        } catch (e) {
          if (e.status !== 404) throw e;
          forecast = hasForecast = false;
        }
      }
      if (!forecast) {
        const r = await get('/jobs' + qs({ state: 'QUEUED', limit: 500 }));
        if (ctx.left) return;
        loaded = (r.jobs || []).slice().sort((a, b) => Number(a.id) - Number(b.id));
        next = null;
        replace(note, t('queue.no_forecast'));
        replace(stamp, t('common.updated', { time: fmtTime(new Date().toISOString()) }));
      }
      draw();
      showError(msg, null);
      ctx.loaded();
    } catch (e) { if (!ctx.left) showError(msg, e); }
  }

  more.addEventListener('click', async () => {
    if (!next) return;
    more.disabled = true;
    try {
      const r = await get('/queue' + qs({ limit: PAGE, cursor: next }));
      const seen = new Set(loaded.map((j) => j.id));
      loaded = loaded.concat((r.jobs || []).filter((j) => !seen.has(j.id)));
      next = r.next_cursor || null;
      total = r.total ?? total;
      draw();
    } catch (e) {
      if (e.code !== 'forecast_changed') showError(msg, e);
      else {
        // Another forecast: read the rows shown and one more page from it.
        const want = loaded.length + PAGE;
        try {
          const got = await readForecast(want);
          loaded = got.jobs;
          next = got.next;
          total = got.r.total ?? loaded.length;
          replace(stamp, t('queue.generated', { time: fmtTime(got.r.generated_at) }));
          draw();
        } catch (e2) { showError(msg, e2); }
      }
    }
    more.disabled = false;
  });

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('queue.title')), h('div', { class: 'spacer' }), stamp),
    h('p', { class: 'muted small' }, t('queue.help')), note, msg, tb.el, h('div', { class: 'foot' }, more, count));
  ctx.poll(refresh, 5000);
}
