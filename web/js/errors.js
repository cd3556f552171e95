// errors.js - API errors and job event reasons in the user's language.
//
// API errors ({"error": {code, message, field, detail}}) are shown by their
// code: t('error.code.<code>'), with the field named by t('field.<name>')
// (indices dropped: "datasets[0]" -> 'field.datasets'). The server's English
// message and detail are never put on a zh-CN page; in English the detail is
// shown under the translated text.
//
// Job events and job reasons: the server sends reason_code and reason_params
// (web/README.md, "Server contract for the app"); they are shown as
// t('reason.<code>', params). A reason without a code (an older server) is
// matched against the English texts it used to send; one that matches
// nothing is shown as t('reason.unknown') in zh-CN, and as-is in English.
import { t, has, getLang } from './i18n.js';

export function fieldKey(field) {
  return 'field.' + String(field || '').replace(/\[\d+\]/g, '').replace(/[^A-Za-z0-9_.]/g, '_');
}

export function fieldLabel(field) {
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
  return s;
}

// The server's own detail, only on an English page (it is English text).
export function errorDetail(err) {
  return getLang() === 'en' && err && err.detail ? err.detail : '';
}

// Today's English reasons -> [code, params]; the server branch replaces them
// with reason_code/reason_params, which win when present.
const LEGACY = [
  [/^submitted$/, 'submitted'],
  [/^placed on (\d+) node\(s\), rank 0 on (.+)$/, 'placed', ['nodes', 'node']],
  [/^a node took the assignment$/, 'assigned'],
  [/^attempt (\d+): every rank started$/, 'started', ['attempt']],
  [/^every rank exited 0$/, 'succeeded'],
  [/^cancelled by user$/, 'cancel_requested'],
  [/^cancelled; every rank stopped$/, 'cancelled'],
  [/^preempted for job (\d+) \(team quota\)$/, 'preempted_quota', ['job']],
  [/^preempted for job (\d+) \(least attained service\)$/, 'preempted_las', ['job']],
  [/^rank (\d+) exited with (-?\d+)(?::.*)?; no restarts left \((\d+) of (\d+) used\)$/, 'rank_exit_final', ['rank', 'code', 'used', 'max']],
  [/^rank (\d+) exited with (-?\d+)(?::.*)?; restarting.*$/, 'rank_exit_restart', ['rank', 'code']],
  [/^rank (\d+) exited with (-?\d+)(?::.*)?; not restarted.*$/, 'rank_exit_permanent', ['rank', 'code']],
  [/^rank (\d+) exited with (-?\d+)(?::.*)?$/, 'rank_exit', ['rank', 'code']],
  [/^rank (\d+) was killed by signal (\d+).*$/, 'rank_signal', ['rank', 'signal']],
  [/^.*; restarting.*$/, 'restarting'],
  [/^.*; no restarts left \((\d+) of (\d+) used\)$/, 'failed_no_restarts', ['used', 'max']],
  [/^policy violation.*$/, 'policy_violation'],
  [/^.*time limit.*$/, 'time_limit'],
  [/^.*(node|worker).*(lost|restarted|heartbeat).*$/i, 'node_lost'],
];

export function reasonOf(obj) {
  if (!obj) return null;
  const code = obj.reason_code;
  if (code) return { code, params: obj.reason_params || {} };
  const text = String(obj.reason || '');
  if (!text) return null;
  for (const [re, c, names] of LEGACY) {
    const m = text.match(re);
    if (m) return { code: c, params: Object.fromEntries((names || []).map((n, i) => [n, m[i + 1]])) };
  }
  return { code: '', params: {}, text };
}

export function reasonText(obj) {
  const r = reasonOf(obj);
  if (!r) return '';
  const k = 'reason.' + r.code;
  if (r.code && has(k)) return t(k, r.params);
  if (getLang() === 'en' && r.text) return r.text;
  return t('reason.unknown');
}
