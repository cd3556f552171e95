// account.js - #/account: the signed-in user's API tokens (made and shown
// once, listed, revoked) and their password.
//
// Password: POST /api/v1/me/password with the current one; the server ends
// the user's other sessions (this one goes on).
import { get, post, api } from '../api.js';
import { h, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { showError, okBox, field, input, select, copyButton, badge, liveTable, card } from './admin_kit.js';

const EXPIRY = [['', 'account.expiry.never'], ['2592000', 'account.expiry.30d'], ['7776000', 'account.expiry.90d'], ['31536000', 'account.expiry.365d']];

export function render(main, ctx) {
  const me = ctx.me || {};
  const out = h('div', { 'aria-live': 'polite' });
  const msg = h('div');
  const name = input('tok-label', 'name', { autocomplete: 'off', placeholder: 'ci-pipeline', maxlength: 128 });
  const exp = select('tok-expiry', 'expires_in_s', EXPIRY.map(([v, k]) => [v, t(k)]));
  const f = h('form', { class: 'form-grid', novalidate: true },
    field(t('account.token_name'), name), field(t('account.token_expiry'), exp),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, t('account.create_token'))));
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    showError(h('div'), null, f);
    try {
      const body = { name: name.value.trim() };
      if (exp.value) body.expires_in_s = Number(exp.value);
      const r = await post('/tokens', body);
      const use = `export TRAINYARD_SERVER=${location.origin} TRAINYARD_TOKEN=${r.token}`;
      okBox(out, h('div', null, t('account.token_made', { name: r.name })), h('div', { class: 'small' }, t('account.token_once')),
        h('pre', { class: 'cmd', id: 'new-token', tabindex: '0', 'aria-label': t('account.new_token') }, r.token), copyButton(() => r.token, t('account.copy_token')),
        h('div', { class: 'small' }, t('account.token_use')), h('pre', { class: 'cmd' }, use));
      name.value = '';
      showError(msg, null, f);
      load();
    } catch (e) { showError(out, e, f); }
  });

  const tb = liveTable({
    caption: t('account.tokens'), key: (x) => x.id, empty: t('account.no_tokens'),
    columns: [{ label: t('account.token_name') }, { label: t('account.created') }, { label: t('account.expires') }, { label: t('account.last_used') }, { label: t('account.state') }, { label: t('account.actions') }],
    rowClass: (x) => (x.revoked_at ? 'row-muted' : ''),
    cells: (x) => {
      let act = '';
      if (!x.revoked_at) {
        act = h('button', { type: 'button', class: 'small-btn danger', 'aria-label': t('account.revoke_named', { name: x.name }) }, t('account.revoke'));
        act.addEventListener('click', async () => {
          if (!window.confirm(t('account.revoke_confirm', { name: x.name }))) return;
          try { await api('DELETE', '/tokens/' + encodeURIComponent(x.id)); okBox(msg, t('account.revoked_ok', { name: x.name })); load(); }
          catch (e) { showError(msg, e); }
        });
      }
      const expired = x.expires_at && Date.parse(String(x.expires_at).replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')) < Date.now();
      return [h('strong', null, x.name), h('span', { class: 'nowrap' }, fmtTime(x.created_at)), x.expires_at ? h('span', { class: 'nowrap' }, fmtTime(x.expires_at)) : t('account.expiry.never'),
        x.last_used_at ? h('span', { class: 'nowrap' }, fmtTime(x.last_used_at)) : t('account.never_used'),
        x.revoked_at ? badge('muted', t('account.revoked')) : expired ? badge('warn', t('account.expired')) : badge('ok', t('account.active')), act];
    },
  });
  async function load() {
    try { const r = await get('/tokens'); tb.update(r.tokens || []); } catch (e) { showError(msg, e); }
  }

  // password: every user changes their own, with the current one.
  const p0 = input('pw-current', 'current_password', { type: 'password', autocomplete: 'current-password' });
  const p1 = input('pw-new', 'new_password', { type: 'password', autocomplete: 'new-password', minlength: 12 });
  const p2 = input('pw-again', 'password_again', { type: 'password', autocomplete: 'new-password', minlength: 12 });
  const pOut = h('div', { 'aria-live': 'polite' });
  const pf = h('form', { class: 'form-grid', novalidate: true, id: 'pw-form' }, field(t('account.current_password'), p0),
    field(t('account.new_password'), p1, t('account.password_rule')), field(t('account.password_again'), p2),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, t('account.change_password'))));
  pf.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    showError(h('div'), null, pf);
    if (p1.value !== p2.value) {
      showError(pOut, { code: 'password_mismatch', field: 'password_again' }, pf);
      return;
    }
    try {
      await post('/me/password', { current_password: p0.value, new_password: p1.value });
      p0.value = ''; p1.value = ''; p2.value = '';
      showError(h('div'), null, pf);
      okBox(pOut, t('account.password_changed'));
    } catch (e) { showError(pOut, e, pf); }
  });
  const pw = [h('p', { class: 'muted small' }, t('account.password_help')), pf, pOut];

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('account.title')), h('span', { class: 'muted' }, me.username || '')),
    card(t('account.tokens'), h('p', { class: 'muted small' }, t('account.tokens_help')), f, out, msg, tb.el),
    card(t('account.password'), pw));
  load().then(() => ctx.loaded());
}
