// wizard.js - #/wizard: one-click training. Six steps, each reachable from
// the step bar at any time:
//   1 template (cards filterable by industry) or my own command,
//   2 dataset from the registry (or a path), checked as it is chosen,
//   3 GPU count, with the queue forecast (POST /queue/what-if) when the
//     server has it and nothing when it has not,
//   4 strategy: auto with the advisor's reasons and memory (POST /advisor),
//     or an override,
//   5 the template's hyperparameters, from its schema,
//   6 review (name, team), then start.
// Picking a template goes straight to review with every default filled, so
// from the overview a template starts in three clicks: "start training", the
// card, "start". #/wizard?clone=ID opens the wizard with job ID's spec:
// what the steps edit is put in them, and every other key of the spec (env,
// working_dir, output_dir, priority, max_restarts, time_limit_s, launcher,
// the datasets after the first, ...) is carried into the new spec as it
// was, listed on the review step as carried unchanged.
//
// The own command is one argument per line. A line in double quotes is a
// JSON string, taken exactly (`""` is an empty argument, spaces kept);
// other lines are trimmed and blank ones skipped. argvText() writes an
// argument that would not survive that in quotes, so a command round-trips.
//
// An API refusal is shown by its code in the page's language, on the step
// and field it names (datasets -> 2, resources -> 3, strategy/model ->
// 4, params.* -> 5, name/team -> 6, template/command -> 1).
import { get, post, submitJob } from '../api.js';
import { h, replace } from '../dom.js';
import { t, tr, has, fmtNum, fmtBytes, fmtDuration } from '../i18n.js';
import { errorBox, field, markField, clearMarks } from '../ui.js';
import { errorText } from '../errors.js';

const STEPS = ['template', 'dataset', 'gpus', 'strategy', 'params', 'review'];
const STRATEGIES = ['auto', 'ddp', 'zero1', 'zero2', 'zero3', 'fsdp'];
const MODELS = ['', 'resnet50', 'resnet101', 'vit-base', 'bert-base', 'bert-large', 'gpt2', 'gpt2-medium',
  'gpt2-large', 'gpt2-xl', 'llama-2-7b', 'llama-2-13b', 'qwen2-7b', 'chatglm3-6b', 'baichuan2-7b'];
const NO_WHATIF = 'ty.no_what_if'; // the server answered 404 once: do not ask again
const MAX_GPUS = 1024, MAX_GPUS_PER_NODE = 64; // as the server's job spec (jobspec.h)
// Keys of a job spec the steps edit; the rest of a cloned spec is carried.
const EDITED = ['name', 'team', 'command', 'template', 'params', 'strategy', 'resources', 'datasets', 'site', 'model', 'global_batch'];

