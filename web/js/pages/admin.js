// admin.js - admin-only: node join tokens (with the worker command line),
// users (create; the generated password is shown once), teams (create) and
// team membership.
import { get, post, put } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox, table, row, section } from '../ui.js';

function copyButton(getText) {
  const b = h('button', { type: 'button', class: 'small-btn' }, t('common.copy'));
  b.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(getText()); b.textContent = t('common.copied'); }
    catch (_) { b.textContent = t('common.copy_failed'); }
    setTimeout(() => { b.textContent = t('common.copy'); }, 1500);
  });
  return b;
}

function shellQuote(s) {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
}

export function render(main) {
  let users = [], teams = [];
  const usersBox = h('div'), teamsBox = h('div');
  const memberUser = h('select', { id: 'm-user' }), memberTeam = h('select', { id: 'm-team' });

  // --- join token
  const tokUses = h('input', { id: 'tok-uses', type: 'number', min: 1, max: 10000, value: 1 });
  const tokName = h('input', { id: 'tok-name', value: 'gpu-node-1', class: 'mono' });
  const tokOut = h('div');
  const tokForm = h('form', { class: 'inline-form' },
    h('label', { for: 'tok-uses' }, t('admin.uses')), tokUses,
    h('label', { for: 'tok-name' }, t('admin.node_name')), tokName,
    h('button', { type: 'submit', class: 'primary' }, t('admin.create_token')));
  tokForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await post('/nodes/join-tokens', { uses: Number(tokUses.value) || 1 });
      const cmd = ['trainyard-worker', '--server', location.origin, '--join-token', r.token,
        '--name', tokName.value.trim() || 'gpu-node-1'].map(shellQuote).join(' ');
      replace(tokOut, h('div', { class: 'alert ok' },
        h('div', null, t('admin.token_made', { uses: r.uses, expires: fmtTime(r.expires_at) })),
        h('div', { class: 'small' }, t('admin.token_once')),
        h('pre', { class: 'cmd' }, cmd), copyButton(() => cmd)));
    } catch (e) { replace(tokOut, errorBox(e)); }
  });

  // --- users
  const uName = h('input', { id: 'u-name', class: 'mono', placeholder: 'zhang.san', autocomplete: 'off' });
  const uRole = h('select', { id: 'u-role' }, ['member', 'auditor', 'admin'].map((r) => h('option', { value: r }, t('role.' + r))));
  const uOut = h('div');
  const uForm = h('form', { class: 'inline-form' },
    h('label', { for: 'u-name' }, t('admin.username')), uName,
    h('label', { for: 'u-role' }, t('admin.role')), uRole,
    h('button', { type: 'submit', class: 'primary' }, t('admin.create_user')));
  uForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await post('/users', { username: uName.value.trim(), role: uRole.value });
      replace(uOut, h('div', { class: 'alert ok' },
        h('div', null, t('admin.user_made', { name: r.username })),
        r.password ? [h('div', null, t('admin.password_once')), h('pre', { class: 'cmd' }, r.password), copyButton(() => r.password)] : null));
      uName.value = '';
      loadLists();
    } catch (e) { replace(uOut, errorBox(e)); }
  });

  // --- teams
  const tName = h('input', { id: 't-name', class: 'mono', placeholder: 'nlp' });
  const tQuota = h('input', { id: 't-quota', type: 'number', min: 0, value: 8 });
  const tOut = h('div');
  const tForm = h('form', { class: 'inline-form' },
    h('label', { for: 't-name' }, t('admin.team_name')), tName,
    h('label', { for: 't-quota' }, t('admin.quota')), tQuota,
    h('button', { type: 'submit', class: 'primary' }, t('admin.create_team')));
  tForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await post('/teams', { name: tName.value.trim(), gpu_quota: Number(tQuota.value) || 0 });
      replace(tOut, h('div', { class: 'alert ok' }, t('admin.team_made', { name: r.name })));
      tName.value = '';
      loadLists();
    } catch (e) { replace(tOut, errorBox(e)); }
  });

  // --- membership
  const mOut = h('div');
  const mForm = h('form', { class: 'inline-form' },
    h('label', { for: 'm-user' }, t('admin.user')), memberUser,
    h('label', { for: 'm-team' }, t('admin.team')), memberTeam,
    h('button', { type: 'submit', class: 'primary' }, t('admin.add_member')));
  mForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!memberUser.value || !memberTeam.value) return;
    try {
      await put(`/teams/${encodeURIComponent(memberTeam.value)}/members/${encodeURIComponent(memberUser.value)}`);
      const u = users.find((x) => String(x.id) === memberUser.value), tm = teams.find((x) => String(x.id) === memberTeam.value);
      replace(mOut, h('div', { class: 'alert ok' }, t('admin.member_added', { user: u ? u.username : '', team: tm ? tm.name : '' })));
    } catch (e) { replace(mOut, errorBox(e)); }
  });

  async function loadLists() {
    try {
      const [ur, tr] = await Promise.all([get('/users?limit=500'), get('/teams')]);
      users = ur.users || [];
      teams = tr.teams || [];
      replace(usersBox, table([t('audit.id'), t('admin.username'), t('admin.role'), t('admin.status'), t('jobs.created')],
        users.map((u) => row([u.id, u.username, t('role.' + u.role), u.disabled ? t('admin.disabled') : t('admin.active'), fmtTime(u.created_at)]))));
      replace(teamsBox, table([t('audit.id'), t('admin.team_name'), t('admin.quota'), t('admin.weight'), t('jobs.created')],
        teams.map((x) => row([x.id, x.name, x.gpu_quota, x.priority_weight, fmtTime(x.created_at)]))));
      const keepU = memberUser.value, keepT = memberTeam.value;
      replace(memberUser, users.map((u) => h('option', { value: u.id }, u.username)));
      replace(memberTeam, teams.map((x) => h('option', { value: x.id }, x.name)));
      if (keepU) memberUser.value = keepU;
      if (keepT) memberTeam.value = keepT;
    } catch (e) { replace(usersBox, errorBox(e)); }
  }

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.admin'))),
    section(t('admin.join_token'), h('p', { class: 'muted small' }, t('admin.join_help')), tokForm, tokOut),
    h('div', { class: 'grid2' },
      section(t('admin.users'), uForm, uOut, usersBox),
      section(t('admin.teams'), tForm, tOut, teamsBox)),
    section(t('admin.membership'), mForm, mOut));
  loadLists();
}
