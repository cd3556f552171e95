/*
 * test_srv_oom.c - fail the Nth allocation, for every N, on the server's
 * request paths that need no database (CONVENTIONS.md "Tests"): parking a
 * long-poll or a stream (waiters.c through srv_suspend/srv_stream_wait, and
 * the count of its caller's long-lived requests, streams.c),
 * parsing a request body and encoding an answer (jx.h, as http.c does),
 * job-spec validation and normalization (POST /api/v1/jobs), rendering a
 * webhook from its stored payload, and the identity cache and rate limiter
 * every sign-in and API call passes. Each must report the failure (an error
 * rc, NULL, a miss), give the same answer as without failures otherwise
 * (never a damaged text: see common/jx.h), and leak nothing (LSan at exit).
 * Route matching and the body helpers of api_util.h must not allocate at
 * all.
 *
 * A failed allocation in waiters_add() must resume the connection at once,
 * to answer an error: nothing else would, and it would stay suspended for ever.
 *
 * How: this binary is linked with -Wl,--wrap for malloc, calloc, realloc,
 * strdup and strndup (server/CMakeLists.txt), so every allocation made by the
 * objects linked statically (ty_server, ty_common, this file) goes through
 * the wrappers below; jansson's go there through jx_init(), as in the
 * server. MHD_suspend_connection and MHD_resume_connection are wrapped too:
 * they only count here, so no daemon or socket is needed. All allocations under
 * test happen on the test's thread (the waiters' timer thread allocates
 * nothing), so the counters need no lock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <microhttpd.h>

#include "api_util.h"
#include "app.h"
#include "cache.h"
#include "jobspec.h"
#include "jx.h"
#include "ratelimit.h"
#include "router.h"
#include "routes.h"
#include "srv.h"
#include "streams.h"
#include "waiters.h"
#include "webhooks.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void __wrap_MHD_suspend_connection(struct MHD_Connection *c);
void __wrap_MHD_resume_connection(struct MHD_Connection *c);

static long fail_at = -1; /* the allocation number that fails; 0: count only; -1: off */
static long nalloc;       /* allocations since arm() */
static bool failed;       /* the armed allocation was refused */
static int nsuspend, nresume;
static struct MHD_Connection *last_resumed;

static bool should_fail(void)
{
    if (fail_at < 0)
        return false;
    if (++nalloc == fail_at) {
        failed = true;
        return true;
    }
    return false;
}

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    return should_fail() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return should_fail() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return should_fail() ? NULL : __real_strndup(s, n);
}

void __wrap_MHD_suspend_connection(struct MHD_Connection *c)
{
    (void)c;
    nsuspend++;
}

void __wrap_MHD_resume_connection(struct MHD_Connection *c)
{
    nresume++;
    last_resumed = c;
}

static void arm(long n)
{
    fail_at = n;
    nalloc = 0;
    failed = false;
}

/* ------------------------------------------------------------------ */

static enum rc never_resumed(struct srv_req *req)
{
    (void)req;
    fail_msg("resume_fn ran for a wait that was never parked");
    return RC_EINTERNAL;
}

static void req_init(struct srv_req *req, struct srv_app *app, struct MHD_Connection *conn)
{
    memset(req, 0, sizeof(*req));
    req->app = app;
    req->conn = conn;
    snprintf(req->req_id, sizeof(req->req_id), "r-test");
    req->poll_checked_us = srv_mono_us();
}

/* Park a long-poll (key 7) and a stream (key -7) with every allocation
 * failing in turn. A wait that cannot be parked (or counted: the poll's
 * address is new to streams.c) is resumed at once with RC_ENOMEM; one that
 * was parked is resumed only by its notification. */
