// audit.js - #/audit (admins, auditors): the audit trail as a filterable
// table (actor, action, target, time range) paged by keyset: each page asks
// GET /audit/events for the events below the last id seen (`cursor`), so the
// thousandth page costs what the first does, however long the trail; the
// page keeps the cursors it came by to go back. Policy violations and
// refusals are highlighted with a marker in words. Next to it the chain's
// status (GET /audit/verify), its signed checkpoints, and the signed export
// in JSON Lines or CSV with the public key and how to verify offline.
import { get, qs } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { showError, field, input, select, badge, liveTable, card, tOr, copyButton } from './admin_kit.js';

const PAGE = 100;
export const ACTIONS = ['auth.login', 'auth.logout', 'user.create', 'user.update', 'user.password', 'team.create', 'team.update', 'team.member_add',
  'team.member_remove', 'token.create', 'token.revoke', 'node.join_token.create', 'node.join_token.revoke', 'node.join', 'node.register', 'node.state',
  'node.drain', 'node.undrain', 'node.ranks_lost', 'job.submit', 'job.cancel', 'job.priority', 'job.state', 'job.plan', 'job.checkpoint',
  'job.restart_refunded', 'webhook.create', 'webhook.delete', 'site.create', 'site.update', 'site.delete', 'dataset.create',
  'dataset.delete', 'policy.update', 'policy.violation', 'export.request', 'export.approve', 'export.deny', 'export.download',
  'export.expire', 'audit.export', 'audit.retention', 'audit.key_rotated'];
const OUTCOME_TONE = { success: 'ok', failure: 'bad', denied: 'bad', error: 'bad' };

// datetime-local value -> RFC 3339 in UTC ("" stays "").
function isoOf(v) {
  if (!v) return '';
  const d = new Date(v);
  return isNaN(d.getTime()) ? v : d.toISOString();
}

