"""A long log read from its end, paged backwards, and downloaded whole: a real
server and PostgreSQL.

A failed job's traceback is at the end of its log, and a page of the API
holds 5,000 lines: the page must open at the end (tail=1), go back page by
page (before=), and the download (GET /jobs/{id}/logs/download) must hold
every line, not a first page. The lines are written straight into job_logs
(one INSERT of 12,345 rows, as a worker's batches would leave them), two
ranks interleaved, with ids past 2^31 so the cursors are int64 end to end.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402

START = 3000000000
LINES = 12345  # rank 0; rank 1 has one line in three of these


class LogPagesTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.db.sql("SELECT setval(pg_get_serial_sequence('job_logs', 'id'), %d)" % START)
        st, team, _ = cls.admin.post("/api/v1/teams", {"name": "pages", "gpu_quota": 0})
        assert st == 201, team
        st, job, _ = cls.admin.post("/api/v1/jobs", {"name": "long", "team": "pages",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
        assert st == 201, job
        cls.job = job["id"]
        cls.base = "/api/v1/jobs/%s" % cls.job
        # Rank 0 prints "line N" (stderr for the traceback at the end); rank
        # 1 prints "r1 N" between them.
        cls.db.sql(
            "INSERT INTO job_logs (job_id, attempt, rank, stream, seq, ts, text) "
            "SELECT %s, 1, r, CASE WHEN r = 0 AND i > %d THEN 'stderr' ELSE 'stdout' END, i, now(), "
            "CASE WHEN r = 0 THEN 'line ' || i || E'\\n' ELSE 'r1 ' || i || E'\\n' END "
            "FROM generate_series(1, %d) i, (VALUES (0), (1)) v(r) "
            "WHERE r = 0 OR i %% 3 = 0 ORDER BY i, r"
            % (cls.job, LINES - 5, LINES))

    def page(self, q):
        st, body, _ = self.admin.get(self.base + "/logs?" + q)
        self.assertEqual(st, 200, body)
        return body

    def test_tail_then_before_reads_every_line_backwards(self):
        want = ["line %d\n" % i for i in range(1, LINES + 1)]
        first = self.page("rank=0&tail=1&limit=5000")
        self.assertEqual([r["text"] for r in first["logs"]], want[-5000:])
        self.assertEqual(first["logs"][-1]["stream"], "stderr")
        self.assertEqual(first["next_after"], first["logs"][-1]["id"])
        self.assertEqual(first["prev_before"], first["logs"][0]["id"])
        self.assertGreater(int(first["prev_before"]), START)
        got, before, pages = list(first["logs"]), first["prev_before"], 1
        while before is not None:
            p = self.page("rank=0&limit=5000&before=" + before)
            self.assertTrue(p["logs"], p)
            self.assertLess(int(p["logs"][-1]["id"]), int(before))
            got = p["logs"] + got
            before = p["prev_before"]
            pages += 1
        self.assertEqual(pages, 3)
        self.assertEqual([r["text"] for r in got], want)
        ids = [int(r["id"]) for r in got]
        self.assertEqual(ids, sorted(set(ids)))

        # A page that reaches the first line says so (prev_before null),
        # also when it is exactly full.
        p = self.page("rank=0&limit=5000&before=" + got[5000]["id"])
        self.assertEqual((len(p["logs"]), p["prev_before"]), (5000, None))
        self.assertEqual(p["logs"][0]["text"], "line 1\n")
        # Both ranks, from the end (12345 is a multiple of 3: rank 1 is last).
        p = self.page("tail=1&limit=3")
        self.assertEqual([r["text"] for r in p["logs"]],
                         ["line %d\n" % (LINES - 1), "line %d\n" % LINES, "r1 %d\n" % LINES])
        # after= and before= together: the lines between.
        lo, hi = got[99]["id"], got[110]["id"]
        p = self.page("rank=0&limit=5&after=%s&before=%s" % (lo, hi))
        self.assertEqual([r["text"] for r in p["logs"]], want[105:110])
        self.assertEqual(p["prev_before"], p["logs"][0]["id"])
        # Without tail or before the first page is the oldest, as it was.
        p = self.page("rank=0&limit=3")
        self.assertEqual([r["text"] for r in p["logs"]], want[:3])
        self.assertIsNone(p["prev_before"])

    def test_download_is_every_line(self):
        st, body, hdrs = self.admin.get(self.base + "/logs/download?rank=0")
        self.assertEqual(st, 200, body)
        self.assertTrue(hdrs["content-type"].startswith("text/plain"), hdrs)
        self.assertEqual(hdrs["content-disposition"],
                         'attachment; filename="job-%s-rank-0.log"' % self.job)
        self.assertEqual(body, "".join("line %d\n" % i for i in range(1, LINES + 1)))
        # Every rank, in the order the lines were stored.
        st, body, hdrs = self.admin.get(self.base + "/logs/download")
        self.assertEqual(st, 200, body)
        self.assertEqual(hdrs["content-disposition"], 'attachment; filename="job-%s.log"' % self.job)
        lines = body.split("\n")[:-1]
        self.assertEqual(len(lines), LINES + LINES // 3)
        self.assertEqual(lines[:4], ["line 1", "line 2", "line 3", "r1 3"])
        self.assertEqual(lines[-2:], ["line %d" % LINES, "r1 %d" % LINES])
        st, body, _ = self.admin.get(self.base + "/logs/download?stream=stderr")
        self.assertEqual(body, "".join("line %d\n" % i for i in range(LINES - 4, LINES + 1)))

    def test_download_authorised_like_the_log(self):
        _, member = self.make_user("outsider")
        self.assert_error(member.get(self.base + "/logs/download"), 404, "not_found")
        self.assert_error(member.get(self.base + "/logs?tail=1"), 404, "not_found")
        self.assert_error(harness.Client(self.server.url).get(self.base + "/logs/download"), 401)
        self.assert_error(self.admin.get(self.base + "/logs/download?rank=x"), 400,
                          "invalid_argument", "rank")
        self.assert_error(self.admin.get("/api/v1/jobs/999999/logs/download"), 404, "not_found")

    def test_bad_before_and_tail_refused(self):
        for bad in ("0", "-1", "abc", "9223372036854775808", ""):
            resp = self.admin.get(self.base + "/logs?before=" + bad)
            self.assert_error(resp, 400, "invalid_argument", "before")
        for bad in ("2", "-1", "x"):
            self.assert_error(self.admin.get(self.base + "/logs?tail=" + bad), 400,
                              "invalid_argument", "tail")
        self.assert_error(self.admin.get(self.base + "/logs?follow=1&before=5"), 400,
                          "invalid_argument", "before")
        self.assert_error(self.admin.get(self.base + "/logs?follow=1&tail=1"), 400,
                          "invalid_argument", "tail")
        # The largest int64 is a cursor: the page before it is the log's end.
        p = self.page("rank=0&limit=1&before=9223372036854775807")
        self.assertEqual([r["text"] for r in p["logs"]], ["line %d\n" % LINES])


if __name__ == "__main__":
    harness.main()
