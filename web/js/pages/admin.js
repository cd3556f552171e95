// admin.js - #/admin (admins): users; teams with their GPU quota and
// priority weight, and membership; node join tokens, shown once with the
// worker command to paste (the token in the worker's environment, never on
// its command line), listed without their text and revocable, optionally
// bound to one node name to re-join a reinstalled node; webhooks and their delivery log; sites, the
// compliance policy and datasets; export approvals, where an admin's own
// request shows who else must decide it instead of approve and deny buttons
// (the server refuses a self-approval too).
import { get, post, put, api, qs } from '../api.js';
import { h, replace, fmtTime } from '../dom.js';
import { t } from '../i18n.js';
import { showError, okBox, field, input, select, copyButton, shellQuote, badge, liveTable, card, tOr } from './admin_kit.js';

const del = (p) => api('DELETE', p);
const patchApi = (p, b) => api('PATCH', p, b);
const lines = (s) => String(s || '').split('\n').map((x) => x.trim()).filter(Boolean);
const CLASSES = ['public', 'internal', 'confidential', 'secret'];
const HOOK_EVENTS = ['job.failed', 'job.recovered', 'job.succeeded', 'node.lost', 'policy.violation'];
const HOOK_FORMATS = ['generic', 'wecom', 'dingtalk', 'feishu'];
const EXPORT_TONE = { pending: 'warn', approved: 'ok', downloaded: 'ok', denied: 'bad', expired: 'muted' };

function form(onSubmit, ...kids) {
  const f = h('form', { class: 'form-grid admin-form', novalidate: true }, kids);
  // Each try starts with no field marked; a refusal marks its field again.
  f.addEventListener('submit', (ev) => { ev.preventDefault(); showError(h('div'), null, f); onSubmit(f); });
  return f;
}

const submitBtn = (text) => h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, text));

