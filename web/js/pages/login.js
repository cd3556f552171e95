// login.js - the sign-in form. The server sets an HttpOnly session cookie and
// returns the CSRF token, which api.js keeps in sessionStorage.
import { api, setCsrf } from '../api.js';
import { h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox } from '../ui.js';

export function render(main, ctx) {
  const user = h('input', { id: 'login-user', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const pass = h('input', { id: 'login-pass', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const msg = h('div');
  const btn = h('button', { type: 'submit', class: 'primary' }, t('login.submit'));
  const form = h('form', { class: 'login card' },
    h('h1', null, 'trainyard'),
    h('p', { class: 'muted' }, t('login.subtitle')),
    h('label', { for: 'login-user' }, t('login.username')), user,
    h('label', { for: 'login-pass' }, t('login.password')), pass,
    msg, btn);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    btn.disabled = true;
    replace(msg);
    try {
      const r = await api('POST', '/auth/login', { username: user.value.trim(), password: pass.value });
      setCsrf(r.csrf_token);
      let me = r.user;
      try { me = await api('GET', '/me'); } catch (_) { /* the login answer is enough */ }
      ctx.signedIn(me);
    } catch (e) {
      replace(msg, errorBox(e));
      btn.disabled = false;
      pass.select();
    }
  });
  main.append(h('div', { class: 'login-wrap' }, form));
  ctx.loaded();
  user.focus();
}
