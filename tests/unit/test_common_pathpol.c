/*
 * test_common_pathpol.c - unit tests of the data-residency path policy
 * (common/pathpol.c): lexical normalization, root containment, URIs and
 * CIDRs, the hostile/benign corpora in tests/data/paths/, and realpath checks
 * against symlinks built in a mkdtemp directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pathpol.h"

#ifndef TY_SOURCE_DIR
#define TY_SOURCE_DIR "."
#endif

static const char *const roots[] = {"/data", "/srv/trainyard"};
static const char *const cidrs[] = {"10.0.0.0/8"};

/* Expect RC_EPOLICY with code policy_violation and msg in the message. */
static void expect_refused(enum rc rc, const struct err *e, const char *msg)
{
    assert_int_equal(rc, RC_EPOLICY);
    assert_int_equal(e->rc, RC_EPOLICY);
    assert_string_equal(e->code, "policy_violation");
    if (msg != NULL && strstr(e->message, msg) == NULL)
        fail_msg("message: want \"%s\" in \"%s\"", msg, e->message);
}

static void norm_ok(const char *in, const char *want)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    err_init(&e);
    if (pathpol_normalize(in, strlen(in), out, sizeof(out), &e) != RC_OK)
        fail_msg("normalize \"%s\": %s", in, e.message);
    assert_string_equal(out, want);
}

static void norm_bad(const char *in, size_t len, const char *msg)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    err_init(&e);
    expect_refused(pathpol_normalize(in, len, out, sizeof(out), &e), &e, msg);
}

static void test_normalize(void **state)
{
    (void)state;
    norm_ok("/", "/");
    norm_ok("//", "/");
    norm_ok("/data/set1", "/data/set1");
    norm_ok("/data/set1/", "/data/set1");
    norm_ok("//data///set1//", "/data/set1");
    norm_ok("/data/./set1/.", "/data/set1");
    norm_ok("/data/a/../set1", "/data/set1");
    norm_ok("/data/a/b/../../set1", "/data/set1");
    norm_ok("/data/..", "/");
    norm_ok("/data/...", "/data/...");
    norm_ok("/data/..a/a..", "/data/..a/a..");
    norm_ok("/data/\xe4\xb8\xad\xe6\x96\x87", "/data/\xe4\xb8\xad\xe6\x96\x87");

    norm_bad("", 0, "path is empty");
    norm_bad("data/x", 6, "path must be absolute");
    norm_bad("/..", 3, "path escapes above '/'");
    norm_bad("/data/../..", 11, "path escapes above '/'");
    norm_bad("/data/%2e%2e", 12, "percent-encoded characters are not allowed in paths");
    norm_bad("/data\\x", 7, "backslashes are not allowed in paths");
    norm_bad("/data/x\0/../..", 14, "NUL bytes are not allowed in paths");
    norm_bad("/data/\n", 7, "control characters are not allowed in paths");
    norm_bad("/data/\xef\xbc\x8f", 9, "look-alikes");
    norm_bad("/data/\xe2\x80\x8b", 9, "invisible");
    norm_bad("/data/\xc0\xae", 8, "not valid UTF-8");
    norm_bad("/data/\xe4\xb8", 8, "not valid UTF-8");
    {
        /* len bounds the input: a NUL after len is not looked at */
        char out[PATHPOL_BUF_SIZE];
        struct err e;
        assert_int_equal(pathpol_normalize("/data\0/x", 5, out, sizeof(out), &e), RC_OK);
        assert_string_equal(out, "/data");
    }
    {
        /* the detail quotes the value, escaping bytes */
        char out[PATHPOL_BUF_SIZE];
        struct err e;
        err_init(&e);
        assert_int_equal(pathpol_normalize("/a%b\x01", 5, out, sizeof(out), &e), RC_EPOLICY);
        assert_string_equal(e.detail, "got \"/a%b\\x01\"");
        assert_string_equal(out, "");
    }
}

