"""GET /api/v1/audit/events against a reference computed from the table
(the dashboard's audit page): 3,000 events written by SQL with known times,
actors, actions and targets; every filter (actor, target, exact action, an
action prefix, since/until, combined) paged to the end by keyset cursor
gives exactly the rows, newest first, that Python finds in the table. The
time bounds go through the id pruning of audit_list (db_audit.h), the
prefix through the action range of sql/012."""
import datetime
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from harness import ServerTest  # noqa: E402

ACTIONS = ["job.submit", "job.state", "job.restart_refunded", "jobx.odd", "node.drain",
           "node.state", "user.login", "policy.violation"]
# After the server's own events: ids and times rise together, as the server
# writes them (db_audit.h: a time filter relies on it).
BASE = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + \
    datetime.timedelta(days=1)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class AuditListTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.db.sql("""INSERT INTO audit_events (id, ts, ts_text, actor, source, action, target,
            outcome, details, prev_hash, hash)
            SELECT m.top + i, t, to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                   'user:u' || (i % 7), '', (ARRAY['ACTIONS'])[1 + i % 8], 'job:' || (i % 50),
                   'success', '{}', '', ''
            FROM (SELECT max(id) AS top FROM audit_events) m, generate_series(1, 3000) i,
                 LATERAL (SELECT timestamptz 'BASE' + i * interval '1 minute'
                          AS t) x""".replace("ACTIONS", "','".join(ACTIONS)).replace("BASE", BASE.isoformat()))
        rows = cls.db.sql("SELECT id, ts, actor, action, target FROM audit_events")
        cls.rows = [{"id": int(r[0]), "ts": r[1], "actor": r[2], "action": r[3], "target": r[4]}
                    for r in rows]

    def ts(self, r):
        v = r["ts"]
        if isinstance(v, str):
            v = datetime.datetime.fromisoformat(v.replace(" ", "T").replace("+00", "+00:00"))
        return v

    def reference(self, actor=None, target=None, action=None, since=None, until=None):
        out = []
        for r in self.rows:
            if actor and r["actor"] != actor:
                continue
            if target and r["target"] != target:
                continue
            if action and not (r["action"] == action or
                               (action.endswith(".") and r["action"].startswith(action))):
                continue
            if since and self.ts(r) < since:
                continue
            if until and self.ts(r) >= until:
                continue
            out.append(r["id"])
        return sorted(out, reverse=True)

    def listed(self, limit=97, **f):
        q = {k: (iso(v) if isinstance(v, datetime.datetime) else v) for k, v in f.items() if v}
        got, cursor = [], None
        for _ in range(200):
            qq = dict(q, limit=limit)
            if cursor:
                qq["cursor"] = cursor
            st, body, _ = self.admin.get("/api/v1/audit/events?" + urllib.parse.urlencode(qq))
            self.assertEqual(st, 200, body)
            got += [int(e["id"]) for e in body["events"]]
            cursor = body["next_cursor"]
            if not cursor:
                return got
        self.fail("paging did not end")

    def test_filters_match_the_table(self):
        h = datetime.timedelta(hours=1)
        cases = [
            {},
            {"actor": "user:u3"},
            {"target": "job:7"},
            {"action": "job.state"},
            {"action": "job."},       # not jobx.odd
            {"action": "node."},
            {"action": "nothing."},
            {"since": BASE + 10 * h},
            {"until": BASE + 5 * h},
            {"since": BASE + 3 * h, "until": BASE + 3 * h + datetime.timedelta(minutes=7)},
            {"actor": "user:u2", "since": BASE + 2 * h, "until": BASE + 40 * h},
            {"action": "job.", "target": "job:9", "until": BASE + 30 * h},
        ]
        for f in cases:
            with self.subTest(**{k: str(v) for k, v in f.items()}):
                want = self.reference(**f)
                got = self.listed(**f)
                self.assertEqual(got, want)
        self.assertEqual(len(self.listed(action="job.", limit=500)),
                         len([r for r in self.rows if r["action"].startswith("job.")]))


if __name__ == "__main__":
    import harness
    harness.main()