// The textarea's text for an argv, and back (see the top of the file).
export function argvText(argv) {
  return (argv || []).map((a) => (a === '' || a.trim() !== a || /[\n\r]/.test(a) || a.startsWith('"') ? JSON.stringify(a) : a)).join('\n');
}
export function argvParse(text) {
  const out = [];
  for (const raw of String(text).split('\n')) {
    const l = raw.trim();
    if (l.length >= 2 && l.startsWith('"') && l.endsWith('"')) {
      try { const v = JSON.parse(l); if (typeof v === 'string') { out.push(v); continue; } } catch (_) { /* literal */ }
    }
    if (l) out.push(l);
  }
  return out;
}
// An argv on one line as the review shows it: an argument with a space, a
// quote or nothing in it is in JSON quotes, so what runs is what is read.
const argvShown = (argv) => (argv || []).map((a) => (a === '' || /[\s"]/.test(a) ? JSON.stringify(a) : a)).join(' ');
// A whole number in lo..hi, from an input's text.
const intIn = (v, lo, hi) => /^\s*\d+\s*$/.test(String(v)) && Number(v) >= lo && Number(v) <= hi;

// Which step an API field belongs to.
export function stepOfField(f) {
  const s = String(f || '');
  // No field (the network, a 5xx, a key conflict): stay where "start" is,
  // so that pressing it again is the retry.
  if (!s || s === 'Idempotency-Key') return 'review';
  if (/^datasets|^site/.test(s)) return 'dataset';
  if (/^resources/.test(s)) return 'gpus';
  if (/^(strategy|model|global_batch|optimizer)/.test(s)) return 'strategy';
  if (/^params/.test(s)) return 'params';
  if (/^(name|team|priority|max_restarts|time_limit_s)/.test(s)) return 'review';
  return 'template';
}

export function render(main, ctx) {
  const st = {
    step: 'template', tpl: null, own: false, industry: '',
    dataset: '', site: '', gpus: 1, gpn: '', strategy: 'auto', params: {},
    command: '', model: '', globalBatch: '', name: '', team: '',
    carry: {}, moreDatasets: [], cloneOf: null, // a cloned spec's other keys, kept as they were
  };
  let templates = [], datasets = [], sites = [], nodes = [], teams = [];
  const msg = h('div');
  const stepBar = h('ol', { class: 'steps', 'aria-label': t('wizard.steps') });
  const body = h('div', { class: 'card wizard-body' });
  const fields = {}; // API field -> field() wrapper, for markField

  function go(step, focus = true) {
    st.step = step;
    drawSteps();
    drawBody();
    if (focus) { const hd = body.querySelector('h2'); if (hd) { hd.tabIndex = -1; hd.focus(); } }
  }

  function drawSteps() {
    replace(stepBar, STEPS.map((s, i) => h('li', null, h('button', {
      type: 'button', class: 'step' + (s === st.step ? ' current' : ''), 'data-step': s,
      'aria-current': s === st.step ? 'step' : null,
      disabled: s !== 'template' && !st.tpl && !st.own ? true : null,
      onclick: () => go(s),
    }, h('span', { class: 'step-n' }, String(i + 1)), t('wizard.step_' + s)))));
  }

  const nav = (prev, next) => h('div', { class: 'actions' },
    prev ? h('button', { type: 'button', onclick: () => go(prev) }, t('wizard.back')) : null,
    next ? h('button', { type: 'button', class: 'primary', onclick: () => go(next) }, t('wizard.next')) : null);

  // ---- step 1: template or own command
  function pickTemplate(tpl) {
    st.tpl = tpl; st.own = false;
    st.params = Object.fromEntries(Object.entries(tpl.params || {}).map(([k, p]) => [k, p.default]));
    st.gpus = (tpl.job && tpl.job.resources && tpl.job.resources.gpus) || tpl.gpus || 1;
    st.gpn = (tpl.job && tpl.job.resources && tpl.job.resources.gpus_per_node) || '';
    st.strategy = (tpl.job && tpl.job.strategy) || tpl.strategy || 'auto';
    st.name = (tpl.job && tpl.job.name) || tpl.id;
    st.dataset = (tpl.job && tpl.job.datasets && tpl.job.datasets[0]) || '';
    advice = null;
    go('review');
  }
  function pickOwn() {
    st.tpl = null; st.own = true; st.params = {}; st.strategy = 'auto';
    if (!st.name) st.name = 'my-job';
    go('template');
  }

  function drawTemplate() {
    const industries = [...new Set(templates.map((x) => x.industry).filter(Boolean))];
    const chips = h('div', { class: 'chips', role: 'group', 'aria-label': t('wizard.filter') },
      ['', ...industries].map((ind) => h('button', {
        type: 'button', class: 'chip', 'aria-pressed': String(st.industry === ind),
        onclick: () => { st.industry = ind; drawBody(); body.querySelector(`.chip[aria-pressed="true"]`).focus(); },
      }, ind ? t('wizard.industry_' + ind) : t('wizard.all'))));
    const shown = templates.filter((x) => !st.industry || x.industry === st.industry);
    const cards = h('div', { class: 'tpl-cards' },
      shown.map((tpl) => h('button', {
        type: 'button', class: 'tpl-card' + (st.tpl && st.tpl.id === tpl.id ? ' chosen' : ''), 'data-template': tpl.id,
        onclick: () => pickTemplate(tpl),
      },
      h('strong', null, tr(tpl.name)),
      h('span', { class: 'small muted' }, tr(tpl.description)),
      h('span', { class: 'tpl-meta small' },
        h('span', { class: 'pill' }, t('wizard.industry_' + (tpl.industry || 'general'))),
        h('span', { class: 'pill' }, t('wizard.n_gpus', { n: tpl.gpus || 1 }))))),
      h('button', { type: 'button', class: 'tpl-card own' + (st.own ? ' chosen' : ''), id: 'own-command', onclick: pickOwn },
        h('strong', null, t('wizard.own')), h('span', { class: 'small muted' }, t('wizard.own_help'))));
    const parts = [h('h2', null, t('wizard.step_template')), chips, cards];
    if (st.own) {
      const ta = h('textarea', { rows: Math.min(12, Math.max(4, st.command.split('\n').length)), class: 'mono', spellcheck: 'false', value: st.command });
      ta.value = st.command;
      ta.addEventListener('input', () => { st.command = ta.value; });
      fields.command = field('wizard.command', ta, { help: t('wizard.command_help'), wide: true, id: 'w-command' });
      parts.push(fields.command, nav(null, 'dataset'));
    }
    replace(body, parts);
  }

  // ---- step 2: dataset, checked as it is chosen
  function datasetCheck(value) {
    if (!value) return null;
    const d = datasets.find((x) => x.name === value);
    const site = st.site || 'default';
    if (d && d.site && d.site !== site)
      return { code: 'policy_violation', field: 'datasets', local: t('wizard.policy_site', { dataset: d.name, dsite: d.site, site }) };
    if (!d && !value.startsWith('/') && !/^[a-z]+:\/\//.test(value))
      return { code: 'invalid_argument', field: 'datasets', local: t('wizard.dataset_unknown', { name: value }) };
    return null;
  }
  function drawDataset() {
    const sel = h('select', null,
      h('option', { value: '' }, t('wizard.no_dataset')),
      datasets.map((d) => h('option', { value: d.name }, `${d.name} · ${d.site || 'default'} · ${t('wizard.class_' + (d.classification || 'internal'))}`)),
      h('option', { value: '__path' }, t('wizard.dataset_path')));
    const isPath = st.dataset && !datasets.some((d) => d.name === st.dataset);
    sel.value = isPath ? '__path' : st.dataset;
    const path = h('input', { class: 'mono', placeholder: '/data/…', value: isPath ? st.dataset : '' });
    const siteSel = h('select', null, (sites.length ? sites : [{ name: 'default' }]).map((s) => h('option', { value: s.name }, s.name)));
    siteSel.value = st.site || 'default';
    const check = h('div', { class: 'check', 'aria-live': 'polite', id: 'dataset-check' });
    const selField = (fields.datasets = field('wizard.dataset', sel, { id: 'w-dataset', help: t('wizard.dataset_help') }));
    fields.site = field('wizard.site', siteSel, { id: 'w-site' });
    const pathField = field('wizard.dataset_path', path, { id: 'w-dataset-path' });
    pathField.hidden = sel.value !== '__path';
    // A refusal of datasets[0] marks the control the value came from.
    if (isPath) fields.datasets = pathField;
    function recheck() {
      const v = sel.value === '__path' ? path.value.trim() : sel.value;
      st.dataset = v;
      st.site = siteSel.value;
      clearMarks(fields);
      const r = datasetCheck(v);
      if (r) {
        replace(check, h('div', { class: 'alert error', role: 'alert', 'data-code': r.code }, h('strong', null, errorText(r)), h('div', null, r.local)));
        const w = sel.value === '__path' ? pathField : selField;
        w.control.classList.add('invalid'); w.control.setAttribute('aria-invalid', 'true');
      } else if (v && datasets.some((d) => d.name === v)) replace(check, h('div', { class: 'alert ok' }, t('wizard.policy_ok')));
      else replace(check, v ? h('p', { class: 'muted' }, t('wizard.policy_path')) : null);
    }
    sel.addEventListener('change', () => {
      pathField.hidden = sel.value !== '__path';
      fields.datasets = pathField.hidden ? selField : pathField;
      if (!pathField.hidden) path.focus();
      recheck();
    });
    path.addEventListener('change', recheck);
    siteSel.addEventListener('change', recheck);
    replace(body, h('h2', null, t('wizard.step_dataset')), fields.site, selField, pathField, check, nav('template', 'gpus'));
    if (st.dataset) recheck();
  }

  // ---- step 3: GPUs and what the scheduler would do
  let forecastSeq = 0;
  async function forecast(box) {
    const seq = ++forecastSeq;
    // No forecast for a count the server would refuse: "would start now"
    // about a job that cannot be submitted is wrong.
    if (gpusProblem()) { replace(box, h('p', { class: 'muted', id: 'forecast-invalid' }, t('wizard.forecast_fix_gpus'))); return; }
    if (sessionStorage.getItem(NO_WHATIF)) { replace(box, h('p', { class: 'muted' }, t('wizard.forecast_none'))); return; }
    replace(box, h('p', { class: 'muted' }, t('common.loading')));
    const body = { team: st.team, resources: resources(), priority: st.carry.priority || 'normal', site: st.site || 'default' };
    const tl = st.carry.time_limit_s || (st.tpl && st.tpl.job && st.tpl.job.time_limit_s);
    if (tl) body.time_limit_s = tl;
    try {
      const r = await post('/queue/what-if', body);
      if (seq !== forecastSeq || ctx.left) return;
      replace(box, forecastView(r));
    } catch (e) {
      if (seq !== forecastSeq || ctx.left) return;
      if (e.status === 404 || e.status === 405) { sessionStorage.setItem(NO_WHATIF, '1'); replace(box, h('p', { class: 'muted' }, t('wizard.forecast_none'))); }
      else replace(box, errorBox(e));
    }
  }
  // The what-if answer (docs/queue.md): one queue entry with
  // estimated_start (ISO or null) and reason {code, params}.
  function forecastView(r) {
    const reason = (r.reason && r.reason.code) || 'none';
    const p = (r.reason && r.reason.params) || {};
    if (reason === 'none') return h('div', { class: 'alert ok', id: 'forecast', 'data-reason': reason }, t('wizard.forecast_now'));
    const start = r.estimated_start ? new Date(r.estimated_start) : null;
    const when = start && !isNaN(start) ? t('wizard.forecast_at', { time: start.toLocaleString(), wait: fmtDuration(Math.max(0, (start - Date.now()) / 1000)) }) : t('wizard.forecast_never');
    const why = has('wizard.wait_' + reason) ? t('wizard.wait_' + reason, { job: p.other_job_id ?? '—', need: p.need_gpus ?? '', free: p.free_gpus ?? '' }) : t('wizard.wait_other');
    return h('div', { class: 'alert warn', id: 'forecast', 'data-reason': reason }, h('strong', null, when), h('div', null, why),
      r.truncated ? h('div', { class: 'small' }, t('wizard.forecast_truncated')) : null);
  }
  function resources() {
    const r = Object.assign({}, st.carry.resources || {}, { gpus: Number(st.gpus) });
    if (String(st.gpn).trim() !== '') r.gpus_per_node = Number(st.gpn);
    else delete r.gpus_per_node;
    return r;
  }
  // What is wrong with the GPU fields, as the server would say it:
  // {field, min, max}, or null.
  function gpusProblem() {
    if (!intIn(st.gpus, 1, MAX_GPUS)) return { field: 'resources.gpus', min: 1, max: MAX_GPUS };
    if (String(st.gpn).trim() !== '' && !intIn(st.gpn, 1, MAX_GPUS_PER_NODE)) return { field: 'resources.gpus_per_node', min: 1, max: MAX_GPUS_PER_NODE };
    return null;
  }
  function drawGpus() {
    const n = h('input', { type: 'number', min: 1, max: MAX_GPUS, value: st.gpus, inputmode: 'numeric' });
    const g = h('input', { type: 'number', min: 1, max: MAX_GPUS_PER_NODE, value: st.gpn, placeholder: t('wizard.optional') });
    fields.resources = field('wizard.gpus', n, { id: 'w-gpus', help: t('error.int_range', { min: 1, max: MAX_GPUS }) });
    fields['resources.gpus_per_node'] = field('wizard.gpus_per_node', g, { id: 'w-gpn', help: t('wizard.gpus_per_node_help') });
    const box = h('div', { 'aria-live': 'polite' });
    const free = freeGpus();
    // Checked as it is typed: the field says the range, the forecast waits.
    const check = () => {
      clearMarks(fields);
      const p = gpusProblem();
      if (p) markField(fields, { code: 'invalid_argument', field: p.field, message: `must be an integer from ${p.min} to ${p.max}` }, { focus: false });
    };
    const onChange = () => { st.gpus = n.value; st.gpn = g.value; advice = null; check(); forecast(box); };
    n.addEventListener('input', onChange);
    g.addEventListener('input', onChange);
    replace(body, h('h2', null, t('wizard.step_gpus')),
      h('p', { class: 'muted' }, t('wizard.free_now', { free: free.free, total: free.total })),
      fields.resources, fields['resources.gpus_per_node'], h('h3', null, t('wizard.forecast')), box, nav('dataset', 'strategy'));
    check();
    forecast(box);
  }
  function freeGpus() {
    let total = 0, used = 0;
    for (const n of nodes) if (n.state !== 'down') { total += (n.gpus || []).length; used += Number(n.gpus_allocated) || 0; }
    return { total, free: Math.max(0, total - used) };
  }

  // ---- step 4: strategy, with the advisor's answer
  let advice = null, adviceSeq = 0;
  function advisorRequest() {
    const job = (st.tpl && st.tpl.job) || {};
    const model = st.tpl ? job.model || (st.tpl.model ? st.tpl.model : null) : (st.model ? { name: st.model } : null);
    let gb = st.tpl ? (st.params.batch ?? job.global_batch) : Number(st.globalBatch);
    if (!model) return { why: st.own ? 'wizard.advisor_needs_model' : 'wizard.advisor_no_model' };
    if (!gb) return { why: st.own ? 'wizard.advisor_needs_model' : 'wizard.advisor_no_batch' };
    const site = st.site || 'default';
    const pool = nodes.filter((n) => (n.site || 'default') === site && n.state !== 'down');
    if (!pool.length) return { why: 'wizard.advisor_no_nodes' };
    // The largest GPU of the site, as the server plans at submit.
    let best = null, node = null;
    for (const n of pool) for (const g of n.gpus || []) if (!best || (g.memory_mb || 0) > (best.memory_mb || 0)) { best = g; node = n; }
    const fake = !best || !best.compute_capability || String(best.model || '').toLowerCase().includes('fake') ||
      (node.capabilities && node.capabilities.fake_gpus);
    const gpus = Number(st.gpus) || 1;
    const perNode = Math.min(gpus, Number(st.gpn) || (node.gpus || []).length || 1);
    const allocation = { gpus, gpus_per_node: perNode,
      gpu_memory_bytes: fake ? 0 : (best.memory_mb || 0) * 1048576,
      compute_capability: fake ? 0 : String(best.compute_capability) };
    if (fake) allocation.cpu_memory_per_node_bytes = (node.memory_mb || 1024) * 1048576;
    const req = { model, global_batch: Number(gb), allocation, strategy: st.strategy };
    if (job.optimizer) req.optimizer = job.optimizer;
    return { req };
  }
  async function loadAdvice(box) {
    const seq = ++adviceSeq;
    const { req, why } = advisorRequest();
    if (!req) { replace(box, h('p', { class: 'muted', id: 'advice-none' }, t(why))); return; }
    replace(box, h('p', { class: 'muted' }, t('common.loading')));
    try {
      const a = await post('/advisor', req);
      if (seq !== adviceSeq || ctx.left) return;
      advice = a;
      replace(box, adviceView(a));
    } catch (e) { if (seq === adviceSeq && !ctx.left) replace(box, errorBox(e)); }
  }
  function adviceView(a) {
    const m = a.memory || {};
    const parts = ['params', 'grads', 'optimizer', 'activations', 'buffers', 'fixed', 'headroom'];
    const total = m.total || parts.reduce((s, k) => s + (m[k] || 0), 0) || 1;
    return h('div', { id: 'advice' },
      h('p', null, h('span', { class: 'badge ' + (a.status === 'ok' ? 'state-succeeded' : 'state-failed') }, t('wizard.advice_' + (a.status === 'ok' ? 'ok' : 'no_fit'))), ' ',
        h('strong', null, t('wizard.advice_plan', { strategy: t('wizard.strategy_' + a.strategy), micro: a.micro_batch, accum: a.grad_accum, dp: a.dp_degree, precision: a.precision }))),
      h('p', { class: 'reason' }, tr(a.reason)),
      h('div', { class: 'membar', role: 'img', 'aria-label': t('wizard.memory_total', { total: fmtBytes(m.total), limit: fmtBytes(m.limit) }) },
        parts.map((k) => h('span', { class: 'mem-' + k, style: `width:${(100 * (m[k] || 0)) / Math.max(total, m.limit || 0)}%` }))),
      h('dl', { class: 'kv small' }, parts.map((k) => [h('dt', null, h('span', { class: 'swatch mem-' + k, 'aria-hidden': 'true' }), t('wizard.mem_' + k)), h('dd', null, fmtBytes(m[k]))]),
        h('dt', null, t('wizard.mem_total')), h('dd', null, t('wizard.memory_total', { total: fmtBytes(m.total), limit: fmtBytes(m.limit) }))),
      (a.warnings || []).map((w) => h('div', { class: 'alert warn' }, tr(w))),
      a.speed && a.speed.samples_per_s ? h('p', { class: 'muted small' }, t('wizard.speed', { sps: fmtNum(a.speed.samples_per_s), step: fmtNum(a.speed.step_s) })) : null);
  }
  function drawStrategy() {
    const sel = h('select', null, STRATEGIES.map((s) => h('option', { value: s }, t('wizard.strategy_' + s))));
    sel.value = st.strategy;
    fields.strategy = field('wizard.strategy', sel, { id: 'w-strategy', help: t('wizard.strategy_help') });
    const box = h('div', { 'aria-live': 'polite' });
    const extra = [];
    if (st.own) {
      const ms = h('select', null, MODELS.map((m) => h('option', { value: m }, m || t('wizard.model_none'))));
      ms.value = st.model;
      const gb = h('input', { type: 'number', min: 1, value: st.globalBatch });
      fields.model = field('wizard.model', ms, { id: 'w-model' });
      fields.global_batch = field('wizard.global_batch', gb, { id: 'w-gb' });
      ms.addEventListener('change', () => { st.model = ms.value; loadAdvice(box); });
      gb.addEventListener('change', () => { st.globalBatch = gb.value; loadAdvice(box); });
      extra.push(fields.model, fields.global_batch);
    }
    sel.addEventListener('change', () => { st.strategy = sel.value; loadAdvice(box); });
    replace(body, h('h2', null, t('wizard.step_strategy')), extra, fields.strategy, box, nav('gpus', 'params'));
    loadAdvice(box);
  }

  // ---- step 5: hyperparameters from the template's schema
  function drawParams() {
    const schema = (st.tpl && st.tpl.params) || {};
    const keys = Object.keys(schema);
    const list = keys.map((k) => {
      const p = schema[k];
      let c;
      if (p.type === 'enum') {
        c = h('select', null, (p.values || []).map((v) => h('option', { value: v }, String(v))));
        c.value = String(st.params[k] ?? p.default);
      } else if (p.type === 'bool') {
        c = h('select', null, h('option', { value: 'true' }, t('common.yes')), h('option', { value: 'false' }, t('common.no')));
        c.value = String(st.params[k] ?? p.default);
      } else {
        const num = p.type === 'int' || p.type === 'float';
        c = h('input', { type: num ? 'number' : 'text', min: p.min, max: p.max, step: p.type === 'float' ? 'any' : num ? 1 : null, value: st.params[k] ?? p.default ?? '' });
      }
      c.addEventListener('change', () => {
        const v = c.value;
        st.params[k] = p.type === 'int' ? parseInt(v, 10) : p.type === 'float' ? Number(v) : p.type === 'bool' ? v === 'true' : v;
        if (k === 'batch') advice = null;
      });
      const range = p.min !== undefined ? ' ' + t('wizard.range', { min: fmtNum(p.min), max: fmtNum(p.max) }) : '';
      fields['params.' + k] = field('wizard.param', c, { id: 'w-p-' + k, label: tr(p.label) || k, help: tr(p.help) + range });
      return fields['params.' + k];
    });
    replace(body, h('h2', null, t('wizard.step_params')),
      keys.length ? h('div', { class: 'form-grid' }, list) : h('p', { class: 'muted' }, t(st.own ? 'wizard.params_own' : 'wizard.params_none')),
      h('p', { class: 'help' }, t('wizard.params_help')), nav('strategy', 'review'));
  }

  // ---- step 6: review and start
  function spec() {
    // A clone's keys the steps do not edit first, as they were.
    const s = Object.assign(JSON.parse(JSON.stringify(st.carry)), { name: st.name.trim(), team: st.team, resources: resources() });
    if (st.tpl) {
      s.template = st.tpl.id;
      s.params = Object.assign({}, st.params);
      s.strategy = st.strategy;
    } else {
      s.command = argvParse(st.command);
      if (st.model && st.globalBatch) { s.strategy = st.strategy; s.model = { name: st.model }; s.global_batch = Number(st.globalBatch); }
      else if (st.cloneOf && st.cloneOf.strategy) s.strategy = st.strategy;
    }
    const ds = (st.dataset ? [st.dataset] : []).concat(st.moreDatasets);
    if (ds.length) s.datasets = ds;
    if (st.site && st.site !== 'default') s.site = st.site;
    else if (st.cloneOf && st.cloneOf.site) s.site = st.cloneOf.site;
    return s;
  }
  // The review's list of what a clone carries unchanged (the steps cannot
  // edit it): each key with its value as text.
  function carriedRows() {
    const rows = [];
    for (const [k, v] of Object.entries(st.carry)) {
      if (k === 'resources') continue;
      let text;
      if (k === 'env' && v && typeof v === 'object') text = Object.entries(v).map(([a, b]) => h('span', { class: 'pill wrap' }, `${a}=${b}`));
      else if (k === 'priority' && has('prio.' + v)) text = t('prio.' + v);
      else text = h('code', { class: 'wrap' }, typeof v === 'object' ? JSON.stringify(v) : String(v));
      rows.push(h('dt', null, has('wizard.carry_' + k) ? t('wizard.carry_' + k) : k), h('dd', null, text));
    }
    if (st.moreDatasets.length)
      rows.push(h('dt', null, t('wizard.carry_datasets')), h('dd', null, st.moreDatasets.map((d) => h('code', { class: 'pill wrap' }, d))));
    return rows;
  }
  let starting = false;
  async function start(btn) {
    if (starting) return;
    const s = spec();
    replace(msg);
    if (!s.team) { go('review'); markField(fields, { code: 'invalid_argument', field: 'team' }); return; }
    if (!st.tpl && !s.command.length) { go('template'); markField(fields, { code: 'invalid_argument', field: 'command' }); return; }
    starting = true; btn.disabled = true;
    try {
      const job = await submitJob(s);
      location.hash = '#/jobs/' + job.id;
    } catch (e) {
      starting = false; btn.disabled = false;
      if (ctx.left) return;
      const step = stepOfField(e.field);
      if (step !== st.step) go(step, false);
      replace(msg, errorBox(e));
      if (!markField(fields, e)) msg.querySelector('[role=alert]').focus();
    }
  }
  function drawReview() {
    const name = h('input', { value: st.name, maxlength: 128 });
    name.addEventListener('input', () => { st.name = name.value; });
    const team = h('select', null, teams.length ? teams.map((tm) => h('option', { value: tm.name }, tm.name)) : h('option', { value: '' }, t('wizard.no_teams')));
    team.value = st.team;
    team.addEventListener('change', () => { st.team = team.value; });
    fields.name = field('wizard.name', name, { id: 'w-name' });
    fields.team = field('wizard.team', team, { id: 'w-team' });
    const s = spec();
    const btn = h('button', { type: 'button', class: 'primary big', id: 'wizard-start' }, t('wizard.start'));
    btn.addEventListener('click', () => start(btn));
    const row = (k, v, step) => [h('dt', null, t(k)), h('dd', null, v, ' ', h('button', { type: 'button', class: 'link small', onclick: () => go(step), 'aria-label': t('wizard.edit_x', { what: t(k) }) }, t('wizard.edit')))];
    replace(body, h('h2', null, t('wizard.step_review')),
      h('div', { class: 'form-grid' }, fields.name, fields.team),
      h('dl', { class: 'kv review' },
        row(st.tpl ? 'wizard.r_template' : 'wizard.r_command', st.tpl ? tr(st.tpl.name) : h('code', { class: 'wrap', id: 'wizard-argv' }, argvShown(s.command)), 'template'),
        row('wizard.r_dataset', (st.dataset || t('wizard.no_dataset')) + (st.moreDatasets.length ? ' ' + t('wizard.more_datasets', { n: st.moreDatasets.length }) : ''), 'dataset'),
        row('wizard.r_gpus', t('wizard.n_gpus', { n: s.resources.gpus }) + (s.resources.gpus_per_node ? ' · ' + t('wizard.per_node', { n: s.resources.gpus_per_node }) : ''), 'gpus'),
        row('wizard.r_strategy', t('wizard.strategy_' + (s.strategy || 'none')) + (advice && advice.strategy && st.strategy === 'auto' ? ' → ' + t('wizard.strategy_' + advice.strategy) : ''), 'strategy'),
        row('wizard.r_params', Object.keys(s.params || {}).length ? Object.entries(s.params).map(([k, v]) => h('span', { class: 'pill' }, `${k}=${v}`)) : '—', 'params')),
      st.cloneOf && carriedRows().length ? h('section', { id: 'wizard-carried', 'aria-labelledby': 'wizard-carried-h' },
        h('h3', { id: 'wizard-carried-h' }, t('wizard.carried_title', { id: st.cloneOf.id })),
        h('p', { class: 'muted small' }, t('wizard.carried_help')),
        h('dl', { class: 'kv review' }, carriedRows())) : null,
      h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => go('params') }, t('wizard.back')), btn));
  }

  function drawBody() {
    for (const k of Object.keys(fields)) delete fields[k];
    ({ template: drawTemplate, dataset: drawDataset, gpus: drawGpus, strategy: drawStrategy, params: drawParams, review: drawReview })[st.step]();
  }

  main.append(h('div', { class: 'page-head' }, h('h1', null, t('wizard.title'))), stepBar, msg, body);
  replace(body, h('p', { class: 'muted' }, t('common.loading')));

  const clone = ctx.query.get('clone');
  Promise.all([get('/templates'), get('/datasets').catch(() => ({ datasets: [] })), get('/sites').catch(() => ({ sites: [] })),
    get('/nodes').catch(() => ({ nodes: [] })), get('/teams'), clone ? get('/jobs/' + encodeURIComponent(clone)) : null])
    .then(([tp, ds, si, no, te, job]) => {
      if (ctx.left) return;
      templates = tp.templates || []; datasets = ds.datasets || []; sites = si.sites || []; nodes = no.nodes || []; teams = te.teams || [];
      const mine = (ctx.me.teams || []).map((x) => x.name).find((n) => teams.some((x) => x.name === n));
      st.team = mine || (teams[0] && teams[0].name) || '';
      if (job) fromJob(job); else go('template', false);
      ctx.loaded();
    })
    .catch((e) => { if (!ctx.left) replace(body, errorBox(e)); });

  // Clone and edit: the wizard opened with a job's spec, at review.
  function fromJob(job) {
    const s = job.spec || {};
    const tpl = s.template && templates.find((x) => x.id === s.template);
    const carry = {};
    for (const [k, v] of Object.entries(s)) if (!EDITED.includes(k) && v !== null && v !== undefined) carry[k] = v;
    if (tpl) {
      pickTemplate(tpl);
      Object.assign(st.params, s.params || {});
      // The template fills model and global_batch from itself and its
      // "batch" parameter; a value set apart from those is carried.
      if (s.model !== undefined && s.model !== null && JSON.stringify(s.model) !== JSON.stringify(tpl.job && tpl.job.model)) carry.model = s.model;
      if (s.global_batch != null && s.global_batch !== (s.params || {}).batch) carry.global_batch = s.global_batch;
    } else {
      st.own = true; st.tpl = null;
      st.command = argvText(s.command);
      const named = s.model && Object.keys(s.model).length === 1 && typeof s.model.name === 'string' && MODELS.includes(s.model.name);
      if (named && s.global_batch) { st.model = s.model.name; st.globalBatch = s.global_batch; }
      else {
        if (s.model != null) carry.model = s.model;
        if (s.global_batch != null) carry.global_batch = s.global_batch;
      }
    }
    const res = Object.assign({}, s.resources || {});
    delete res.gpus; delete res.gpus_per_node;
    if (Object.keys(res).length) carry.resources = res;
    st.carry = carry;
    st.cloneOf = { id: job.id, strategy: s.strategy || null, site: s.site || null };
    st.strategy = s.strategy || 'auto';
    st.gpus = (s.resources && s.resources.gpus) || 1;
    st.gpn = (s.resources && s.resources.gpus_per_node) || '';
    st.dataset = (s.datasets && s.datasets[0]) || '';
    st.moreDatasets = (s.datasets || []).slice(1);
    st.site = s.site || '';
    if (s.team && teams.some((x) => x.name === s.team)) st.team = s.team;
    st.name = t('wizard.clone_name', { name: s.name || job.name });
    replace(msg, h('div', { class: 'alert ok' }, t('wizard.cloned', { id: job.id })));
    go('review', false);
  }
}
