/*
 * fuzz_common_pathpol.c - libFuzzer target for the path policy: bytes ->
 * pathpol_normalize (with the byte length), then as a C string through
 * pathpol_check, pathpol_check_uri and pathpol_parse_cidr. Checks the
 * invariants of a normalized path: absolute, no "//", "/./" or "/../", no
 * trailing '/', idempotent, never longer than the input, and inside a root
 * whenever a check accepts it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pathpol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const roots[] = {"/data", "/srv/trainyard"};
static const char *const cidrs[] = {"10.0.0.0/8", "fd00::/8"};

static void check_normalized(const char *out, size_t in_len)
{
    char again[PATHPOL_BUF_SIZE];
    size_t n = strlen(out);

    if (out[0] != '/' || n > in_len || strstr(out, "//") != NULL || strstr(out, "/./") != NULL ||
        strstr(out, "/../") != NULL)
        abort();
    if (n > 1 && out[n - 1] == '/')
        abort();
    if ((n >= 2 && strcmp(out + n - 2, "/.") == 0) || (n >= 3 && strcmp(out + n - 3, "/..") == 0))
        abort();
    if (pathpol_normalize(out, n, again, sizeof(again), NULL) != RC_OK || strcmp(out, again) != 0)
        abort();
}

static int inside_root(const char *p)
{
    for (size_t i = 0; i < 2; i++) {
        size_t rl = strlen(roots[i]);
        if (strncmp(p, roots[i], rl) == 0 && (p[rl] == '\0' || p[rl] == '/'))
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[PATHPOL_BUF_SIZE];
    char *s;
    struct err e;
    struct pathpol_cidr c;
    enum rc rc;

    err_init(&e);
    rc = pathpol_normalize((const char *)data, size, out, sizeof(out), &e);
    if (rc == RC_OK)
        check_normalized(out, size);
    else if (rc != RC_EPOLICY || e.message[0] == '\0')
        abort();

    s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    rc = pathpol_check(s, roots, 2, out, sizeof(out), &e);
    if (rc == RC_OK) {
        check_normalized(out, strlen(s));
        if (!inside_root(out))
            abort();
    } else if (rc != RC_EPOLICY) {
        abort();
    }
    rc = pathpol_check_uri(s, roots, 2, cidrs, 2, &e);
    if (rc != RC_OK && rc != RC_EPOLICY)
        abort();
    if (pathpol_parse_cidr(s, &c, NULL) == RC_OK) {
        if ((c.family != 4 && c.family != 6) || c.prefix > (c.family == 4 ? 32u : 128u))
            abort();
        (void)pathpol_ip_in_cidr("10.1.2.3", &c);
        (void)pathpol_ip_in_cidr("fd00::1", &c);
    }
    (void)pathpol_ip_in_cidr(s, &c);
    free(s);
    return 0;
}
