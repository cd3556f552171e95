"""The signed audit trail (docs/audit-export.md): the public key, signed
checkpoints, the JSON Lines and CSV exports checked byte for byte, tampering
found offline, the append-only guard for every role, and retention.

Signatures are checked here with the `cryptography` module when it is
installed, and with the offline verifier `trainyard audit verify` when
$TRAINYARD_BUILD_DIR/cli/trainyard is built; each of those checks is skipped,
saying so, when its tool is missing."""
import base64
import csv
import datetime
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, Server, ServerTest, psql, psql_try  # noqa: E402

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
except ImportError:  # pragma: no cover - depends on the machine
    Ed25519PublicKey = None

GENESIS = "0" * 64
KINDS = ("modified", "missing", "inserted", "reordered")


# ---------------------------------------------------------------------------
# Reading exports, independently of the server and the CLI


def jansson_text(obj):
    """Compact, keys sorted, non-ASCII escaped with upper-case hex (jansson)."""
    s = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), s)


def signed_text(obj):
    return jansson_text({k: v for k, v in obj.items() if k != "signature"})


def fetch_raw(client, path, timeout=120):
    """GET path as client; returns (status, body bytes, headers)."""
    h = {}
    if client.token:
        h["Authorization"] = "Bearer " + client.token
    if client.cookie:
        h["Cookie"] = client.cookie
    conn = http.client.HTTPConnection(client.host, client.port, timeout=timeout)
    try:
        conn.request("GET", path, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data, {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def parse_export(data, fmt):
    """(events, manifest, bytes before the manifest line). Each event is a dict
    with id, hash, prev_hash, canonical (bytes), event (parsed), line."""
    assert data.endswith(b"\n"), data[-200:]
    if fmt == "jsonl":
        cut = data.rfind(b"\n", 0, len(data) - 1) + 1
        body, mline = data[:cut], data[cut:-1]
        assert mline.startswith(b'{"manifest":'), mline[:80]
        manifest = json.loads(mline)["manifest"]
        events = []
        for n, line in enumerate(body.split(b"\n")[:-1], start=1):
            m = re.match(rb'^\{"hash":"([0-9a-f]{64})","event":(.*)\}$', line)
            assert m, line[:120]
            ev = json.loads(m.group(2))
            events.append({"id": int(ev["id"]), "hash": m.group(1).decode(),
                           "prev_hash": ev["prev_hash"], "canonical": m.group(2), "event": ev,
                           "line": n})
        return events, manifest, body
    cut = data.rfind(b"\n#manifest,") + 1
    assert cut > 0, data[-200:]
    body, mline = data[:cut], data[cut:-1]
    assert b"\r" not in data, "CSV lines end in LF alone"
    manifest = json.loads(next(csv.reader(io.StringIO(mline.decode())))[1])
    rows = list(csv.reader(io.StringIO(body.decode(), newline="")))
    assert rows[0] == ["id", "ts", "actor", "source", "action", "target", "outcome", "details",
                       "prev_hash", "hash"], rows[0]
    events = []
    for n, r in enumerate(rows[1:], start=2):
        ev = dict(zip(rows[0], r))
        ev["details"] = json.loads(ev["details"])
        h = ev.pop("hash")
        canon = harness.canonical(ev).encode()
        events.append({"id": int(ev["id"]), "hash": h, "prev_hash": ev["prev_hash"],
                       "canonical": canon, "event": json.loads(canon), "line": n})
    return events, manifest, body


def first_fault(events, prev_hash):
    """The doc's verification of the event lines: (kind, event id) of the first
    bad record, or None."""
    prev, prev2, prev_id = prev_hash, None, None
    for i, e in enumerate(events):
        if e["prev_hash"] != prev:
            if i >= 1 and e["prev_hash"] == (prev2 if i >= 2 else prev_hash):
                return "inserted", prev_id
            if any(e["prev_hash"] == later["hash"] for later in events[i + 1:i + 4097]):
                return "reordered", e["id"]
            if prev_id is not None and e["id"] > prev_id + 1:
                return "missing", prev_id + 1
            return "modified", prev_id if prev_id is not None else e["id"]
        if hashlib.sha256(e["canonical"]).hexdigest() != e["hash"]:
            return "modified", e["id"]
        if prev_id is not None and e["id"] != prev_id + 1:
            return ("reordered", e["id"]) if e["id"] < prev_id else ("missing", prev_id + 1)
        prev2, prev, prev_id = prev, e["hash"], e["id"]
    return None


def cli_verdict(out):
    """(kind, event id) from `trainyard audit verify --json` output."""
    try:
        doc = json.loads(out)
    except ValueError:
        return None, None

    def walk(o):
        if isinstance(o, dict):
            if o.get("kind") in KINDS + ("ok", "signature", "manifest", "format"):
                for k in ("event_id", "id", "first_bad_id"):
                    if k in o:
                        return o["kind"], int(o[k]) if o[k] is not None else None
                return o["kind"], None
            for v in o.values():
                r = walk(v)
                if r:
                    return r
        if isinstance(o, list):
            for v in o:
                r = walk(v)
                if r:
                    return r
        return None
    return walk(doc) or (None, None)


# ---------------------------------------------------------------------------


class AuditCase(ServerTest):
    """Shared helpers: the key, exports, checks with cryptography and the CLI."""

    def public_key(self):
        st, body, _ = self.admin.get("/api/v1/audit/public-key")
        self.assertEqual(st, 200, body)
        return body

    def export(self, query="", fmt="jsonl", client=None):
        sep = "&" if query else ""
        st, data, hdrs = fetch_raw(client or self.admin, "/api/v1/audit/export?format=%s%s%s"
                                   % (fmt, sep, query))
        self.assertEqual(st, 200, data[:300])
        return data, hdrs

    def check_export(self, data, fmt, key):
        """Every check of the doc that needs no key, plus the signatures when
        the cryptography module is there. Returns (events, manifest)."""
        events, m, body = parse_export(data, fmt)
        self.assertIsNone(first_fault(events, m["prev_hash"]))
        self.assertEqual(m["type"], "trainyard.audit.export")
        self.assertEqual(m["format"], fmt)
        self.assertEqual(m["count"], len(events))
        self.assertEqual(m["events_sha256"], hashlib.sha256(body).hexdigest())
        self.assertEqual(m["key_id"], key["key_id"])
        self.assertRegex(m["generated_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        if events:
            self.assertEqual((m["first_id"], m["last_id"]), (str(events[0]["id"]),
                                                             str(events[-1]["id"])))
            self.assertEqual((m["first_hash"], m["last_hash"]), (events[0]["hash"],
                                                                 events[-1]["hash"]))
            self.assertEqual(events[0]["prev_hash"], m["prev_hash"])
            by_id = {e["id"]: e["hash"] for e in events}
            by_id[events[0]["id"] - 1] = m["prev_hash"]
            for cp in m["checkpoints"]:
                self.assertEqual(cp["type"], "trainyard.audit.checkpoint")
                self.assertIn(int(cp["seq"]), by_id, cp)
                self.assertEqual(cp["hash"], by_id[int(cp["seq"])], cp)
                self.assertEqual(cp["key_id"], key["key_id"])
        else:
            self.assertEqual([m["first_id"], m["last_id"], m["first_hash"], m["last_hash"]],
                             [None] * 4)
            self.assertRegex(m["prev_hash"], r"^[0-9a-f]{64}$")
        for e in events:
            self.assertEqual(hashlib.sha256(e["canonical"]).hexdigest(), e["hash"])
        if Ed25519PublicKey is not None:
            pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
            for obj in [m] + m["checkpoints"]:
                pub.verify(base64.b64decode(obj["signature"]), signed_text(obj).encode())
            forged = dict(m, count=m["count"] + 1)
            with self.assertRaises(InvalidSignature):
                pub.verify(base64.b64decode(forged["signature"]), signed_text(forged).encode())
        return events, m

    def run_cli(self, data, key, suffix=".jsonl"):
        """(exit code, stdout, stderr) of `trainyard audit verify`, or skip."""
        if not os.path.exists(harness.CLI_BIN):
            self.skipTest("the offline verifier %s is not built yet; its check is skipped"
                          % harness.CLI_BIN)
        d = tempfile.mkdtemp(prefix="ty-audit-")
        try:
            exp = os.path.join(d, "export" + suffix)
            pub = os.path.join(d, "key.json")
            with open(exp, "wb") as f:
                f.write(data)
            with open(pub, "w") as f:
                if isinstance(key, str):  # PEM or base64 as it is
                    f.write(key)
                else:
                    json.dump(key, f)
            out = subprocess.run([harness.CLI_BIN, "audit", "verify", exp, "--public-key", pub,
                                  "--json"], capture_output=True, text=True, timeout=120)
            return out.returncode, out.stdout, out.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def make_events(self, n, prefix):
        """About n audited mutations through the API."""
        made = 0
        while made < n:
            name = "%s%d" % (prefix, made)
            st, team, _ = self.admin.post("/api/v1/teams", {"name": name})
            self.assertEqual(st, 201, team)
            st, body, _ = self.admin.request("PATCH", "/api/v1/teams/" + team["id"],
                                             body={"gpu_quota": made % 7})
            self.assertEqual(st, 200, body)
            made += 2

    def audit_rows(self):
        return harness.db_audit_rows(self.db)


class ExportTest(AuditCase):
    server_args = ("--audit-checkpoint-interval-s", "1")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A few hundred events, some with non-ASCII text.
        case = cls("test_public_key")
        case.make_events(300, "ex")
        st, body, _ = cls.admin.request("PATCH", "/api/v1/users/1",
                                        body={"display_name": "Zoë 数据"})
        assert st == 200, body

    def test_public_key(self):
        key = self.public_key()
        self.assertEqual(key["algorithm"], "ed25519")
        raw = base64.b64decode(key["public_key"])
        self.assertEqual(len(raw), 32)
        self.assertEqual(key["key_id"], hashlib.sha256(raw).hexdigest()[:16])
        self.assertTrue(key["pem"].startswith("-----BEGIN PUBLIC KEY-----"))
        # The PEM holds the same key: its DER ends with the raw 32 bytes.
        der = base64.b64decode("".join(key["pem"].strip().splitlines()[1:-1]))
        self.assertEqual(der[-32:], raw)
        # The key ring: one key so far, current.
        self.assertEqual(len(key["keys"]), 1, key)
        ring = key["keys"][0]
        self.assertEqual((ring["key_id"], ring["public_key"], ring["retired_at"]),
                         (key["key_id"], key["public_key"], None))
        self.assertRegex(ring["created_at"], r"^\d{4}-\d\d-\d\dT")
        path = os.path.join(self.server.dir, "audit-signing.pem")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertIn("key_id=" + key["key_id"], self.server.log_text())

    def test_export_jsonl(self):
        key = self.public_key()
        data, hdrs = self.export()
        self.assertEqual(hdrs["content-type"], "application/x-ndjson")
        self.assertRegex(hdrs["content-disposition"],
                         r'^attachment; filename="audit-\d{8}T\d{6}Z\.jsonl"$')
        events, m = self.check_export(data, "jsonl", key)
        self.assertGreater(len(events), 300)
        self.assertEqual(events[0]["id"], 1)
        self.assertEqual(m["prev_hash"], GENESIS)
        self.assertEqual((m["from"], m["to"]), (None, None))
        # The export records itself before its snapshot: it is the last line.
        self.assertEqual(events[-1]["event"]["action"], "audit.export")
        self.assertEqual(events[-1]["event"]["details"], {"format": "jsonl", "from": None,
                                                          "to": None})
        # Event text is the database's, byte for byte.
        rows = {int(r["id"]): r for r in self.audit_rows()}
        for e in events:
            self.assertEqual(e["canonical"], harness.canonical(rows[e["id"]]).encode())
            self.assertEqual(e["hash"], rows[e["id"]]["hash"])
        self.assertTrue(any("Zo\\u00EB" in e["canonical"].decode() for e in events))

    def test_export_csv(self):
        key = self.public_key()
        data, hdrs = self.export(fmt="csv")
        self.assertEqual(hdrs["content-type"], "text/csv")
        self.assertTrue(hdrs["content-disposition"].endswith('.csv"'))
        events, m = self.check_export(data, "csv", key)
        self.assertEqual(m["format"], "csv")
        self.assertGreater(len(events), 300)
        jl, _ = parse_export(self.export()[0], "jsonl")[:2]
        # Both formats carry the same events.
        self.assertEqual([e["hash"] for e in events], [e["hash"] for e in jl[:len(events)]])

    def test_ranges(self):
        key = self.public_key()
        rows = self.audit_rows()
        by_id = {int(r["id"]): r for r in rows}
        # By id: both ends inclusive.
        events, m = self.check_export(self.export("from=10&to=20")[0], "jsonl", key)
        self.assertEqual([e["id"] for e in events], list(range(10, 21)))
        self.assertEqual(m["prev_hash"], by_id[9]["hash"])
        self.assertEqual((m["from"], m["to"]), ("10", "20"))
        events, m = self.check_export(self.export("from=5&to=7", fmt="csv")[0], "csv", key)
        self.assertEqual([e["id"] for e in events], [5, 6, 7])
        # By time: from inclusive, to exclusive, any RFC 3339 offset.
        t50, t60 = by_id[50]["ts"], by_id[60]["ts"]
        events, m = self.check_export(self.export("from=%s&to=%s" % (t50, t60))[0], "jsonl", key)
        self.assertEqual([e["id"] for e in events], list(range(50, 60)))
        self.assertEqual(m["prev_hash"], by_id[49]["hash"])
        t = datetime.datetime.strptime(t50, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc)
        local = t.astimezone(datetime.timezone(datetime.timedelta(hours=8))).isoformat()
        events, _ = self.check_export(self.export("from=%s&to=55" % urllib.parse.quote(local))[0],
                                      "jsonl", key)
        self.assertEqual([e["id"] for e in events], list(range(50, 56)))
        # Empty ranges: null ends, prev_hash still the event before.
        events, m = self.check_export(self.export("from=999999")[0], "jsonl", key)
        self.assertEqual((events, m["count"], m["checkpoints"]), ([], 0, []))
        events, m = self.check_export(self.export("to=1999-01-01T00:00:00Z")[0], "jsonl", key)
        self.assertEqual((events, m["prev_hash"]), ([], GENESIS))

    def test_bad_parameters(self):
        before = self.db.sql("SELECT count(*) FROM audit_events WHERE action = 'audit.export'")
        for query, field in [("format=xml", "format"), ("from=yesterday", "from"),
                             ("to=2025-02-30T00:00:00Z", "to"), ("from=2025-01-01", "from"),
                             ("from=2025-01-01T25:00:00Z", "from"), ("from=-1", "from"),
                             ("to=1e5", "to"), ("from=10&to=5", "from"),
                             ("from=2025-01-01T00:00:00%2B25:00", "from")]:
            err = self.assert_error(self.admin.get("/api/v1/audit/export?" + query), 400,
                                    "invalid_argument", field)
            self.assertIn(field, err["message"])
        after = self.db.sql("SELECT count(*) FROM audit_events WHERE action = 'audit.export'")
        self.assertEqual(before, after, "a refused export must not be recorded")

    def test_access(self):
        _, member = self.make_user("exm")
        _, auditor = self.make_user("exa", role="auditor")
        for path in ("/api/v1/audit/export", "/api/v1/audit/public-key",
                     "/api/v1/audit/checkpoints"):
            self.assert_error(member.get(path), 403, "permission_denied")
            self.assert_error(Client(self.server.url).get(path), 401)
        self.assertEqual(fetch_raw(auditor, "/api/v1/audit/export?to=3")[0], 200)
        self.assertEqual(auditor.get("/api/v1/audit/public-key")[0], 200)
        self.assert_error(auditor.post("/api/v1/audit/retention"), 403, "permission_denied")
        self.assert_error(member.post("/api/v1/audit/retention"), 403, "permission_denied")
        last = self.db.sql("SELECT actor, details FROM audit_events WHERE action = 'audit.export' "
                           "ORDER BY id DESC LIMIT 1")[0]
        self.assertEqual(last[0], "user:exa")
        self.assertEqual(json.loads(last[1])["to"], "3")

    def test_checkpoints(self):
        key = self.public_key()
        # The keeper signs the head every second while it moves.
        self.make_events(4, "cp")
        head = int(self.db.sql("SELECT seq FROM audit_head")[0][0])
        harness.wait_for(lambda: int(self.db.sql(
            "SELECT coalesce(max(seq), 0) FROM audit_checkpoints")[0][0]) >= head,
            timeout=30, what="a checkpoint of the head")
        st, page, _ = self.admin.get("/api/v1/audit/checkpoints?limit=2")
        self.assertEqual(st, 200, page)
        cps = page["checkpoints"]
        self.assertEqual(len(cps), 2)
        self.assertGreater(int(cps[0]["id"]), int(cps[1]["id"]))
        self.assertEqual(page["next_cursor"], cps[1]["id"])
        st, older, _ = self.admin.get("/api/v1/audit/checkpoints?limit=2&cursor=" + cps[1]["id"])
        self.assertEqual(st, 200, older)
        self.assertTrue(older["checkpoints"])
        self.assertLess(int(older["checkpoints"][0]["id"]), int(cps[1]["id"]))
        self.assert_error(self.admin.get("/api/v1/audit/checkpoints?cursor=x"), 400,
                          field="cursor")
        rows = {r["id"]: r for r in self.audit_rows()}
        rows["0"] = {"hash": GENESIS}
        for cp in cps + older["checkpoints"]:
            s = cp["signed"]
            self.assertEqual((s["seq"], s["hash"], s["kind"], s["key_id"], s["signature"]),
                             (cp["seq"], cp["hash"], cp["kind"], key["key_id"], cp["signature"]))
            self.assertEqual(s["hash"], rows[s["seq"]]["hash"])
            self.assertEqual(s["kind"], "periodic")
            if Ed25519PublicKey is not None:
                Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"])).verify(
                    base64.b64decode(s["signature"]), signed_text(s).encode())
        # The export carries them (and check_export checked their hashes).
        _, m = self.check_export(self.export()[0], "jsonl", key)
        self.assertGreaterEqual(len(m["checkpoints"]), 2)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)
        self.assertGreaterEqual(v["checkpoints_checked"], 2)
        # Append-only too.
        ok, err = psql_try(self.db.url, "UPDATE audit_checkpoints SET kind = 'retention'")
        self.assertFalse(ok)
        self.assertIn("append-only", err)
        ok, err = psql_try(self.db.url, "DELETE FROM audit_checkpoints")
        self.assertFalse(ok)

    def test_disconnects_return_connections(self):
        # Clients that hang up mid-stream: the stream's pooled connection and
        # its export slot must come back, or the next exports would fail.
        # The server sees a hang-up only at its next write, so a slot may come
        # back a moment after the close: a 429 is waited out, never kept.
        def start_export():
            conn = http.client.HTTPConnection(self.admin.host, self.admin.port, timeout=30)
            conn.request("GET", "/api/v1/audit/export", headers={"Cookie": self.admin.cookie})
            resp = conn.getresponse()
            if resp.status == 429:
                conn.close()
                return None
            return conn, resp

        for _ in range(12):
            conn, resp = harness.wait_for(start_export, timeout=20,
                                          what="an export slot to come back")
            self.assertEqual(resp.status, 200)
            resp.read(100)
            conn.close()
        for _ in range(3):
            harness.wait_for(lambda: fetch_raw(self.admin, "/api/v1/audit/export?to=2")[0] == 200,
                             timeout=20, what="a full export after the hang-ups")
        self.assertEqual(self.admin.get("/readyz")[0], 200)

    def test_cli_verifies_untouched_exports(self):
        key = self.public_key()
        for fmt, suffix in (("jsonl", ".jsonl"), ("csv", ".csv")):
            with self.subTest(fmt=fmt):
                data = self.export(fmt=fmt)[0]
                rc, out, err = self.run_cli(data, key, suffix)
                self.assertEqual(rc, 0, out + err)
                self.assertEqual(cli_verdict(out)[0] in (None, "ok"), True, out)
                # The wrong key is refused.
                other = dict(key, public_key=base64.b64encode(b"\x01" * 32).decode())
                other.pop("pem")
                other.pop("key_id")
                ring = other.pop("keys")
                rc, out, err = self.run_cli(data, other, suffix)
                self.assertEqual(rc, 1, out + err)
                # A key ring whose current key is not in its "keys" is refused.
                rc, out, err = self.run_cli(data, dict(other, keys=ring), suffix)
                self.assertEqual(rc, 2, out + err)
                self.assertIn("key ring", err)


class ExportLimitTest(AuditCase):
    def test_two_exports_at_a_time(self):
        # Rows fat enough that an export does not fit in the socket buffers,
        # so a client that does not read keeps its export running. (Straight
        # into the table, far after the chain: only their size matters.)
        self.db.sql("INSERT INTO audit_events SELECT g, now(), 'x', 'a', 's', 'pad', 't', "
                    "'success', '{\"pad\":\"' || repeat('p', 1000) || '\"}', repeat('0', 64), "
                    "repeat('1', 64) FROM generate_series(100000, 180000) g")
        socks = []
        try:
            for _ in range(2):
                so = socket.create_connection((self.admin.host, self.admin.port), timeout=30)
                so.sendall(("GET /api/v1/audit/export HTTP/1.1\r\nHost: t\r\nCookie: %s\r\n\r\n"
                            % self.admin.cookie).encode())
                socks.append(so)
            harness.wait_for(lambda: all(so.recv(16, socket.MSG_PEEK) for so in socks),
                             timeout=30, what="both exports streaming")
            self.assert_error(self.admin.get("/api/v1/audit/export?to=3"), 429, "rate_limited")
        finally:
            for so in socks:
                so.close()
        # Hung up mid-stream: slots and connections come back.
        harness.wait_for(lambda: fetch_raw(self.admin, "/api/v1/audit/export?to=3")[0] == 200,
                         timeout=30, what="an export slot")
        self.assertEqual(self.admin.get("/readyz")[0], 200)


class KeyFileTest(AuditCase):
    def test_data_dir_and_key_are_private(self):
        d = tempfile.mkdtemp(prefix="ty-keydir-")
        try:
            data_dir = os.path.join(d, "nested", "data")
            s = Server(self.db, args=("--data-dir", data_dir), admin=False)
            try:
                self.assertEqual(stat.S_IMODE(os.stat(data_dir).st_mode), 0o700)
                key = os.path.join(data_dir, "audit-signing.pem")
                self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
                with open(key) as f:
                    self.assertIn("BEGIN PRIVATE KEY", f.read())
            finally:
                s.stop()
            # Restarted on the same key: the same id.
            s = Server(self.db, args=("--audit-key-path", key), admin=False)
            try:
                st, body, _ = Client(s.url).get("/healthz")
                self.assertEqual(st, 200)
                self.assertIn("audit signing key loaded", s.log_text())
            finally:
                s.stop()
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def refused(self, key_path):
        d = tempfile.mkdtemp(prefix="ty-keyref-")
        try:
            listen = "127.0.0.1:%d" % harness.free_port()
            out = subprocess.run([harness.SERVER_BIN, "--listen", listen, "--database-url",
                                  self.db.url, "--data-dir", d, "--audit-key-path", key_path],
                                 capture_output=True, text=True, timeout=60)
            self.assertNotEqual(out.returncode, 0, out.stderr[-2000:])
            self.assertIn("refusing to start", out.stderr)
            return out.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_readable_or_bad_key_is_refused(self):
        src = os.path.join(self.server.dir, "audit-signing.pem")
        d = tempfile.mkdtemp(prefix="ty-badkey-")
        try:
            loose = os.path.join(d, "loose.pem")
            shutil.copyfile(src, loose)
            os.chmod(loose, 0o644)
            self.assertIn("chmod 600", self.refused(loose))
            garbage = os.path.join(d, "garbage.pem")
            with open(garbage, "w") as f:
                f.write("not a key\n")
            os.chmod(garbage, 0o600)
            self.refused(garbage)
            # An RSA key is not an audit key either.
            rsa = os.path.join(d, "rsa.pem")
            gen = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                                  "rsa_keygen_bits:1024", "-out", rsa], capture_output=True)
            if gen.returncode == 0:
                os.chmod(rsa, 0o600)
                self.assertIn("Ed25519", self.refused(rsa))
        finally:
            shutil.rmtree(d, ignore_errors=True)


