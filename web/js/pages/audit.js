// audit.js - the audit trail (newest first, paged) and the hash-chain check.
import { get, qs } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox, table, row, section } from '../ui.js';

export function render(main) {
  let events = [], cursor = null;
  const msg = h('div');
  const verifyBox = h('div', null, h('span', { class: 'muted' }, t('common.loading')));
  const body = h('div');
  const more = h('button', { type: 'button' }, t('jobs.more'));
  const verifyBtn = h('button', { type: 'button' }, t('audit.verify_again'));

  function draw() {
    replace(body, table([t('audit.id'), t('audit.time'), t('audit.actor'), t('audit.action'), t('audit.target'), t('audit.outcome'), t('audit.details')],
      events.map((e) => row([e.id, h('span', { class: 'nowrap' }, fmtTime(e.ts)), e.actor, h('code', null, e.action), e.target,
        h('span', { class: 'badge outcome-' + String(e.outcome).replace(/[^a-z]/g, '') }, e.outcome),
        e.details && Object.keys(e.details).length ? h('code', { class: 'small wrap' }, JSON.stringify(e.details)) : '']))));
    more.hidden = !cursor;
  }

  async function load(next) {
    try {
      const r = await get('/audit/events' + qs({ limit: 100, cursor: next ? cursor : '' }));
      events = next ? events.concat(r.events || []) : (r.events || []);
      cursor = r.next_cursor;
      draw();
    } catch (e) { replace(msg, errorBox(e)); }
  }

  async function verify() {
    verifyBtn.disabled = true;
    try {
      const v = await get('/audit/verify');
      replace(verifyBox, v.valid
        ? h('div', { class: 'alert ok' }, t('audit.valid', { n: v.checked }))
        : h('div', { class: 'alert error' }, t('audit.invalid', { n: v.checked, id: v.first_bad_id })));
    } catch (e) { replace(verifyBox, errorBox(e)); }
    verifyBtn.disabled = false;
  }

  more.addEventListener('click', () => load(true));
  verifyBtn.addEventListener('click', verify);
  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.audit'))), msg,
    section(t('audit.chain'), verifyBox, verifyBtn),
    section(t('audit.events'), body, h('div', { class: 'foot' }, more)));
  draw();
  load(false);
  verify();
}
