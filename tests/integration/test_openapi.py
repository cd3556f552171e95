"""The OpenAPI document and the API reference page as the server serves
them: GET /api/v1/openapi.json is docs/openapi.json byte for byte, a real
OpenAPI validator from npm (@seriousme/openapi-schema-validator, run
offline) accepts the document and refuses a broken one, every documented
operation reaches a route of the running server (never the router's "no such
route"), the answers of the main reads and writes fit their documented
schemas, and the reference page comes from docs/api (Swagger UI installed by
npm ci), with nothing from another host. tests/unit/test_openapi.c checks the
document against the route table both ways."""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest  # noqa: E402

DOCS = os.path.join(harness.SRC, "docs")
API_DIR = os.path.join(DOCS, "api")
DOC = os.path.join(DOCS, "openapi.json")
SWAGGER = os.path.join(API_DIR, "node_modules", "swagger-ui-dist")


def validate(path):
    """node docs/api/validate.mjs PATH: (exit status, output). Missing node or
    node_modules fail the test: scripts/test.sh installs them (npm ci)."""
    if not os.path.isdir(os.path.join(API_DIR, "node_modules", "@seriousme")):
        raise AssertionError("docs/api/node_modules is missing: scripts/test.sh runs npm ci there")
    p = subprocess.run(["node", os.path.join(API_DIR, "validate.mjs"), path], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, NO_UPDATE_NOTIFIER="1"))
    return p.returncode, p.stdout + p.stderr


TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def schema_problems(doc, schema, value, where):
    """What value breaks in schema: the subset of JSON Schema the document
    uses ($ref, type, enum, properties, items, additionalProperties)."""
    if "$ref" in schema:
        node = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return schema_problems(doc, node, value, where)
    out = []
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %r not in %r" % (where, value, schema["enum"]))
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        ok = any((t == "integer" and isinstance(value, int) and not isinstance(value, bool)) or
                 (t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool))
                 or (t in TYPES and isinstance(value, TYPES[t])) for t in types)
        if not ok:
            return out + ["%s: %r is not %s" % (where, value, "/".join(types))]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k, v in value.items():
            if k in props:
                out += schema_problems(doc, props[k], v, where + "." + k)
            elif isinstance(schema.get("additionalProperties"), dict):
                out += schema_problems(doc, schema["additionalProperties"], v, where + "." + k)
            elif schema.get("additionalProperties") is False:
                out.append("%s: %s is not documented" % (where, k))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            out += schema_problems(doc, schema["items"], v, "%s[%d]" % (where, i))
    return out


