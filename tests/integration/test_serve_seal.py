"""The gateway's request records sealed into the audit chain
(docs/serving.md, "Request records and their seal"; docs/audit-export.md,
"Gateway request records"): a real server seals the records this test
inserts with psql (as the gateway's writer would), in batches, one
serve.requests.seal event each; an audit export carries every record with
its inclusion proof; `trainyard audit verify` checks them offline and names
the first tampered record by its request id.

Everything the server and the verifier compute is computed here again,
independently: each record's hash from its fields (the canonical text of
docs/serving.md, hashlib), and the RFC 6962 tree, root and proofs from the
RFC's recursive definitions. A record committed late, with an id below one
already sealed, is sealed by a later batch and verifies; a backlog past the
batch size is sealed in full batches at once. Texts past their deployment's
keep_texts_days are cleared by the retention loop (hashes stay), and audit
retention takes the records of the batches it removes the seal events of."""
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, psql, wait_for  # noqa: E402
from test_audit_export import fetch_raw  # noqa: E402

FIELDS = ("request_id", "ts_text", "key_id", "deployment_id", "version_id", "replica_job_id",
          "manifest_sha256", "route", "status", "error_code", "prompt_sha256", "answer_sha256",
          "prompt_tokens", "completion_tokens", "latency_us", "ttft_us", "client_addr")
IDS = ("key_id", "deployment_id", "version_id", "replica_job_id")
SEAL_BATCH = 4096  # server/loops/serve_seal.h
# The deployments setUpClass makes, by keep_texts_days (ids 1, 2, 3 in a fresh database).
DEP_LONG, DEP_ZERO, DEP_THREE = 1, 2, 3
METRICS_TOKEN = "seal-metrics-token-0123456789abcdef"


# ---------------------------------------------------------------------------
# Independent implementations: the record's text and RFC 6962


def record_text(r):
    """The canonical text of docs/serving.md: a version line, then one
    name=value line per field in order; a missing id is empty."""
    lines = ["trainyard.serve.request.v1"]
    for f in FIELDS:
        v = r[f]
        if f in IDS and (v is None or v <= 0):
            v = ""
        lines.append("%s=%s" % (f, v))
    return "\n".join(lines) + "\n"


def record_sha256(r):
    return hashlib.sha256(record_text(r).encode()).hexdigest()


def leaf(value):
    return hashlib.sha256(b"\x00" + value).digest()


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(values, lo=0, n=None, memo=None):
    """RFC 6962 2.1: the Merkle tree hash of values[lo:lo+n] (32-byte
    values). memo (a dict) keeps subtree hashes across calls on the same
    values, so that a batch's proofs do not hash the tree once each."""
    n = len(values) if n is None else n
    if memo is not None and (lo, n) in memo:
        return memo[(lo, n)]
    if n == 1:
        h = leaf(values[lo])
    else:
        k = split(n)
        h = node(mth(values, lo, k, memo), mth(values, lo + k, n - k, memo))
    if memo is not None:
        memo[(lo, n)] = h
    return h


def audit_path(m, values, lo=0, n=None, memo=None):
    """RFC 6962 2.1.1: the inclusion proof of value m of values[lo:lo+n],
    from the leaf up."""
    n = len(values) if n is None else n
    if n == 1:
        return []
    k = split(n)
    if m < k:
        return audit_path(m, values, lo, k, memo) + [mth(values, lo + k, n - k, memo)]
    return audit_path(m - k, values, lo + k, n - k, memo) + [mth(values, lo, k, memo)]


def root_from_path(value, m, n, path):
    """The root that path leads to from value at index m of n (the inverse
    of audit_path, by the same split), or None when it does not fit n."""
    if n == 1:
        return leaf(value) if not path else None
    if not path:
        return None
    k = split(n)
    if m < k:
        sub = root_from_path(value, m, k, path[:-1])
        return node(sub, path[-1]) if sub else None
    sub = root_from_path(value, m - k, n - k, path[:-1])
    return node(path[-1], sub) if sub else None


def doc_snippet():
    """The python3 check of one record that docs/audit-export.md shows
    ("Checking one record with standard tools"), run as written."""
    with open(os.path.join(harness.SRC, "docs", "audit-export.md")) as f:
        text = f.read()
    part = text.split("### Checking one record with standard tools", 1)[1]
    code = part.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(code, scope)  # noqa: S102 - the document's own snippet
    return scope["included"]


