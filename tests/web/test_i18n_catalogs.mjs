// test_i18n_catalogs.mjs - the two UI catalogs (web/i18n/zh-CN.json, en.json)
// agree: the same keys, sorted (so that two branches adding keys for
// different pages merge without conflicts), the same {variables} in both
// texts of a key, no empty text, and every literal key the code asks for
// (t('x.y'), t(`x.y`)) exists, and every API error code of
// docs/error-codes.json has a text. No server or browser needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WEB = path.resolve(process.env.TRAINYARD_SOURCE_DIR || path.join(HERE, '../..'), 'web');
const load = (l) => JSON.parse(fs.readFileSync(path.join(WEB, 'i18n', l + '.json'), 'utf8'));
const vars = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

function jsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsFiles(path.join(dir, e.name)) : e.name.endsWith('.js') ? [path.join(dir, e.name)] : []);
}

test('zh-CN and en have the same keys, sorted, with the same variables', () => {
  const zh = load('zh-CN'), en = load('en');
  assert.deepEqual(Object.keys(zh).filter((k) => !(k in en)), [], 'keys only in zh-CN.json');
  assert.deepEqual(Object.keys(en).filter((k) => !(k in zh)), [], 'keys only in en.json');
  for (const [name, c] of [['zh-CN', zh], ['en', en]]) {
    const keys = Object.keys(c);
    assert.deepEqual(keys, [...keys].sort(), `${name}.json is not sorted by key`);
    for (const k of keys) assert.ok(typeof c[k] === 'string' && c[k].trim() !== '', `${name}: ${k} is empty`);
  }
  for (const k of Object.keys(zh)) assert.deepEqual(vars(zh[k]), vars(en[k]), `variables of ${k} differ`);
});

// docs/error-codes.json (the server's list, checked against the server by
// tests/lint_codes.py): every code has its text, every example field a name.
test('every API error code and example field has its text', () => {
  const codes = JSON.parse(fs.readFileSync(path.join(WEB, '..', 'docs', 'error-codes.json'), 'utf8')).codes;
  const zh = load('zh-CN');
  const missing = [];
  for (const [code, c] of Object.entries(codes)) {
    if (!(`error.code.${code}` in zh)) missing.push(`error.code.${code}`);
    for (const f of c.field_examples || []) {
      const k = 'field.' + f.replace(/\[\d+\]/g, '');
      if (!/^params\./.test(f) && !(k in zh)) missing.push(k);
    }
  }
  assert.deepEqual(missing, []);
});

test('every literal key the code uses is in the catalogs', () => {
  const zh = load('zh-CN');
  const missing = [];
  for (const f of jsFiles(path.join(WEB, 'js'))) {
    const src = fs.readFileSync(f, 'utf8');
    for (const m of src.matchAll(/\bt\(\s*(['"`])([a-z][\w-]*(?:\.[\w-]+)+)\1\s*[,)]/g))
      if (!(m[2] in zh)) missing.push(`${path.relative(WEB, f)}: ${m[2]}`);
  }
  assert.deepEqual(missing, []);
});