class TamperTest(AuditCase):
    """Each forgery sits in its own id range; each range is exported and must
    fail verification at that record."""

    def tamper(self, sql):
        psql(self.db.url, "BEGIN; ALTER TABLE audit_events DISABLE TRIGGER USER; " + sql +
             "; ALTER TABLE audit_events ENABLE TRIGGER USER; COMMIT")

    def expect_fault(self, query, kind, event_id, key):
        for fmt, suffix in (("jsonl", ".jsonl"), ("csv", ".csv")):
            data = self.export(query, fmt=fmt)[0]
            events, m, _ = parse_export(data, fmt)
            self.assertEqual(first_fault(events, m["prev_hash"]), (kind, event_id),
                             "%s %s" % (query, fmt))
            with self.subTest(cli=fmt, kind=kind):
                rc, out, err = self.run_cli(data, key, suffix)
                self.assertEqual(rc, 1, out + err)
                self.assertEqual(cli_verdict(out), (kind, event_id), out + err)

    def test_tampering_is_found(self):
        self.make_events(300, "tp")
        key = self.public_key()
        # Untouched: everything holds, on the server and offline.
        data = self.export()[0]
        self.check_export(data, "jsonl", key)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)
        with self.subTest(cli="untouched"):
            rc, out, err = self.run_cli(data, key)
            self.assertEqual(rc, 0, out + err)

        # 1. A field changed (hash left as it was).
        self.tamper("UPDATE audit_events SET actor = 'user:mallory' WHERE id = 40")
        self.expect_fault("from=30&to=50", "modified", 40, key)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual((v["valid"], v["first_bad_id"]), (False, 40), v)

        # 2. A row deleted.
        self.tamper("DELETE FROM audit_events WHERE id = 100")
        self.expect_fault("from=90&to=110", "missing", 100, key)

        # 3. Two adjacent rows swapped (every column but id).
        cols = "ts, ts_text, actor, source, action, target, outcome, details, prev_hash, hash"
        sets = ", ".join("%s = o.%s" % (c.strip(), c.strip()) for c in cols.split(","))
        self.tamper("CREATE TEMP TABLE sw AS SELECT * FROM audit_events WHERE id IN (160, 161); "
                    "UPDATE audit_events a SET %s FROM sw o WHERE o.id = 321 - a.id "
                    "AND a.id IN (160, 161)" % sets)
        self.expect_fault("from=150&to=170", "reordered", 160, key)

        # 4. A forged row inserted with a correct hash linking to its
        #    predecessor; the later ids move up by one (and so does the head).
        before = {r["id"]: r for r in self.audit_rows()}["219"]
        forged = {"id": "220", "ts": before["ts"], "actor": "user:mallory", "source": "10.6.6.6",
                  "action": "user.create", "target": "user:999", "outcome": "success",
                  "details": {"role": "admin", "username": "mallory"},
                  "prev_hash": before["hash"]}
        forged["hash"] = hashlib.sha256(harness.canonical(forged).encode()).hexdigest()

        def lit(s):
            return "'" + s.replace("'", "''") + "'"
        self.tamper("UPDATE audit_events SET id = -id - 1 WHERE id >= 220; "
                    "UPDATE audit_events SET id = -id WHERE id < 0; "
                    "UPDATE audit_head SET seq = seq + 1; "
                    "INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target, "
                    "outcome, details, prev_hash, hash) VALUES (220, %s::timestamptz, %s, %s, %s, "
                    "%s, %s, %s, %s, %s, %s)" % tuple(lit(forged[k]) if k != "details" else
                                                      lit(json.dumps(forged[k], sort_keys=True,
                                                                     separators=(",", ":")))
                                                      for k in ("ts", "ts", "actor", "source",
                                                                "action", "target", "outcome",
                                                                "details", "prev_hash", "hash")))
        self.expect_fault("from=210&to=230", "inserted", 220, key)
        # The server's own check fails as well, and the head still appends.
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertFalse(v["valid"], v)
        self.assertEqual(self.admin.post("/api/v1/teams", {"name": "after-forgery"})[0], 201)