static void test_waiters_every_allocation(void **state)
{
    static char conn_a, conn_b; /* stand-ins: only their addresses are used */
    struct MHD_Connection *ca = (struct MHD_Connection *)(void *)&conn_a;
    struct MHD_Connection *cb = (struct MHD_Connection *)(void *)&conn_b;
    int64_t far = srv_now_ms() + 3600 * 1000;
    const struct streams_limits lim = {
        .per_user = 4, .per_addr = 4, .total_user = 4, .per_node = 4};
    long n;

    (void)state;
    for (n = 1;; n++) {
        struct srv_app app;
        struct srv_req poll, stream;
        struct waiters *w;
        bool hit_poll, hit_stream;

        memset(&app, 0, sizeof(app));
        nsuspend = nresume = 0;
        app.streams = streams_new(&lim);
        assert_non_null(app.streams);
        arm(n);
        w = waiters_new(&app);
        if (w == NULL) {
            assert_true(failed);
            arm(-1);
            streams_free(app.streams);
            continue;
        }
        app.waiters = w;
        req_init(&poll, &app, ca);
        req_init(&stream, &app, cb);
        snprintf(poll.client_addr, sizeof(poll.client_addr), "10.0.0.7");

        srv_suspend(&poll, 7, far, never_resumed);
        hit_poll = failed;
        assert_int_equal(nsuspend, 1);
        assert_true(poll.suspended);
        if (hit_poll) {
            assert_int_equal(nresume, 1);
            assert_ptr_equal(last_resumed, ca);
            assert_int_equal(poll.resume_rc, RC_ENOMEM);
            assert_int_equal(srv_http_status(poll.resume_rc), 500);
            assert_int_equal(poll.err.rc, RC_ENOMEM);
        } else {
            assert_int_equal(nresume, 0);
            assert_int_equal(poll.resume_rc, RC_OK);
        }

        srv_stream_wait(&stream, -7, far);
        hit_stream = failed && !hit_poll;
        arm(-1);
        assert_int_equal(nsuspend, 2);
        assert_int_equal(nresume, (hit_poll ? 1 : 0) + (hit_stream ? 1 : 0));
        assert_int_equal(stream.resume_rc, hit_stream ? RC_ENOMEM : RC_OK);
        if (hit_stream)
            assert_ptr_equal(last_resumed, cb);

        /* What was parked is woken by its key, once. */
        nresume = 0;
        waiters_notify(w, 7);
        assert_int_equal(nresume, hit_poll ? 0 : 1);
        waiters_notify(w, -7);
        assert_int_equal(nresume, (hit_poll ? 0 : 1) + (hit_stream ? 0 : 1));
        waiters_notify(w, 0);
        assert_int_equal(nresume, (hit_poll ? 0 : 1) + (hit_stream ? 0 : 1));
        waiters_stop(w);
        waiters_free(w);
        /* The poll holds a slot when it was counted, parked or not. */
        assert_int_equal(streams_count(app.streams, STREAMS_USER, 0, "10.0.0.7"),
                         poll.stream_slot.held);
        streams_give(app.streams, &poll.stream_slot);
        assert_int_equal(streams_count(app.streams, STREAMS_USER, 0, "10.0.0.7"), 0);
        streams_free(app.streams);
        if (!hit_poll && !hit_stream)
            break;
    }
    assert_int_equal(n, 5); /* waiters_new, the poll's count, then one entry per wait */
}

/* ------------------------------------------------------------------ */

#define FULL_SPEC                                                                                  \
    "{\"name\":\"bert\",\"team\":\"nlp\",\"command\":[\"python3\",\"train.py\",\"--lr\",\"3e-4\"]" \
    ","                                                                                            \
    "\"launcher\":\"torchrun\",\"resources\":{\"gpus\":4,\"gpus_per_node\":2},\"priority\":"       \
    "\"high\",\"max_restarts\":2,\"time_limit_s\":3600,\"env\":{\"B_2\":\"two\",\"A\":\"1\"},"     \
    "\"datasets\":[\"/data/a\",\"s3://bucket/b\"],\"output_dir\":\"/data/out\",\"working_dir\":"   \
    "\"/data/work\",\"template\":\"bert-base\",\"site\":\"east\"}"

/* Without optional fields: the defaults are allocated instead. */
#define MIN_SPEC "{\"name\":\"m\",\"team\":\"t\",\"command\":[\"x\"],\"resources\":{\"gpus\":1}}"

/* Valid up to a reserved env name, which comes after allocations. */
#define BAD_SPEC                                                                                   \
    "{\"name\":\"m\",\"team\":\"t\",\"command\":[\"x\"],\"resources\":{\"gpus\":1},\"env\":"       \
    "{\"OK\":\"1\",\"RANK\":\"0\"}}"

static json_t *load(const char *text)
{
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

    assert_non_null(j);
    return j;
}

/* Parse and normalize text with each allocation failing in turn: RC_ENOMEM
 * (or NULL from jobspec_to_json) exactly when one failed, else the answer of
 * a run without failures. */
