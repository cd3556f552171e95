"""GET /api/v1/queue in pages (docs/queue.md), on real PostgreSQL, with a
queue of 130 jobs (three pages of 50) and no node, so that nothing leaves
it:

- pages of one forecast, read by next_cursor, are the whole queue in
  scheduling order (the order of one answer of every job): positions 0 to
  129, each job once, none missing, total 130 on each page, next_cursor
  null on the last one only, the running jobs on the first only;
- the filters (team, user, mine=1) page the same way, keep the positions
  of the whole queue, and a member sees their teams' jobs only;
- bad input (limit, cursor, mine, a filter too long) is a 400 naming the
  parameter, and the next good request answers as before;
- after the forecast is refreshed, a cursor of the old one is a 409
  forecast_changed naming the new forecast, and the first page works;
- trainyard queue pages the same (--limit, --cursor, --all, --team);
- (QueueLeaveTest) a job cancelled between two pages drops out of its page
  and of a first page read anew: the stored positions are served, with a
  gap where it was, total stays the forecast's count, and the pages are
  still every other job once, in order.

The forecast is held still: the server stores one at its first pass and
then not for forecast_interval_ms (10 minutes); a restart of the server
makes the next one."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402

N = 130
PRIO_RANK = {"high": 0, "normal": 1, "low": 2}


class QueuePageTest(ServerTest):
    server_args = ("--sched-interval-ms", "200", "--forecast-interval-ms", "600000")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for name in ("pa", "pb"):
            st, body, _ = cls.admin.post("/api/v1/teams", {"name": name, "gpu_quota": 0})
            assert st == 201, body
            setattr(cls, "team_" + name, body)
        # A member of pb, who submits some of pb's jobs.
        st, body, _ = cls.admin.post("/api/v1/users", {"username": "pm", "role": "member",
                                                       "password": "pm-password-1234"})
        assert st == 201, body
        st, b2, _ = cls.admin.request("PUT", "/api/v1/teams/%s/members/%s"
                                      % (cls.team_pb["id"], body["id"]))
        assert st == 201, b2
        cls.member = harness.Client(cls.server.url)
        st, b3 = cls.member.login("pm", "pm-password-1234")
        assert st == 200, b3
        # Priorities and teams mixed, so that scheduling order is not id order.
        cls.ids, cls.by_member = [], set()
        for i in range(N):
            team = "pa" if i % 2 == 0 else "pb"
            client = cls.member if team == "pb" and i % 3 == 0 else cls.admin
            st, job, _ = client.post("/api/v1/jobs", {
                "name": "q%d" % i, "team": team, "command": ["/bin/true"],
                "resources": {"gpus": 1}, "priority": ("low", "normal", "high")[i % 3],
                "time_limit_s": 60 + i})
            assert st == 201, job
            cls.ids.append(job["id"])
            if client is cls.member:
                cls.by_member.add(job["id"])
        cls.refresh_forecast()

    @classmethod
    def refresh_forecast(cls, old=None):
        """Restart the server: its first pass stores a forecast of every
        job (a new one, made after old's), then none for ten minutes."""
        cls.server.terminate("server")
        cls.server.restart()

        def stored():
            st, q, _ = cls.admin.get("/api/v1/queue?limit=1")
            return q if st == 200 and q["total"] == N and q["generated_at"] != old else None
        return wait_for(stored, timeout=60, what="a forecast of all %d jobs" % N)

    def pages(self, client, query, limit):
        """Every page of query by next_cursor; asserts they are of one forecast."""
        out, cursor = [], None
        while True:
            path = "/api/v1/queue?limit=%d%s%s" % (limit, query,
                                                   "&cursor=" + cursor if cursor else "")
            st, page, _ = client.get(path)
            self.assertEqual(st, 200, page)
            out.append(page)
            cursor = page["next_cursor"]
            if cursor is None:
                break
            self.assertEqual(len(page["jobs"]), limit, page)
            self.assertLess(len(out), 50, "next_cursor never ends")
        self.assertEqual(len({p["generated_at"] for p in out}), 1)
        return out

    def test_pages_are_the_queue_in_order(self):
        st, whole, _ = self.admin.get("/api/v1/queue?limit=500")
        self.assertEqual(st, 200, whole)
        self.assertIsNone(whole["next_cursor"])
        self.assertEqual(whole["total"], N)
        order = [j["id"] for j in whole["jobs"]]
        self.assertEqual(sorted(order), sorted(self.ids))
        self.assertEqual([j["position"] for j in whole["jobs"]], list(range(N)))
        self.assertNotEqual(order, self.ids)  # priorities reorder it
        ranks = [PRIO_RANK[j["priority"]] for j in whole["jobs"]]
        self.assertEqual(ranks, sorted(ranks), "higher priorities first")

        pages = self.pages(self.admin, "", 50)
        self.assertEqual([len(p["jobs"]) for p in pages], [50, 50, 30])
        got = [j["id"] for p in pages for j in p["jobs"]]
        self.assertEqual(got, order)  # same order, no duplicate, none missing
        self.assertEqual([j["position"] for p in pages for j in p["jobs"]], list(range(N)))
        self.assertEqual({p["total"] for p in pages}, {N})
        self.assertEqual(pages[0]["generated_at"], whole["generated_at"])
        self.assertIn("running", pages[0])
        self.assertTrue(all("running" not in p for p in pages[1:]))
        # The default page is 50; a page that ends the queue exactly has no next.
        st, first, _ = self.admin.get("/api/v1/queue")
        self.assertEqual([j["id"] for j in first["jobs"]], order[:50])
        self.assertEqual(first["next_cursor"], pages[0]["next_cursor"])
        self.assertIsNone(self.admin.get("/api/v1/queue?limit=%d" % N)[1]["next_cursor"])
        p = self.pages(self.admin, "", N - 1)
        self.assertEqual([len(x["jobs"]) for x in p], [N - 1, 1])

    def test_filters(self):
        st, whole, _ = self.admin.get("/api/v1/queue?limit=500")
        pos = {j["id"]: j["position"] for j in whole["jobs"]}
        for query, want in (("&team=pa", {j["id"] for j in whole["jobs"] if j["team"] == "pa"}),
                            ("&user=pm", self.by_member),
                            ("&team=pb&user=admin",
                             {j["id"] for j in whole["jobs"]
                              if j["team"] == "pb" and j["user"] == "admin"})):
            pages = self.pages(self.admin, query, 20)
            got = [j for p in pages for j in p["jobs"]]
            self.assertEqual([j["id"] for j in got], [i for i in pos if i in want], query)
            self.assertEqual({p["total"] for p in pages}, {len(want)}, query)
            # Positions are those of the whole queue.
            self.assertEqual([j["position"] for j in got], [pos[j["id"]] for j in got])
        st, none, _ = self.admin.get("/api/v1/queue?team=nosuchteam")
        self.assertEqual((st, none["jobs"], none["total"], none["next_cursor"]), (200, [], 0, None))
        # A member sees their teams' jobs, pages them, and mine=1 is their own.
        pages = self.pages(self.member, "", 25)
        pb = [i for i in pos if whole["jobs"][pos[i]]["team"] == "pb"]
        self.assertEqual([j["id"] for p in pages for j in p["jobs"]], pb)
        self.assertEqual(pages[0]["total"], len(pb))
        pages = self.pages(self.member, "&mine=1", 10)
        self.assertEqual([j["id"] for p in pages for j in p["jobs"]],
                         [i for i in pos if i in self.by_member])
        self.assertEqual(self.member.get("/api/v1/queue?team=pa")[1]["total"], 0)

    def test_bad_input(self):
        before = self.admin.get("/api/v1/queue?limit=7")[1]
        cursor = before["next_cursor"]
        for query, field in (("limit=0", "limit"), ("limit=501", "limit"), ("limit=x", "limit"),
                             ("limit=-1", "limit"), ("cursor=abc", "cursor"),
                             ("cursor=12", "cursor"), ("cursor=1.-2", "cursor"),
                             ("cursor=" + cursor + ".1", "cursor"), ("cursor=.5", "cursor"),
                             ("mine=2", "mine"), ("mine=yes", "mine"),
                             ("mine=1&user=admin", "mine"), ("team=" + "t" * 65, "team"),
                             ("user=" + "u" * 65, "user")):
            err = self.assert_error(self.admin.get("/api/v1/queue?" + query), 400,
                                    "invalid_argument", field)
            self.assertNotIn("SELECT", err["message"])
        # Nothing changed: the same request answers the same.
        self.assertEqual(self.admin.get("/api/v1/queue?limit=7")[1], before)
        st, nxt, _ = self.admin.get("/api/v1/queue?limit=7&cursor=" + cursor)
        self.assertEqual(st, 200, nxt)

    def test_refresh_between_pages(self):
        st, first, _ = self.admin.get("/api/v1/queue?limit=40")
        self.assertEqual(st, 200, first)
        new = self.refresh_forecast(old=first["generated_at"])
        err = self.assert_error(self.admin.get("/api/v1/queue?limit=40&cursor="
                                               + first["next_cursor"]),
                                409, "forecast_changed", "cursor")
        self.assertEqual(err["params"], {"generated_at": new["generated_at"]})
        # Starting again from the first page reads the new forecast whole.
        pages = self.pages(self.admin, "", 40)
        self.assertEqual(pages[0]["generated_at"], new["generated_at"])
        self.assertEqual(sorted(j["id"] for p in pages for j in p["jobs"]), sorted(self.ids))

    def test_cli(self):
        tok = self.admin.post("/api/v1/tokens", {"name": "qp-cli"})[1]["token"]
        env = dict(os.environ, TRAINYARD_URL=self.server.url, TRAINYARD_TOKEN=tok,
                   HOME=tempfile.mkdtemp(prefix="ty-qp-home-"))

        def cli(*args):
            return subprocess.run([harness.CLI_BIN, "queue"] + list(args), capture_output=True,
                                  text=True, env=env, timeout=60)
        whole = self.admin.get("/api/v1/queue?limit=500")[1]
        order = [j["id"] for j in whole["jobs"]]
        out = cli("--all", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout)
        self.assertEqual([j["id"] for j in got["jobs"]], order)
        self.assertEqual((got["total"], got["next_cursor"]), (N, None))
        out = cli("--limit", "20", "--json")
        page = json.loads(out.stdout)
        self.assertEqual([j["id"] for j in page["jobs"]], order[:20])
        out = cli("--limit", "20", "--cursor", page["next_cursor"], "--json")
        self.assertEqual([j["id"] for j in json.loads(out.stdout)["jobs"]], order[20:40])
        # The table: one line per job of the page, then where the next page is.
        out = cli("--limit", "5", "--team", "pa")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        pa = [j["id"] for j in whole["jobs"] if j["team"] == "pa"]
        self.assertEqual([line.split()[1] for line in lines[2:7]], pa[:5])
        self.assertRegex(lines[7], r"^5 of %d shown; the next page: --cursor \d+\.\d+ \(or --all\)$"
                         % len(pa))
        out = cli("--all", "--team", "pa")
        self.assertEqual([line.split()[1] for line in out.stdout.splitlines()[2:]], pa)
        # Bad usage is refused before any request; the server's 400 is exit 1.
        self.assertEqual(cli("--limit", "0").returncode, 2)
        self.assertEqual(cli("--mine", "--user", "x").returncode, 2)
        self.assertEqual(cli("--all", "--cursor", "1.2").returncode, 2)
        out = cli("--cursor", "nope")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("cursor", out.stderr)


class QueueLeaveTest(ServerTest):
    """Jobs leaving the queue while the forecast holds still."""
    server_args = QueuePageTest.server_args
    n = 12

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, body, _ = cls.admin.post("/api/v1/teams", {"name": "lv", "gpu_quota": 0})
        assert st == 201, body
        for i in range(cls.n):
            st, job, _ = cls.admin.post("/api/v1/jobs", {
                "name": "lv%d" % i, "team": "lv", "command": ["/bin/true"],
                "resources": {"gpus": 1}, "priority": ("low", "normal", "high")[i % 3]})
            assert st == 201, job
        cls.server.terminate("server")
        cls.server.restart()

        def stored():
            st, q, _ = cls.admin.get("/api/v1/queue?limit=500")
            return q if st == 200 and q["total"] == cls.n else None
        cls.whole = wait_for(stored, timeout=60, what="a forecast of all %d jobs" % cls.n)

    def test_cancelled_between_pages(self):
        order = [j["id"] for j in self.whole["jobs"]]
        self.assertEqual([j["position"] for j in self.whole["jobs"]], list(range(self.n)))
        st, first, _ = self.admin.get("/api/v1/queue?limit=5")
        self.assertEqual(st, 200, first)
        self.assertEqual([j["id"] for j in first["jobs"]], order[:5])
        # One job on the next page and one on the page already read leave.
        for gone in (order[6], order[2]):
            st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % gone)
            self.assertIn(st, (200, 202), body)
        st, second, _ = self.admin.get("/api/v1/queue?limit=5&cursor=" + first["next_cursor"])
        self.assertEqual(st, 200, second)
        self.assertEqual(second["generated_at"], first["generated_at"])
        self.assertEqual([j["id"] for j in second["jobs"]], order[5:6] + order[7:11])
        self.assertEqual([j["position"] for j in second["jobs"]], [5, 7, 8, 9, 10])
        self.assertEqual(second["total"], self.n)  # the forecast's count
        st, third, _ = self.admin.get("/api/v1/queue?limit=5&cursor=" + second["next_cursor"])
        self.assertEqual(st, 200, third)
        self.assertEqual([j["id"] for j in third["jobs"]], order[11:])
        self.assertIsNone(third["next_cursor"])
        # Read anew from the first page: both are gone, the rest in order, once.
        st, again, _ = self.admin.get("/api/v1/queue?limit=500")
        self.assertEqual(st, 200, again)
        self.assertEqual(again["generated_at"], self.whole["generated_at"])
        self.assertEqual([j["id"] for j in again["jobs"]],
                         [i for i in order if i not in (order[2], order[6])])
        self.assertEqual([j["position"] for j in again["jobs"]],
                         [p for p in range(self.n) if p not in (2, 6)])
        self.assertEqual(again["total"], self.n)


if __name__ == "__main__":
    harness.main()
