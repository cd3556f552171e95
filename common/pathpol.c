/*
 * pathpol.c - data-residency path policy (see pathpol.h for the contract).
 *
 * The rules are deliberately stricter than POSIX: anything a later consumer
 * (a shell, an HTTP client, a URI library, a Unicode-normalizing file system)
 * could read differently from this module is refused rather than interpreted.
 * That is why '%', '\\', look-alike and invisible characters are errors and
 * not decoded: decoding here and a second decode elsewhere is the classic
 * double-decoding escape.
 *
 * No globals, no allocation except realpath(3)'s result, so everything is
 * reentrant.
 */
#include "pathpol.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define POLICY_CODE "policy_violation"

void pathpol_quote(const char *s, size_t len, char *buf, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    const size_t keep = 96; /* bytes of output before "..." */
    size_t o = 0;

    for (size_t i = 0; i < len && o + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];

        if (o >= keep) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = '\0';
}

/* Fill e with a policy refusal quoting the value; returns RC_EPOLICY. */
static enum rc refuse(struct err *e, const char *msg, const char *val, size_t len)
{
    char q[128];

    err_set(e, RC_EPOLICY, NULL, "%s", msg);
    err_code(e, POLICY_CODE);
    if (val != NULL) {
        pathpol_quote(val, len, q, sizeof(q));
        err_detail(e, "got \"%s\"", q);
    }
    return RC_EPOLICY;
}

/*
 * Decode one UTF-8 sequence from s[0..n). Returns its length and sets *cp, or
 * 0 when the sequence is invalid (truncated, overlong, surrogate, > U+10FFFF).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t min;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        *cp = c & 0x1fu;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        *cp = c & 0x0fu;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        *cp = c & 0x07u;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        *cp = (*cp << 6) | (s[i] & 0x3fu);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
        return 0;
    return len;
}

/* Unicode characters that render like '/', '\\' or '.', or combine into them. */
static int is_lookalike(uint32_t cp)
{
    static const uint32_t list[] = {
        0x0337, 0x0338,         /* combining short/long solidus overlay */
        0x2024, 0x2025, 0x2026, /* one/two dot leader, ellipsis */
        0x2044,                 /* fraction slash */
        0x2215, 0x2216,         /* division slash, set minus */
        0x2571, 0x2572,         /* box drawings diagonals */
        0x29f8, 0x29f9,         /* big solidus, big reverse solidus */
        0x3002,                 /* ideographic full stop */
        0xfe52, 0xfe68,         /* small full stop, small reverse solidus */
        0xff0e, 0xff0f, 0xff3c, /* fullwidth full stop, solidus, reverse solidus */
        0xff61,                 /* halfwidth ideographic full stop */
    };
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
        if (list[i] == cp)
            return 1;
    }
    return 0;
}

/* Zero-width, bidi and other invisible format characters. */
static int is_invisible(uint32_t cp)
{
    return cp == 0x00ad || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206f) || cp == 0xfeff;
}

/* The character rules shared by every check; RC_OK or RC_EPOLICY. */
static enum rc check_chars(const char *in, size_t len, struct err *e)
{
    const unsigned char *s = (const unsigned char *)in;

    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n;

        if (s[i] == '\0')
            return refuse(e, "NUL bytes are not allowed in paths", in, len);
        if (s[i] == '%')
            return refuse(e, "percent-encoded characters are not allowed in paths", in, len);
        if (s[i] == '\\')
            return refuse(e, "backslashes are not allowed in paths", in, len);
        n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return refuse(e, "path is not valid UTF-8", in, len);
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
            return refuse(e, "control characters are not allowed in paths", in, len);
        if (is_lookalike(cp))
            return refuse(e, "look-alikes of '/', '\\' or '.' are not allowed in paths", in, len);
        if (is_invisible(cp))
            return refuse(e, "invisible formatting characters are not allowed in paths", in, len);
        i += n;
    }
    return RC_OK;
}

enum rc pathpol_normalize(const char *in, size_t len, char *out, size_t out_size, struct err *e)
{
    size_t olen = 0;
    size_t i = 0;
    enum rc rc;

    if (out == NULL || out_size < 2)
        return err_set(e, RC_ETOOBIG, NULL, "path buffer is too small");
    out[0] = '\0';
    if (in == NULL || len == 0)
        return refuse(e, "path is empty", NULL, 0);
    if (len > PATHPOL_PATH_MAX) {
        refuse(e, "path is too long", NULL, 0);
        err_detail(e, "got %zu bytes, at most %d allowed", len, PATHPOL_PATH_MAX);
        return RC_EPOLICY;
    }
    rc = check_chars(in, len, e);
    if (rc != RC_OK)
        return rc;
    if (in[0] != '/')
        return refuse(e, "path must be absolute", in, len);

