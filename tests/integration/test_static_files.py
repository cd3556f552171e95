"""The dashboard's static files over HTTP: Content-Type by extension (ES
modules as JavaScript), ETag and Last-Modified on every file, 304 on
If-None-Match / If-Modified-Since, and the fixed /vendor/ paths of the
third-party code (web/vendor/, installed by npm ci)."""
import os
import shutil
import tempfile
import unittest

from harness import SRC, Client, Database, Server, main

FILES = {
    "index.html": b"<!doctype html><title>t</title>",
    "js/app.mjs": b"export const a = 1;\n",
    "js/old.js": b"var a = 1;\n",
    "js/app.mjs.map": b"{}",
    "i18n/en.json": b"{}",
    "css/app.css": b"body{}",
    "img/logo.svg": b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    "fonts/f.woff2": b"wOF2",
    "vendor/node_modules/echarts/dist/echarts.min.js": b"/* echarts */",
    "vendor/node_modules/echarts/package.json": b"{}",
}
TYPES = {
    "/": "text/html; charset=utf-8",
    "/js/app.mjs": "text/javascript; charset=utf-8",
    "/js/old.js": "text/javascript; charset=utf-8",
    "/js/app.mjs.map": "application/json",
    "/i18n/en.json": "application/json",
    "/css/app.css": "text/css; charset=utf-8",
    "/img/logo.svg": "image/svg+xml",
    "/fonts/f.woff2": "font/woff2",
    "/vendor/echarts/echarts.min.js": "text/javascript; charset=utf-8",
}


class StaticFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.web = tempfile.mkdtemp(prefix="ty-web-")
        for name, data in FILES.items():
            path = os.path.join(cls.web, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        cls.db = Database()
        cls.server = Server(cls.db, args=("--web-dir", cls.web), admin=False)
        cls.c = Client(cls.server.url)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            cls.db.close()
            shutil.rmtree(cls.web, ignore_errors=True)

    def test_content_types_and_validators(self):
        for path, ctype in TYPES.items():
            st, _, h = self.c.get(path)
            self.assertEqual(st, 200, path)
            self.assertEqual(h["content-type"], ctype, path)
            self.assertRegex(h.get("etag", ""), r'^"[0-9a-f]+-[0-9a-f]+"$', path)
            self.assertTrue(h.get("last-modified", "").endswith(" GMT"), path)
            self.assertEqual(h["cache-control"], "no-cache", path)

    def test_if_none_match(self):
        st, body, h = self.c.get("/js/app.mjs")
        self.assertEqual(st, 200)
        etag = h["etag"]
        st, body, h2 = self.c.get("/js/app.mjs", headers={"If-None-Match": etag})
        self.assertEqual(st, 304)
        self.assertIsNone(body)
        self.assertEqual(h2["etag"], etag)
        st, _, _ = self.c.get("/js/app.mjs", headers={"If-None-Match": '"other", W/' + etag})
        self.assertEqual(st, 304)
        st, _, _ = self.c.request("HEAD", "/js/app.mjs", headers={"If-None-Match": etag})
        self.assertEqual(st, 304)
        st, _, _ = self.c.get("/js/app.mjs", headers={"If-None-Match": '"other"'})
        self.assertEqual(st, 200)
        # A changed file has a new tag: the old one gets the file again.
        with open(os.path.join(self.web, "js/app.mjs"), "ab") as f:
            f.write(b"export const b = 2;\n")
        st, body, h3 = self.c.get("/js/app.mjs", headers={"If-None-Match": etag})
        self.assertEqual(st, 200)
        self.assertIn("const b", body)
        self.assertNotEqual(h3["etag"], etag)

    def test_if_modified_since(self):
        st, _, h = self.c.get("/css/app.css")
        self.assertEqual(st, 200)
        lm = h["last-modified"]
        st, _, _ = self.c.get("/css/app.css", headers={"If-Modified-Since": lm})
        self.assertEqual(st, 304)
        st, _, _ = self.c.get("/css/app.css",
                              headers={"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})
        self.assertEqual(st, 200)
        st, _, _ = self.c.get("/css/app.css", headers={"If-Modified-Since": "garbage"})
        self.assertEqual(st, 200)
        # If-None-Match decides alone when both are sent.
        st, _, _ = self.c.get("/css/app.css",
                              headers={"If-Modified-Since": lm, "If-None-Match": '"other"'})
        self.assertEqual(st, 200)

    def test_vendor_paths(self):
        st, body, _ = self.c.get("/vendor/echarts/echarts.min.js")
        self.assertEqual(st, 200)
        self.assertEqual(body, "/* echarts */")
        # Only the fixed paths: not the package tree itself.
        for path in ("/vendor/node_modules/echarts/package.json", "/vendor/echarts/package.json",
                     "/vendor/node_modules/echarts/dist/echarts.min.js"):
            st, body, _ = self.c.get(path)
            self.assertEqual(st, 404, path)
            self.assertEqual(body["error"]["code"], "not_found")


class VendorInstalledTest(unittest.TestCase):
    """The real web/ with web/vendor/ as npm ci left it (scripts/test.sh,
    run.sh and build.sh install it): ECharts and its zh-CN locale."""

    @classmethod
    def setUpClass(cls):
        cls.db = Database()
        cls.server = Server(cls.db, args=("--web-dir", os.path.join(SRC, "web")), admin=False)
        cls.c = Client(cls.server.url)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            cls.db.close()

    def test_echarts_served(self):
        st, body, h = self.c.get("/vendor/echarts/echarts.min.js")
        self.assertEqual(st, 200, "web/vendor is not installed: npm ci --prefix web/vendor")
        self.assertEqual(h["content-type"], "text/javascript; charset=utf-8")
        self.assertIn("registerLocale", body)
        st, body, h = self.c.get("/vendor/echarts/echarts.esm.min.mjs")
        self.assertEqual(st, 200)
        self.assertEqual(h["content-type"], "text/javascript; charset=utf-8")
        for path in ("/vendor/echarts/i18n/langZH.js", "/vendor/echarts/i18n/langZH.mjs"):
            st, body, h = self.c.get(path)
            self.assertEqual(st, 200, path)
            self.assertIn("星期日", body, path)
        self.assertIn("export default", body)
        st, _, h2 = self.c.get("/vendor/echarts/i18n/langZH.mjs",
                               headers={"If-None-Match": h["etag"]})
        self.assertEqual(st, 304)


if __name__ == "__main__":
    main()
