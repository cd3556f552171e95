"""API error codes against docs/error-codes.json: every error the server
answers here has a code listed in the file, with the file's HTTP status,
and the error shape the dashboard reads; errors caused by one query
parameter or body field name it in "field" (the audit filters and the node
heartbeat and report arrays included)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest  # noqa: E402

with open(os.path.join(harness.SRC, "docs", "error-codes.json"), encoding="utf-8") as f:
    CODES = json.load(f)["codes"]


class ApiErrorsTest(ServerTest):
    def check(self, resp, code, field=None):
        st, body, _ = resp
        self.assertIn(code, CODES, "code %s is not in docs/error-codes.json" % code)
        err = self.assert_error(resp, CODES[code]["status"], code, field)
        self.assertLessEqual(set(err), {"code", "message", "detail", "field", "request_id"}, err)
        if CODES[code]["field"] == "never":
            self.assertNotIn("field", err, err)
        return err

    def test_codes_and_statuses_match_the_file(self):
        anon = Client(self.server.url)
        member_team = self.make_team("errs", quota=1)
        _, member = self.make_user("err-member", teams=[member_team])
        self.check(anon.get("/api/v1/jobs"), "unauthenticated")
        self.check(self.admin.get("/api/v1/nope"), "not_found")
        self.check(self.admin.get("/api/v1/jobs/999999"), "not_found")
        self.check(self.admin.request("DELETE", "/api/v1/jobs"), "method_not_allowed")
        self.check(self.admin.request("POST", "/api/v1/jobs", raw=b"{}",
                                      content_type="text/plain"), "unsupported_media_type")
        self.check(self.admin.request("POST", "/api/v1/jobs", raw=b"x" * (2 << 20)), "too_large")
        self.check(self.admin.post("/api/v1/jobs", {"name": "x", "team": "errs",
                                                    "command": ["/bin/true"],
                                                    "resources": {"gpus": 0}}),
                   "invalid_argument", "resources.gpus")
        self.check(member.get("/api/v1/users"), "permission_denied")
        self.check(self.admin.post("/api/v1/jobs", {"name": "x", "team": "errs",
                                                    "command": ["/bin/true"],
                                                    "resources": {"gpus": 1},
                                                    "output_dir": "/etc/out"}),
                   "policy_violation", "output_dir")
        self.check(self.admin.post("/api/v1/teams", {"name": "errs"}), "conflict")

    def test_audit_filters_name_their_field(self):
        for name, limit in (("action", 64), ("actor", 128), ("target", 128)):
            self.check(self.admin.get("/api/v1/audit/events?%s=%s" % (name, "a" * (limit + 1))),
                       "invalid_argument", name)
        st, body, _ = self.admin.get("/api/v1/audit/events?actor=" + "a" * 128)
        self.assertEqual(st, 200, body)

    def test_node_arrays_name_their_field(self):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        st, joined, _ = Client(self.server.url).post("/api/v1/agent/join",
                                                     {"join_token": tok["token"], "name": "e1"})
        self.assertEqual(st, 201, joined)
        node = Client(self.server.url, token=joined["credential"])
        self.assertEqual(node.post("/api/v1/agent/register", {"gpus": []})[0], 200)
        for body, field in (({"gpus": 1}, "gpus"), ({"running": {}}, "running"),
                            ({"draining": "yes"}, "draining")):
            self.check(node.post("/api/v1/agent/heartbeat", body), "invalid_argument", field)


if __name__ == "__main__":
    harness.main()