    while (i < len) {
        size_t start, clen;

        while (i < len && in[i] == '/')
            i++;
        start = i;
        while (i < len && in[i] != '/')
            i++;
        clen = i - start;
        if (clen == 0)
            break;
        if (clen > PATHPOL_NAME_MAX)
            return refuse(e, "a path component is longer than 255 bytes", in, len);
        if (clen == 1 && in[start] == '.')
            continue;
        if (clen == 2 && in[start] == '.' && in[start + 1] == '.') {
            if (olen == 0)
                return refuse(e, "path escapes above '/'", in, len);
            while (olen > 0 && out[olen - 1] != '/')
                olen--;
            olen--; /* the '/' itself; olen >= 1 because out[0] == '/' */
            continue;
        }
        if (olen + 1 + clen + 1 > out_size)
            return err_set(e, RC_ETOOBIG, NULL, "path buffer is too small");
        out[olen++] = '/';
        memcpy(out + olen, in + start, clen);
        olen += clen;
    }
    if (olen == 0)
        out[olen++] = '/';
    out[olen] = '\0';
    return RC_OK;
}

/* Whether normalized path p equals normalized root r or lies below it. */
static int is_inside(const char *p, const char *r)
{
    size_t rl = strlen(r);

    if (strcmp(r, "/") == 0)
        return 1;
    return strncmp(p, r, rl) == 0 && (p[rl] == '\0' || p[rl] == '/');
}

/* Normalize the path s[0..len) and require it inside one of the roots. */
static enum rc check_path(const char *s, size_t len, const char *const *roots, size_t nroots,
                          char *out, size_t out_size, struct err *e)
{
    char rbuf[PATHPOL_BUF_SIZE];
    enum rc rc;

    rc = pathpol_normalize(s, len, out, out_size, e);
    if (rc != RC_OK)
        return rc;
    for (size_t i = 0; i < nroots; i++) {
        if (roots == NULL || roots[i] == NULL)
            continue;
        if (pathpol_normalize(roots[i], strlen(roots[i]), rbuf, sizeof(rbuf), NULL) != RC_OK)
            continue;
        if (is_inside(out, rbuf))
            return RC_OK;
    }
    rc = refuse(e, "path escapes the allowed storage roots", out, strlen(out));
    out[0] = '\0';
    return rc;
}

/* Length of a URI scheme at s ("s3" for "s3://..."), 0 if s has none. */
static size_t scheme_len(const char *s)
{
    size_t i = 0;

    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    for (i = 1; s[i] != '\0' && s[i] != ':'; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '-' || c == '.'))
            return 0;
    }
    return s[i] == ':' ? i : 0;
}

static int scheme_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

/* Remote schemes whose authority is host[:port]. */
static int is_remote_scheme(const char *s, size_t n)
{
    static const char *const names[] = {"http", "https", "hdfs", "webhdfs", "nfs", "s3", "ftp"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (scheme_is(s, n, names[i]))
            return 1;
    }
    return 0;
}

/* A file: URI: "file:///p", "file://localhost/p" or "file:/p". */
static enum rc check_file_uri(const char *uri, size_t slen, const char *const *roots, size_t nroots,
                              char *out, size_t out_size, struct err *e)
{
    const char *p = uri + slen + 1;

    if (strchr(p, '?') != NULL || strchr(p, '#') != NULL)
        return refuse(e, "file URIs must not have a query or fragment", uri, strlen(uri));
    if (strncmp(p, "//", 2) == 0) {
        p += 2;
        if (strncasecmp(p, "localhost/", 10) == 0)
            p += 9;
        else if (p[0] != '/')
            return refuse(e, "file URIs must not name a host", uri, strlen(uri));
    }
    if (p[0] != '/')
        return refuse(e, "file URIs must hold an absolute path", uri, strlen(uri));
    return check_path(p, strlen(p), roots, nroots, out, out_size, e);
}

/* Strict dotted-decimal IPv4: four parts 0..255, no leading zeros. */
static int parse_ipv4(const char *s, size_t n, uint8_t out[4])
{
    size_t i = 0;

    for (int part = 0; part < 4; part++) {
        unsigned v = 0;
        size_t digits = 0;

        if (part > 0) {
            if (i >= n || s[i] != '.')
                return 0;
            i++;
        }
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (digits > 0 && v == 0)
                return 0; /* leading zero: octal on some stacks */
            v = v * 10 + (unsigned)(s[i] - '0');
            if (v > 255)
                return 0;
            digits++;
            i++;
        }
        if (digits == 0)
            return 0;
        out[part] = (uint8_t)v;
    }
    return i == n;
}