class AppendOnlyTest(AuditCase):
    def test_update_and_delete_are_refused(self):
        self.make_events(4, "ao")
        # The superuser, while the triggers are on.
        for sql in ("UPDATE audit_events SET actor = 'x' WHERE id = 1",
                    "DELETE FROM audit_events WHERE id = 1",
                    "TRUNCATE audit_events",
                    # Retention's door needs a retention checkpoint too.
                    "BEGIN; SET LOCAL trainyard.retention_through = '3'; "
                    "DELETE FROM audit_events WHERE id <= 3; COMMIT"):
            ok, err = psql_try(self.db.url, sql)
            self.assertFalse(ok, sql)
            self.assertIn("append-only", err)
        # An application role without special rights, granted what the server
        # needs on the table.
        role = "ty_app_" + uuid.uuid4().hex[:8]
        psql(self.db.url, "CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE" % role)
        try:
            psql(self.db.url, "GRANT SELECT, INSERT, UPDATE, DELETE ON audit_events, audit_head, "
                 "audit_checkpoints TO %s" % role)
            u = urllib.parse.urlsplit(self.db.url)
            host = u.hostname + (":%d" % u.port if u.port else "")
            url = urllib.parse.urlunsplit((u.scheme, role + "@" + host, u.path, "", ""))
            self.assertEqual(psql(url, "SELECT count(*) > 0 FROM audit_events"), [["t"]])
            for sql in ("UPDATE audit_events SET outcome = 'failure' WHERE id = 2",
                        "DELETE FROM audit_events WHERE id = 2",
                        "UPDATE audit_checkpoints SET hash = ''",
                        "DELETE FROM audit_checkpoints"):
                ok, err = psql_try(url, sql)
                self.assertFalse(ok, sql)
                self.assertIn("append-only", err)
            ok, err = psql_try(url, "ALTER TABLE audit_events DISABLE TRIGGER USER")
            self.assertFalse(ok, "only the owner may switch the guard off")
        finally:
            psql(self.db.url, "DROP OWNED BY %s; DROP ROLE %s" % (role, role))
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)


