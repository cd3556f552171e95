// deploy.js - the job page's "Deploy" button and its dialog: from a
// SUCCEEDED job whose template serves, one click opens the dialog (model
// name, deployment name, replicas 1, GPUs per replica 1, prefilled), one
// click on Confirm registers the job's output as a new version of the model
// (POST /models/{name}/versions) and creates the deployment of that version
// (POST /deployments), then opens the deployment's page. A version already
// registered by an earlier Confirm of this dialog (the deployment then
// failed) is reused, not registered again.
import { get, post } from './api.js';
import { h, replace } from './dom.js';
import { t } from './i18n.js';
import { errorBox, field, markField, clearMarks } from './ui.js';
import { toName, NAME_RE } from './serving.js';

// Whether the job's template serves: GET /templates/{id} has "serve".
const servable = new Map();
async function templateServes(id) {
  if (!id) return false;
  if (!servable.has(id)) servable.set(id, get('/templates/' + encodeURIComponent(id)).then((tpl) => !!(tpl && tpl.serve), () => false));
  return servable.get(id);
}

// The button (hidden until the job is known to be deployable); call
// update(job) on every refresh of the job page.
export function deployButton(ctx) {
  const btn = h('button', { type: 'button', class: 'primary', id: 'job-deploy', hidden: true }, t('deploy.button'));
  let job = null, registered = null; // {model, version} of this dialog's earlier Confirm
  const canAct = ctx.me.role !== 'auditor';

  const model = h('input', { id: 'deploy-model', class: 'mono', autocomplete: 'off', maxlength: 63 });
  const dep = h('input', { id: 'deploy-name', class: 'mono', autocomplete: 'off', maxlength: 63 });
  const replicas = h('input', { id: 'deploy-replicas', type: 'number', min: 1, max: 64, value: 1 });
  const gpus = h('input', { id: 'deploy-gpus', type: 'number', min: 1, max: 64, value: 1 });
  const override = h('input', { id: 'deploy-override', type: 'checkbox' });
  const overrideBox = h('div', { class: 'field wide', hidden: true },
    h('label', { for: 'deploy-override', class: 'inline' }, override, ' ', t('deploy.override')));
  const f = {
    name: field('deploy.deployment', dep, { help: t('deploy.name_help') }),
    model: field('deploy.model', model, { help: t('deploy.name_help') }),
    replicas: field('deploy.replicas', replicas),
    gpus_per_replica: field('deploy.gpus', gpus),
  };
  f.version = f.model;
  const versionNote = h('p', { class: 'help', id: 'deploy-version' });
  const msg = h('div', { id: 'deploy-msg' });
  const confirm = h('button', { type: 'submit', class: 'primary', id: 'deploy-confirm' }, t('deploy.confirm'));
  const cancel = h('button', { type: 'button', id: 'deploy-cancel' }, t('deploy.cancel'));
  const form = h('form', { class: 'form-grid', novalidate: true },
    f.model, f.name, f.replicas, f.gpus_per_replica, h('div', { class: 'field wide' }, versionNote), overrideBox,
    h('div', { class: 'field wide' }, msg), h('div', { class: 'actions wide' }, confirm, cancel));
  const dialog = h('dialog', { class: 'deploy-dialog', id: 'deploy-dialog', 'aria-labelledby': 'deploy-title' },
    h('h2', { id: 'deploy-title' }, t('deploy.title')), form);
  document.body.append(dialog);
  ctx.onLeave(() => { if (dialog.open) dialog.close(); dialog.remove(); });

  cancel.addEventListener('click', () => dialog.close());
  btn.addEventListener('click', () => {
    const m = toName(job.spec && job.spec.template, 'model-' + job.id);
    if (!model.value) model.value = m;
    if (!dep.value) dep.value = toName(`${m}-${job.id}`, 'deploy-' + job.id);
    replace(versionNote, t('deploy.version_note', { id: job.id }));
    replace(msg);
    clearMarks(f);
    dialog.showModal();
    model.focus();
  });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearMarks(f);
    replace(msg);
    const name = model.value.trim(), dname = dep.value.trim();
    const bad = !NAME_RE.test(name) ? 'model' : !NAME_RE.test(dname) ? 'name' : null;
    if (bad) { markField(f, { code: 'invalid_argument', field: bad }); return; }
    confirm.disabled = true;
    // The registry names the model "name" (its path); the deployment's "name" is its own.
    let fields = { name: f.model, job_id: f.model, source: f.model, version: f.model };
    try {
      if (!registered || registered.model !== name) {
        replace(msg, h('p', { class: 'muted', role: 'status' }, t('deploy.registering')));
        const v = await post('/models/' + encodeURIComponent(name) + '/versions', { job_id: String(job.id), source: 'output' });
        registered = { model: name, version: v.version };
      }
      fields = f;
      replace(msg, h('p', { class: 'muted', role: 'status' }, t('deploy.creating', { model: name, v: registered.version })));
      const body = {
        name: dname, model: name, version: registered.version, team: job.team,
        replicas: Number(replicas.value), gpus_per_replica: Number(gpus.value),
      };
      if (override.checked) body.lineage_override = true;
      await post('/deployments', body);
      dialog.close();
      location.hash = '#/deployments/' + encodeURIComponent(dname);
    } catch (e) {
      if (ctx.left) return;
      replace(msg, errorBox(e));
      if (registered) msg.append(h('p', { class: 'help' }, t('deploy.registered_kept', { model: registered.model, v: registered.version })));
      if (e.code === 'lineage_incomplete' && ctx.me.role === 'admin') overrideBox.hidden = false;
      markField(fields, e);
    } finally { confirm.disabled = false; }
  });

  return {
    el: btn,
    async update(j) {
      job = j;
      const ok = canAct && j && j.state === 'SUCCEEDED' && await templateServes(j.spec && j.spec.template);
      if (!ctx.left) btn.hidden = !ok;
    },
  };
}