/*
 * Parse an IPv4 or unbracketed IPv6 literal s[0..n). With map_v4, an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) comes back as IPv4.
 */
static int parse_ip(const char *s, size_t n, int map_v4, int *family, uint8_t addr[16])
{
    char tmp[64];
    struct in6_addr a6;

    memset(addr, 0, 16);
    if (parse_ipv4(s, n, addr)) {
        *family = 4;
        return 1;
    }
    if (n == 0 || n >= sizeof(tmp) || memchr(s, ':', n) == NULL || memchr(s, '%', n) != NULL)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET6, tmp, &a6) != 1)
        return 0;
    memcpy(addr, &a6, 16);
    *family = 6;
    if (map_v4) {
        static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(addr, prefix, 12) == 0) {
            memmove(addr, addr + 12, 4);
            memset(addr + 4, 0, 12);
            *family = 4;
        }
    }
    return 1;
}

static int addr_in_cidr(int family, const uint8_t addr[16], const struct pathpol_cidr *c)
{
    unsigned bits = c->prefix;
    size_t full = bits / 8;

    if (c->family != family)
        return 0;
    if (memcmp(addr, c->addr, full) != 0)
        return 0;
    if (bits % 8 != 0) {
        uint8_t mask = (uint8_t)(0xffu << (8 - bits % 8));
        if ((addr[full] & mask) != (c->addr[full] & mask))
            return 0;
    }
    return 1;
}

enum rc pathpol_parse_cidr(const char *s, struct pathpol_cidr *out, struct err *e)
{
    const char *slash;
    size_t alen;
    unsigned prefix = 0;
    unsigned max;
    struct pathpol_cidr c;

    memset(&c, 0, sizeof(c));
    if (s == NULL || out == NULL)
        return err_set(e, RC_EINVAL, NULL, "invalid CIDR");
    slash = strchr(s, '/');
    alen = slash ? (size_t)(slash - s) : strlen(s);
    if (!parse_ip(s, alen, 0, &c.family, c.addr))
        goto bad;
    max = c.family == 4 ? 32 : 128;
    if (slash == NULL) {
        prefix = max;
    } else {
        const char *p = slash + 1;
        size_t digits = 0;

        if (p[0] == '0' && p[1] != '\0')
            goto bad;
        for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
            prefix = prefix * 10 + (unsigned)(*p - '0');
        if (digits == 0 || *p != '\0' || prefix > max)
            goto bad;
    }
    c.prefix = prefix;
    /* Clear host bits, so "10.1.2.3/8" means 10.0.0.0/8. */
    for (unsigned bit = prefix; bit < 128; bit++)
        c.addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
    *out = c;
    return RC_OK;
bad:
    err_set(e, RC_EINVAL, NULL, "invalid CIDR");
    if (e != NULL) {
        char q[128];
        pathpol_quote(s, strlen(s), q, sizeof(q));
        err_detail(e, "got \"%s\"", q);
    }
    return RC_EINVAL;
}

int pathpol_ip_in_cidr(const char *ip, const struct pathpol_cidr *cidr)
{
    int family;
    uint8_t addr[16];

    if (ip == NULL || cidr == NULL || !parse_ip(ip, strlen(ip), 1, &family, addr))
        return 0;
    return addr_in_cidr(family, addr, cidr);
}

