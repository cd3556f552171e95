"""Auth, sessions, CSRF, API tokens, users/teams admin, and bad input."""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, ServerTest  # noqa: E402


class AuthTest(ServerTest):
    server_args = ("--login-max-failures", "3", "--login-window-s", "60")

    def count(self, table):
        return int(self.db.sql("SELECT count(*) FROM " + table)[0][0])

    def test_health_and_ready(self):
        st, body, hdrs = Client(self.server.url).get("/healthz")
        self.assertEqual((st, body), (200, {"status": "ok"}))
        self.assertTrue(hdrs["x-request-id"].startswith("r-"))
        st, body, _ = Client(self.server.url).get("/readyz")
        self.assertEqual((st, body), (200, {"status": "ready"}))

    def test_login_me_logout(self):
        self.make_user("lola")
        c = Client(self.server.url)
        st, body = c.login("lola", "lola-password-123")
        self.assertEqual(st, 200, body)
        st, me, _ = c.get("/api/v1/me")
        self.assertEqual(st, 200, me)
        self.assertEqual(me["username"], "lola")
        self.assertEqual(me["role"], "member")
        st, body, hdrs = c.post("/api/v1/auth/logout")
        self.assertEqual(st, 200, body)
        self.assertIn("Max-Age=0", hdrs["set-cookie"])
        self.assert_error(c.get("/api/v1/me"), 401, "unauthenticated")
        acts = self.db.sql("SELECT action, outcome FROM audit_events WHERE target = "
                           "'user:lola' ORDER BY id")
        self.assertIn(["auth.login", "success"], acts)
        self.assertIn(["auth.logout", "success"], acts)

    def test_session_cookie_flags(self):
        c = Client(self.server.url)
        st, body, hdrs = c.post("/api/v1/auth/login", {"username": "admin", "password": ADMIN_PASSWORD})
        self.assertEqual(st, 200, body)
        cookie = hdrs["set-cookie"]
        self.assertIn("HttpOnly", cookie)
        self.assertIn("SameSite=Strict", cookie)
        self.assertTrue(body["csrf_token"])

    def test_wrong_password_is_audited_and_rate_limited(self):
        self.make_user("rita")
        c = Client(self.server.url)
        for _ in range(3):
            st, body = c.login("rita", "wrong-password-xx")
            self.assertEqual(st, 401, body)
            self.assertEqual(body["error"]["message"], "wrong username or password")
        st, body = c.login("rita", "rita-password-123")
        self.assertEqual(st, 429, body)
        self.assertEqual(body["error"]["code"], "rate_limited")
        rows = self.db.sql("SELECT outcome, details FROM audit_events WHERE action = 'auth.login' "
                           "AND target = 'user:rita' ORDER BY id")
        outcomes = [r[0] for r in rows]
        self.assertEqual(outcomes.count("failure"), 3)
        self.assertEqual(outcomes[-1], "denied")

    def test_unknown_user_same_answer(self):
        st, body = Client(self.server.url).login("nobody-here", "whatever-password")
        self.assertEqual(st, 401)
        self.assertEqual(body["error"]["message"], "wrong username or password")
        # A name no user can have is not made a target; the details keep it.
        st, body = Client(self.server.url).login("job:1, Mallory", "whatever-password")
        self.assertEqual(st, 401)
        self.assertEqual(body["error"]["message"], "wrong username or password")
        rows = self.db.sql("SELECT target, details::json->>'username' FROM audit_events WHERE "
                           "action = 'auth.login' AND outcome = 'failure' ORDER BY id DESC "
                           "LIMIT 2")
        self.assertEqual(rows, [["", "job:1, Mallory"], ["user:nobody-here", ""]])

    def test_csrf_required_for_cookie_mutations(self):
        before = self.count("teams")
        self.assert_error(self.admin.post("/api/v1/teams", {"name": "nocsrf"}, csrf=False),
                          403, "permission_denied")
        self.assert_error(self.admin.post("/api/v1/teams", {"name": "nocsrf"},
                                          headers={"X-CSRF-Token": "forged"}, csrf=False), 403)
        self.assertEqual(self.count("teams"), before)
        st, body, _ = self.admin.post("/api/v1/teams", {"name": "withcsrf"})
        self.assertEqual(st, 201, body)

    def test_api_tokens(self):
        st, body, _ = self.admin.post("/api/v1/tokens", {"name": "ci", "expires_in_s": 3600})
        self.assertEqual(st, 201, body)
        token = body["token"]
        self.assertTrue(token.startswith("tyt_"))
        self.assertTrue(body["expires_at"])
        stored = self.db.sql("SELECT token_hash FROM api_tokens WHERE id = %s" % body["id"])[0][0]
        self.assertNotEqual(stored, token)
        self.assertNotIn(token, self.server.log_text())
        t = Client(self.server.url, token=token)
        st, me, _ = t.get("/api/v1/me")
        self.assertEqual((st, me["username"], me["auth"]), (200, "admin", "token"))
        # Token callers need no CSRF token.
        st, b, _ = t.post("/api/v1/teams", {"name": "bytoken"})
        self.assertEqual(st, 201, b)
        st, lst, _ = t.get("/api/v1/tokens")
        self.assertIn(body["id"], [x["id"] for x in lst["tokens"]])
        st, b, _ = self.admin.request("DELETE", "/api/v1/tokens/" + body["id"])
        self.assertEqual(st, 200, b)
        self.assert_error(t.get("/api/v1/me"), 401, "unauthenticated")
        self.assert_error(self.admin.request("DELETE", "/api/v1/tokens/" + body["id"]), 409)
        # Expired tokens stop working.
        st, body, _ = self.admin.post("/api/v1/tokens", {"name": "short", "expires_in_s": 60})
        self.db.sql("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = %s"
                    % body["id"])
        self.assert_error(Client(self.server.url, token=body["token"]).get("/api/v1/me"), 401)
        self.assert_error(Client(self.server.url, token="tyt_made_up").get("/api/v1/me"), 401)
        self.assert_error(Client(self.server.url, token="garbage").get("/api/v1/me"), 401)
        actions = [r[0] for r in self.db.sql("SELECT action FROM audit_events")]
        self.assertIn("token.create", actions)
        self.assertIn("token.revoke", actions)

    def test_users_teams_memberships(self):
        st, u, _ = self.admin.post("/api/v1/users", {"username": "gen.pw", "role": "auditor"})
        self.assertEqual(st, 201, u)
        self.assertGreaterEqual(len(u["password"]), 20)
        self.assertNotIn("password_hash", u)
        st, lst, _ = self.admin.get("/api/v1/users?limit=500")
        self.assertIn("gen.pw", [x["username"] for x in lst["users"]])
        self.assert_error(self.admin.post("/api/v1/users", {"username": "gen.pw", "role": "member"}),
                          409, "conflict", "username")
        self.assert_error(self.admin.post("/api/v1/users", {"username": "Bad Name", "role": "member"}),
                          400, "invalid_argument", "username")
        self.assert_error(self.admin.post("/api/v1/users", {"username": "x1", "role": "god"}),
                          400, "invalid_argument", "role")
        self.assert_error(self.admin.post("/api/v1/users", {"username": "x2", "role": "member",
                                                            "password": "short"}), 400, None, "password")
        self.assert_error(self.admin.post("/api/v1/users", {"username": "x3", "role": "member",
                                                            "extra": 1}), 400, None, "extra")
        st, t, _ = self.admin.post("/api/v1/teams", {"name": "vision", "gpu_quota": 8,
                                                     "priority_weight": 2.5})
        self.assertEqual(st, 201, t)
        self.assertEqual((t["gpu_quota"], t["priority_weight"]), (8, 2.5))
        self.assert_error(self.admin.post("/api/v1/teams", {"name": "vision"}), 409)
        self.assert_error(self.admin.post("/api/v1/teams", {"name": "neg", "gpu_quota": -1}),
                          400, None, "gpu_quota")
        self.assert_error(self.admin.request("PATCH", "/api/v1/teams/" + t["id"],
                                             body={"priority_weight": 0}), 400, None,
                          "priority_weight")
        st, t2, _ = self.admin.request("PATCH", "/api/v1/teams/" + t["id"], body={"gpu_quota": 16})
        self.assertEqual((st, t2["gpu_quota"]), (200, 16))
        st, b, _ = self.admin.request("PUT", "/api/v1/teams/%s/members/%s" % (t["id"], u["id"]))
        self.assertEqual(st, 201, b)
        self.assert_error(self.admin.request("PUT", "/api/v1/teams/%s/members/%s" % (t["id"], u["id"])), 409)
        st, m, _ = self.admin.get("/api/v1/teams/%s/members" % t["id"])
        self.assertEqual([x["username"] for x in m["members"]], ["gen.pw"])
        st, b, _ = self.admin.request("DELETE", "/api/v1/teams/%s/members/%s" % (t["id"], u["id"]))
        self.assertEqual(st, 200, b)
        self.assert_error(self.admin.request("DELETE", "/api/v1/teams/%s/members/%s" % (t["id"], u["id"])), 404)
        self.assert_error(self.admin.request("PUT", "/api/v1/teams/%s/members/999999" % t["id"]), 404)
        # Disabling a user ends its sessions at once.
        _, c = self.make_user("dora")
        st, dora, _ = c.get("/api/v1/me")
        st, b, _ = self.admin.request("PATCH", "/api/v1/users/" + dora["id"], body={"disabled": True})
        self.assertEqual(st, 200, b)
        self.assert_error(c.get("/api/v1/me"), 401)
        self.assert_error(self.admin.request("PATCH", "/api/v1/users/1", body={"disabled": True}), 409)
        actions = set(r[0] for r in self.db.sql("SELECT action FROM audit_events"))
        for a in ("user.create", "user.update", "team.create", "team.update", "team.member_add",
                  "team.member_remove"):
            self.assertIn(a, actions)

    def test_bad_input_changes_nothing(self):
        tables = ("jobs", "teams", "users", "api_tokens")
        before = [self.count(t) for t in tables]
        audit_before = self.count("audit_events")
        cases = [
            (self.admin.request("POST", "/api/v1/teams", raw="{bad json"), 400, "invalid_argument"),
            (self.admin.request("POST", "/api/v1/teams", raw='{"name":"a","name":"b"}'), 400, None),
            (self.admin.request("POST", "/api/v1/teams", raw="[" * 100 + "]" * 100), 400, None),
            (self.admin.request("POST", "/api/v1/teams", raw='{"name":"ct"}',
                                content_type="text/plain"), 415, "unsupported_media_type"),
            (self.admin.request("POST", "/api/v1/jobs", raw=b"x" * (2 << 20)), 413, "too_large"),
            (self.admin.request("GET", "/api/v1/nope"), 404, "not_found"),
            (self.admin.request("DELETE", "/api/v1/jobs"), 405, "method_not_allowed"),
            (self.admin.request("POST", "/api/v1/teams", body=["not", "object"]), 400, None),
            (self.admin.request("GET", "/api/v1/jobs?limit=0"), 400, None),
            (self.admin.request("GET", "/api/v1/jobs?limit=abc"), 400, None),
            (self.admin.request("GET", "/api/v1/jobs?state=DANCING"), 400, None),
            (self.admin.request("GET", "/api/v1/jobs?cursor=-4"), 400, None),
            (self.admin.request("GET", "/api/v1/jobs/abc"), 404, None),
            (self.admin.request("GET", "/api/v1/jobs/99999999"), 404, None),
            (self.admin.request("POST", "/api/v1/jobs", body={"name": "x"}), 400, None),
        ]
        for resp, status, code in cases:
            self.assert_error(resp, status, code)
        self.assertEqual([self.count(t) for t in tables], before)
        self.assertEqual(self.count("audit_events"), audit_before)

    def test_non_admin_cannot_administer(self):
        _, c = self.make_user("mona")
        self.assert_error(c.post("/api/v1/teams", {"name": "mine"}), 403, "permission_denied")
        self.assert_error(c.get("/api/v1/users"), 403)
        self.assert_error(c.get("/api/v1/audit/events"), 403)
        self.assert_error(Client(self.server.url).get("/api/v1/audit/events"), 401)

    def test_audit_rows_cannot_be_changed_over_server_url(self):
        for sql in ("UPDATE audit_events SET actor = 'x'", "DELETE FROM audit_events",
                    "TRUNCATE audit_events"):
            ok, err = harness.psql_try(self.db.url, sql)
            self.assertFalse(ok, sql)
            self.assertIn("append-only", err)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual((st, v["valid"]), (200, True), v)
        rows = harness.db_audit_rows(self.db)
        self.assertEqual(harness.verify_chain_rows(rows), 0)

    def test_audit_events_filters_and_pages(self):
        st, body, _ = self.admin.get("/api/v1/audit/events?action=auth.&limit=2")
        self.assertEqual(st, 200, body)
        self.assertLessEqual(len(body["events"]), 2)
        for e in body["events"]:
            self.assertTrue(e["action"].startswith("auth."))
        if body["next_cursor"]:
            st, b2, _ = self.admin.get("/api/v1/audit/events?action=auth.&cursor=" + body["next_cursor"])
            self.assertEqual(st, 200)
            self.assertTrue(all(int(e["id"]) < int(body["next_cursor"]) for e in b2["events"]))
        self.assert_error(self.admin.get("/api/v1/audit/events?since=yesterday"), 400, None, "since")


