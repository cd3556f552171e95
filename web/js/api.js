// api.js - fetch wrapper for /api/v1: JSON in and out, the CSRF header on
// every mutating request, and errors as ApiError {status, code, message, field, detail}.

const KEY = 'ty.csrf';
let csrf = sessionStorage.getItem(KEY) || '';

export function setCsrf(token) {
  csrf = token || '';
  if (csrf) sessionStorage.setItem(KEY, csrf);
  else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, err) {
    super((err && err.message) || ('HTTP ' + status));
    this.status = status;
    this.code = (err && err.code) || '';
    this.field = (err && err.field) || '';
    this.detail = (err && err.detail) || '';
  }
}

export async function api(method, path, body, headers) {
  const opts = { method, credentials: 'same-origin', headers: Object.assign({ Accept: 'application/json' }, headers) };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD' && csrf) opts.headers['X-CSRF-Token'] = csrf;
  let r;
  try {
    r = await fetch('/api/v1' + path, opts);
  } catch (e) {
    throw new ApiError(0, { code: 'network', message: String(e && e.message || e) });
  }
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    const err = new ApiError(r.status, data && data.error);
    if (r.status === 401 && path !== '/auth/login' && path !== '/me')
      window.dispatchEvent(new CustomEvent('ty:unauthorized'));
    throw err;
  }
  return data;
}

export const get = (p) => api('GET', p);
export const post = (p, b) => api('POST', p, b === undefined ? {} : b);
export const put = (p, b) => api('PUT', p, b);

// POST /jobs with an Idempotency-Key: when a submit's answer is lost (the
// network, a 5xx), pressing start again with the same spec sends the same
// key and gets the job the first press may have made instead of a second
// one. Any answer that settles it (2xx, 4xx) retires the key, so a later
// submit of the same spec is a new job. getRandomValues, not randomUUID:
// the dashboard is often served over plain HTTP, not a secure context.
const submitKeys = new Map(); // spec JSON -> key
export async function submitJob(spec) {
  const text = JSON.stringify(spec);
  let key = submitKeys.get(text);
  if (!key) {
    key = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
    submitKeys.set(text, key);
  }
  try {
    const job = await api('POST', '/jobs', spec, { 'Idempotency-Key': key });
    submitKeys.delete(text);
    return job;
  } catch (e) {
    if (e.status >= 400 && e.status < 500) submitKeys.delete(text);
    throw e;
  }
}

// "?a=1&b=2" from an object, skipping empty values.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}
