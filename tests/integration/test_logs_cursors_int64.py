"""Log, metric and job-event cursors past 2^31: a real server, PostgreSQL
and worker.

The ids are bigserial, and a cluster that runs for months spends them
(640 ranks printing 10 lines a second pass 2^31 in about 39 days; replays
spend sequence values too). Here the sequences start at 3,000,000,000, and
a job's lines, metrics and events are read through every cursor a client
keeps:

- GET /jobs/{id}/logs?after= pages (and `trainyard logs`, which pages
  with after= past 5,000 lines)
- the followed stream (follow=1) with after= (the page's reconnect),
  with Last-Event-ID (EventSource's and the CLI's reconnect), and with
  events_after=
- GET /jobs/{id}/metrics?after= (the page's 3 s poll)
- `trainyard logs -f` from the start, every line once
- an id cursor of a list (GET /jobs?cursor=) of 19 digits

A cursor that is not one (negative, not a number, past int64) is refused
with a JSON 400 naming it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest, Worker, wait_for  # noqa: E402

START = 3000000000
LINES = 5200  # past the CLI's page of 5,000, so `trainyard logs` pages with after=
METRICS = 30


class LogCursorsInt64Test(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-cursors-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage)
        super().setUpClass()
        for table in ("job_logs", "metrics", "job_events"):
            cls.db.sql("SELECT setval(pg_get_serial_sequence('%s', 'id'), %d)" % (table, START))
        st, team, _ = cls.admin.post("/api/v1/teams", {"name": "cursors", "gpu_quota": 2})
        assert st == 201, team
        st, tok, _ = cls.admin.post("/api/v1/tokens", {"name": "cursors"})
        assert st == 201, tok
        cls.token = tok["token"]
        st, join, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, join
        cls.worker = Worker(cls.server.url, join["token"], "cursor-node", gpus=1,
                            allowed_root=cls.storage)
        wait_for(lambda: any(n["state"] == "ready" for n in
                             cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 timeout=60, what="the worker to be ready")
        # A job that prints, then waits for a gate, so that it is followed live.
        cls.tmp = tempfile.mkdtemp(prefix="ty-cursors-gate-")
        cls.gate = os.path.join(cls.tmp, "go")
        script = ("i=0; while [ $i -lt %d ]; do i=$((i+1)); "
                  "echo 'TRAINYARD_METRIC {\"step\":'$i',\"loss\":0.5}'; done; "
                  "seq 1 %d | sed 's/^/line /'; "
                  "while [ ! -e %s ]; do sleep 0.1; done; echo last" % (METRICS, LINES, cls.gate))
        spec = {"name": "cursors", "team": "cursors", "resources": {"gpus": 1},
                "command": ["/bin/sh", "-c", script]}
        st, job, _ = cls.admin.post("/api/v1/jobs", spec)
        assert st == 201, job
        cls.job = job["id"]
        cls.base = "/api/v1/jobs/%s" % cls.job

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def cli_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
        env.update(LANG="C.UTF-8", HOME=self.tmp, TRAINYARD_URL=self.server.url,
                   TRAINYARD_TOKEN=self.token)
        return env

    def all_logs(self):
        rows, after = [], None
        while True:
            st, page, _ = self.admin.get(self.base + "/logs?limit=5000" +
                                         ("&after=" + after if after else ""))
            self.assertEqual(st, 200, page)
            rows += page["logs"]
            if len(page["logs"]) < 5000:
                return rows
            after = page["next_after"]
            self.assertIsInstance(after, str)

    def sse(self, path, headers=None):
        """The events of a followed stream, read until it ends: [(event, id, data)]."""
        st, body, hdrs = self.admin.get(path, headers=headers)
        self.assertEqual(st, 200, body)
        self.assertTrue(hdrs["content-type"].startswith("text/event-stream"), hdrs)
        out = []
        for block in body.split("\n\n"):
            lines = block.split("\n")
            ev = [ln[7:] for ln in lines if ln.startswith("event: ")]
            ids = [ln[4:] for ln in lines if ln.startswith("id: ")]
            data = [ln[6:] for ln in lines if ln.startswith("data: ")]
            if ev:
                out.append((ev[0], ids[0] if ids else None, json.loads(data[0])))
        return out

    def test_every_cursor_past_2_31(self):
        # logs -f from the start, while the job waits at its gate.
        p = subprocess.Popen([CLI_BIN, "logs", "-f", self.job], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.cli_env())
        try:
            wait_for(lambda: len(self.all_logs()) >= METRICS + LINES, timeout=120,
                     what="the job's lines")
            # The page's metrics poll, past 2^31, every row once.
            st, m, _ = self.admin.get(self.base + "/metrics?limit=10")
            self.assertEqual(st, 200, m)
            self.assertEqual(len(m["metrics"]), 10)
            self.assertGreater(int(m["metrics"][0]["id"]), START)
            metrics, after = list(m["metrics"]), m["metrics"][-1]["id"]
            while True:
                st, m, _ = self.admin.get(self.base + "/metrics?limit=10&after=" + after)
                self.assertEqual(st, 200, m)
                if not m["metrics"]:
                    break
                metrics += m["metrics"]
                after = m["metrics"][-1]["id"]
            self.assertEqual([x["step"] for x in metrics], list(range(1, METRICS + 1)))
            open(self.gate, "w").close()
            out, err = p.communicate(timeout=180)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        wait_for(lambda: self.admin.get(self.base)[1]["state"] in ("SUCCEEDED", "FAILED"),
                 timeout=60, what="the job to end")
        rows = self.all_logs()
        texts = [r["text"] for r in rows]
        self.assertEqual(len(rows), METRICS + LINES + 1)
        self.assertEqual(texts[METRICS:METRICS + 2], ["line 1\n", "line 2\n"])
        self.assertEqual(texts[-1], "last\n")
        self.assertGreater(int(rows[0]["id"]), START)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, "".join("[0] " + t for t in texts))

        # `trainyard logs` pages past its 5,000 lines with after=.
        cli = subprocess.run([CLI_BIN, "logs", self.job], capture_output=True, text=True,
                             env=self.cli_env(), timeout=120)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(cli.stdout, "".join("[0] " + t for t in texts))

        # The followed stream from a cursor: after=, Last-Event-ID, both.
        mid = rows[METRICS + 100]["id"]
        want = [r["id"] for r in rows[METRICS + 101:]]
        for path, headers in ((self.base + "/logs?follow=1&after=" + mid, None),
                              (self.base + "/logs?follow=1", {"Last-Event-ID": mid}),
                              (self.base + "/logs?follow=1&after=1", {"Last-Event-ID": mid})):
            got = self.sse(path, headers)
            logs = [(i, d["id"]) for e, i, d in got if e == "log"]
            self.assertEqual([d for _, d in logs], want, path)
            self.assertEqual([i for i, _ in logs], want, "SSE id: lines")
            self.assertEqual(got[-1][0], "end")

        # Job events after one past 2^31.
        st, evs, _ = self.admin.get(self.base + "/events")
        self.assertEqual(st, 200, evs)
        evs = evs["events"]
        self.assertGreater(int(evs[0]["id"]), START)
        got = self.sse(self.base + "/logs?follow=1&events_after=" + evs[0]["id"] +
                       "&after=" + rows[-1]["id"])
        self.assertEqual([d["id"] for e, _, d in got if e == "job_event"],
                         [e["id"] for e in evs[1:]])
        self.assertEqual([e for e, _, _ in got if e == "log"], [])

        # The last int64 is a cursor; nothing is after it.
        st, page, _ = self.admin.get(self.base + "/logs?after=9223372036854775807")
        self.assertEqual((st, page["logs"], page["next_after"]), (200, [], None), page)
        st, m, _ = self.admin.get(self.base + "/metrics?after=9223372036854775807")
        self.assertEqual((st, m["metrics"]), (200, []), m)

    def test_bad_cursors_refused(self):
        for bad in ("-1", "abc", "1x", " 1", "+1", "", "9223372036854775808",
                    "99999999999999999999"):
            for path, field in (("/logs?after=", "after"), ("/metrics?after=", "after"),
                                ("/logs?follow=1&after=", "after"),
                                ("/logs?follow=1&events_after=", "events_after")):
                resp = self.admin.get(self.base + path + bad.replace(" ", "%20")
                                      .replace("+", "%2B"))
                self.assert_error(resp, 400, "invalid_argument", field)
                self.assertIn("from 0 to 9223372036854775807", resp[1]["error"]["message"])
            if bad.strip() == bad and bad:  # a header's value loses its spaces
                resp = self.admin.get(self.base + "/logs?follow=1",
                                      headers={"Last-Event-ID": bad})
                self.assert_error(resp, 400, "invalid_argument", "Last-Event-ID")

    def test_id_cursors_take_19_digits(self):
        # Every positive int64, such as the largest, is an id cursor.
        st, body, _ = self.admin.get("/api/v1/jobs?cursor=9223372036854775807")
        self.assertEqual(st, 200, body)
        self.assertIn(self.job, [j["id"] for j in body["jobs"]])
        for bad in ("9223372036854775808", "0", "-1", "12345678901234567890"):
            self.assert_error(self.admin.get("/api/v1/jobs?cursor=" + bad), 400,
                              "invalid_argument", "cursor")


if __name__ == "__main__":
    harness.main()