/* Port digits p[0..n): 1..65535, no sign, no leading zero. */
static int valid_port(const char *p, size_t n)
{
    unsigned v = 0;

    if (n == 0 || n > 5 || p[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

/* scheme://host[:port][/path][?query][#fragment] with an IP literal host. */
static enum rc check_remote_uri(const char *uri, size_t slen, const char *const *cidrs,
                                size_t ncidrs, struct err *e)
{
    size_t len = strlen(uri);
    const char *auth, *end, *host, *port = NULL;
    size_t hlen, plen = 0;
    int family;
    uint8_t addr[16];
    char pbuf[PATHPOL_BUF_SIZE];
    const char *path;
    size_t pathlen;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)uri[i];
        if (c == '%')
            return refuse(e, "percent-encoded characters are not allowed in URIs", uri, len);
        if (c == '\\')
            return refuse(e, "backslashes are not allowed in URIs", uri, len);
        if (c <= 0x20 || c >= 0x7f)
            return refuse(e, "URIs may contain only printable ASCII characters", uri, len);
    }
    if (strncmp(uri + slen, "://", 3) != 0)
        return refuse(e, "remote URIs must have the form scheme://host/path", uri, len);
    auth = uri + slen + 3;
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(end - auth)) != NULL || strchr(uri, '@') != NULL)
        return refuse(e, "user names or credentials are not allowed in URIs", uri, len);
    if (end == auth)
        return refuse(e, "URI has no host", uri, len);
    if (auth[0] == '[') {
        const char *rb = memchr(auth, ']', (size_t)(end - auth));
        if (rb == NULL)
            return refuse(e, "URI has a malformed IPv6 host", uri, len);
        host = auth + 1;
        hlen = (size_t)(rb - host);
        if (rb + 1 < end) {
            if (rb[1] != ':')
                return refuse(e, "URI has a malformed IPv6 host", uri, len);
            port = rb + 2;
        }
        if (!parse_ip(host, hlen, 1, &family, addr) || memchr(host, ':', hlen) == NULL)
            return refuse(e, "URI has a malformed IPv6 host", uri, len);
    } else {
        const char *colon = memchr(auth, ':', (size_t)(end - auth));
        host = auth;
        hlen = colon ? (size_t)(colon - auth) : (size_t)(end - auth);
        if (colon != NULL)
            port = colon + 1;
        if (!parse_ipv4(host, hlen, addr))
            return refuse(e,
                          "host names are not allowed in URIs: use an IP address inside "
                          "the allowed networks",
                          uri, len);
        family = 4;
    }
    if (port != NULL) {
        plen = (size_t)(end - port);
        if (!valid_port(port, plen))
            return refuse(e, "URI has an invalid port", uri, len);
    }
    path = end;
    pathlen = strcspn(path, "?#");
    if (pathlen > 0 && pathpol_normalize(path, pathlen, pbuf, sizeof(pbuf), e) != RC_OK)
        return RC_EPOLICY;
    for (size_t i = 0; i < ncidrs; i++) {
        struct pathpol_cidr c;
        if (cidrs == NULL || cidrs[i] == NULL || pathpol_parse_cidr(cidrs[i], &c, NULL) != RC_OK)
            continue;
        if (addr_in_cidr(family, addr, &c))
            return RC_OK;
    }
    return refuse(e, "URI host is outside the allowed networks", uri, len);
}

/* Paths, file: URIs, and (with cidrs) remote URIs. */
static enum rc check_any(const char *s, const char *const *roots, size_t nroots,
                         const char *const *cidrs, size_t ncidrs, char *out, size_t out_size,
                         struct err *e)
{
    size_t slen;

    if (out != NULL && out_size > 0)
        out[0] = '\0';
    if (s == NULL || s[0] == '\0')
        return refuse(e, "path is empty", NULL, 0);
    if (s[0] == '/')
        return check_path(s, strlen(s), roots, nroots, out, out_size, e);
    slen = scheme_len(s);
    if (slen == 0)
        return pathpol_normalize(s, strlen(s), out, out_size, e); /* refuses: relative */
    if (scheme_is(s, slen, "file"))
        return check_file_uri(s, slen, roots, nroots, out, out_size, e);
    if (ncidrs > 0 && is_remote_scheme(s, slen))
        return check_remote_uri(s, slen, cidrs, ncidrs, e);
    if (is_remote_scheme(s, slen))
        return refuse(e, "remote URIs are not allowed: no internal networks are configured", s,
                      strlen(s));
    return refuse(e, "URI scheme is not allowed", s, strlen(s));
}

enum rc pathpol_check(const char *path, const char *const *roots, size_t nroots, char *out,
                      size_t out_size, struct err *e)
{
    return check_any(path, roots, nroots, NULL, 0, out, out_size, e);
}

enum rc pathpol_check_uri(const char *uri, const char *const *roots, size_t nroots,
                          const char *const *cidrs, size_t ncidrs, struct err *e)
{
    char buf[PATHPOL_BUF_SIZE];

    return check_any(uri, roots, nroots, cidrs, ncidrs, buf, sizeof(buf), e);
}

/* Whether in[0..len) has a ".." component. */
static int has_dotdot(const char *in, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (in[i] == '.' && in[i + 1] == '.' && (i == 0 || in[i - 1] == '/') &&
            (i + 2 == len || in[i + 2] == '/'))
            return 1;
    }
    return 0;
}