static void spec_every_allocation(const char *text, enum rc want)
{
    json_t *in = load(text), *ref = NULL;
    struct jobspec *spec = NULL;
    struct err e;
    long n;

    assert_int_equal(jobspec_parse(in, &spec, &e), want);
    if (spec != NULL)
        ref = jobspec_to_json(spec);
    jobspec_free(spec);
    for (n = 1;; n++) {
        json_t *out = NULL;
        enum rc rc;
        bool hit;

        err_init(&e);
        spec = (struct jobspec *)0x1;
        arm(n);
        rc = jobspec_parse(in, &spec, &e);
        if (rc == RC_OK)
            out = jobspec_to_json(spec);
        hit = failed;
        arm(-1);
        if (hit && rc != RC_OK) {
            assert_int_equal(rc, RC_ENOMEM);
            assert_int_equal(e.rc, RC_ENOMEM);
            assert_null(spec);
        } else if (hit) {
            assert_null(out); /* the failure came in jobspec_to_json */
        } else {
            assert_int_equal(rc, want);
            if (want == RC_OK)
                assert_true(json_equal(out, ref));
            else
                assert_null(spec);
        }
        json_decref(out);
        jobspec_free(rc == RC_OK ? spec : NULL);
        if (!hit)
            break;
    }
    assert_true(n > 2);
    json_decref(ref);
    json_decref(in);
}

/* The request body parse (http.c) and the answer's encoding: an error
 * exactly when an allocation failed, else the same document and text. */
static void test_body_parse_and_dump_every_allocation(void **state)
{
    const char *text = FULL_SPEC;
    json_t *ref = load(text);
    char *ref_text = json_dumps(ref, JSON_COMPACT);
    long n;

    (void)state;
    assert_non_null(ref_text);
    for (n = 1;; n++) {
        json_t *j = NULL;
        char *out = NULL;
        enum rc rc;
        bool hit;

        arm(n);
        rc = jx_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &j, NULL);
        if (rc == RC_OK)
            out = jx_dumps(j, JSON_COMPACT);
        hit = failed;
        arm(-1);
        if (hit) {
            assert_true(rc == RC_ENOMEM || out == NULL);
        } else {
            assert_int_equal(rc, RC_OK);
            assert_true(json_equal(j, ref));
            assert_string_equal(out, ref_text);
        }
        if (rc == RC_ENOMEM)
            assert_null(j);
        json_decref(j);
        free(out);
        if (!hit)
            break;
    }
    assert_true(n > 10);
    free(ref_text);
    json_decref(ref);
}

/* jx_loads, the parse of what the server stored itself (columns, details):
 * NULL exactly when an allocation failed, else the same document, never
 * one that lost a byte. */
static void test_stored_text_parse_every_allocation(void **state)
{
    const char *text = FULL_SPEC;
    json_t *ref = load(text);
    long n;

    (void)state;
    for (n = 1;; n++) {
        json_t *j;
        bool hit;

        arm(n);
        j = jx_loads(text, 0);
        hit = failed;
        arm(-1);
        if (hit)
            assert_null(j);
        else
            assert_true(json_equal(j, ref));
        json_decref(j);
        if (!hit)
            break;
    }
    assert_true(n > 10);
    assert_null(jx_loads("{\"a\":", 0));
    json_decref(ref);
}

static void test_jobspec_every_allocation(void **state)
{
    (void)state;
    spec_every_allocation(FULL_SPEC, RC_OK);
    spec_every_allocation(MIN_SPEC, RC_OK);
    spec_every_allocation(BAD_SPEC, RC_EINVAL);
}

/* ------------------------------------------------------------------ */

/* Every format, with and without a chat robot signature: NULL when an
 * allocation failed, else exactly the body of a run without failures. */
static void test_webhook_render_every_allocation(void **state)
{
    static const char *const formats[] = {"generic", "wecom", "dingtalk", "feishu", "feishu"};
    static const char *const signs[] = {"", "", "", "", "c2lnbg=="};
    const char *payload = "{\"event\":\"job.failed\",\"message\":\"rank 3 exited 1\",\"job\":"
                          "{\"id\":\"42\",\"name\":\"bert\",\"team\":\"nlp\"}}";

    (void)state;
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
        char *ref = webhooks_render(formats[f], payload, 1700000000, signs[f]);
        long n;

        assert_non_null(ref);
        for (n = 1;; n++) {
            char *out;
            bool hit;

            arm(n);
            out = webhooks_render(formats[f], payload, 1700000000, signs[f]);
            hit = failed;
            arm(-1);
            if (hit && out != NULL)
                fail_msg("format %s, allocation %ld failed: sent %s instead of %s", formats[f], n,
                         out, ref);
            if (!hit)
                assert_string_equal(out, ref);
            free(out);
            if (!hit)
                break;
        }
        assert_true(n > 2);
        free(ref);
    }
}