class OpenApiTest(ServerTest):
    # A metrics token: /metrics off answers exactly like an unknown route.
    server_args = ("--api-docs-dir", API_DIR, "--metrics-token", "openapi-test-metrics-token")

    def test_served_document_is_the_file(self):
        st, body, hdrs = Client(self.server.url).get("/api/v1/openapi.json")
        self.assertEqual(st, 200, body)
        self.assertTrue(hdrs["content-type"].startswith("application/json"), hdrs)
        with open(DOC) as f:
            self.assertEqual(body, json.load(f))
        self.assertEqual(body["openapi"], "3.1.0")

    def test_validator_accepts_the_document(self):
        rc, out = validate(DOC)
        self.assertEqual(rc, 0, out)
        self.assertIn("valid OpenAPI 3.1", out)

    def test_validator_refuses_broken_documents(self):
        with open(DOC) as f:
            good = json.load(f)
        bad_ref = copy.deepcopy(good)
        bad_ref["paths"]["/api/v1/me"]["get"]["responses"]["200"] = {
            "$ref": "#/components/responses/NoSuchResponse"}
        bad_shape = copy.deepcopy(good)
        bad_shape["paths"]["/api/v1/me"]["get"]["parameters"] = [{"name": "x", "in": "body"}]
        for what, doc in (("a dangling $ref", bad_ref), ("a parameter in 'body'", bad_shape)):
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(doc, f)
            try:
                rc, out = validate(f.name)
            finally:
                os.unlink(f.name)
            self.assertNotEqual(rc, 0, "the validator accepted %s: %s" % (what, out))

    def test_every_documented_operation_is_routed(self):
        with open(DOC) as f:
            doc = json.load(f)
        anon = Client(self.server.url)
        unrouted = []
        for path, item in doc["paths"].items():
            for method in item:
                concrete = re.sub(r"\{[a-z_]+\}", "1", path)
                if path == "/api/v1/docs/{file}":
                    concrete = "/api/v1/docs/index.html"
                st, body, _ = anon.request(method.upper(), concrete,
                                           body=None if method == "get" else {})
                msg = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
                if st == 405 or (st == 404 and msg.startswith("no such route")):
                    unrouted.append("%s %s: %d %s" % (method, path, st, msg))
        self.assertFalse(unrouted, "\n".join(unrouted))

    def test_answers_match_the_documented_schemas(self):
        with open(DOC) as f:
            doc = json.load(f)
        team = self.make_team("oa", quota=4)
        st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec("oa", resources={"gpus": 64}))
        self.assertEqual(st, 201, job)
        calls = [("post", "/api/v1/jobs", None, None), ("get", "/api/v1/me", "/api/v1/me", None),
                 ("get", "/api/v1/jobs", "/api/v1/jobs", None),
                 ("get", "/api/v1/jobs/{id}", "/api/v1/jobs/" + job["id"], None),
                 ("get", "/api/v1/jobs/{id}/events", "/api/v1/jobs/%s/events" % job["id"], None),
                 ("get", "/api/v1/teams", "/api/v1/teams", None),
                 ("get", "/api/v1/teams/{id}", "/api/v1/teams/" + team["id"], None),
                 ("get", "/api/v1/nodes", "/api/v1/nodes", None),
                 ("get", "/api/v1/users", "/api/v1/users", None),
                 ("get", "/api/v1/sites", "/api/v1/sites", None),
                 ("get", "/api/v1/policy", "/api/v1/policy", None),
                 ("get", "/api/v1/tokens", "/api/v1/tokens", None),
                 ("get", "/api/v1/audit/events", "/api/v1/audit/events", None),
                 ("get", "/api/v1/audit/verify", "/api/v1/audit/verify", None),
                 ("get", "/readyz", "/readyz", None),
                 ("post", "/api/v1/jobs/{id}/cancel", "/api/v1/jobs/%s/cancel" % job["id"], {})]
        problems = []
        for method, pattern, path, body in calls:
            if path is None:
                got, st = job, "201"
            else:
                code, got, _ = self.admin.request(method.upper(), path, body=body)
                st = str(code)
            op = doc["paths"][pattern][method]
            self.assertIn(st, op["responses"], "%s %s answered %s, not documented" % (
                method, pattern, st))
            schema = op["responses"][st]["content"]["application/json"]["schema"]
            problems += schema_problems(doc, schema, got, "%s %s" % (method, pattern))
        self.assertFalse(problems, "\n".join(problems))
        # The checker is real: a wrong type is found.
        self.assertTrue(schema_problems(doc, {"$ref": "#/components/schemas/Job"},
                                        dict(job, gpus="many"), "job"))

    def test_reference_page_served_locally(self):
        anon = Client(self.server.url)
        st, page, hdrs = anon.get("/api/v1/docs")
        self.assertEqual(st, 200, page)
        self.assertTrue(hdrs["content-type"].startswith("text/html"), hdrs)
        self.assertIn('src="/api/v1/docs/swagger-ui-bundle.js"', page)
        st, init, _ = anon.get("/api/v1/docs/init.js")
        self.assertEqual(st, 200)
        self.assertIn('"/api/v1/openapi.json"', init)
        # Nothing from another host: no absolute URL in the page or its script,
        # and Swagger UI's online validator badge is off.
        for text in (page, init):
            self.assertIsNone(re.search(r'(src|href)="(https?:)?//', text), text)
        self.assertIn("validatorUrl: null", init)
        for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
            st, body, hdrs = anon.request("GET", "/api/v1/docs/" + name)
            self.assertEqual(st, 200, name)
            with open(os.path.join(SWAGGER, name), encoding="utf-8") as f:
                self.assertEqual(body, f.read(), name)
        # Only the page's own files: not the package, not a path out of it.
        for name in ("package.json", "..", "validate.mjs", "swagger-ui-dist"):
            self.assertEqual(anon.get("/api/v1/docs/" + name)[0], 404, name)
        # The dashboard links to it.
        with open(os.path.join(harness.SRC, "web", "index.html")) as f:
            self.assertIn('href="/api/v1/docs"', f.read())


if __name__ == "__main__":
    harness.main()
