"""POST /api/v1/me/password (the dashboard's My account): a real server and
PostgreSQL.

- a member signed in twice changes their own password from one session:
  that session goes on, the other one ends (401), the old password no
  longer signs in, the new one does; a user.password event records it;
- the same through an API token (no session of its own);
- a wrong current password: 403 naming current_password, nothing changed,
  the refusal audited; repeated wrong guesses are rate-limited (429) like
  sign-ins;
- bad input (a new password under 12 characters, missing or unknown
  fields): 400 naming the field, nothing changed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest  # noqa: E402

P = "/api/v1/me/password"


class MePasswordTest(ServerTest):
    def events(self, username, outcome):
        return int(self.db.sql("SELECT count(*) FROM audit_events WHERE action = 'user.password' AND "
                               "target = 'user:%s' AND outcome = '%s'" % (username, outcome))[0][0])

    def test_change_from_session(self):
        _, c1 = self.make_user("pw1")
        c2 = Client(self.server.url)
        self.assertEqual(c2.login("pw1", "pw1-password-123")[0], 200)
        old, new = "pw1-password-123", "a-new-long-password"

        # Bad input first: nothing changes.
        for body, field in (({"current_password": old, "new_password": "short"}, "new_password"),
                            ({"current_password": old}, "new_password"),
                            ({"new_password": new}, "current_password"),
                            ({"current_password": old, "new_password": new, "x": 1}, "x")):
            self.assert_error(c1.post(P, body), 400, "invalid_argument", field)
        self.assert_error(c1.post(P, {"current_password": "wrong-password", "new_password": new}),
                          403, "permission_denied", "current_password")
        self.assertEqual(self.events("pw1", "failure"), 1)
        self.assertEqual(self.events("pw1", "success"), 0)
        self.assertEqual(c2.get("/api/v1/me")[0], 200)

        st, body, _ = c1.post(P, {"current_password": old, "new_password": new})
        self.assertEqual(st, 200, body)
        self.assertEqual(self.events("pw1", "success"), 1)
        # The changing session goes on; the other one has ended.
        self.assertEqual(c1.get("/api/v1/me")[0], 200)
        self.assert_error(c2.get("/api/v1/me"), 401)
        self.assertEqual(Client(self.server.url).login("pw1", old)[0], 401)
        self.assertEqual(Client(self.server.url).login("pw1", new)[0], 200)

    def test_change_with_token(self):
        _, c = self.make_user("pw2")
        tok = self.token_client(c)
        st, body, _ = tok.post(P, {"current_password": "pw2-password-123",
                                   "new_password": "token-set-password"})
        self.assertEqual(st, 200, body)
        self.assertEqual(tok.get("/api/v1/me")[0], 200)
        self.assertEqual(Client(self.server.url).login("pw2", "token-set-password")[0], 200)

    def test_guesses_rate_limited(self):
        u, c = self.make_user("pw3")
        tok = self.token_client(c)
        hash_q = "SELECT password_hash FROM users WHERE id = %d" % int(u["id"])
        before = self.db.sql(hash_q)
        codes = []
        for _ in range(30):
            st, body, _ = tok.post(P, {"current_password": "guess-guess", "new_password":
                                       "whatever-long-one"})
            codes.append(st)
            if st == 429:
                break
        self.assertEqual(codes[-1], 429, codes)
        self.assertEqual(set(codes[:-1]), {403}, codes)
        # Even the right password is refused while blocked; it stays unchanged.
        self.assert_error(tok.post(P, {"current_password": "pw3-password-123",
                                       "new_password": "whatever-long-one"}), 429)
        self.assertEqual(self.db.sql(hash_q), before)
        self.assertEqual(self.events("pw3", "denied"), 2)


if __name__ == "__main__":
    harness.main()