class StartupTest(harness.unittest.TestCase):
    """Configuration precedence and the schema-version guard."""

    def setUp(self):
        self.db = Database()

    def tearDown(self):
        self.db.close()

    def test_precedence_flag_env_file(self):
        pa, pb, pc = harness.free_port(), harness.free_port(), harness.free_port()
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("# trainyard\nlisten = 127.0.0.1:%d\ndatabase_url = %s\n" % (pa, self.db.url))
            conf = f.name
        try:
            for env, args, want in (({}, [], pa),
                                    ({"TRAINYARD_LISTEN": "127.0.0.1:%d" % pb}, [], pb),
                                    ({"TRAINYARD_LISTEN": "127.0.0.1:%d" % pb},
                                     ["--listen", "127.0.0.1:%d" % pc], pc)):
                e = dict(os.environ)
                e.update(env)
                p = harness.subprocess.Popen([harness.SERVER_BIN, "--config", conf] + args,
                                             env=e, stdout=harness.subprocess.PIPE,
                                             stderr=harness.subprocess.STDOUT)
                ok = False
                for _ in range(200):
                    try:
                        if Client("http://127.0.0.1:%d" % want).get("/healthz")[0] == 200:
                            ok = True
                            break
                    except OSError:
                        time.sleep(0.05)
                p.terminate()
                out = p.communicate(timeout=30)[0].decode()
                self.assertTrue(ok, out)
                self.assertEqual(p.returncode, 0, out)
                self.assertIn('key=database_url value="***"', out)
                self.assertNotIn(self.db.url, out)
        finally:
            os.unlink(conf)

    def test_bad_config_is_refused(self):
        out = harness.subprocess.run([harness.SERVER_BIN, "--database-url", self.db.url,
                                      "--http-threads", "0"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("http_threads", out.stderr)
        out = harness.subprocess.run([harness.SERVER_BIN, "--bogus"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)

    def test_refuses_newer_schema(self):
        s = Server(self.db)
        s.stop()
        self.db.sql("INSERT INTO schema_migrations (version, name) VALUES (999, '999_future.sql')")
        out = harness.subprocess.run([harness.SERVER_BIN, "--database-url", self.db.url,
                                      "--listen", "127.0.0.1:%d" % harness.free_port()],
                                     capture_output=True, text=True, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("newer than this server", out.stderr)

    def test_create_admin_refuses_a_name_no_user_can_have(self):
        # The API's username rule, which audit targets (user:<name>) rely on.
        out = harness.subprocess.run([harness.SERVER_BIN, "--database-url", self.db.url,
                                      "--create-admin", "Root Admin", "--log-level", "warn"],
                                     capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("the admin name must be", out.stderr)
        self.assertEqual(self.db.sql("SELECT count(*) FROM users WHERE username = 'Root Admin'"),
                         [["0"]])

    def test_create_admin_generates_password_once(self):
        out = harness.subprocess.run([harness.SERVER_BIN, "--database-url", self.db.url,
                                      "--create-admin", "root2", "--log-level", "warn"],
                                     capture_output=True, text=True, timeout=120,
                                     env={k: v for k, v in os.environ.items()
                                          if k != "TRAINYARD_ADMIN_PASSWORD"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("password:", out.stdout)
        again = harness.subprocess.run([harness.SERVER_BIN, "--database-url", self.db.url,
                                        "--create-admin", "root2", "--log-level", "warn"],
                                       capture_output=True, text=True, timeout=120)
        self.assertEqual(again.returncode, 3)


if __name__ == "__main__":
    harness.main()
