#!/usr/bin/env python3
"""Fixture helper for bench/api/run.sh: signs in as the admin, makes an API
token and the team "bench", submits one job (whose stored spec run.sh copies
into the bulk SQL insert) and saves the GET /api/v1/jobs?limit=50 body.
Usage: setup.py BASE_URL PASSWORD OUT_DIR.  Prints the token on stdout."""
import http.cookiejar
import json
import sys
import urllib.request

base, password, out = sys.argv[1], sys.argv[2], sys.argv[3]
jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))


def call(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with opener.open(req, timeout=10) as r:
        return r.status, r.read()


st, raw = call("POST", "/api/v1/auth/login", {"username": "admin", "password": password})
csrf = json.loads(raw)["csrf_token"]
st, raw = call("POST", "/api/v1/tokens", {"name": "bench"}, {"X-CSRF-Token": csrf})
token = json.loads(raw)["token"]
auth = {"Authorization": "Bearer " + token}
call("POST", "/api/v1/teams", {"name": "bench"}, auth)
call("POST", "/api/v1/jobs", {"name": "b", "team": "bench", "command": ["/bin/true"],
                              "resources": {"gpus": 1024}}, auth)
print(token)