# ---------------------------------------------------------------------------
# Records as the gateway writes them


T0 = datetime.datetime(2026, 12, 2, 8, 0, 0, tzinfo=datetime.timezone.utc)


def make_record(rid, **over):
    ts = T0 + datetime.timedelta(microseconds=rid * 1001)
    r = {"request_id": "req-%d" % rid, "ts_text": ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
         "key_id": 3, "deployment_id": DEP_LONG, "version_id": 5 if rid % 3 else None,
         "replica_job_id": 40 + rid % 4, "manifest_sha256": hashlib.sha256(b"m").hexdigest(),
         "route": "/v1/chat/completions", "status": 200 if rid % 5 else 429,
         "error_code": "" if rid % 5 else "rate_limit_exceeded",
         "prompt_sha256": hashlib.sha256(b"p%d" % rid).hexdigest(),
         "answer_sha256": hashlib.sha256(b"a%d" % rid).hexdigest(),
         "prompt_tokens": rid % 17, "completion_tokens": rid % 29, "latency_us": 1000 + rid,
         "ttft_us": rid % 2 * 300, "client_addr": "10.0.0.%d" % (rid % 250),
         "prompt_text": "prompt %d: \u4f60\u597d, \"quoted\"" % rid, "answer_text": None,
         "ts": ts.isoformat()}
    r.update(over)
    return r


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def insert(db, rows):
    """One INSERT of rows with their explicit ids, each with the hash computed
    here (as the gateway's writer does); returns {id: record}."""
    cols = ("id", "request_id", "ts", "ts_text") + FIELDS[2:] + ("record_sha256", "prompt_text",
                                                                  "answer_text")
    vals = []
    for r in rows:
        r["record_sha256"] = record_sha256(r)
        vals.append("(" + ", ".join(lit(r[c]) if c != "ts" else lit(r["ts"]) + "::timestamptz"
                                    for c in cols) + ")")
    # One statement (one transaction) on stdin: a backlog arrives at once.
    sql = "INSERT INTO serve_requests (%s) VALUES %s" % (", ".join(cols), ", ".join(vals))
    out = subprocess.run(["psql", db.url, "-v", "ON_ERROR_STOP=1", "-qAt"], input=sql,
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return {r["id"]: r for r in rows}


def make_deployments(db):
    """Deployments DEP_LONG, DEP_ZERO and DEP_THREE (keep_texts_days 3650, 0
    and 3) straight in the tables, as the registry and the deployment API
    would leave them: the records name them by id."""
    ids = psql(db.url, """
        INSERT INTO teams (name) VALUES ('sealteam');
        INSERT INTO models (name, team_id, site_id, created_by)
            SELECT 'sealmodel', id, 1, 'admin' FROM teams WHERE name = 'sealteam';
        INSERT INTO model_versions (model_id, version, site_id, source_kind, path, serve_kind,
                                    serve_script, manifest, manifest_sha256, lineage_complete,
                                    created_by)
            SELECT id, 1, 1, 'output', '/srv/m', 'echo', 'serve_echo.py', '[]', repeat('a', 64),
                   true, 'admin' FROM models WHERE name = 'sealmodel';
        INSERT INTO deployments (name, model_id, version_id, team_id, user_id, site_id,
                                 gpus_per_replica, min_replicas, max_replicas, replicas, priority,
                                 keep_texts_days)
            SELECT d.name, m.id, v.id, m.team_id, u.id, 1, 1, 0, 1, 0, 0, d.keep
            FROM (VALUES (1, 'keep-long', 3650), (2, 'keep-zero', 0), (3, 'keep-three', 3))
                 AS d(n, name, keep), models m, model_versions v, users u
            WHERE m.name = 'sealmodel' AND v.model_id = m.id AND u.username = 'admin'
            ORDER BY d.n RETURNING id""")
    assert [int(r[0]) for r in ids] == [DEP_LONG, DEP_ZERO, DEP_THREE], ids


class SealCase(ServerTest):
    """A server and its database with the deployments, and the checks the
    tests share."""
    records = {}  # every record a class's tests inserted, by id (one database per class)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        make_deployments(cls.db)

    def add(self, rows):
        got = insert(self.db, rows)
        self.records.update(got)
        return got

    # helpers -------------------------------------------------------------
    def unsealed(self):
        return int(self.db.sql("SELECT count(*) FROM serve_requests WHERE batch_id IS NULL")[0][0])

    def wait_sealed(self):
        wait_for(lambda: self.unsealed() == 0, timeout=60, what="every record to be sealed")

    def batch_of(self, rid):
        return int(self.db.sql("SELECT batch_id FROM serve_requests WHERE id = %d" % rid)[0][0])

    def seal_events(self):
        """Every seal event through the audit list (GET /api/v1/audit/events)."""
        out, cursor = [], None
        while True:
            q = "/api/v1/audit/events?action=serve.requests.seal&limit=500"
            if cursor:
                q += "&cursor=" + cursor
            st, page, _ = self.admin.get(q)
            self.assertEqual(st, 200, page)
            out += page["events"]
            cursor = page["next_cursor"]
            if not cursor:
                return sorted(out, key=lambda e: int(e["id"]))

    def export(self, fmt="jsonl"):
        st, data, _ = fetch_raw(self.admin, "/api/v1/audit/export?format=" + fmt)
        self.assertEqual(st, 200, data[:300])
        return data

    def verify(self, data, suffix=".jsonl"):
        """(exit code, --json verdict) of `trainyard audit verify` on data."""
        self.assertTrue(os.path.exists(harness.CLI_BIN), harness.CLI_BIN + " is not built")
        st, key, _ = self.admin.get("/api/v1/audit/public-key")
        self.assertEqual(st, 200, key)
        d = tempfile.mkdtemp(prefix="ty-seal-")
        try:
            exp, pub = os.path.join(d, "export" + suffix), os.path.join(d, "key.json")
            with open(exp, "wb") as f:
                f.write(data)
            with open(pub, "w") as f:
                json.dump(key, f)
            out = subprocess.run([harness.CLI_BIN, "audit", "verify", exp, "--public-key", pub,
                                  "--json"], capture_output=True, text=True, timeout=120)
            text = subprocess.run([harness.CLI_BIN, "audit", "verify", exp, "--public-key",
                                   pub], capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, text.returncode, text.stdout + text.stderr)
            verdict = json.loads(out.stdout)
            verdict["text"] = text.stdout
            return out.returncode, verdict
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def check_batches(self, records):
        """Every seal event against the database and an independent root;
        returns {event id: (batch, root, count, member ids, their hashes, a
        memo of subtree hashes for audit_path)}."""
        events = self.seal_events()
        batches = {int(b[0]): b for b in self.db.sql(
            "SELECT id, first_id, last_id, count, merkle_root, audit_seq FROM serve_batches")}
        self.assertEqual(len(events), len(batches))
        seen = {}
        for ev in events:
            d = ev["details"]
            self.assertEqual(set(d), {"batch", "first_id", "last_id", "count", "root"}, d)
            self.assertEqual(ev["target"], "serve:batch:" + d["batch"])
            self.assertEqual((ev["actor"], ev["outcome"]), ("system", "success"))
            b = batches[int(d["batch"])]
            self.assertEqual(b[1:6], [d["first_id"], d["last_id"], str(d["count"]), d["root"],
                                      ev["id"]])
            ids = [int(r[0]) for r in self.db.sql(
                "SELECT id FROM serve_requests WHERE batch_id = %s ORDER BY id" % d["batch"])]
            self.assertEqual((len(ids), ids[0], ids[-1]),
                             (d["count"], int(d["first_id"]), int(d["last_id"])))
            values = [bytes.fromhex(records[i]["record_sha256"]) for i in ids]
            self.assertEqual(mth(values).hex(), d["root"], "batch %s's root" % d["batch"])
            seen[int(ev["id"])] = (int(d["batch"]), d["root"], d["count"], ids, values, {})
        return seen

    def check_export_lines(self, data, records, seals):
        """The JSON Lines export read here: each seal event line is followed
        by its batch's records in id order, each hashing to its record_sha256
        (fields as exported, hashed here) and proving its place with its path
        (checked here against the root of its event). Returns the records."""
        lines = data.decode().splitlines()
        out, due = [], []
        for ln in lines[:-1]:
            obj = json.loads(ln)
            if "serve_record" in obj:
                rec = obj["serve_record"]
                self.assertTrue(due, "a record line where none is due: " + ln[:200])
                self.assertEqual(int(rec["id"]), due.pop(0))
                batch, root, count, ids, values, memo = seals[int(rec["event"])]
                self.assertEqual((int(rec["batch"]), rec["count"]), (batch, count))
                self.assertEqual(rec["index"], ids.index(int(rec["id"])))
                fields = dict(rec)
                for f in IDS:
                    fields[f] = int(rec[f]) if rec[f] is not None else None
                self.assertEqual(record_sha256(fields), rec["record_sha256"])
                want = records[int(rec["id"])]
                self.assertEqual(rec["record_sha256"], want["record_sha256"])
                self.assertEqual(rec["prompt_text"], want["prompt_text"])
                path = [bytes.fromhex(h) for h in rec["proof"]]
                self.assertEqual(path, audit_path(rec["index"], values, memo=memo))
                got = root_from_path(bytes.fromhex(rec["record_sha256"]), rec["index"], count,
                                     path)
                self.assertEqual(got.hex(), root, rec["request_id"])
                out.append(rec)
            else:
                self.assertEqual(due, [], "records missing before " + ln[:120])
                if int(json.loads(ln)["event"]["id"]) in seals:
                    due = list(seals[int(json.loads(ln)["event"]["id"])][3])
        self.assertEqual(due, [])
        manifest = json.loads(lines[-1])["manifest"]
        self.assertEqual(manifest["serve_records"], len(out))
        return out


class ServeSealTest(SealCase):
    server_args = ("--metrics-token", METRICS_TOKEN, "--metrics-cache-ms", "0",
                   "--retention-interval-s", "1")
    records = {}

    def test_seal_export_verify(self):
        records = self.records
        # Round 1: ids with a gap (6 and 7 are not there yet).
        self.add([make_record(i, id=i) for i in (1, 2, 3, 4, 5, 8, 9)])
        self.wait_sealed()
        # Round 2, then a record committed late: id 6, below ids already sealed.
        self.add([make_record(i, id=i) for i in range(20, 31)])
        self.wait_sealed()
        sealed_before = self.batch_of(30)
        self.add([make_record(6, id=6), make_record(31, id=31, prompt_text=None)])
        self.wait_sealed()
        self.assertGreater(self.batch_of(6), sealed_before, "the late record's batch")
        self.assertGreater(self.batch_of(6), self.batch_of(5))
        self.assertEqual(self.batch_of(6), self.batch_of(31))
        self.assertGreaterEqual(len({self.batch_of(i) for i in (1, 20, 6)}), 3)

        seals = self.check_batches(records)
        late = [s for s in seals.values() if 6 in s[3]][0]
        self.assertEqual(late[3], [6, 31])  # first_id 6 sits below the earlier batches' ids

        data = self.export("jsonl")
        exported = self.check_export_lines(data, records, seals)
        # The document's own snippet agrees, and refuses a changed record.
        included = doc_snippet()
        roots = {str(e): s[1] for e, s in seals.items()}
        for rec in exported:
            self.assertTrue(included(rec, roots[rec["event"]]), rec["request_id"])
        changed = dict(exported[0], prompt_tokens=exported[0]["prompt_tokens"] + 1)
        self.assertFalse(included(changed, roots[changed["event"]]))
        moved = dict(exported[1], index=exported[1]["index"] ^ 1)
        self.assertFalse(included(moved, roots[moved["event"]]))
        self.assertEqual(sorted(int(r["id"]) for r in exported), sorted(records))
        rc, v = self.verify(data)
        self.assertEqual(rc, 0, v)
        self.assertTrue(v["ok"], v)
        self.assertEqual((v["serve_records"], v["serve_batches"]), (len(records), len(seals)))
        self.assertIn("%d request records in %d sealed batches proven" % (len(records),
                                                                           len(seals)), v["text"])
        csv_data = self.export("csv")
        rc, v = self.verify(csv_data, ".csv")
        self.assertEqual(rc, 0, v)
        self.assertEqual(v["serve_records"], len(records))

        # Tampered: a token count of one record (req-22)...
        lines = data.split(b"\n")
        i = next(k for k, ln in enumerate(lines) if b'"request_id":"req-22"' in ln)
        obj = json.loads(lines[i])
        obj["serve_record"]["completion_tokens"] += 1
        bad = lines[:i] + [json.dumps(obj, separators=(",", ":")).encode()] + lines[i + 1:]
        rc, v = self.verify(b"\n".join(bad))
        self.assertEqual(rc, 1, v)
        self.assertEqual((v["ok"], v["kind"], v["request_id"], v["line"]),
                         (False, "modified", "req-22", i + 1), v)
        self.assertIn("request record req-22", v["text"])
        # ... and the same with its record_sha256 made to match: the proof fails.
        obj["serve_record"]["record_sha256"] = record_sha256(
            {f: (int(obj["serve_record"][f]) if f in IDS and obj["serve_record"][f] else
                 obj["serve_record"][f]) for f in FIELDS})
        bad = lines[:i] + [json.dumps(obj, separators=(",", ":")).encode()] + lines[i + 1:]
        rc, v = self.verify(b"\n".join(bad))
        self.assertEqual((rc, v["kind"], v["request_id"]), (1, "modified", "req-22"), v)
        self.assertIn("inclusion proof", v["message"])
        # One hash of another record's proof (req-4).
        i = next(k for k, ln in enumerate(lines) if b'"request_id":"req-4"' in ln)
        obj = json.loads(lines[i])
        h = obj["serve_record"]["proof"][0]
        obj["serve_record"]["proof"][0] = ("0" if h[0] != "0" else "1") + h[1:]
        bad = lines[:i] + [json.dumps(obj, separators=(",", ":")).encode()] + lines[i + 1:]
        rc, v = self.verify(b"\n".join(bad))
        self.assertEqual((rc, v["kind"], v["request_id"], v["line"]),
                         (1, "modified", "req-4", i + 1), v)
        # A record dropped: the batch is incomplete.
        rc, v = self.verify(b"\n".join(lines[:i] + lines[i + 1:]))
        self.assertEqual((rc, v["kind"]), (1, "missing"), v)
        # The same tampering in the CSV form.
        clines = csv_data.split(b"\n")
        i = next(k for k, ln in enumerate(clines) if b'""request_id"":""req-22""' in ln)
        clines[i] = clines[i].replace(b'""completion_tokens"":', b'""completion_tokens"":1', 1)
        rc, v = self.verify(b"\n".join(clines), ".csv")
        self.assertEqual((rc, v["kind"], v["request_id"]), (1, "modified", "req-22"), v)

        # /metrics: what this replica sealed, and nothing waits.
        st, body, _ = Client(self.server.url, token=METRICS_TOKEN).get("/metrics")
        self.assertEqual(st, 200, body)
        text = body if isinstance(body, str) else body.decode()
        self.assertIn("trainyard_serve_unsealed_records 0\n", text)
        self.assertIn("trainyard_serve_sealed_records_total %d\n" % len(records), text)
        self.assertIn("trainyard_serve_seal_batches_total %d\n" % len(seals), text)

    def test_backlog_in_full_batches(self):
        base = 100000
        n = SEAL_BATCH + 5
        self.add([make_record(base + k, id=base + k, prompt_text=None) for k in range(n)])
        self.wait_sealed()
        sizes = self.db.sql("SELECT count FROM serve_batches WHERE first_id >= %d ORDER BY id"
                            % base)
        self.assertEqual([int(s[0]) for s in sizes], [SEAL_BATCH, 5])
        seals = self.check_batches(self.records)
        big = [s for s in seals.values() if s[2] == SEAL_BATCH][0]
        self.assertEqual(big[3], list(range(base, base + SEAL_BATCH)))
        data = self.export("jsonl")
        self.check_export_lines(data, self.records, seals)
        rc, v = self.verify(data)
        self.assertEqual(rc, 0, v)
        self.assertEqual(v["serve_records"], len(self.records))



    def test_texts_retention(self):
        """Texts past their deployment's keep_texts_days are cleared by the
        retention loop (every second here), the rest stay; every hash stays,
        and the records still prove their inclusion."""
        now = datetime.datetime.now(datetime.timezone.utc)

        def aged(rid, dep, days):
            ts = now - datetime.timedelta(days=days, seconds=60)
            return make_record(rid, id=rid, deployment_id=dep, ts=ts.isoformat(),
                               ts_text=ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                               answer_text="answer %d" % rid)
        self.add([aged(200, DEP_ZERO, 0), aged(201, DEP_THREE, 5), aged(202, DEP_THREE, 1),
                  aged(203, DEP_LONG, 400), aged(204, None, 0)])

        def texts():
            return {int(r[0]): (r[1], r[2], r[3]) for r in self.db.sql(
                "SELECT id, prompt_text IS NULL, answer_text IS NULL, record_sha256 "
                "FROM serve_requests WHERE id BETWEEN 200 AND 204")}
        wait_for(lambda: all(texts()[i][:2] == ("t", "t") for i in (200, 201, 204)),
                 timeout=60, what="the texts past their time to be cleared")
        got = texts()
        for i in (202, 203):
            self.assertEqual(got[i][:2], ("f", "f"), "record %d keeps its texts" % i)
        for i in range(200, 205):
            self.assertEqual(got[i][2], self.records[i]["record_sha256"])
        counts = self.db.sql("SELECT details FROM audit_events WHERE action = 'retention.delete' "
                             "AND details::jsonb->>'kind' = 'serve_texts'")
        details = [json.loads(c[0]) for c in counts]
        self.assertEqual(sum(d["count"] for d in details), 3, details)
        self.assertTrue(all(set(d) == {"kind", "count", "batches"} for d in details), details)
        self.wait_sealed()
        rc, v = self.verify(self.export("jsonl"))
        self.assertEqual(rc, 0, v)
        self.assertEqual(v["serve_records"], len(self.records))


def age_events(db, through, days):
    """Move events 1..through days back and rehash the whole chain (as the
    superuser, the append-only guard off), as test_audit_export.py does."""
    rows = harness.db_audit_rows(db)
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    prev, stmts = "0" * 64, []
    for i, r in enumerate(rows):
        if int(r["id"]) <= through:
            r["ts"] = (start + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        r["prev_hash"] = prev
        r["hash"] = hashlib.sha256(harness.canonical(r).encode()).hexdigest()
        prev = r["hash"]
        stmts.append("UPDATE audit_events SET ts = %s::timestamptz, ts_text = %s, prev_hash = %s, "
                     "hash = %s WHERE id = %s" % (lit(r["ts"]), lit(r["ts"]), lit(r["prev_hash"]),
                                                  lit(r["hash"]), r["id"]))
    stmts.append("UPDATE audit_head SET hash = %s WHERE seq = %s" % (lit(prev), rows[-1]["id"]))
    psql(db.url, "BEGIN; ALTER TABLE audit_events DISABLE TRIGGER USER; " + "; ".join(stmts)
         + "; ALTER TABLE audit_events ENABLE TRIGGER USER; COMMIT")
    assert harness.verify_chain_rows(harness.db_audit_rows(db)) == 0


class SealAuditRetentionTest(SealCase):
    """Audit retention takes the records of the batches whose seal events it
    removes, and only those."""
    server_args = ("--audit-retention-days", "180")
    records = {}

    def test_records_go_with_their_seal_events(self):
        self.add([make_record(i, id=i, prompt_text=None) for i in range(1, 6)])
        self.wait_sealed()
        first = int(self.db.sql("SELECT audit_seq FROM serve_batches")[0][0])
        self.add([make_record(i, id=i, prompt_text=None) for i in range(6, 9)])
        self.wait_sealed()
        age_events(self.db, first, 200)
        st, r, _ = self.admin.post("/api/v1/audit/retention")
        self.assertEqual(st, 200, r)
        self.assertEqual(r["removed_through"], str(first), r)
        self.assertEqual([int(x[0]) for x in self.db.sql(
            "SELECT id FROM serve_requests ORDER BY id")], [6, 7, 8])
        self.assertEqual(int(self.db.sql("SELECT count(*) FROM serve_batches")[0][0]), 1)
        ev = self.db.sql("SELECT details FROM audit_events WHERE action = 'audit.retention'")
        self.assertEqual(json.loads(ev[0][0])["serve_records"], 5, ev)
        for k in range(1, 6):
            del self.records[k]
        seals = self.check_batches(self.records)
        self.assertEqual(len(seals), 1)
        data = self.export("jsonl")
        self.check_export_lines(data, self.records, seals)
        rc, v = self.verify(data)
        self.assertEqual((rc, v["serve_records"], v["serve_batches"]), (0, 3, 1), v)


if __name__ == "__main__":
    harness.main()