/*
 * realpath(3) of norm, or of its longest existing ancestor with the missing
 * rest appended. Fills res (size PATHPOL_BUF_SIZE). RC_ERETRY when the first
 * missing component appeared meanwhile as something other than a link
 * (another process, say a worker of the same job on a shared file system,
 * made it): the caller resolves again.
 */
static enum rc resolve_once(const char *norm, char *res, size_t res_size, struct err *e)
{
    char cur[PATHPOL_BUF_SIZE];
    char probe[PATHPOL_BUF_SIZE];
    size_t rest = strlen(norm); /* norm[rest..] is the missing part */
    char *real = NULL;
    enum rc rc = RC_EPOLICY;
    int stripped = 0;
    struct stat st;

    snprintf(cur, sizeof(cur), "%s", norm);
    for (;;) {
        char *slash;

        real = realpath(cur, NULL);
        if (real != NULL)
            break;
        if (errno == ELOOP) {
            rc = refuse(e, "path has a symbolic link loop", norm, strlen(norm));
            goto out;
        }
        if (errno != ENOENT || strcmp(cur, "/") == 0) {
            rc = refuse(e, "path cannot be resolved on this node", norm, strlen(norm));
            goto out;
        }
        slash = strrchr(cur, '/');
        rest = (size_t)(slash - cur);
        cur[rest == 0 ? 1 : rest] = '\0';
        stripped = 1;
    }
    if (stripped) {
        /* The first missing component must be truly absent, not a dangling link. */
        size_t clen = strcspn(norm + rest + 1, "/");
        if (snprintf(probe, sizeof(probe), "%s/%.*s", strcmp(real, "/") == 0 ? "" : real, (int)clen,
                     norm + rest + 1) >= (int)sizeof(probe)) {
            rc = refuse(e, "path is too long", norm, strlen(norm));
            goto out;
        }
        if (lstat(probe, &st) == 0) {
            rc = S_ISLNK(st.st_mode)
                     ? refuse(e, "path has a dangling symbolic link", norm, strlen(norm))
                     : RC_ERETRY;
            goto out;
        }
    }
    if (snprintf(res, res_size, "%s%s", (strcmp(real, "/") == 0 && norm[rest] == '/') ? "" : real,
                 norm + rest) >= (int)res_size) {
        rc = err_set(e, RC_ETOOBIG, NULL, "path buffer is too small");
        goto out;
    }
    rc = RC_OK;
out:
    free(real);
    return rc;
}

static enum rc resolve(const char *norm, char *res, size_t res_size, struct err *e)
{
    enum rc rc = RC_ERETRY;

    for (int tries = 0; rc == RC_ERETRY && tries < 8; tries++)
        rc = resolve_once(norm, res, res_size, e);
    if (rc == RC_ERETRY)
        rc = refuse(e, "path keeps changing while it is checked", norm, strlen(norm));
    return rc;
}

enum rc pathpol_realpath_check(const char *path, const char *const *roots, size_t nroots, char *out,
                               size_t out_size, struct err *e)
{
    char norm[PATHPOL_BUF_SIZE];
    char res[PATHPOL_BUF_SIZE];
    size_t len;
    enum rc rc;

    if (out == NULL || out_size == 0)
        return err_set(e, RC_ETOOBIG, NULL, "path buffer is too small");
    out[0] = '\0';
    if (path == NULL)
        return refuse(e, "path is empty", NULL, 0);
    len = strlen(path);
    if (has_dotdot(path, len) && check_chars(path, len, NULL) == RC_OK)
        return refuse(e, "'..' is not allowed in paths used on the node", path, len);
    rc = pathpol_normalize(path, len, norm, sizeof(norm), e);
    if (rc != RC_OK)
        return rc;
    rc = resolve(norm, res, sizeof(res), e);
    if (rc != RC_OK)
        return rc;
    for (size_t i = 0; i < nroots; i++) {
        char rnorm[PATHPOL_BUF_SIZE];
        char *rreal;
        int inside;

        if (roots == NULL || roots[i] == NULL ||
            pathpol_normalize(roots[i], strlen(roots[i]), rnorm, sizeof(rnorm), NULL) != RC_OK)
            continue;
        rreal = realpath(rnorm, NULL);
        if (rreal == NULL)
            continue;
        inside = is_inside(res, rreal);
        free(rreal);
        if (inside) {
            if (strlen(res) >= out_size)
                return err_set(e, RC_ETOOBIG, NULL, "path buffer is too small");
            memcpy(out, res, strlen(res) + 1);
            return RC_OK;
        }
    }
    return refuse(e, "path escapes the allowed storage roots", res, strlen(res));
}
