"""GET /api/v1/deployments/{name}/stats: a deployment's gateway traffic per
minute from its request records (serve_requests), as the dashboard's
deployment page draws it. Records are written straight into the table (the
gateway's own tests cover how they are made): per minute the requests, the
errors (status >= 400), p50 and p99 latency; every minute of the window
present, idle ones as zeros; records of another deployment or before the
window left out; members see only their teams' deployments; a bad window is
a 400 on the field."""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import ServerTest, main  # noqa: E402


def minute_of(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class ServeStatsTest(ServerTest):
    def deployment(self, name, team_id):
        """A model, a version and a deployment of team_id, straight in SQL."""
        def sql(q):
            return self.db.sql(q)[0][0]
        site = sql("SELECT id FROM sites ORDER BY id LIMIT 1")
        user = sql("SELECT id FROM users WHERE username = 'admin'")
        model = sql("INSERT INTO models (name, team_id, site_id, created_by) VALUES "
                    "('%s-m', %s, %s, 'admin') RETURNING id" % (name, team_id, site))
        version = sql("INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
                      "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
                      "created_by) VALUES (%s, 1, %s, 'output', '/x', 'echo', 'serve_echo.py', "
                      "'[]', repeat('a', 64), true, 'admin') RETURNING id" % (model, site))
        return sql("INSERT INTO deployments (name, model_id, version_id, team_id, user_id, site_id, "
                   "gpus_per_replica, min_replicas, max_replicas, replicas, priority) VALUES "
                   "('%s', %s, %s, %s, %s, %s, 1, 0, 1, 1, 1) RETURNING id"
                   % (name, model, version, team_id, user, site))

    def record(self, dep_id, minutes_ago, status, latency_us, n=[0]):
        n[0] += 1
        self.db.sql(
            "INSERT INTO serve_requests (request_id, ts, ts_text, deployment_id, route, status, "
            "latency_us, record_sha256) VALUES ('r-%d', date_trunc('minute', now()) - "
            "interval '%d minutes' + interval '10 seconds', 'x', %s, '/v1/chat/completions', %d, "
            "%d, repeat('b', 64))" % (n[0], minutes_ago, dep_id, status, latency_us))

    def stats(self, client, name, query=""):
        st, body, _ = client.get("/api/v1/deployments/%s/stats%s" % (name, query))
        self.assertEqual(st, 200, body)
        return body

    def test_stats(self):
        alpha = self.make_team("st-alpha")
        beta = self.make_team("st-beta")
        _, member = self.make_user("st-mem", teams=[alpha])
        _, other = self.make_user("st-oth", teams=[beta])
        dep = self.deployment("st-dep", alpha["id"])
        elsewhere = self.deployment("st-else", alpha["id"])
        for status, lat in ((200, 100), (200, 200), (500, 300), (429, 400000)):
            self.record(dep, 3, status, lat)
        self.record(dep, 1, 200, 50)
        self.record(dep, 120, 200, 7)  # before the window
        self.record(elsewhere, 3, 200, 9)  # another deployment's
        three = minute_of(self.db.sql(
            "SELECT to_char((date_trunc('minute', now()) - interval '3 minutes') AT TIME ZONE "
            "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")[0][0])

        body = self.stats(member, "st-dep")
        self.assertEqual((body["deployment"], body["minutes"]), ("st-dep", 60))
        series = body["series"]
        # 60 minutes, oldest first, one minute apart (a minute may turn between
        # the insert and the read: the records stay inside the window).
        self.assertEqual(len(series), 60)
        times = [minute_of(s["minute"]) for s in series]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(b - a == datetime.timedelta(minutes=1) for a, b in zip(times, times[1:])))
        by = {minute_of(s["minute"]): s for s in series}
        m3 = by[three]
        self.assertEqual((m3["requests"], m3["errors"]), (4, 2))
        self.assertEqual((m3["p50_latency_us"], m3["p99_latency_us"]), (200, 400000))
        m1 = by[three + datetime.timedelta(minutes=2)]
        self.assertEqual((m1["requests"], m1["errors"], m1["p50_latency_us"]), (1, 0, 50))
        self.assertEqual(sum(s["requests"] for s in series), 5, "only this deployment, in the window")
        idle = by[three - datetime.timedelta(minutes=1)]
        self.assertEqual((idle["requests"], idle["errors"], idle["p50_latency_us"],
                          idle["p99_latency_us"]), (0, 0, None, None))

        # A shorter window: the current minute and the two before.
        short = self.stats(self.admin, "st-dep", "?minutes=3")["series"]
        self.assertEqual(len(short), 3)
        self.assertEqual(sum(s["requests"] for s in short), 1)
        self.assertEqual(sum(s["requests"] for s in self.stats(self.admin, "st-dep",
                                                                "?minutes=1440")["series"]), 6)

        # Another team's member, an unknown and a malformed name: no such deployment.
        for client, name in ((other, "st-dep"), (member, "ghost"), (member, "Bad%20Name")):
            self.assert_error(client.get("/api/v1/deployments/%s/stats" % name), 404, "not_found")
        for bad in ("0", "1441", "x", "-5", ""):
            self.assert_error(member.get("/api/v1/deployments/st-dep/stats?minutes=" + bad), 400,
                              "invalid_argument", "minutes")


if __name__ == "__main__":
    main()