static void test_lengths(void **state)
{
    char in[8192];
    char out[PATHPOL_BUF_SIZE];
    char small[8];
    struct err e;
    size_t n = 0;

    (void)state;
    /* 4095 bytes made of 255-byte components: accepted */
    while (n < PATHPOL_PATH_MAX) {
        in[n++] = '/';
        for (size_t i = 0; i < 255 && n < PATHPOL_PATH_MAX; i++)
            in[n++] = 'a';
    }
    in[n] = '\0';
    assert_int_equal(strlen(in), 4095);
    err_init(&e);
    assert_int_equal(pathpol_normalize(in, n, out, sizeof(out), &e), RC_OK);
    assert_string_equal(out, in);
    /* one more byte: refused */
    in[n++] = 'a';
    in[n] = '\0';
    norm_bad(in, n, "path is too long");
    /* a component of 255 is fine, 256 is not */
    in[0] = '/';
    memset(in + 1, 'b', 256);
    norm_bad(in, 257, "longer than 255 bytes");
    assert_int_equal(pathpol_normalize(in, 256, out, sizeof(out), &e), RC_OK);
    /* a long escape made of many ".." */
    n = 0;
    memcpy(in, "/data", 5);
    n = 5;
    while (n + 3 < 4000) {
        memcpy(in + n, "/..", 3);
        n += 3;
    }
    norm_bad(in, n, "escapes");
    /* output buffer too small */
    assert_int_equal(pathpol_normalize("/data/set1", 10, small, sizeof(small), &e), RC_ETOOBIG);
}

static void check_ok(const char *path, const char *const *r, size_t nr, const char *want)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    err_init(&e);
    if (pathpol_check(path, r, nr, out, sizeof(out), &e) != RC_OK)
        fail_msg("check \"%s\": %s", path, e.message);
    assert_string_equal(out, want);
}

static void check_bad(const char *path, const char *const *r, size_t nr, const char *msg)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    err_init(&e);
    expect_refused(pathpol_check(path, r, nr, out, sizeof(out), &e), &e, msg);
}

static void test_check(void **state)
{
    static const char *const messy_roots[] = {"//data/", "/srv/./trainyard/x/..", "relative",
                                              "/bad%root", NULL};
    static const char *const slash[] = {"/"};

    (void)state;
    check_ok("/data", roots, 2, "/data");
    check_ok("/data/set1/", roots, 2, "/data/set1");
    check_ok("/srv/trainyard/a/../b", roots, 2, "/srv/trainyard/b");
    check_ok("file:///data/x", roots, 2, "/data/x");
    check_ok("file://localhost/data/x", roots, 2, "/data/x");
    check_ok("file:/data/x", roots, 2, "/data/x");
    check_bad("/data2", roots, 2, "path escapes the allowed storage roots");
    check_bad("/dat", roots, 2, "path escapes the allowed storage roots");
    check_bad("/srv", roots, 2, "escapes");
    check_bad("/data/../etc", roots, 2, "escapes");
    check_bad("/data/x", roots, 0, "escapes");
    check_bad("/data/x", NULL, 0, "escapes");
    check_bad("file://host/data/x", roots, 2, "file URIs must not name a host");
    check_bad("http://10.0.0.1/data", roots, 2, "no internal networks are configured");
    check_bad("gopher://x/", roots, 2, "URI scheme is not allowed");
    check_bad("data/x", roots, 2, "path must be absolute");
    check_bad(NULL, roots, 2, "path is empty");
    check_bad("", roots, 2, "path is empty");
    /* roots are normalized; bad roots never match */
    check_ok("/data/x", messy_roots, 5, "/data/x");
    check_ok("/srv/trainyard/y", messy_roots, 5, "/srv/trainyard/y");
    check_bad("/bad%root/x", messy_roots, 5, "percent");
    check_bad("/relative/x", messy_roots, 5, "escapes");
    /* "/" as a root allows every absolute path */
    check_ok("/etc/x", slash, 1, "/etc/x");
    {
        struct err e;
        err_init(&e);
        assert_int_equal(pathpol_check("/data/x", roots, 2, NULL, 0, &e), RC_ETOOBIG);
    }
}

