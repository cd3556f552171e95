// submit.js - the one-click submit form. The template buttons come from
// GET /api/v1/templates (server/templates.h), in the server's order, named in
// the page's language; a click fills the form with the template's ready job.
// The team select starts at the user's first team; with no team at all it
// says so instead of sending an empty team. Errors from the API
// ({"error":{code,message,detail,field}}) are shown and the offending input
// is marked.
import { get, post } from '../api.js';
import { h, replace } from '../dom.js';
import { t, getLang } from '../i18n.js';
import { errorBox } from '../ui.js';

// A {"zh-CN": ..., "en": ...} text in the page's language (English if missing).
const local = (texts) => (texts && (texts[getLang()] || texts.en)) || '';

// API field name -> form input key ("resources.gpus", "env.FOO", "command[1]" ...).
function inputFor(field) {
  const f = String(field || '');
  if (f.startsWith('resources.gpus_per_node')) return 'gpus_per_node';
  if (f.startsWith('resources')) return 'gpus';
  for (const k of ['name', 'team', 'command', 'priority', 'max_restarts', 'time_limit_s', 'env', 'output_dir'])
    if (f === k || f.startsWith(k + '.') || f.startsWith(k + '[')) return k === 'time_limit_s' ? 'time_limit_min' : k;
  return null;
}