export function render(main, ctx) {
  const me = ctx.me || {};
  let teams = [], sites = [], users = [];
  const listeners = [];
  const onLists = (fn) => listeners.push(fn);

  // ---------------------------------------------------------------- users
  const uOut = h('div', { 'aria-live': 'polite' });
  const uName = input('u-name', 'username', { class: 'mono', autocomplete: 'off', required: true, placeholder: 'zhang.san' });
  const uDisplay = input('u-display', 'display_name', { autocomplete: 'off' });
  const uRole = select('u-role', 'role', ['member', 'auditor', 'admin'].map((r) => [r, t('role.' + r)]));
  const uForm = form(async (f) => {
    try {
      const body = { username: uName.value.trim(), role: uRole.value };
      if (uDisplay.value.trim()) body.display_name = uDisplay.value.trim();
      const r = await post('/users', body);
      okBox(uOut, h('div', null, t('admin.user_made', { name: r.username })),
        r.password ? [h('div', null, t('admin.password_once')), h('pre', { class: 'cmd', id: 'u-password' }, r.password),
          copyButton(() => r.password, t('admin.copy_password'))] : null);
      uName.value = ''; uDisplay.value = '';
      loadLists();
      showError(h('div'), null, f);
    } catch (e) { showError(uOut, e, f); }
  }, field(t('admin.username'), uName), field(t('admin.display_name'), uDisplay), field(t('admin.role'), uRole), submitBtn(t('admin.create_user')));
  const uMsg = h('div');
  const uTable = liveTable({
    caption: t('admin.users'), empty: t('common.empty'), key: (u) => u.id,
    columns: [{ label: t('admin.username') }, { label: t('admin.role') }, { label: t('admin.status') }, { label: t('admin.created') }, { label: t('admin.actions') }],
    rowClass: (u) => (u.disabled ? 'row-muted' : ''),
    cells: (u) => {
      const b = h('button', { type: 'button', class: 'small-btn' + (u.disabled ? '' : ' danger'), 'aria-label': t(u.disabled ? 'admin.enable_named' : 'admin.disable_named', { name: u.username }) },
        t(u.disabled ? 'admin.enable' : 'admin.disable'));
      if (String(u.id) === String(me.id)) b.disabled = true;
      b.addEventListener('click', async () => {
        try { await patchApi('/users/' + encodeURIComponent(u.id), { disabled: !u.disabled }); showError(uMsg, null); loadLists(); }
        catch (e) { showError(uMsg, e); }
      });
      return [[h('strong', null, u.username), u.display_name ? h('span', { class: 'small muted' }, ' ', u.display_name) : null],
        t('role.' + u.role), u.disabled ? badge('muted', t('admin.disabled')) : badge('ok', t('admin.active')),
        h('span', { class: 'nowrap' }, fmtTime(u.created_at)), b];
    },
  });

  // ---------------------------------------------------------- teams, quotas
  const tOut = h('div', { 'aria-live': 'polite' });
  const tName = input('t-name', 'name', { class: 'mono', placeholder: 'nlp', autocomplete: 'off' });
  const tQuota = input('t-quota', 'gpu_quota', { type: 'number', min: 0, max: 1000000, value: 8 });
  const tWeight = input('t-weight', 'priority_weight', { type: 'number', min: 0.01, max: 1000, step: 'any', value: 1 });
  const tForm = form(async (f) => {
    try {
      const r = await post('/teams', { name: tName.value.trim(), gpu_quota: Number(tQuota.value), priority_weight: Number(tWeight.value) });
      okBox(tOut, t('admin.team_made', { name: r.name }));
      tName.value = '';
      loadLists();
    } catch (e) { showError(tOut, e, f); }
  }, field(t('admin.team_name'), tName), field(t('admin.quota'), tQuota, t('admin.quota_help')), field(t('admin.weight'), tWeight, t('admin.weight_help')), submitBtn(t('admin.create_team')));
  const tMsg = h('div');
  const tTable = liveTable({
    caption: t('admin.teams'), key: (x) => x.id,
    columns: [{ label: t('admin.team_name') }, { label: t('admin.quota') }, { label: t('admin.weight') }, { label: t('admin.actions') }],
    cells: (x) => {
      const q = input('tq-' + x.id, 'gpu_quota', { type: 'number', min: 0, max: 1000000, value: x.gpu_quota, class: 'narrow', form: 'tf-' + x.id, 'aria-label': t('admin.quota_of', { team: x.name }) });
      const w = input('tw-' + x.id, 'priority_weight', { type: 'number', min: 0.01, max: 1000, step: 'any', value: x.priority_weight, class: 'narrow', form: 'tf-' + x.id, 'aria-label': t('admin.weight_of', { team: x.name }) });
      const f = h('form', { class: 'row-form', id: 'tf-' + x.id });
      const save = h('button', { type: 'submit', class: 'small-btn', form: 'tf-' + x.id, 'aria-label': t('admin.save_team', { team: x.name }) }, t('admin.save'));
      f.append(save);
      f.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        try {
          await patchApi('/teams/' + encodeURIComponent(x.id), { gpu_quota: Number(q.value), priority_weight: Number(w.value) });
          okBox(tMsg, t('admin.team_saved', { name: x.name }));
          loadLists();
        } catch (e) { showError(tMsg, e, f.closest('tr')); }
      });
      return [h('strong', null, x.name), q, w, f];
    },
  });
  const mOut = h('div', { 'aria-live': 'polite' });
  const mUser = select('m-user', 'user_id', []), mTeam = select('m-team', 'team', []);
  const mForm = form(async (f) => {
    if (!mUser.value || !mTeam.value) return;
    try {
      await put(`/teams/${encodeURIComponent(mTeam.value)}/members/${encodeURIComponent(mUser.value)}`);
      const u = users.find((x) => String(x.id) === mUser.value), tm = teams.find((x) => String(x.id) === mTeam.value);
      okBox(mOut, t('admin.member_added', { user: u ? u.username : '', team: tm ? tm.name : '' }));
    } catch (e) { showError(mOut, e, f); }
  }, field(t('admin.user'), mUser), field(t('admin.team'), mTeam), submitBtn(t('admin.add_member')));
  onLists(() => {
    const ku = mUser.value, kt = mTeam.value;
    replace(mUser, users.map((u) => h('option', { value: u.id }, u.username)));
    replace(mTeam, teams.map((x) => h('option', { value: x.id }, x.name)));
    if (ku) mUser.value = ku;
    if (kt) mTeam.value = kt;
  });

  // ------------------------------------------------------------ join tokens
  const jOut = h('div', { 'aria-live': 'polite' });
  const jUses = input('j-uses', 'uses', { type: 'number', min: 1, max: 10000, value: 1 });
  const jTtl = input('j-ttl', 'ttl_s', { type: 'number', min: 1, max: 720, value: 24 });
  const jName = input('j-name', 'name', { class: 'mono', value: 'gpu-node-1', autocomplete: 'off' });
  const jSite = select('j-site', 'labels.site', []);
  const jBind = h('input', { type: 'checkbox', id: 'j-bind', name: 'j-bind', 'data-field': 'node' });
  const jMsg = h('div');
  const JT_TONE = { active: 'ok', used_up: 'muted', expired: 'muted', revoked: 'bad' };
  const jTable = liveTable({
    caption: t('admin.join_tokens'), key: (x) => x.id, empty: t('admin.no_join_tokens'),
    columns: [{ label: t('admin.jt_id'), cls: 'num' }, { label: t('admin.created') }, { label: t('admin.jt_by') }, { label: t('admin.jt_expires') },
      { label: t('admin.jt_used'), cls: 'num' }, { label: t('admin.jt_node') }, { label: t('admin.status') }, { label: t('admin.actions') }],
    rowClass: (x) => (x.state === 'active' ? '' : 'row-muted'),
    cells: (x) => {
      let act = '—';
      if (!x.revoked_at) {
        act = h('button', { type: 'button', class: 'small-btn danger', 'aria-label': t('admin.revoke_jt_named', { id: x.id }) }, t('admin.revoke'));
        act.addEventListener('click', async () => {
          if (!window.confirm(t('admin.revoke_jt_confirm', { id: x.id }))) return;
          try { await del('/nodes/join-tokens/' + encodeURIComponent(x.id)); okBox(jMsg, t('admin.jt_revoked', { id: x.id })); loadJoinTokens(); }
          catch (e) { showError(jMsg, e); }
        });
      }
      return [String(x.id), h('span', { class: 'nowrap' }, fmtTime(x.created_at)), x.created_by || '—', h('span', { class: 'nowrap' }, fmtTime(x.expires_at)),
        x.uses == null ? String(x.used ?? '') : `${x.used}/${x.uses}`, x.node ? h('code', null, x.node) : t('admin.jt_any'),
        badge(JT_TONE[x.state] || 'muted', tOr('admin.jt_state.' + x.state, null, x.state)), act];
    },
  });
  async function loadJoinTokens() {
    try { const r = await get('/nodes/join-tokens'); jTable.update(r.join_tokens || []); } catch (e) { showError(jMsg, e); }
  }
  onLists(() => {
    const k = jSite.value;
    replace(jSite, sites.map((s) => h('option', { value: s.name }, s.name)));
    if (k) jSite.value = k;
  });
  const jForm = form(async (f) => {
    try {
      const name = jName.value.trim() || 'gpu-node-1';
      const body = { uses: Number(jUses.value), ttl_s: Math.round(Number(jTtl.value) * 3600) };
      if (jBind.checked) body.node = name;
      const r = await post('/nodes/join-tokens', body);
      // The token rides in the worker's environment: a command line is
      // readable by every local user (/proc/PID/cmdline).
      const args = ['TRAINYARD_JOIN_TOKEN=' + shellQuote(r.token), 'trainyard-worker', '--server', shellQuote(location.origin), '--name', shellQuote(name)];
      if (jSite.value && jSite.value !== 'default') args.push('--labels', shellQuote('site=' + jSite.value));
      const cmd = args.join(' ');
      okBox(jOut, h('div', null, t('admin.token_made', { uses: r.uses, expires: fmtTime(r.expires_at) })),
        h('div', { class: 'small' }, t('admin.token_once')),
        h('pre', { class: 'cmd', id: 'join-command', tabindex: '0', 'aria-label': t('admin.worker_command') }, cmd), copyButton(() => cmd, t('admin.copy_command')));
      jBind.checked = false;
      loadJoinTokens();
    } catch (e) { showError(jOut, e, f); }
  }, field(t('admin.uses'), jUses), field(t('admin.ttl_h'), jTtl), field(t('admin.node_name'), jName, t('admin.node_name_help')),
  field(t('admin.site'), jSite), field(t('admin.jt_bind'), jBind, t('admin.jt_bind_help')), submitBtn(t('admin.create_token')));

  // --------------------------------------------------------------- webhooks
  const wOut = h('div', { 'aria-live': 'polite' });
  const wTeam = select('w-team', 'team', []);
  const wUrl = input('w-url', 'url', { type: 'url', class: 'mono', placeholder: 'https://chat.example.internal/hook', autocomplete: 'off' });
  const wFormat = select('w-format', 'format', HOOK_FORMATS.map((f) => [f, t('admin.hook_format.' + f)]));
  const wEvents = h('fieldset', { class: 'checks', 'data-field': 'events', tabindex: '-1' }, h('legend', null, t('admin.hook_events')),
    HOOK_EVENTS.map((ev) => h('label', { class: 'inline' }, h('input', { type: 'checkbox', value: ev, checked: ev !== 'job.succeeded' }), ' ', tOr('admin.hook_event.' + ev, null, ev))));
  onLists(() => {
    const k = wTeam.value;
    replace(wTeam, teams.map((x) => h('option', { value: x.name }, x.name)));
    if (k) wTeam.value = k;
  });
  const wForm = form(async (f) => {
    try {
      const events = [...wEvents.querySelectorAll('input:checked')].map((x) => x.value);
      const r = await post('/webhooks', { team: wTeam.value, url: wUrl.value.trim(), format: wFormat.value, events });
      okBox(wOut, t('admin.hook_made', { id: r.id }), r.secret ? [h('div', { class: 'small' }, t('admin.hook_secret_once')), h('pre', { class: 'cmd' }, r.secret), copyButton(() => r.secret)] : null);
      wUrl.value = '';
      loadHooks();
    } catch (e) { showError(wOut, e, f); }
  }, field(t('admin.team'), wTeam), field(t('admin.hook_url'), wUrl), field(t('admin.hook_format'), wFormat), h('div', { class: 'field wide' }, wEvents), submitBtn(t('admin.create_hook')));
  const wMsg = h('div');
  const deliveries = h('div', { id: 'deliveries', 'aria-live': 'polite' });
  let openHook = null;
  const dTable = liveTable({
    caption: t('admin.deliveries'), key: (d) => d.id, empty: t('admin.no_deliveries'),
    columns: [{ label: t('admin.time') }, { label: t('admin.hook_event') }, { label: t('admin.delivery_status') }, { label: t('admin.attempts'), cls: 'num' }, { label: t('admin.http_status'), cls: 'num' }],
    cells: (d) => [h('span', { class: 'nowrap' }, fmtTime(d.created_at)), tOr('admin.hook_event.' + d.event, null, d.event),
      badge(d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'bad' : 'warn', tOr('admin.delivery.' + d.status, null, d.status)),
      String(d.attempts ?? ''), d.http_status ? String(d.http_status) : '—'],
  });
  async function loadDeliveries() {
    if (!openHook) return;
    try { const r = await get(`/webhooks/${encodeURIComponent(openHook.id)}/deliveries`); dTable.update(r.deliveries || []); }
    catch (e) { showError(wMsg, e); }
  }
  const hTable = liveTable({
    caption: t('admin.webhooks'), key: (w) => w.id, empty: t('admin.no_hooks'), sig: () => teams.map((x) => x.name).join(),
    columns: [{ label: t('admin.hook_scope') }, { label: t('admin.hook_url') }, { label: t('admin.hook_format') }, { label: t('admin.hook_events') }, { label: t('admin.actions') }],
    cells: (w) => {
      const team = teams.find((x) => String(x.id) === String(w.team_id));
      const log = h('button', { type: 'button', class: 'small-btn', 'aria-label': t('admin.show_deliveries_of', { id: w.id }) }, t('admin.show_deliveries'));
      log.addEventListener('click', () => { openHook = w; replace(deliveries, h('h3', null, t('admin.deliveries_of', { id: w.id, url: w.url })), dTable.el); dTable.update([]); loadDeliveries(); });
      const rm = h('button', { type: 'button', class: 'small-btn danger', 'aria-label': t('admin.delete_hook_named', { id: w.id }) }, t('admin.delete'));
      rm.addEventListener('click', async () => {
        if (!window.confirm(t('admin.delete_hook_confirm', { url: w.url }))) return;
        try { await del('/webhooks/' + encodeURIComponent(w.id)); if (openHook && openHook.id === w.id) { openHook = null; replace(deliveries); } loadHooks(); }
        catch (e) { showError(wMsg, e); }
      });
      return [w.job_id ? t('admin.hook_job', { id: w.job_id }) : t('admin.hook_team', { team: team ? team.name : String(w.team_id) }),
        h('code', { class: 'wrap' }, w.url), t('admin.hook_format.' + w.format), (w.events || []).map((e) => h('span', { class: 'pill' }, tOr('admin.hook_event.' + e, null, e))), [log, ' ', rm]];
    },
  });
  async function loadHooks() {
    try { const r = await get('/webhooks'); hTable.update(r.webhooks || []); } catch (e) { showError(wMsg, e); }
  }

  // ------------------------------------------------------------------ sites
  const sOut = h('div', { 'aria-live': 'polite' });
  const sName = input('s-name', 'name', { class: 'mono', placeholder: 'plant-a', autocomplete: 'off' });
  const sRoots = h('textarea', { id: 's-roots', 'data-field': 'storage_roots', rows: 2, class: 'mono', placeholder: '/data/plant-a' });
  const sNets = h('textarea', { id: 's-nets', 'data-field': 'networks', rows: 2, class: 'mono', placeholder: '10.20.0.0/16' });
  const sForm = form(async (f) => {
    try {
      const r = await post('/sites', { name: sName.value.trim(), storage_roots: lines(sRoots.value), networks: lines(sNets.value) });
      okBox(sOut, t('admin.site_made', { name: r.name }));
      sName.value = ''; sRoots.value = ''; sNets.value = '';
      loadLists();
    } catch (e) { showError(sOut, e, f); }
  }, field(t('admin.site_name'), sName), field(t('admin.storage_roots'), sRoots, t('admin.one_per_line')), field(t('admin.networks'), sNets, t('admin.one_per_line')), submitBtn(t('admin.create_site')));
  const sMsg = h('div');
  const sTable = liveTable({
    caption: t('admin.sites'), key: (s) => s.id || s.name,
    columns: [{ label: t('admin.site_name') }, { label: t('admin.storage_roots') }, { label: t('admin.networks') }, { label: t('admin.actions') }],
    cells: (s) => {
      let rm = null;
      if (s.name !== 'default') {
        rm = h('button', { type: 'button', class: 'small-btn danger', 'aria-label': t('admin.delete_site_named', { name: s.name }) }, t('admin.delete'));
        rm.addEventListener('click', async () => {
          if (!window.confirm(t('admin.delete_site_confirm', { name: s.name }))) return;
          try { await del('/sites/' + encodeURIComponent(s.name)); showError(sMsg, null); loadLists(); } catch (e) { showError(sMsg, e); }
        });
      }
      return [h('strong', null, s.name), (s.storage_roots || []).map((x) => h('code', { class: 'pill' }, x)),
        (s.networks || []).map((x) => h('code', { class: 'pill' }, x)), rm || h('span', { class: 'muted small' }, t('admin.site_default'))];
    },
  });

  // ----------------------------------------------------------------- policy
  const pOut = h('div', { 'aria-live': 'polite' });
  const pDays = input('p-days', 'audit_retention_days', { type: 'number', min: 180, max: 36500 });
  const pClass = select('p-class', 'default_classification', CLASSES.map((c) => [c, t('admin.class.' + c)]));
  const pForm = form(async (f) => {
    try {
      await patchApi('/policy', { audit_retention_days: Number(pDays.value), default_classification: pClass.value });
      okBox(pOut, t('admin.policy_saved'));
    } catch (e) { showError(pOut, e, f); }
  }, field(t('admin.retention_days'), pDays, t('admin.retention_help')), field(t('admin.default_class'), pClass, t('admin.default_class_help')), submitBtn(t('admin.save_policy')));
  async function loadPolicy() {
    try { const p = await get('/policy'); pDays.value = p.audit_retention_days; pClass.value = p.default_classification; }
    catch (e) { showError(pOut, e); }
  }

  // --------------------------------------------------------------- datasets
  const dOut = h('div', { 'aria-live': 'polite' });
  const dName = input('d-name', 'name', { class: 'mono', placeholder: 'line3-photos', autocomplete: 'off' });
  const dUri = input('d-uri', 'uri', { class: 'mono', placeholder: '/data/plant-a/line3-photos', autocomplete: 'off' });
  const dSite = select('d-site', 'site', []);
  const dClass = select('d-class', 'classification', CLASSES.map((c) => [c, t('admin.class.' + c)]));
  const dTeam = select('d-team', 'team', []);
  const dDesc = input('d-desc', 'description', { autocomplete: 'off' });
  onLists(() => {
    const ks = dSite.value, kt = dTeam.value;
    replace(dSite, sites.map((s) => h('option', { value: s.name }, s.name)));
    replace(dTeam, teams.map((x) => h('option', { value: x.name }, x.name)));
    if (ks) dSite.value = ks;
    if (kt) dTeam.value = kt;
  });
  const dForm = form(async (f) => {
    try {
      const body = { name: dName.value.trim(), uri: dUri.value.trim(), site: dSite.value, classification: dClass.value, team: dTeam.value };
      if (dDesc.value.trim()) body.description = dDesc.value.trim();
      const r = await post('/datasets', body);
      okBox(dOut, t('admin.dataset_made', { name: r.name }));
      dName.value = ''; dUri.value = ''; dDesc.value = '';
      loadDatasets();
    } catch (e) { showError(dOut, e, f); }
  }, field(t('admin.dataset_name'), dName), field(t('admin.dataset_uri'), dUri), field(t('admin.site'), dSite), field(t('admin.classification'), dClass),
  field(t('admin.team'), dTeam), field(t('admin.description'), dDesc), submitBtn(t('admin.create_dataset')));
  const dMsg = h('div');
  const dsTable = liveTable({
    caption: t('admin.datasets'), key: (d) => d.id, empty: t('admin.no_datasets'),
    columns: [{ label: t('admin.dataset_name') }, { label: t('admin.dataset_uri') }, { label: t('admin.site') }, { label: t('admin.classification') }, { label: t('admin.team') }, { label: t('admin.actions') }],
    cells: (d) => {
      const rm = h('button', { type: 'button', class: 'small-btn danger', 'aria-label': t('admin.delete_dataset_named', { name: d.name }) }, t('admin.delete'));
      rm.addEventListener('click', async () => {
        if (!window.confirm(t('admin.delete_dataset_confirm', { name: d.name }))) return;
        try { await del('/datasets/' + encodeURIComponent(d.name)); showError(dMsg, null); loadDatasets(); } catch (e) { showError(dMsg, e); }
      });
      return [h('strong', null, d.name), h('code', { class: 'wrap' }, d.uri), d.site, classBadge(d.classification), d.team, rm];
    },
  });
  async function loadDatasets() {
    try { const r = await get('/datasets' + qs({ limit: 500 })); dsTable.update(r.datasets || []); } catch (e) { showError(dMsg, e); }
  }

  // ----------------------------------------------------------------- exports
  const eMsg = h('div', { 'aria-live': 'polite' });
  const eState = select('e-state', 'state', [['pending', t('admin.export.pending')], ['', t('admin.export_all')]]);
  const eTable = liveTable({
    caption: t('admin.exports'), key: (x) => x.id, empty: t('admin.no_exports'),
    columns: [{ label: t('admin.export_id'), cls: 'num' }, { label: t('admin.export_job') }, { label: t('admin.export_path') }, { label: t('admin.classification') },
      { label: t('admin.requested_by') }, { label: t('admin.export_state') }, { label: t('admin.actions') }],
    rowClass: (x) => (x.state === 'pending' ? 'row-pending' : ''),
    cells: (x) => {
      let act;
      if (x.state !== 'pending') act = x.decided_by ? h('span', { class: 'small muted' }, t('admin.decided_by', { user: x.decided_by, time: fmtTime(x.decided_at) })) : '';
      else if (String(x.requested_by_id) === String(me.id)) {
        // Four eyes: another admin decides; withdrawing (deny) one's own is allowed.
        const wd = h('button', { type: 'button', class: 'small-btn', 'data-action': 'withdraw', 'aria-label': t('admin.withdraw_named', { id: x.id }) }, t('admin.withdraw'));
        wd.addEventListener('click', async () => {
          wd.disabled = true;
          try { await post(`/exports/${encodeURIComponent(x.id)}/deny`, { note: 'withdrawn' }); okBox(eMsg, t('admin.withdrawn', { id: x.id })); loadExports(); }
          catch (e) { showError(eMsg, e); wd.disabled = false; }
        });
        act = h('div', { class: 'row-actions' }, h('span', { class: 'small own-request' }, t('admin.own_request')), wd);
      } else {
        const note = input('note-' + x.id, 'note', { class: 'narrow-wide', 'aria-label': t('admin.note_for', { id: x.id }), placeholder: t('admin.note') });
        const ok = h('button', { type: 'button', class: 'small-btn primary', 'data-action': 'approve', 'aria-label': t('admin.approve_named', { id: x.id }) }, t('admin.approve'));
        const no = h('button', { type: 'button', class: 'small-btn danger', 'data-action': 'deny', 'aria-label': t('admin.deny_named', { id: x.id }) }, t('admin.deny'));
        const decide = async (what) => {
          ok.disabled = no.disabled = true;
          try {
            const r = await post(`/exports/${encodeURIComponent(x.id)}/${what}`, note.value.trim() ? { note: note.value.trim() } : {});
            const url = r && r.download_url ? new URL(r.download_url, location.origin).href : '';
            okBox(eMsg, t(what === 'approve' ? 'admin.approved' : 'admin.denied', { id: x.id }),
              url ? [h('div', { class: 'small' }, t('admin.link_once')), h('pre', { class: 'cmd', id: 'export-link' }, url), copyButton(() => url, t('admin.copy_link'))] : null);
            loadExports();
          } catch (e) { showError(eMsg, e); ok.disabled = no.disabled = false; }
        };
        ok.addEventListener('click', () => decide('approve'));
        no.addEventListener('click', () => decide('deny'));
        act = h('div', { class: 'row-actions' }, note, ok, no);
      }
      return [String(x.id), h('a', { href: '#/jobs/' + x.job_id }, '#' + x.job_id + ' ' + (x.job_name || '')), h('code', { class: 'wrap' }, x.path),
        classBadge(x.classification), x.requested_by, badge(EXPORT_TONE[x.state] || 'muted', tOr('admin.export.' + x.state, null, x.state)), act];
    },
  });
  async function loadExports() {
    try { const r = await get('/exports' + qs({ state: eState.value, limit: 200 })); eTable.update(r.exports || []); } catch (e) { showError(eMsg, e); }
  }
  eState.addEventListener('change', loadExports);

  // ------------------------------------------------------------------ lists
  async function loadLists() {
    try {
      const [ur, tr, sr] = await Promise.all([get('/users?limit=500'), get('/teams'), get('/sites')]);
      users = ur.users || [];
      teams = tr.teams || [];
      sites = sr.sites || [];
      uTable.update(users);
      tTable.update(teams);
      sTable.update(sites);
      for (const fn of listeners) fn();
      showError(uMsg, null);
    } catch (e) { showError(uMsg, e); }
  }

  const sections = [
    ['users', t('admin.users'), [uForm, uOut, uMsg, uTable.el]],
    ['teams', t('admin.teams'), [h('p', { class: 'muted small' }, t('admin.teams_help')), tForm, tOut, tMsg, tTable.el, h('h3', null, t('admin.membership')), mForm, mOut]],
    ['join', t('admin.join_token'), [h('p', { class: 'muted small' }, t('admin.join_help')), jForm, jOut, jMsg, jTable.el]],
    ['webhooks', t('admin.webhooks'), [wForm, wOut, wMsg, hTable.el, deliveries]],
    ['sites', t('admin.sites'), [h('p', { class: 'muted small' }, t('admin.sites_help')), sForm, sOut, sMsg, sTable.el]],
    ['policy', t('admin.policy'), [pForm, pOut]],
    ['datasets', t('admin.datasets'), [dForm, dOut, dMsg, dsTable.el]],
    ['exports', t('admin.exports'), [h('p', { class: 'muted small' }, t('admin.exports_help')), h('div', { class: 'inline-form' }, h('label', { for: 'e-state' }, t('admin.export_filter')), eState), eMsg, eTable.el]],
  ];
  const toc = h('nav', { class: 'toc', 'aria-label': t('admin.sections') }, sections.map(([id, title]) => {
    const b = h('button', { type: 'button', class: 'link' }, title);
    b.addEventListener('click', () => { const s = document.getElementById('admin-' + id); s.scrollIntoView(); s.querySelector('h2').focus(); });
    return b;
  }));
  main.append(h('div', { class: 'page-head' }, h('h1', null, t('nav.admin'))), toc,
    ...sections.map(([id, title, kids]) => {
      const c = card(title, kids);
      c.id = 'admin-' + id;
      c.querySelector('h2').setAttribute('tabindex', '-1');
      return c;
    }));
  Promise.all([loadLists(), loadPolicy(), loadDatasets(), loadHooks(), loadExports(), loadJoinTokens()]).then(() => ctx.loaded());
  ctx.poll(() => Promise.all([loadHooks(), loadExports(), loadDeliveries()]), 5000);
}

function classBadge(c) {
  const tone = { public: 'ok', internal: 'info', confidential: 'warn', secret: 'bad' }[c] || 'muted';
  return badge(tone, tOr('admin.class.' + c, null, c || ''), c);
}