/* ------------------------------------------------------------------ */

/* The identity cache (every authenticated request) and the sign-in limiter:
 * a failure is a miss or a limiter that was not made, never a wrong hit. */
static void test_cache_and_limiter_every_allocation(void **state)
{
    long n;

    (void)state;
    for (n = 1;; n++) {
        struct cache *c;
        struct ratelimit *rl = NULL;
        char *v = NULL;
        size_t len = 0;
        int hit_get = 0;
        bool hit;

        arm(n);
        c = cache_new(8, 64);
        if (c != NULL) {
            cache_put(c, "token-a", "principal-a", 11, 1000, 3);
            hit_get = cache_get(c, "token-a", 10, 3, &v, &len);
            rl = ratelimit_new(3, 60);
            if (rl != NULL) {
                for (int i = 0; i < 3; i++)
                    ratelimit_fail(rl, "alice", 10);
            }
        }
        hit = failed;
        arm(-1);
        if (hit_get) {
            assert_int_equal(len, 11);
            assert_memory_equal(v, "principal-a", 11);
        }
        if (!hit) {
            assert_non_null(c);
            assert_int_equal(hit_get, 1);
            assert_non_null(rl);
        } else {
            assert_true(c == NULL || !hit_get || rl == NULL);
        }
        if (rl != NULL)
            assert_int_equal(ratelimit_blocked(rl, "alice", 11), 1);
        free(v);
        ratelimit_free(rl);
        cache_free(c);
        if (!hit)
            break;
    }
    assert_true(n > 3);
}

/* ------------------------------------------------------------------ */

/* Route matching and the body checks run on every request before any
 * handler work; they need no allocation, so none can fail. */
static void test_router_and_body_helpers_allocate_nothing(void **state)
{
    static const char *const paths[] = {"/api/v1/jobs", "/api/v1/jobs/42", "/api/v1/jobs/42/logs",
                                        "/api/v1/nope", "relative",        "/api/v1/webhooks/9"};
    static const char *const allowed[] = {"name", "gpus", NULL};
    size_t nroutes;
    const struct router_route *table = routes_table(&nroutes);
    struct router_match m;
    struct srv_req req;
    const char *s;
    int64_t i64;
    int present;

    (void)state;
    memset(&req, 0, sizeof(req));
    req.body = load("{\"name\":\"x\",\"gpus\":4}");
    req.nparams = 1;
    snprintf(req.params[0], sizeof(req.params[0]), "17");
    arm(0);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        enum rc rc = router_find(table, nroutes, "GET", paths[i], &m);
        assert_true(rc == RC_OK || rc == RC_ENOTFOUND || rc == RC_EINVAL || rc == RC_EMETHOD);
    }
    assert_int_equal(api_body_object(&req, allowed), RC_OK);
    assert_int_equal(api_opt_string(&req, "name", 1, 8, &s), RC_OK);
    assert_int_equal(api_opt_string(&req, "name", 2, 8, &s), RC_EINVAL);
    assert_int_equal(api_opt_int(&req, "gpus", 1, 8, &i64, &present), RC_OK);
    assert_int_equal(api_opt_int(&req, "gpus", 5, 8, &i64, &present), RC_EINVAL);
    assert_int_equal(api_param_id(&req, 0, &i64, "job"), RC_OK);
    assert_int_equal(nalloc, 0);
    arm(-1);
    json_decref(req.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiters_every_allocation),
        cmocka_unit_test(test_body_parse_and_dump_every_allocation),
        cmocka_unit_test(test_stored_text_parse_every_allocation),
        cmocka_unit_test(test_jobspec_every_allocation),
        cmocka_unit_test(test_webhook_render_every_allocation),
        cmocka_unit_test(test_cache_and_limiter_every_allocation),
        cmocka_unit_test(test_router_and_body_helpers_allocate_nothing),
    };

    jx_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