export function render(main) {
  const inputs = {};
  const hints = {};
  const fieldRow = (key, label, control, help) => {
    control.id = 'f-' + key;
    inputs[key] = control;
    hints[key] = h('div', { class: 'field-error' });
    return h('div', { class: 'field' },
      h('label', { for: control.id }, label),
      control,
      help ? h('div', { class: 'help' }, help) : null,
      hints[key]);
  };
  const teamSel = h('select', { required: true }, h('option', { value: '' }, t('common.loading')));
  const msg = h('div');
  const tplList = h('div', { class: 'tpl-list' }, h('span', { class: 'muted small' }, t('common.loading')));
  let fromTemplate = null; // the id of the template the form was filled from
  const submitBtn = h('button', { type: 'submit', class: 'primary' }, t('submit.submit'));

  const form = h('form', { class: 'card form-grid', novalidate: true },
    fieldRow('name', t('submit.name'), h('input', { maxlength: 128, required: true })),
    fieldRow('team', t('submit.team'), teamSel),
    h('div', { class: 'field wide' },
      h('label', { for: 'f-command' }, t('submit.command')),
      (inputs.command = h('textarea', { id: 'f-command', rows: 5, spellcheck: 'false', class: 'mono' })),
      h('div', { class: 'help' }, t('submit.command_help')),
      (hints.command = h('div', { class: 'field-error' }))),
    fieldRow('gpus', t('submit.gpus'), h('input', { type: 'number', min: 1, max: 1024, value: 1 })),
    fieldRow('gpus_per_node', t('submit.gpus_per_node'), h('input', { type: 'number', min: 1, max: 64, placeholder: t('submit.optional') }), t('submit.gpus_per_node_help')),
    fieldRow('priority', t('submit.priority'), h('select', null,
      ['low', 'normal', 'high'].map((p) => h('option', { value: p, selected: p === 'normal' }, t('prio.' + p))))),
    fieldRow('max_restarts', t('submit.max_restarts'), h('input', { type: 'number', min: 0, max: 100, value: 0 })),
    fieldRow('time_limit_min', t('submit.time_limit'), h('input', { type: 'number', min: 1, max: 43200, value: 1440 }), t('submit.time_limit_help')),
    fieldRow('output_dir', t('submit.output_dir'), h('input', { placeholder: t('submit.optional'), class: 'mono' })),
    h('div', { class: 'field wide' },
      h('label', { for: 'f-env' }, t('submit.env')),
      (inputs.env = h('textarea', { id: 'f-env', rows: 3, spellcheck: 'false', class: 'mono', placeholder: 'OMP_NUM_THREADS=4' })),
      h('div', { class: 'help' }, t('submit.env_help')),
      (hints.env = h('div', { class: 'field-error' }))),
    h('div', { class: 'field wide' }, msg, h('div', { class: 'actions' }, submitBtn)));

  // Fills the form with a template's job (the spec the API made ready).
  function applyTemplate(tpl) {
    const job = tpl.job;
    inputs.name.value = job.name;
    inputs.command.value = job.command.join('\n');
    inputs.gpus.value = job.resources.gpus;
    inputs.gpus_per_node.value = job.resources.gpus_per_node ?? '';
    inputs.priority.value = job.priority;
    inputs.max_restarts.value = job.max_restarts;
    inputs.time_limit_min.value = Math.ceil(job.time_limit_s / 60);
    inputs.env.value = '';
    inputs.output_dir.value = '';
    fromTemplate = tpl.id;
    clearErrors();
    inputs.command.focus();
  }
  // An edited command is the user's own job, no longer the template's.
  inputs.command.addEventListener('input', () => { fromTemplate = null; });

  function clearErrors() {
    replace(msg);
    for (const k of Object.keys(inputs)) { inputs[k].classList.remove('invalid'); replace(hints[k]); }
  }

  function markError(key, text) {
    if (!key || !inputs[key]) return;
    inputs[key].classList.add('invalid');
    replace(hints[key], text);
    inputs[key].focus();
  }

  // Builds the job spec; returns {spec} or {key, text} for a local mistake.
  function build() {
    if (!inputs.team.value) return { key: 'team', text: t('submit.err_team') };
    const spec = { name: inputs.name.value.trim(), team: inputs.team.value };
    const command = inputs.command.value.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
    if (!command.length) return { key: 'command', text: t('submit.err_command') };
    spec.command = command;
    const num = (k) => Number(inputs[k].value);
    if (!Number.isInteger(num('gpus')) || num('gpus') < 1) return { key: 'gpus', text: t('submit.err_int') };
    spec.resources = { gpus: num('gpus') };
    if (inputs.gpus_per_node.value.trim() !== '') {
      if (!Number.isInteger(num('gpus_per_node'))) return { key: 'gpus_per_node', text: t('submit.err_int') };
      spec.resources.gpus_per_node = num('gpus_per_node');
    }
    spec.priority = inputs.priority.value;
    if (!Number.isInteger(num('max_restarts'))) return { key: 'max_restarts', text: t('submit.err_int') };
    spec.max_restarts = num('max_restarts');
    if (!Number.isInteger(num('time_limit_min'))) return { key: 'time_limit_min', text: t('submit.err_int') };
    spec.time_limit_s = num('time_limit_min') * 60;
    const env = {};
    let n = 0;
    for (const raw of inputs.env.value.split('\n')) {
      const line = raw.replace(/\r$/, '');
      if (line.trim() === '' || line.trim().startsWith('#')) continue;
      const eq = line.indexOf('=');
      if (eq <= 0) return { key: 'env', text: t('submit.err_env', { line }) };
      env[line.slice(0, eq).trim()] = line.slice(eq + 1);
      n++;
    }
    if (n) spec.env = env;
    if (inputs.output_dir.value.trim() !== '') spec.output_dir = inputs.output_dir.value.trim();
    if (fromTemplate) spec.template = fromTemplate;
    return { spec };
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    const b = build();
    if (!b.spec) { markError(b.key, b.text); return; }
    submitBtn.disabled = true;
    try {
      const job = await post('/jobs', b.spec);
      location.hash = '#/jobs/' + job.id;
    } catch (e) {
      replace(msg, errorBox(e));
      markError(inputFor(e.field), e.message);
    }
    submitBtn.disabled = false;
  });

  main.append(
    h('div', { class: 'page-head' }, h('h1', null, t('submit.title'))),
    h('section', { class: 'card templates' }, h('h2', null, t('submit.templates')), tplList),
    form);

  get('/templates').then((r) => {
    const tpls = r.templates || [];
    replace(tplList, tpls.length ? null : h('span', { class: 'muted small' }, t('submit.no_templates')),
      tpls.map((tpl) => h('button', { type: 'button', class: 'tpl', 'data-template': tpl.id, onclick: () => applyTemplate(tpl) },
        h('strong', null, local(tpl.name)), h('span', { class: 'small muted' }, local(tpl.description)))));
  }).catch((e) => replace(tplList, errorBox(e)));

  // Admins see every team, members their own; either way the user's own
  // first team (GET /me, by name) is the default.
  Promise.all([get('/teams'), get('/me')]).then(([r, me]) => {
    const teams = r.teams || [];
    const mine = (me.teams || []).map((tm) => tm.name).find((n) => teams.some((tm) => tm.name === n));
    replace(teamSel, teams.length ? null : h('option', { value: '' }, t('submit.no_teams')),
      teams.map((tm) => h('option', { value: tm.name }, tm.name)));
    if (teams.length) teamSel.value = mine || teams[0].name;
    else markError('team', t('submit.err_team'));
  }).catch((e) => replace(msg, errorBox(e)));
}
