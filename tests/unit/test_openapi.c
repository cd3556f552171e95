/*
 * test_openapi.c - docs/openapi.json against the router, both ways: every
 * route of routes_table() is documented under its exact pattern and method,
 * and every documented operation is a route. Each operation's path
 * parameters are the pattern's captures, and its security and
 * x-trainyard-access agree with the route's access rule. The server embeds
 * the same bytes as the file (GET /api/v1/openapi.json).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api_openapi.h"
#include "router.h"
#include "routes.h"
#include "srv.h"

#define DOC_PATH TY_SOURCE_DIR "/docs/openapi.json"

static json_t *doc;

static const char *const methods[] = {"get", "put", "post", "delete", "patch", "head", "options"};

static void lower(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < n; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] + 32 : in[i]);
    out[i] = '\0';
}

static const char *access_name(int auth)
{
    switch ((enum srv_auth)auth) {
    case SRV_AUTH_NONE:
        return "none";
    case SRV_AUTH_USER:
        return "user";
    case SRV_AUTH_ADMIN:
        return "admin";
    case SRV_AUTH_AUDIT:
        return "audit";
    case SRV_AUTH_AGENT:
        return "agent";
    }
    return "?";
}

static int setup(void **state)
{
    json_error_t e;
    (void)state;
    doc = json_load_file(DOC_PATH, JSON_REJECT_DUPLICATES, &e);
    if (doc == NULL)
        fprintf(stderr, "%s:%d: %s\n", DOC_PATH, e.line, e.text);
    return doc == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(doc);
    return 0;
}

static void test_embedded_is_the_file(void **state)
{
    size_t len, flen;
    const char *emb = api_openapi_document(&len);
    FILE *f = fopen(DOC_PATH, "rb");
    char *buf;
    (void)state;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    flen = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(flen);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, flen, f), flen);
    fclose(f);
    assert_int_equal(len, flen);
    assert_memory_equal(emb, buf, len);
    free(buf);
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
}

/* Every route is documented, with its captures and its access rule. */
static void test_every_route_documented(void **state)
{
    size_t n;
    const struct router_route *t = routes_table(&n);
    json_t *paths = json_object_get(doc, "paths");
    int missing = 0;
    (void)state;

    assert_non_null(paths);
    for (size_t i = 0; i < n; i++) {
        char m[16];
        json_t *op, *params, *sec, *p;
        size_t ncaptures = 0, npath = 0, k;
        const char *c;

        lower(t[i].method, m, sizeof(m));
        op = json_object_get(json_object_get(paths, t[i].pattern), m);
        if (op == NULL) {
            fprintf(stderr, "not documented: %s %s\n", t[i].method, t[i].pattern);
            missing++;
            continue;
        }
        assert_non_null(json_object_get(op, "responses"));
        assert_string_equal(json_string_value(json_object_get(op, "x-trainyard-access")),
                            access_name(t[i].auth));
        /* Each {capture} of the pattern is a required path parameter. */
        for (c = strchr(t[i].pattern, '{'); c != NULL; c = strchr(c + 1, '{')) {
            const char *end = strchr(c, '}');
            int found = 0;
            ncaptures++;
            params = json_object_get(op, "parameters");
            json_array_foreach(params, k, p)
            {
                const char *name = json_string_value(json_object_get(p, "name"));
                if (strcmp(json_string_value(json_object_get(p, "in")), "path") == 0 &&
                    strlen(name) == (size_t)(end - c - 1) &&
                    strncmp(name, c + 1, (size_t)(end - c - 1)) == 0 &&
                    json_is_true(json_object_get(p, "required")))
                    found = 1;
            }
            if (!found)
                fail_msg("%s %s: no required path parameter %.*s", t[i].method, t[i].pattern,
                         (int)(end - c - 1), c + 1);
        }
        json_array_foreach(json_object_get(op, "parameters"), k, p)
        {
            if (strcmp(json_string_value(json_object_get(p, "in")), "path") == 0)
                npath++;
        }
        if (npath != ncaptures)
            fail_msg("%s %s: %zu path parameters, the pattern has %zu", t[i].method, t[i].pattern,
                     npath, ncaptures);
        /* Open routes say so (security: []); the others name a credential,
         * and so do /metrics and the gateway's routes, which check their
         * own (the metrics token, a gateway key). */
        sec = json_object_get(op, "security");
        assert_true(json_is_array(sec));
        if (t[i].auth == SRV_AUTH_NONE && strcmp(t[i].pattern, "/metrics") != 0 &&
            strncmp(t[i].pattern, "/v1/", 4) != 0)
            assert_int_equal(json_array_size(sec), 0);
        else
            assert_true(json_array_size(sec) > 0);
    }
    assert_int_equal(missing, 0);
}

/* Every documented operation is a route of the table (not a guess). */
static void test_every_documented_route_exists(void **state)
{
    size_t n;
    const struct router_route *t = routes_table(&n);
    json_t *paths = json_object_get(doc, "paths"), *item;
    const char *pattern;
    int extra = 0, ops = 0;
    (void)state;

    json_object_foreach(paths, pattern, item)
    {
        for (size_t mi = 0; mi < sizeof(methods) / sizeof(methods[0]); mi++) {
            int found = 0;
            if (json_object_get(item, methods[mi]) == NULL)
                continue;
            ops++;
            for (size_t i = 0; i < n; i++) {
                char m[16];
                lower(t[i].method, m, sizeof(m));
                if (strcmp(m, methods[mi]) == 0 && strcmp(t[i].pattern, pattern) == 0)
                    found = 1;
            }
            if (!found) {
                fprintf(stderr, "documented, no such route: %s %s\n", methods[mi], pattern);
                extra++;
            }
        }
    }
    assert_int_equal(extra, 0);
    assert_int_equal((size_t)ops, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_is_the_file),
        cmocka_unit_test(test_every_route_documented),
        cmocka_unit_test(test_every_documented_route_exists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
