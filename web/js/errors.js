// errors.js - API errors and job event reasons in the user's language.
//
// API errors ({"error": {code, message, field, detail}}) are shown by their
// code: t('error.code.<code>'), with the field named by t('field.<name>')
// (indices dropped: "datasets[0]" -> 'field.datasets'). The server's English
// message and detail are never put on a zh-CN page; in English the detail is
// shown under the translated text.
//
// Job events and job reasons: the server sends reason_code and reason_params
// (docs/job-reasons.md); they are shown as t('reason.<code>', params), a
// wrapped cause (params.cause = {code, params}) as t('cause.<code>') inside
// it. A reason without a code (written before the codes) is matched against
// the English texts the server wrote; one that matches nothing is shown as
// t('reason.unknown') in zh-CN, and as-is in English.
import { t, has, getLang } from './i18n.js';

export function fieldKey(field) {
  return 'field.' + String(field || '').replace(/\[\d+\]/g, '').replace(/[^A-Za-z0-9_.]/g, '_');
}

export function fieldLabel(field) {
  const m = String(field || '').match(/^params\.(\w+)$/);
  if (m) return t('field.param_named', { name: m[1] });
  const k = fieldKey(field);
  return has(k) ? t(k) : String(field);
}

// The text of an ApiError (or any Error) in the page's language.
export function errorText(err) {
  if (!err) return '';
  const code = err.code || (err.status === 0 ? 'network' : '');
  const k = 'error.code.' + code;
  let s = code && has(k) ? t(k) : t('error.unknown', { code: code || String(err.status || '') });
  if (err.field) s += ' (' + t('error.field_is', { field: fieldLabel(err.field) }) + ')';
  // The allowed range, in the page's language: the server's message names
  // it ("gpus must be an integer from 1 to 1024"), and the numbers are the
  // same in every language.
  const range = /must be an integer from (-?\d+) to (-?\d+)/.exec(String(err.message || ''));
  if (range) s += t('error.int_range_sep') + t('error.int_range', { min: range[1], max: range[2] });
  return s;
}

// The server's own detail, only on an English page (it is English text).
export function errorDetail(err) {
  return getLang() === 'en' && err && err.detail ? err.detail : '';
}

// Reasons written before the server gave them codes (events before
// migration 010 have reason_code ""): matched against the English texts the
// server wrote, into the codes of docs/job-reasons.md.
const LEGACY = [
  [/^submitted$/, 'submitted'],
  [/^placed on (\d+) node\(s\), rank 0 on (.+)$/, 'placed', ['nodes', 'rank0_node']],
  [/^a node took the assignment$/, 'assignment_taken'],
  [/^attempt (\d+): every rank started$/, 'attempt_running', ['attempt']],
  [/^every rank exited 0$/, 'succeeded'],
  [/^cancelled by user$/, 'cancelled_by_user'],
  [/^cancelled; every rank stopped$/, 'cancelled'],
  [/^preempted for job (\d+) \(team quota\)$/, 'preempted', ['for_job_id'], { why: 'team_quota' }],
  [/^preempted for job (\d+) \(least attained service\)$/, 'preempted', ['for_job_id'], { why: 'least_attained_service' }],
];
const LEGACY_CAUSE = [
  [/^(?:attempt (\d+): )?rank (\d+) exited with (-?\d+)/, 'rank_exited', ['attempt', 'rank', 'exit_code']],
  [/^(?:attempt (\d+): )?rank (\d+) was killed by signal (\d+)/, 'rank_signalled', ['attempt', 'rank', 'signal']],
  [/time limit exceeded/, 'time_limit_exceeded'],
];
const LEGACY_OUTER = [
  [/^(.*); restarting/, 'restarting'],
  [/^(.*); no restarts left \((\d+) of (\d+) used\)$/, 'failed_no_restarts', ['restarts_used', 'max_restarts']],
  [/^(.*); not restarted/, 'failed_for_good'],
];

function legacy(text) {
  const grab = (list, s) => {
    for (const [re, code, names, extra] of list) {
      const m = s.match(re);
      if (m) return { code, m, params: Object.assign(Object.fromEntries((names || []).map((n, i) => [n, m[i + 1]])), extra || {}) };
    }
    return null;
  };
  const simple = grab(LEGACY, text);
  if (simple) return { code: simple.code, params: simple.params };
  for (const [re, code, names] of LEGACY_OUTER) {
    const m = text.match(re);
    if (!m) continue;
    const c = grab(LEGACY_CAUSE, m[1]);
    const params = Object.fromEntries((names || []).map((n, i) => [n, m[i + 2]]));
    params.cause = c ? { code: c.code, params: c.params } : { code: '', params: {}, text: m[1] };
    return { code, params };
  }
  const c = grab(LEGACY_CAUSE, text);
  return c ? { code: 'cause', params: { cause: { code: c.code, params: c.params } } } : null;
}

export function reasonOf(obj) {
  if (!obj) return null;
  if (obj.reason_code) return { code: obj.reason_code, params: obj.reason_params || {}, text: obj.reason || '' };
  const text = String(obj.reason || '');
  if (!text) return null;
  return Object.assign({ text }, legacy(text) || { code: '', params: {} });
}

// Parameters for t(): numbers as they are, a cause as its own text, the
// preemption's why as its translation. *detail* params are the system's
// English and stay as they are (docs/job-reasons.md).
function params(code, p) {
  const out = {};
  for (const [k, v] of Object.entries(p || {})) {
    if (k === 'cause' && v && typeof v === 'object') out.cause = causeText(v);
    else if (k === 'why') out.why = t('reason.why_' + v);
    else if (k === 'counted') out.counted = v === false ? t('reason.not_counted') : '';
    else if (Array.isArray(v)) out[k] = v.join(', ');
    else out[k] = v === null || v === undefined ? '' : String(v);
  }
  if (code === 'restarting' && !('counted' in out)) out.counted = '';
  return out;
}

function causeText(c) {
  const k = 'cause.' + c.code;
  if (c.code && has(k)) {
    const p = params(c.code, c.params);
    let s = t(k, p);
    if (c.params && c.params.attempt !== undefined && c.params.attempt !== null && c.params.attempt !== '') s = t('cause.with_attempt', { attempt: c.params.attempt, text: s });
    if (c.params && c.params.node && !/node/.test(c.code)) s = t('cause.on_node', { node: c.params.node, text: s });
    return s;
  }
  if (getLang() === 'en' && c.text) return c.text;
  return t('reason.unknown');
}

export function reasonText(obj) {
  const r = reasonOf(obj);
  if (!r) return '';
  if (r.code === 'cause') return causeText(r.params.cause);
  const k = 'reason.' + r.code;
  if (r.code && has(k)) return t(k, params(r.code, r.params));
  if (getLang() === 'en' && r.text) return r.text;
  return t('reason.unknown');
}