function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function render(main, ctx) {
  let alive = true;
  ctx.onLeave(() => { alive = false; });
  // ---------------------------------------------------------------- filters
  const fActor = input('a-actor', 'actor', { class: 'mono', placeholder: 'user:alice', autocomplete: 'off' });
  const fAction = select('a-action', 'action', [['', t('audit.any_action')]].concat(
    [...new Set(ACTIONS.map((a) => a.split('.')[0]))].map((p) => [p + '.', t('audit.action_group', { group: tOr('audit.group.' + p, null, p) })]),
    ACTIONS.map((a) => [a, tOr('audit.act.' + a, null, a)])));
  const fTarget = input('a-target', 'target', { class: 'mono', placeholder: 'job:42', autocomplete: 'off' });
  const fSince = input('a-since', 'since', { type: 'datetime-local', step: 1 });
  const fUntil = input('a-until', 'until', { type: 'datetime-local', step: 1 });
  const msg = h('div');
  const filters = h('form', { class: 'form-grid filters', role: 'search', 'aria-label': t('audit.filters') },
    field(t('audit.actor'), fActor), field(t('audit.action'), fAction), field(t('audit.target'), fTarget),
    field(t('audit.since'), fSince), field(t('audit.until'), fUntil),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, t('audit.apply')),
      h('button', { type: 'reset' }, t('audit.clear'))));

  // ------------------------------------------------------------------ table
  const tb = liveTable({
    caption: t('audit.events'), key: (e) => e.id, empty: t('audit.no_events'), class: 'audit-table',
    columns: [{ label: t('audit.id'), cls: 'num' }, { label: t('audit.time') }, { label: t('audit.actor') }, { label: t('audit.action') },
      { label: t('audit.target') }, { label: t('audit.outcome') }, { label: t('audit.details') }],
    rowClass: (e) => (e.action === 'policy.violation' ? 'row-violation' : e.outcome !== 'success' ? 'row-refused' : ''),
    cells: (e) => [String(e.id), h('span', { class: 'nowrap' }, fmtTime(e.ts)), h('code', null, e.actor || ''),
      [e.action === 'policy.violation' ? badge('bad', t('audit.violation')) : null, ' ', h('span', { 'data-action': e.action }, tOr('audit.act.' + e.action, null, e.action))],
      h('code', { class: 'wrap' }, e.target || ''),
      badge(OUTCOME_TONE[e.outcome] || 'muted', tOr('audit.outcome.' + e.outcome, null, e.outcome), e.outcome),
      e.details && Object.keys(e.details).length ? h('code', { class: 'small wrap details' }, JSON.stringify(e.details)) : ''],
  });
  const pageInfo = h('span', { class: 'muted small', 'aria-live': 'polite', id: 'audit-page-info' });
  const newer = h('button', { type: 'button', id: 'audit-newer' }, t('audit.newer'));
  const older = h('button', { type: 'button', id: 'audit-older' }, t('audit.older'));
  const first = h('button', { type: 'button', id: 'audit-first' }, t('audit.newest'));
  // cursors[i] is the cursor that loaded page i ("" for the newest page).
  let cursors = [''], next = null, seq = 0, loads = 0;
  let query = {};

  async function loadPage(i) {
    const my = ++seq;
    const t0 = performance.now();
    tb.el.setAttribute('aria-busy', 'true');
    try {
      const r = await get('/audit/events' + qs(Object.assign({ limit: PAGE, cursor: cursors[i] }, query)));
      if (!alive || my !== seq) return;
      const events = r.events || [];
      tb.update(events);
      next = r.next_cursor || null;
      cursors = cursors.slice(0, i + 1);
      if (next) cursors.push(next);
      const ms = performance.now() - t0;
      tb.el.setAttribute('data-page', String(i));
      tb.el.setAttribute('data-ms', ms.toFixed(1));
      replace(pageInfo, events.length ? t('audit.page_info', { page: i + 1, from: events[0].id, to: events[events.length - 1].id, ms: Math.round(ms) }) : t('audit.no_events'));
      page = i;
      newer.disabled = i === 0;
      first.disabled = i === 0;
      older.disabled = !next;
      showError(msg, null, filters);
    } catch (e) {
      if (alive && my === seq) showError(msg, e, filters);
    } finally {
      if (my === seq) {
        tb.el.removeAttribute('aria-busy');
        tb.el.setAttribute('data-loads', String(++loads)); // for tests and bench/web: a page came
      }
    }
  }
  let page = 0;
  // Jump: the page that starts at event #N (keyset: the events below N+1).
  const jumpId = input('audit-jump', 'cursor', { type: 'number', min: 1, class: 'narrow' });
  const jump = h('form', { class: 'inline-form jump' }, field(t('audit.jump'), jumpId),
    h('button', { type: 'submit' }, t('audit.go')));
  jump.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const n = Math.floor(Number(jumpId.value));
    if (!(n >= 1)) { showError(msg, { code: 'invalid_argument', field: 'cursor' }, jump); return; }
    cursors = ['', String(n + 1)];
    loadPage(1);
  });
  older.addEventListener('click', () => { if (next) loadPage(page + 1); });
  newer.addEventListener('click', () => { if (page > 0) loadPage(page - 1); });
  first.addEventListener('click', () => loadPage(0));
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    query = { actor: fActor.value.trim(), action: fAction.value, target: fTarget.value.trim(), since: isoOf(fSince.value), until: isoOf(fUntil.value) };
    cursors = [''];
    loadPage(0);
  });
  filters.addEventListener('reset', () => { setTimeout(() => { query = {}; cursors = ['']; loadPage(0); }, 0); });
  const violations = h('button', { type: 'button', id: 'audit-violations' }, t('audit.only_violations'));
  violations.addEventListener('click', () => { fAction.value = 'policy.violation'; filters.requestSubmit(); });

  // ------------------------------------------------------------------ chain
  const chainBox = h('div', { 'aria-live': 'polite', id: 'chain-status' }, h('span', { class: 'muted' }, t('audit.verifying')));
  const verifyBtn = h('button', { type: 'button' }, t('audit.verify_again'));
  async function verify() {
    verifyBtn.disabled = true;
    replace(chainBox, h('span', { class: 'muted' }, t('audit.verifying')));
    try {
      const v = await get('/audit/verify');
      if (!alive) return;
      replace(chainBox, v.valid
        ? h('div', { class: 'alert ok', 'data-valid': 'true' }, badge('ok', t('audit.chain_ok')), ' ', t('audit.valid', { n: v.checked, c: v.checkpoints_checked ?? 0, from: v.from_seq ?? 0 }))
        : h('div', { class: 'alert error', 'data-valid': 'false' }, badge('bad', t('audit.chain_bad')), ' ',
          v.first_bad_id ? t('audit.invalid', { n: v.checked, id: v.first_bad_id }) : t('audit.invalid_checkpoint', { id: v.first_bad_checkpoint_id })));
    } catch (e) { if (alive) showError(chainBox, e); }
    verifyBtn.disabled = false;
  }
  verifyBtn.addEventListener('click', verify);
  const cpMsg = h('div');
  const cpTable = liveTable({
    caption: t('audit.checkpoints'), key: (c) => c.id, empty: t('audit.no_checkpoints'),
    columns: [{ label: t('audit.cp_seq'), cls: 'num' }, { label: t('audit.cp_kind') }, { label: t('audit.time') }, { label: t('audit.cp_key') }, { label: t('audit.cp_hash') }],
    cells: (c) => [String(c.seq), tOr('audit.cp_kind.' + c.kind, null, c.kind), h('span', { class: 'nowrap' }, fmtTime(c.created_at)),
      h('code', null, c.key_id || ''), h('code', { class: 'small', title: c.hash }, String(c.hash || '').slice(0, 16) + '…')],
  });
  let cpNext = null;
  const cpMore = h('button', { type: 'button', hidden: true }, t('audit.more_checkpoints'));
  let cps = [];
  async function loadCheckpoints(more) {
    try {
      const r = await get('/audit/checkpoints' + qs({ limit: 20, cursor: more ? cpNext : '' }));
      if (!alive) return;
      cps = more ? cps.concat(r.checkpoints || []) : (r.checkpoints || []);
      cpTable.update(cps);
      cpNext = r.next_cursor || null;
      cpMore.hidden = !cpNext;
    } catch (e) { if (alive) showError(cpMsg, e); }
  }
  cpMore.addEventListener('click', () => loadCheckpoints(true));

  // ----------------------------------------------------------------- export
  const xFormat = select('x-format', 'format', [['jsonl', t('audit.fmt_jsonl')], ['csv', t('audit.fmt_csv')]]);
  const xFrom = input('x-from', 'from', { class: 'mono', placeholder: t('audit.from_ph'), autocomplete: 'off' });
  const xTo = input('x-to', 'to', { class: 'mono', placeholder: t('audit.to_ph'), autocomplete: 'off' });
  const xLink = h('a', { class: 'button primary', id: 'audit-export-link' }, t('audit.download_export'));
  const keyBtn = h('button', { type: 'button', id: 'audit-key' }, t('audit.download_key'));
  const xMsg = h('div');
  const cmdText = () => `trainyard audit verify audit-export.${xFormat.value} --public-key audit-public-key.json`;
  const cmd = h('pre', { class: 'cmd', id: 'verify-command', tabindex: '0', 'aria-label': t('audit.verify_command') });
  function exportHref() {
    // A bound that is a date is sent as RFC 3339; an id as digits.
    const b = (v) => (/^\d+$/.test(v.trim()) || !v.trim() ? v.trim() : isoOf(v.trim()));
    xLink.setAttribute('href', '/api/v1/audit/export' + qs({ format: xFormat.value, from: b(xFrom.value), to: b(xTo.value) }));
    xLink.setAttribute('download', 'audit-export.' + xFormat.value);
    replace(cmd, cmdText());
  }
  for (const el of [xFormat, xFrom, xTo]) el.addEventListener('input', exportHref);
  xFormat.addEventListener('change', exportHref);
  keyBtn.addEventListener('click', async () => {
    try {
      const k = await get('/audit/public-key');
      download('audit-public-key.json', JSON.stringify(k, null, 2) + '\n', 'application/json');
      showError(xMsg, null);
    } catch (e) { showError(xMsg, e); }
  });
  exportHref();
  const exportForm = h('div', { class: 'form-grid' }, field(t('audit.format'), xFormat), h('div'),
    field(t('audit.export_from'), xFrom, t('audit.bound_help')), field(t('audit.export_to'), xTo, t('audit.bound_help')));

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.audit'))),
    card(t('audit.chain'), chainBox, h('div', { class: 'foot' }, verifyBtn), h('h3', null, t('audit.checkpoints')), cpMsg, cpTable.el, h('div', { class: 'foot' }, cpMore)),
    card(t('audit.events'), filters, h('div', { class: 'toolbar' }, violations), msg, tb.el,
      h('nav', { class: 'foot pager', 'aria-label': t('audit.pages') }, first, newer, older, pageInfo), jump),
    card(t('audit.export'), h('p', { class: 'muted small' }, t('audit.export_help')), exportForm, h('div', { class: 'actions' }, xLink, keyBtn), xMsg,
      h('h3', null, t('audit.offline')), h('ol', { class: 'steps' },
        h('li', null, t('audit.step_download')), h('li', null, t('audit.step_key')),
        h('li', null, t('audit.step_verify'), cmd, copyButton(cmdText, t('audit.copy_command'))), h('li', null, t('audit.step_result')))));
  Promise.all([loadPage(0), loadCheckpoints(false)]).then(() => ctx.loaded());
  verify();
}