static void test_cidr(void **state)
{
    static const char *const bad[] = {
        "",         "10.0.0.0/",    "10.0.0.0/33",     "10.0.0.0/-1",
        "10.0.0/8", "010.0.0.0/8",  "10.0.0.0/08",     "x/8",
        "::/129",   "10.0.0.0/8/8", "fe80::1%eth0/64", "10.0.0.0 /8",
    };
    struct pathpol_cidr c;
    struct err e;

    (void)state;
    err_init(&e);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (pathpol_parse_cidr(bad[i], &c, &e) != RC_EINVAL)
            fail_msg("cidr \"%s\" accepted", bad[i]);
        assert_string_equal(e.message, "invalid CIDR");
    }
    assert_int_equal(pathpol_parse_cidr(NULL, &c, &e), RC_EINVAL);

    assert_int_equal(pathpol_parse_cidr("10.0.0.0/8", &c, &e), RC_OK);
    assert_int_equal(c.family, 4);
    assert_int_equal(c.prefix, 8);
    assert_true(pathpol_ip_in_cidr("10.0.0.0", &c));
    assert_true(pathpol_ip_in_cidr("10.255.255.255", &c));
    assert_true(pathpol_ip_in_cidr("::ffff:10.1.2.3", &c));
    assert_false(pathpol_ip_in_cidr("11.0.0.0", &c));
    assert_false(pathpol_ip_in_cidr("9.255.255.255", &c));
    assert_false(pathpol_ip_in_cidr("010.0.0.1", &c));
    assert_false(pathpol_ip_in_cidr("10.0.0", &c));
    assert_false(pathpol_ip_in_cidr("10.0.0.1.", &c));
    assert_false(pathpol_ip_in_cidr("10.0.0.256", &c));
    assert_false(pathpol_ip_in_cidr("fd00::1", &c));
    assert_false(pathpol_ip_in_cidr("", &c));
    assert_false(pathpol_ip_in_cidr(NULL, &c));

    /* host bits are cleared */
    assert_int_equal(pathpol_parse_cidr("192.168.77.9/20", &c, &e), RC_OK);
    assert_int_equal(c.addr[2], 64);
    assert_int_equal(c.addr[3], 0);
    assert_true(pathpol_ip_in_cidr("192.168.79.255", &c));
    assert_false(pathpol_ip_in_cidr("192.168.80.0", &c));
    assert_false(pathpol_ip_in_cidr("192.168.63.255", &c));

    assert_int_equal(pathpol_parse_cidr("172.16.5.4", &c, &e), RC_OK);
    assert_int_equal(c.prefix, 32);
    assert_true(pathpol_ip_in_cidr("172.16.5.4", &c));
    assert_false(pathpol_ip_in_cidr("172.16.5.5", &c));

    assert_int_equal(pathpol_parse_cidr("0.0.0.0/0", &c, &e), RC_OK);
    assert_true(pathpol_ip_in_cidr("8.8.8.8", &c));
    assert_false(pathpol_ip_in_cidr("::1", &c));

    assert_int_equal(pathpol_parse_cidr("fd00::/8", &c, &e), RC_OK);
    assert_int_equal(c.family, 6);
    assert_true(pathpol_ip_in_cidr("fd12:3456::1", &c));
    assert_true(pathpol_ip_in_cidr("FDFF::", &c));
    assert_false(pathpol_ip_in_cidr("fe00::1", &c));
    assert_false(pathpol_ip_in_cidr("10.0.0.1", &c));
    assert_false(pathpol_ip_in_cidr("fd00::1%eth0", &c));

    assert_int_equal(pathpol_parse_cidr("2001:db8::/33", &c, &e), RC_OK);
    assert_true(pathpol_ip_in_cidr("2001:db8:7fff::1", &c));
    assert_false(pathpol_ip_in_cidr("2001:db8:8000::1", &c));
    assert_int_equal(pathpol_parse_cidr("::1/128", &c, &e), RC_OK);
    assert_true(pathpol_ip_in_cidr("::1", &c));
    assert_false(pathpol_ip_in_cidr("::2", &c));
}

static void uri_ok(const char *uri)
{
    struct err e;

    err_init(&e);
    if (pathpol_check_uri(uri, roots, 2, cidrs, 1, &e) != RC_OK)
        fail_msg("uri \"%s\" refused: %s", uri, e.message);
}

