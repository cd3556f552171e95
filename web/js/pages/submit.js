// submit.js - the one-click submit form with two templates. Errors from the
// API ({"error":{code,message,detail,field}}) are shown and the offending
// input is marked.
import { get, post } from '../api.js';
import { h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { errorBox } from '../ui.js';

const TEMPLATES = {
  ddp: {
    name: 'ddp-mlp-demo',
    command: ['/usr/bin/python3', 'examples/ddp_mlp.py', '--steps', '200'],
    gpus: 2, gpus_per_node: '', priority: 'normal', max_restarts: 2, time_limit_min: 60,
    env: '', output_dir: '',
  },
  sleep: {
    name: 'sleep-test',
    command: ['/bin/sleep', '60'],
    gpus: 1, gpus_per_node: '', priority: 'low', max_restarts: 0, time_limit_min: 10,
    env: '', output_dir: '',
  },
};

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
  const submitBtn = h('button', { type: 'submit', class: 'primary' }, t('submit.submit'));

  const form = h('form', { class: 'card form-grid', novalidate: true },
    fieldRow('name', t('submit.name'), h('input', { maxlength: 128, required: true })),
    fieldRow('team', t('submit.team'), teamSel),
    h('div', { class: 'field wide' },
      h('label', { for: 'f-command' }, t('submit.command')),
      (inputs.command = h('textarea', { id: 'f-command', rows: 5, spellcheck: 'false', class: 'mono' })),
      h('div', { class: 'help' }, t('submit.command_help')),
      h('div', { class: 'help', id: 'cwd-note' }, t('submit.cwd_note')),
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

  function applyTemplate(tpl) {
    inputs.name.value = tpl.name;
    inputs.command.value = tpl.command.join('\n');
    inputs.gpus.value = tpl.gpus;
    inputs.gpus_per_node.value = tpl.gpus_per_node;
    inputs.priority.value = tpl.priority;
    inputs.max_restarts.value = tpl.max_restarts;
    inputs.time_limit_min.value = tpl.time_limit_min;
    inputs.env.value = tpl.env;
    inputs.output_dir.value = tpl.output_dir;
    clearErrors();
    inputs.command.focus();
  }

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
    h('section', { class: 'card templates' },
      h('h2', null, t('submit.templates')),
      h('div', { class: 'tpl-list' },
        h('button', { type: 'button', class: 'tpl', onclick: () => applyTemplate(TEMPLATES.ddp) },
          h('strong', null, t('submit.tpl_ddp')), h('span', { class: 'small muted' }, t('submit.tpl_ddp_help'))),
        h('button', { type: 'button', class: 'tpl', onclick: () => applyTemplate(TEMPLATES.sleep) },
          h('strong', null, t('submit.tpl_sleep')), h('span', { class: 'small muted' }, t('submit.tpl_sleep_help'))))),
    form);

  get('/teams').then((r) => {
    const teams = r.teams || [];
    replace(teamSel, teams.length ? null : h('option', { value: '' }, t('submit.no_teams')),
      teams.map((tm) => h('option', { value: tm.name }, tm.name)));
  }).catch((e) => replace(msg, errorBox(e)));
}