class RetentionTest(AuditCase):
    server_args = ("--audit-retention-days", "180")

    def age_events(self, n, days):
        """Move the first n events days back (as the superuser, guard off) and
        rehash the whole chain so it stays valid."""
        rows = self.audit_rows()
        start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
        prev = GENESIS
        stmts = []

        def lit(s):
            return "'" + s.replace("'", "''") + "'"
        for i, r in enumerate(rows):
            if i < n:
                r["ts"] = (start + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            r["prev_hash"] = prev
            r["hash"] = hashlib.sha256(harness.canonical(r).encode()).hexdigest()
            prev = r["hash"]
            stmts.append("UPDATE audit_events SET ts = %s::timestamptz, ts_text = %s, "
                         "prev_hash = %s, hash = %s WHERE id = %s"
                         % (lit(r["ts"]), lit(r["ts"]), lit(r["prev_hash"]), lit(r["hash"]),
                            r["id"]))
        stmts.append("UPDATE audit_head SET hash = %s WHERE seq = %s" % (lit(prev), rows[-1]["id"]))
        psql(self.db.url, "BEGIN; ALTER TABLE audit_events DISABLE TRIGGER USER; " +
             "; ".join(stmts) + "; ALTER TABLE audit_events ENABLE TRIGGER USER; COMMIT")
        self.assertEqual(harness.verify_chain_rows(self.audit_rows()), 0)
        return {r["id"]: r for r in rows}

    def test_retention(self):
        key = self.public_key()
        self.make_events(60, "rt")
        aged = self.age_events(30, 200)
        # Nothing is old enough for the policy until it is (180 days here).
        st, r, _ = self.admin.post("/api/v1/audit/retention")
        self.assertEqual(st, 200, r)
        self.assertEqual((r["removed"], r["removed_through"]), (30, "30"), r)
        self.assertEqual(r["retention_days"], 180)
        self.assertEqual(self.db.sql("SELECT min(id) FROM audit_events")[0][0], "31")
        ev = self.db.sql("SELECT id, actor, details FROM audit_events "
                         "WHERE action = 'audit.retention'")
        self.assertEqual(len(ev), 1)
        self.assertEqual(ev[0][0], r["event_id"])
        self.assertEqual(ev[0][1], "user:admin")
        self.assertEqual(json.loads(ev[0][2]), {"removed_through": "30", "count": 30,
                                                "checkpoint_id": r["checkpoint_id"],
                                                "retention_days": 180})
        cp = self.db.sql("SELECT seq, hash, kind FROM audit_checkpoints WHERE id = %s"
                         % int(r["checkpoint_id"]))[0]
        self.assertEqual(cp, ["30", aged["30"]["hash"], "retention"])
        # The chain that remains verifies, from the retention checkpoint.
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)
        self.assertEqual(v["from_seq"], 30)
        for fmt in ("jsonl", "csv"):
            data = self.export(fmt=fmt)[0]
            events, m = self.check_export(data, fmt, key)
            self.assertEqual(events[0]["id"], 31)
            self.assertEqual(m["prev_hash"], aged["30"]["hash"])
            kinds = {(c["seq"], c["kind"]) for c in m["checkpoints"]}
            self.assertIn(("30", "retention"), kinds)
            with self.subTest(cli=fmt):
                rc, out, err = self.run_cli(data, key, "." + fmt)
                self.assertEqual(rc, 0, out + err)
        # A range that starts before the removed events starts after them.
        events, m = self.check_export(self.export("from=1&to=40")[0], "jsonl", key)
        self.assertEqual((events[0]["id"], m["prev_hash"]), (31, aged["30"]["hash"]))
        # Again: nothing left to remove, nothing written.
        n = self.db.sql("SELECT count(*) FROM audit_events")[0][0]
        st, r2, _ = self.admin.post("/api/v1/audit/retention")
        self.assertEqual((st, r2["removed"], r2["checkpoint_id"]), (200, 0, None), r2)
        self.assertEqual(self.db.sql("SELECT count(*) FROM audit_events")[0][0], n)
        st, page, _ = self.admin.get("/api/v1/audit/checkpoints")
        self.assertIn("retention", [c["kind"] for c in page["checkpoints"]])
        # The door retention uses stays shut for rows after its checkpoint.
        ok, err = psql_try(self.db.url, "BEGIN; SET LOCAL trainyard.retention_through = '31'; "
                           "DELETE FROM audit_events WHERE id = 31; COMMIT")
        self.assertFalse(ok)
        self.assertIn("append-only", err)