static void uri_bad(const char *uri, const char *msg)
{
    struct err e;

    err_init(&e);
    expect_refused(pathpol_check_uri(uri, roots, 2, cidrs, 1, &e), &e, msg);
}

static void test_uri_messages(void **state)
{
    static const char *const v6[] = {"fd00::/8", "garbage", NULL};
    struct err e;

    (void)state;
    uri_ok("http://10.0.0.1/data");
    uri_ok("/data/x");
    uri_bad("http://8.8.8.8/x", "URI host is outside the allowed networks");
    uri_bad("http://evil.example/x", "host names are not allowed");
    uri_bad("http://user@10.0.0.1/x", "user names or credentials are not allowed");
    uri_bad("http://10.0.0.1/%2e", "percent-encoded characters are not allowed in URIs");
    uri_bad("http://10.0.0.1:65536/", "invalid port");
    uri_bad("http://[::1/", "malformed IPv6 host");
    uri_bad("http://[::1]x/", "malformed IPv6 host");
    uri_bad("http://[10.0.0.1]/", "malformed IPv6 host");
    uri_bad("http://10.0.0.1/../x", "escapes above");
    uri_bad("http://", "URI has no host");
    uri_bad("ssh://10.0.0.1/", "URI scheme is not allowed");
    uri_ok("http://10.0.0.1:65535/");
    uri_ok("http://10.0.0.1?x=/../..");
    /* IPv6 networks */
    err_init(&e);
    assert_int_equal(pathpol_check_uri("http://[fd00::5]:8080/x", roots, 2, v6, 3, &e), RC_OK);
    assert_int_equal(pathpol_check_uri("http://[fe80::5]/x", roots, 2, v6, 3, &e), RC_EPOLICY);
    assert_int_equal(pathpol_check_uri("http://10.0.0.1/x", roots, 2, v6, 3, &e), RC_EPOLICY);
    /* without CIDRs every remote URI is refused */
    assert_int_equal(pathpol_check_uri("http://10.0.0.1/x", roots, 2, NULL, 0, &e), RC_EPOLICY);
}

/* Decode C-style escapes (\xNN, \\, \n, \t, \0) of line into buf; returns the length. */
static size_t decode_line(const char *line, char *buf, size_t size)
{
    size_t o = 0;

    for (size_t i = 0; line[i] != '\0' && line[i] != '\n' && o + 1 < size; i++) {
        if (line[i] != '\\') {
            buf[o++] = line[i];
            continue;
        }
        i++;
        if (line[i] == 'x') {
            unsigned v;
            if (sscanf(line + i + 1, "%2x", &v) != 1)
                fail_msg("bad escape in \"%s\"", line);
            buf[o++] = (char)v;
            i += 2;
        } else if (line[i] == '\\') {
            buf[o++] = '\\';
        } else if (line[i] == 'n') {
            buf[o++] = '\n';
        } else if (line[i] == 't') {
            buf[o++] = '\t';
        } else if (line[i] == '0') {
            buf[o++] = '\0';
        } else {
            fail_msg("bad escape in \"%s\"", line);
        }
    }
    buf[o] = '\0';
    return o;
}

/* Call fn on each decoded line of tests/data/paths/<name>; returns the count. */
static size_t each_line(const char *name, void (*fn)(const char *, size_t))
{
    char path[1024];
    char line[8192];
    char buf[8192];
    size_t count = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/data/paths/%s", TY_SOURCE_DIR, name);
    f = fopen(path, "r");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t len = decode_line(line, buf, sizeof(buf));
        if (len == 0)
            continue;
        fn(buf, len);
        count++;
    }
    fclose(f);
    return count;
}

static void hostile_one(const char *s, size_t len)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;
    enum rc rc;

    err_init(&e);
    rc = pathpol_check_uri(s, roots, 2, cidrs, 1, &e);
    if (rc != RC_EPOLICY)
        fail_msg("hostile \"%s\" not refused (rc %d)", s, (int)rc);
    assert_string_equal(e.code, "policy_violation");
    assert_true(e.message[0] != '\0');
    /* paths with a NUL are also refused when the full length is given */
    if (memchr(s, '\0', len) != NULL && s[0] == '/')
        assert_int_equal(pathpol_normalize(s, len, out, sizeof(out), &e), RC_EPOLICY);
    /* and never accepted by the path-only check either */
    assert_int_not_equal(pathpol_check(s, roots, 2, out, sizeof(out), &e), RC_OK);
}

