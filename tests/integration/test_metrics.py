"""GET /metrics: who may scrape it (the metrics token, a listener of its
own, off by default), that Debian's promtool accepts what it writes, that
each metric follows what happened (requests by route pattern, queue length
by team, GPUs, jobs by state, audit appends, heartbeats, restarts, webhook
failures, pool waits), and that every metric name the Grafana dashboard in
docs/ uses is one the server exposes."""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, Server, ServerTest, wait_for  # noqa: E402

# Job working dirs live under the server's storage root, which the worker allows.
STORAGE = tempfile.mkdtemp(prefix="ty-metrics-storage-")
os.chmod(STORAGE, 0o755)
atexit.register(shutil.rmtree, STORAGE, True)
TOKEN = "metrics-token-for-tests-0123456789"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def parse(text):
    """{(name, frozenset of (label, value))): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels):
    want = frozenset(labels.items())
    hits = [v for (n, ls), v in samples.items() if n == name and want <= ls]
    return sum(hits) if hits else None


def promtool_check(text):
    """promtool check metrics over text: (exit status, what it said). A
    missing promtool fails the test: scripts/deps.sh test installs it."""
    exe = shutil.which("promtool")
    if exe is None:
        raise AssertionError("promtool not found: scripts/deps.sh test installs Debian's prometheus")
    p = subprocess.run([exe, "check", "metrics"], input=text, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout + p.stderr


class MetricsTokenTest(ServerTest):
    # The test's node sends heartbeats only when told: never declare it lost.
    server_args = ("--metrics-token", TOKEN, "--metrics-cache-ms", "0", "--node-timeout-s",
                   "3600", "--sched-interval-ms", "200", "--storage-root", STORAGE)

    def scrape(self):
        st, body, hdrs = Client(self.server.url, token=TOKEN).get("/metrics")
        self.assertEqual(st, 200, body)
        self.assertTrue(hdrs["content-type"].startswith("text/plain; version=0.0.4"), hdrs)
        return body

    def test_access(self):
        anon = Client(self.server.url)
        self.assert_error(anon.get("/metrics"), 401, "unauthenticated")
        self.assert_error(Client(self.server.url, token="wrong").get("/metrics"), 401)
        self.assert_error(Client(self.server.url, token=TOKEN + "x").get("/metrics"), 401)
        # A signed-in admin, by cookie or by API token, is not the metrics token.
        self.assert_error(self.admin.get("/metrics"), 401)
        self.assert_error(self.token_client(self.admin, "scraper").get("/metrics"), 401)
        self.assertEqual(self.admin.post("/metrics", {})[0], 405)
        self.scrape()

    def test_promtool_accepts_the_exposition(self):
        # Traffic on several routes first, so that every family has samples.
        self.admin.get("/api/v1/jobs")
        self.admin.get("/api/v1/jobs/999999")
        self.admin.get("/no/such/file.js")
        text = self.scrape()
        rc, said = promtool_check(text)
        self.assertEqual(rc, 0, said + "\n" + text[:2000])
        # And promtool is a real check: it refuses a broken exposition.
        rc, _ = promtool_check(text + "trainyard_gpus_used{ 1\n")
        self.assertNotEqual(rc, 0)

    def test_requests_by_route_pattern(self):
        self.make_team("rt")
        st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec("rt", resources={"gpus": 1}))
        self.assertEqual(st, 201, job)
        # Only its GETs are counted here: cancelled, it takes no node's GPUs.
        st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % job["id"])
        self.assertIn(st, (200, 202), body)
        before = parse(self.scrape())
        base = value(before, "trainyard_http_requests_total", route="/api/v1/jobs/{id}",
                     method="GET", status="200") or 0
        for _ in range(3):
            self.assertEqual(self.admin.get("/api/v1/jobs/" + job["id"])[0], 200)
        self.assertEqual(self.admin.get("/api/v1/jobs/999999")[0], 404)
        after = parse(self.scrape())
        self.assertEqual(value(after, "trainyard_http_requests_total", route="/api/v1/jobs/{id}",
                               method="GET", status="200"), base + 3)
        self.assertGreaterEqual(value(after, "trainyard_http_requests_total",
                                      route="/api/v1/jobs/{id}", status="404"), 1)
        self.assertGreaterEqual(value(after, "trainyard_http_request_duration_seconds_count",
                                      route="/api/v1/jobs/{id}", method="GET"), base + 4)
        # Labels carry the pattern, never a raw path with an id in it.
        routes = {dict(ls).get("route") for (n, ls) in after if n.startswith("trainyard_http_")}
        self.assertNotIn("/api/v1/jobs/" + job["id"], routes)
        self.assertTrue(all(r in ("unmatched", "static") or r.startswith("/") for r in routes),
                        routes)

    def test_cluster_state(self):
        self.make_team("mq", quota=64)
        st, jt, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        st, joined, _ = Client(self.server.url).post("/api/v1/agent/join",
                                                     {"join_token": jt["token"], "name": "m-node"})
        self.assertEqual(st, 201, joined)
        node = Client(self.server.url, token=joined["credential"])
        gpus = [{"index": i, "uuid": "GPU-m-%d" % i, "model": "Fake", "memory_mb": 16384}
                for i in range(2)]
        st, reg, _ = node.post("/api/v1/agent/register", {"gpus": gpus})
        self.assertEqual(st, 200, reg)

        def beat(util):
            st, b, _ = node.post("/api/v1/agent/heartbeat",
                                 {"gpus": [{"index": i, "util_pct": util, "mem_used_mb": 0}
                                           for i in range(2)]})
            self.assertEqual(st, 200, b)
        beat(0)
        m = parse(self.scrape())
        self.assertEqual(value(m, "trainyard_gpus_registered"), 2)
        self.assertEqual(value(m, "trainyard_nodes", state="ready"), 1)
        age = value(m, "trainyard_node_heartbeat_age_seconds", node="m-node")
        self.assertIsNotNone(age, m)
        self.assertLess(age, 600)

        # A job that fits is placed on the node's GPUs: used and, while the
        # node reports them at 0 %, idle while allocated.
        st, j, _ = self.admin.post("/api/v1/jobs", self.job_spec("mq", resources={"gpus": 1}))
        self.assertEqual(st, 201, j)
        wait_for(lambda: value(parse(self.scrape()), "trainyard_gpus_used") == 1, timeout=60,
                 what="the job's GPU to be allocated")
        # Two jobs of both the node's GPUs then wait in the queue of their
        # team. (A job larger than the site is refused at submit instead.)
        for _ in range(2):
            st, j, _ = self.admin.post("/api/v1/jobs", self.job_spec("mq", resources={"gpus": 2}))
            self.assertEqual(st, 201, j)
        m = parse(self.scrape())
        self.assertEqual(value(m, "trainyard_queue_length", team="mq"), 2)
        self.assertGreaterEqual(value(m, "trainyard_jobs", state="QUEUED"), 2)
        self.assertEqual(value(m, "trainyard_gpus_idle_allocated"), 1)
        beat(90)
        self.assertEqual(value(parse(self.scrape()), "trainyard_gpus_idle_allocated"), 0)
        # A node that is down takes its GPUs with it.
        self.db.sql("UPDATE nodes SET state = 'down' WHERE name = 'm-node'")
        m = parse(self.scrape())
        self.assertEqual(value(m, "trainyard_gpus_down"), 2)
        self.assertEqual(value(m, "trainyard_nodes", state="down"), 1)

    def test_audit_appends_counted(self):
        seq = lambda: int(self.db.sql("SELECT seq FROM audit_head")[0][0])  # noqa: E731
        m = parse(self.scrape())
        self.assertEqual(value(m, "trainyard_audit_events_total"), seq())
        self.make_team("audited")
        m2 = parse(self.scrape())
        self.assertEqual(value(m2, "trainyard_audit_events_total"), seq())
        self.assertGreater(value(m2, "trainyard_audit_events_total"),
                           value(m, "trainyard_audit_events_total"))

    def test_restarts_and_webhook_failures(self):
        st, jt, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, jt)
        self.make_team("rs", quota=8)
        # Nothing listens on port 9: every delivery attempt fails.
        st, hook, _ = self.admin.post("/api/v1/webhooks", {"team": "rs",
                                                           "url": "http://127.0.0.1:9/h"})
        self.assertEqual(st, 201, hook)
        before = parse(self.scrape())
        worker = harness.Worker(self.server.url, jt["token"], "rs-node", gpus=1,
                                allowed_root=STORAGE)
        try:
            fail_py = os.path.abspath(os.path.join(harness.SRC, "examples", "fail.py"))
            st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec(
                "rs", command=[sys.executable, fail_py, "--code", "3"], max_restarts=1))
            self.assertEqual(st, 201, job)

            def failed():
                j = self.admin.get("/api/v1/jobs/" + job["id"])[1]
                return j if j["state"] in ("FAILED", "SUCCEEDED", "CANCELLED") else None
            done = wait_for(failed, timeout=120, what="the job to fail after its restart")
            self.assertEqual((done["state"], done["restarts"]), ("FAILED", 1), done["reason"])
            wait_for(lambda: (value(parse(self.scrape()),
                                    "trainyard_webhook_delivery_failures_total") or 0)
                     > (value(before, "trainyard_webhook_delivery_failures_total") or 0),
                     timeout=60, what="a failed webhook delivery to be counted")
            after = parse(self.scrape())
            self.assertGreaterEqual(value(after, "trainyard_job_restarts_total")
                                    - value(before, "trainyard_job_restarts_total"), 1)
        finally:
            worker.stop()

    def test_grafana_dashboard_uses_exposed_names(self):
        with open(os.path.join(harness.SRC, "docs", "grafana-trainyard.json")) as f:
            dash = json.load(f)
        exprs = []

        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if k in ("expr", "query") and isinstance(v, str):
                        exprs.append(v)
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(dash)
        self.assertGreater(len(exprs), 10, "the dashboard has almost no queries")
        # Traffic so that the histograms are written, then what is exposed.
        self.admin.get("/api/v1/jobs")
        exposed = set()
        for line in self.scrape().splitlines():
            if line.startswith("# TYPE "):
                name, kind = line.split()[2:4]
                exposed.add(name)
                if kind == "histogram":
                    exposed.update(name + s for s in ("_bucket", "_sum", "_count"))
        used = set()
        for e in exprs:
            used.update(re.findall(r"\b((?:trainyard|process)_[a-z0-9_]+)", e))
        self.assertTrue(used, exprs)
        self.assertFalse(used - exposed, "used by the dashboard, not exposed: %s"
                         % sorted(used - exposed))
        # And the metrics the issue asks for are all on the dashboard.
        for want in ("trainyard_http_requests_total", "trainyard_http_request_duration_seconds",
                     "trainyard_queue_length", "trainyard_gpus_registered", "trainyard_gpus_used",
                     "trainyard_gpus_idle_allocated", "trainyard_gpus_down",
                     "trainyard_scheduler_pass_duration_seconds", "trainyard_jobs",
                     "trainyard_job_restarts_total", "trainyard_audit_events_total",
                     "trainyard_node_heartbeat_age_seconds",
                     "trainyard_webhook_delivery_failures_total",
                     "trainyard_db_pool_waits_total"):
            self.assertTrue(any(u == want or u.startswith(want + "_") for u in used), want)


class MetricsListenerTest(ServerTest):
    """metrics_listen: /metrics only on its own port, no token needed there;
    the API's listener does not know it. A pool of three connections makes
    concurrent requests wait for it, which the pool counters show."""
    metrics_port = harness.free_port()
    # The scheduler and the audit keeper each keep one pooled connection
    # (their leader locks): three leave one for requests.
    server_args = ("--metrics-listen", "127.0.0.1:%d" % metrics_port, "--db-pool-size", "3",
                   "--metrics-cache-ms", "60000")

    def test_own_listener(self):
        anon = Client(self.server.url)
        self.assert_error(anon.get("/metrics"), 404, "not_found")
        mc = Client("http://127.0.0.1:%d" % self.metrics_port)
        st, text, hdrs = mc.get("/metrics")
        self.assertEqual(st, 200, text)
        self.assertEqual(promtool_check(text)[0], 0, text[:2000])
        self.assertEqual(mc.get("/api/v1/jobs")[0], 404)
        self.assertEqual(mc.post("/metrics", {})[0], 405)

    def test_pool_waits(self):
        mc = Client("http://127.0.0.1:%d" % self.metrics_port)

        def waits():
            return value(parse(mc.get("/metrics")[1]), "trainyard_db_pool_waits_total")

        def burst():
            ts = [threading.Thread(target=lambda: self.admin.get("/api/v1/jobs"))
                  for _ in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return waits() > 0
        # Bounded: each burst sends 16 requests at one free connection.
        wait_for(burst, timeout=60, interval=0, what="a request to wait for the pool")
        self.assertGreater(value(parse(mc.get("/metrics")[1]),
                                 "trainyard_db_pool_wait_seconds_total"), 0)


class MetricsOffTest(ServerTest):
    """Neither a token nor a listener: /metrics does not exist."""

    def test_off(self):
        self.assert_error(Client(self.server.url).get("/metrics"), 404, "not_found")
        self.assert_error(self.admin.get("/metrics"), 404, "not_found")


if __name__ == "__main__":
    harness.main()