class KeyRotationTest(AuditCase):
    """Rotation: stop, move the key file away, start (a new key is made).
    Checkpoints and exports of the old key stay verifiable with the key ring
    of GET /api/v1/audit/public-key."""

    @classmethod
    def setUpClass(cls):
        cls.db = harness.Database()
        cls.key_dir = tempfile.mkdtemp(prefix="ty-rotate-")
        cls.key_path = os.path.join(cls.key_dir, "audit-signing.pem")
        cls.start()

    @classmethod
    def start(cls):
        cls.server = Server(cls.db, args=("--audit-checkpoint-interval-s", "1",
                                          "--audit-key-path", cls.key_path))
        cls.admin = Client(cls.server.url)
        st, body = cls.admin.login("admin", harness.ADMIN_PASSWORD)
        assert st == 200, body

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.key_dir, ignore_errors=True)

    def wait_checkpoint_of_head(self):
        head = int(self.db.sql("SELECT seq FROM audit_head")[0][0])
        harness.wait_for(lambda: int(self.db.sql(
            "SELECT coalesce(max(seq), 0) FROM audit_checkpoints")[0][0]) >= head,
            timeout=30, what="a checkpoint of the head")

    def test_rotation(self):
        cls = type(self)
        self.make_events(6, "rot-a")
        self.wait_checkpoint_of_head()
        old = self.public_key()
        self.assertEqual([k["key_id"] for k in old["keys"]], [old["key_id"]])
        self.assertIsNone(old["keys"][0]["retired_at"])
        old_export = self.export()[0]
        # Rotate: stop, move the key away (kept), start: a new key is made.
        cls.server.stop()
        os.rename(cls.key_path, cls.key_path + ".retired")
        cls.start()
        self.assertIn("audit signing key rotated", cls.server.log_text())
        self.make_events(6, "rot-b")
        self.wait_checkpoint_of_head()
        new = self.public_key()
        self.assertNotEqual(new["key_id"], old["key_id"])
        ring = new["keys"]
        self.assertEqual([k["key_id"] for k in ring], [old["key_id"], new["key_id"]])
        self.assertEqual(ring[0]["public_key"], old["public_key"])
        self.assertIsNotNone(ring[0]["retired_at"])
        self.assertIsNone(ring[1]["retired_at"])
        self.assertEqual(ring[1]["public_key"], new["public_key"])
        # The rotation is in the audit trail.
        rows = [r for r in self.audit_rows() if r["action"] == "audit.key_rotated"]
        self.assertEqual(len(rows), 1, rows)
        details = rows[0]["details"]
        if isinstance(details, str):
            details = json.loads(details)
        self.assertEqual(details, {"from": old["key_id"], "to": new["key_id"]})
        # Checkpoints of both keys; the server checks each with its own key.
        kids = {r[0] for r in self.db.sql("SELECT DISTINCT key_id FROM audit_checkpoints")}
        self.assertEqual(kids, {old["key_id"], new["key_id"]})
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)
        n_cps = int(self.db.sql("SELECT count(*) FROM audit_checkpoints")[0][0])
        self.assertEqual(v["checkpoints_checked"], n_cps, v)
        # The ring is append-only but for retiring a key once.
        for q in ("DELETE FROM audit_keys",
                  "UPDATE audit_keys SET retired_at = NULL",
                  "UPDATE audit_keys SET public_key = 'x' WHERE retired_at IS NULL"):
            ok, err = psql_try(self.db.url, q)
            self.assertFalse(ok, q)
            self.assertIn("append-only", err)
        # Offline: the full export verifies with the ring, not with the new key alone.
        data = self.export()[0]
        _, m = parse_export(data, "jsonl")[:2]
        self.assertEqual(m["key_id"], new["key_id"])
        first_old = next(i for i, c in enumerate(m["checkpoints"], 1)
                         if c["key_id"] == old["key_id"])
        rc, out, err = self.run_cli(data, new)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["key_id"], new["key_id"])
        rc, out, err = self.run_cli(data, new["pem"])
        self.assertEqual(rc, 1, out + err)
        verdict = json.loads(out)
        self.assertEqual(verdict["kind"], "signature", verdict)
        self.assertIn("checkpoint %d " % first_old, verdict["message"])
        self.assertIn(old["key_id"], verdict["message"])
        # An export made before the rotation verifies with the ring as well.
        rc, out, err = self.run_cli(old_export, new)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["key_id"], old["key_id"])
        # A ring without the old key names the checkpoint and its key id.
        rc, out, err = self.run_cli(data, dict(new, keys=new["keys"][1:]))
        self.assertEqual(rc, 1, out + err)
        self.assertIn("not in the given key ring", json.loads(out)["message"])
        # A checkpoint by a key id the server does not know is invalid.
        psql(self.db.url, "ALTER TABLE audit_checkpoints DISABLE TRIGGER audit_checkpoints_no_update;"
             "UPDATE audit_checkpoints SET key_id = '0123456789abcdef' WHERE id = "
             "(SELECT min(id) FROM audit_checkpoints);"
             "ALTER TABLE audit_checkpoints ENABLE TRIGGER audit_checkpoints_no_update")
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertFalse(v["valid"], v)
        self.assertIn("not in audit_keys", v["reason"])


if __name__ == "__main__":
    harness.main()