static void benign_one(const char *s, size_t len)
{
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    (void)len;
    err_init(&e);
    if (pathpol_check_uri(s, roots, 2, cidrs, 1, &e) != RC_OK)
        fail_msg("benign \"%s\" refused: %s (%s)", s, e.message, e.detail);
    if (s[0] == '/' || strncasecmp(s, "file:", 5) == 0) {
        assert_int_equal(pathpol_check(s, roots, 2, out, sizeof(out), &e), RC_OK);
        assert_true(strncmp(out, "/data", 5) == 0 || strncmp(out, "/srv/trainyard", 14) == 0);
    }
}

static void test_corpus(void **state)
{
    (void)state;
    assert_true(each_line("hostile.txt", hostile_one) >= 60);
    assert_true(each_line("benign.txt", benign_one) >= 20);
}

static void test_long_generated(void **state)
{
    char *p = malloc(70000);
    struct err e;
    size_t n;

    (void)state;
    assert_non_null(p);
    /* overlong path inside a root */
    memcpy(p, "/data/", 6);
    memset(p + 6, 'x', 5000);
    p[5006] = '\0';
    for (size_t i = 6; i < 5006; i += 200)
        p[i] = '/';
    uri_bad(p, "path is too long");
    /* overlong component */
    memset(p + 6, 'y', 300);
    p[306] = '\0';
    uri_bad(p, "longer than 255 bytes");
    /* 60000 bytes of "/.." */
    memcpy(p, "/data", 5);
    for (n = 5; n + 3 < 60000; n += 3)
        memcpy(p + n, "/..", 3);
    p[n] = '\0';
    uri_bad(p, "too long");
    /* overlong remote URI */
    n = (size_t)snprintf(p, 100, "http://10.0.0.1/");
    memset(p + n, 'z', 5000);
    p[n + 5000] = '\0';
    err_init(&e);
    assert_int_equal(pathpol_check_uri(p, roots, 2, cidrs, 1, &e), RC_EPOLICY);
    free(p);
}

/* ---- realpath checks on a real directory tree ---- */

struct tree {
    char base[256];  /* mkdtemp result */
    char real[4096]; /* its realpath */
};

static void path_join(char *buf, size_t size, const char *a, const char *b)
{
    if ((size_t)snprintf(buf, size, "%s/%s", a, b) >= size)
        fail_msg("path too long");
}

static void mk_dir(const struct tree *t, const char *rel)
{
    char p[4096];

    path_join(p, sizeof(p), t->base, rel);
    assert_int_equal(mkdir(p, 0700), 0);
}

static void mk_link(const struct tree *t, const char *target, const char *rel)
{
    char p[4096];

    path_join(p, sizeof(p), t->base, rel);
    assert_int_equal(symlink(target, p), 0);
}

static void rm_path(const struct tree *t, const char *rel, int dir)
{
    char p[4096];

    path_join(p, sizeof(p), t->base, rel);
    if (dir)
        assert_int_equal(rmdir(p), 0);
    else
        assert_int_equal(unlink(p), 0);
}

static void rp_ok(const struct tree *t, const char *rel, const char *root_rel, const char *want_rel)
{
    char p[4096], r[4096], want[4096], out[PATHPOL_BUF_SIZE];
    const char *rs[1];
    struct err e;

    path_join(p, sizeof(p), t->base, rel);
    path_join(r, sizeof(r), t->base, root_rel);
    path_join(want, sizeof(want), t->real, want_rel);
    rs[0] = r;
    err_init(&e);
    if (pathpol_realpath_check(p, rs, 1, out, sizeof(out), &e) != RC_OK)
        fail_msg("realpath check \"%s\": %s (%s)", rel, e.message, e.detail);
    assert_string_equal(out, want);
}

static void rp_bad(const struct tree *t, const char *rel, const char *root_rel, const char *msg)
{
    char p[4096], r[4096], out[PATHPOL_BUF_SIZE];
    const char *rs[1];
    struct err e;

    path_join(p, sizeof(p), t->base, rel);
    path_join(r, sizeof(r), t->base, root_rel);
    rs[0] = r;
    err_init(&e);
    expect_refused(pathpol_realpath_check(p, rs, 1, out, sizeof(out), &e), &e, msg);
    assert_string_equal(out, "");
}

static void test_realpath(void **state)
{
    struct tree t;
    char outside[4096];
    char target[4096];
    char out[PATHPOL_BUF_SIZE];
    struct err e;

    (void)state;
    snprintf(t.base, sizeof(t.base), "%s", "/tmp/ty_pathpol_XXXXXX");
    assert_non_null(mkdtemp(t.base));
    assert_non_null(realpath(t.base, t.real));

    mk_dir(&t, "root");
    mk_dir(&t, "root/inside");
    mk_dir(&t, "outside");
    path_join(outside, sizeof(outside), t.base, "outside");
    mk_link(&t, outside, "root/escape");          /* absolute link out */
    mk_link(&t, "../outside", "root/escape_rel"); /* relative link out */
    mk_link(&t, "loop2", "root/loop1");           /* loop */
    mk_link(&t, "loop1", "root/loop2");
    mk_link(&t, "inside", "root/ok"); /* link within */
    path_join(target, sizeof(target), outside, "newfile");
    mk_link(&t, target, "root/dangling");          /* dangling, pointing out */
    mk_link(&t, "root", "rootlink");               /* the root reached via a link */
    mk_link(&t, "../root/inside", "outside/back"); /* outside link pointing back in */

    rp_ok(&t, "root", "root", "root");
    rp_ok(&t, "root/inside", "root", "root/inside");
    rp_ok(&t, "root/inside/new/deeper/file", "root", "root/inside/new/deeper/file");
    rp_ok(&t, "root/ok", "root", "root/inside");
    rp_ok(&t, "root/ok/x", "root", "root/inside/x");
    rp_ok(&t, "root//./inside/", "root", "root/inside");
    rp_ok(&t, "root/inside", "rootlink", "root/inside");
    rp_ok(&t, "rootlink/inside/y", "root", "root/inside/y");
    rp_ok(&t, "outside/back/z", "root", "root/inside/z");

    rp_bad(&t, "root/escape", "root", "path escapes the allowed storage roots");
    rp_bad(&t, "root/escape/new/file", "root", "path escapes the allowed storage roots");
    rp_bad(&t, "root/escape_rel", "root", "escapes");
    rp_bad(&t, "root/loop1", "root", "symbolic link loop");
    rp_bad(&t, "root/loop1/x", "root", "symbolic link loop");
    rp_bad(&t, "root/dangling", "root", "dangling symbolic link");
    rp_bad(&t, "root/../outside", "root", "'..' is not allowed");
    rp_bad(&t, "root/inside/..", "root", "'..' is not allowed");
    rp_bad(&t, "outside", "root", "escapes");
    rp_bad(&t, "root/x", "nonexistent_root", "escapes");
    rp_bad(&t, "root/%2e", "root", "percent");

    err_init(&e);
    assert_int_equal(pathpol_realpath_check("relative", roots, 2, out, sizeof(out), &e),
                     RC_EPOLICY);
    assert_int_equal(pathpol_realpath_check(NULL, roots, 2, out, sizeof(out), &e), RC_EPOLICY);

    rm_path(&t, "outside/back", 0);
    rm_path(&t, "rootlink", 0);
    rm_path(&t, "root/dangling", 0);
    rm_path(&t, "root/ok", 0);
    rm_path(&t, "root/loop2", 0);
    rm_path(&t, "root/loop1", 0);
    rm_path(&t, "root/escape_rel", 0);
    rm_path(&t, "root/escape", 0);
    rm_path(&t, "outside", 1);
    rm_path(&t, "root/inside", 1);
    rm_path(&t, "root", 1);
    assert_int_equal(rmdir(t.base), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),      cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_check),          cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_uri_messages),   cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_long_generated), cmocka_unit_test(test_realpath),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
