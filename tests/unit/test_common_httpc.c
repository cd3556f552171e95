/*
 * test_common_httpc.c - the common libcurl client (common/httpc.c) against a
 * small libmicrohttpd server of this test, on 127.0.0.1 only (an ephemeral
 * port; nothing leaves the machine): status, method, headers and body reach
 * the server; a body over max_body is refused; a redirect is followed only
 * when asked; the total timeout and httpc_abort() end a request the server
 * never answers; a 2xx body streams while an error body is kept; TLS is
 * verified (https to a plain server fails as a TLS failure).
 *
 * The one wait of these tests is the server's "/slow" route, which holds its
 * answer until the test is over (or 5 s), then answers 200: a request to it
 * that ends without an answer was cut by the timeout or the abort. It
 * returns as soon as the daemon is stopped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <microhttpd.h>

#include "httpc.h"

#define BIG_BODY 100000 /* bytes of "/big" */

static struct MHD_Daemon *daemon_;
static unsigned port;
static atomic_int stopping;     /* "/slow" returns once set */
static atomic_int slow_entered; /* set when "/slow" starts holding a request */

struct upload {
    char data[4096];
    size_t len;
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *body,
                              const char *location)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;

    if (location != NULL)
        MHD_add_response_header(r, "Location", location);
    ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct upload *u = *con_cls;
    char out[8192];

    (void)cls;
    (void)version;
    if (u == NULL) { /* first call: headers only */
        if ((u = calloc(1, sizeof(*u))) == NULL)
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        if (n > sizeof(u->data) - 1 - u->len)
            n = sizeof(u->data) - 1 - u->len;
        memcpy(u->data + u->len, upload, n);
        u->len += n;
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/hello") == 0)
        return answer(conn, 200, "hello", NULL);
    if (strcmp(url, "/echo") == 0) {
        const char *x = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Test");
        const char *ua = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent");
        snprintf(out, sizeof(out), "%s|%s|%s|%.*s", method, x ? x : "-", ua ? ua : "-", (int)u->len,
                 u->data);
        return answer(conn, 200, out, NULL);
    }
    if (strcmp(url, "/big") == 0 || strcmp(url, "/big404") == 0) {
        char *big = malloc(BIG_BODY + 1);
        enum MHD_Result ret;
        if (big == NULL)
            return MHD_NO;
        memset(big, 'x', BIG_BODY);
        big[BIG_BODY] = '\0';
        ret = answer(conn, url[4] == '4' ? 404 : 200, big, NULL);
        free(big);
        return ret;
    }
    if (strcmp(url, "/redirect") == 0)
        return answer(conn, 302, "moved", "/hello");
    if (strcmp(url, "/slow") == 0) {
        int64_t until = now_ms() + 5000;
        atomic_store(&slow_entered, 1);
        while (!atomic_load(&stopping) && now_ms() < until) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        return answer(conn, 200, "late", NULL);
    }
    return answer(conn, 404, "{\"error\":{\"code\":\"not_found\"}}", NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static int server_up(void **state)
{
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    (void)state;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = 0; /* any free port */
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    daemon_ = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                               NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (daemon_ == NULL)
        return -1;
    info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    if (info == NULL || info->port == 0)
        return -1;
    port = info->port;
    return 0;
}

static int server_down(void **state)
{
    (void)state;
    atomic_store(&stopping, 1);
    MHD_stop_daemon(daemon_);
    return 0;
}

static void url_of(char *buf, size_t n, const char *scheme, const char *path)
{
    snprintf(buf, n, "%s://127.0.0.1:%u%s", scheme, port, path);
}

static void get_answers_status_and_body(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/hello");
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url, .max_body = 64}, &r), RC_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 5);
    assert_string_equal(r.body, "hello");
    assert_string_equal(r.error, "");
    httpc_resp_cleanup(&r);
    assert_null(r.body);

    /* Another status is an answer too, with its body. */
    url_of(url, sizeof(url), "http", "/nothing-here");
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url, .max_body = 64}, &r), RC_OK);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "not_found"));
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

static void method_headers_and_body_reach_the_server(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    const char *hdr[] = {"X-Test: seven", "Expect:", NULL};
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/echo");
    assert_int_equal(httpc_perform(h,
                                   &(struct httpc_req){.method = "POST",
                                                       .url = url,
                                                       .headers = hdr,
                                                       .body = "{\"a\":1}",
                                                       .body_len = 7,
                                                       .user_agent = "ua-test",
                                                       .max_body = 256},
                                   &r),
                     RC_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST|seven|ua-test|{\"a\":1}");
    httpc_resp_cleanup(&r);

    /* A custom verb with a body; no user agent asked for, none sent. */
    assert_int_equal(
        httpc_perform(
            h,
            &(struct httpc_req){
                .method = "DELETE", .url = url, .body = "xy", .body_len = 2, .max_body = 256},
            &r),
        RC_OK);
    assert_string_equal(r.body, "DELETE|-|-|xy");
    httpc_resp_cleanup(&r);

    /* A POST without a body sends an empty one; GET never sends one. */
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.method = "POST", .url = url, .max_body = 256}, &r),
        RC_OK);
    assert_string_equal(r.body, "POST|-|-|");
    httpc_resp_cleanup(&r);
    assert_int_equal(
        httpc_perform(
            h, &(struct httpc_req){.url = url, .body = "zz", .body_len = 2, .max_body = 256}, &r),
        RC_OK);
    assert_string_equal(r.body, "GET|-|-|");
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

static void body_over_the_limit_is_refused(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/big");
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = url, .max_body = BIG_BODY - 1}, &r),
        RC_ETOOBIG);
    assert_null(r.body);
    assert_int_equal(r.body_len, 0);
    assert_non_null(strstr(r.error, "over"));
    httpc_resp_cleanup(&r);

    /* Exactly the limit is fine. */
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url, .max_body = BIG_BODY}, &r),
                     RC_OK);
    assert_int_equal(r.body_len, BIG_BODY);
    assert_int_equal(r.body[BIG_BODY], '\0');
    httpc_resp_cleanup(&r);

    /* No body kept at all: max_body 0 refuses any; discard_body drops it. */
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url}, &r), RC_ETOOBIG);
    httpc_resp_cleanup(&r);
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url, .discard_body = 1}, &r),
                     RC_OK);
    assert_int_equal(r.status, 200);
    assert_null(r.body);
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

static void redirect_is_followed_only_when_asked(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/redirect");
    assert_int_equal(httpc_perform(h, &(struct httpc_req){.url = url, .max_body = 64}, &r), RC_OK);
    assert_int_equal(r.status, 302);
    assert_string_equal(r.body, "moved");
    httpc_resp_cleanup(&r);

    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = url, .max_body = 64, .follow_redirects = 1},
                      &r),
        RC_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "hello");
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

static void timeout_fires(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/slow");
    /* "/slow" answers 200 after 5 s: no status means the 300 ms cut it. */
    assert_int_equal(httpc_perform(h,
                                   &(struct httpc_req){.url = url,
                                                       .connect_timeout_ms = 1000,
                                                       .timeout_ms = 300,
                                                       .max_body = 64},
                                   &r),
                     RC_EUNAVAIL);
    assert_int_equal(r.status, 0);
    assert_int_not_equal(r.fail_code, 0);
    assert_false(r.tls_failed);
    assert_true(r.error[0] != '\0');
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

struct aborter {
    struct httpc *h;
    pthread_t thread;
};

/* Aborts once "/slow" holds the request, so that the abort lands while it
 * is in flight (the wait is bounded only to catch a hang). */
static void *abort_in_flight(void *arg)
{
    struct aborter *a = arg;
    int64_t until = now_ms() + 60000;

    while (!atomic_load(&slow_entered) && now_ms() < until) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    httpc_abort(a->h);
    return NULL;
}

static void abort_from_another_thread_ends_the_request(void **state)
{
    struct aborter a = {0};
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&a.h), RC_OK);
    url_of(url, sizeof(url), "http", "/slow");
    atomic_store(&slow_entered, 0);
    assert_int_equal(pthread_create(&a.thread, NULL, abort_in_flight, &a), 0);
    /* A timeout past "/slow"'s 5 s: only the abort can end it unanswered. */
    assert_int_equal(
        httpc_perform(a.h, &(struct httpc_req){.url = url, .timeout_ms = 60000, .max_body = 64},
                      &r),
        RC_EUNAVAIL);
    assert_int_equal(r.status, 0);
    pthread_join(a.thread, NULL);
    httpc_resp_cleanup(&r);

    /* And every later request of that client. */
    url_of(url, sizeof(url), "http", "/hello");
    assert_int_equal(httpc_perform(a.h, &(struct httpc_req){.url = url, .max_body = 64}, &r),
                     RC_EUNAVAIL);
    httpc_resp_cleanup(&r);
    httpc_free(a.h);
}

struct sink {
    size_t got;
    size_t stop_after; /* 0: never */
};

static int take(const char *data, size_t n, void *ud)
{
    struct sink *s = ud;

    (void)data;
    s->got += n;
    return s->stop_after != 0 && s->got >= s->stop_after ? -1 : 0;
}

static void stream_hands_on_2xx_and_keeps_errors(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    struct sink s = {0};
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/big");
    /* A 2xx body is not capped: it is not kept. */
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = url, .on_data = take, .data_ud = &s}, &r),
        RC_OK);
    assert_int_equal(s.got, BIG_BODY);
    assert_null(r.body);
    assert_false(r.stopped);
    httpc_resp_cleanup(&r);

    s = (struct sink){.stop_after = 1};
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = url, .on_data = take, .data_ud = &s}, &r),
        RC_OK);
    assert_true(r.stopped);
    assert_int_equal(r.status, 200);
    httpc_resp_cleanup(&r);

    /* An error body is kept, within max_body. */
    s = (struct sink){0};
    url_of(url, sizeof(url), "http", "/nope");
    assert_int_equal(
        httpc_perform(
            h, &(struct httpc_req){.url = url, .on_data = take, .data_ud = &s, .max_body = 256},
            &r),
        RC_OK);
    assert_int_equal(r.status, 404);
    assert_int_equal(s.got, 0);
    assert_non_null(strstr(r.body, "not_found"));
    httpc_resp_cleanup(&r);
    url_of(url, sizeof(url), "http", "/big404");
    assert_int_equal(
        httpc_perform(
            h, &(struct httpc_req){.url = url, .on_data = take, .data_ud = &s, .max_body = 256},
            &r),
        RC_ETOOBIG);
    assert_int_equal(s.got, 0);
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

struct seen {
    int status_line;
    int content_length;
};

static void see_header(const char *line, size_t n, void *ud)
{
    struct seen *s = ud;

    if (n >= 5 && memcmp(line, "HTTP/", 5) == 0)
        s->status_line++;
    if (n >= 15 && strncasecmp(line, "Content-Length:", 15) == 0)
        s->content_length++;
}

static void header_callback_sees_the_answer_headers(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    struct seen s = {0};
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    url_of(url, sizeof(url), "http", "/hello");
    assert_int_equal(
        httpc_perform(h,
                      &(struct httpc_req){
                          .url = url, .max_body = 64, .on_header = see_header, .header_ud = &s},
                      &r),
        RC_OK);
    assert_int_equal(s.status_line, 1);
    assert_int_equal(s.content_length, 1);
    httpc_resp_cleanup(&r);
    httpc_free(h);
}

static void unreachable_and_tls_failures(void **state)
{
    struct httpc *h = NULL;
    struct httpc_resp r;
    char url[128];

    (void)state;
    assert_int_equal(httpc_new(&h), RC_OK);
    /* https to a plain HTTP server: the handshake fails, a TLS failure. */
    url_of(url, sizeof(url), "https", "/hello");
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = url, .timeout_ms = 3000, .max_body = 64}, &r),
        RC_EUNAVAIL);
    assert_true(r.tls_failed);
    httpc_resp_cleanup(&r);

    /* Only http and https. */
    assert_int_equal(
        httpc_perform(h, &(struct httpc_req){.url = "file:///etc/hostname", .max_body = 64}, &r),
        RC_EUNAVAIL);
    assert_false(r.tls_failed);
    httpc_resp_cleanup(&r);

    assert_int_equal(httpc_perform(h, &(struct httpc_req){.max_body = 64}, &r), RC_EINVAL);
    httpc_resp_cleanup(&r);
    httpc_free(h);
    httpc_free(NULL);
    httpc_resp_cleanup(NULL);
}

static void escape_encodes_one_segment(void **state)
{
    char *e = NULL;

    (void)state;
    assert_int_equal(httpc_escape("a b/c?d=e&f~g.h-i_j", &e), RC_OK);
    assert_string_equal(e, "a%20b%2Fc%3Fd%3De%26f~g.h-i_j");
    free(e);
    assert_int_equal(httpc_escape("", &e), RC_OK);
    assert_string_equal(e, "");
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_answers_status_and_body),
        cmocka_unit_test(method_headers_and_body_reach_the_server),
        cmocka_unit_test(body_over_the_limit_is_refused),
        cmocka_unit_test(redirect_is_followed_only_when_asked),
        cmocka_unit_test(timeout_fires),
        cmocka_unit_test(abort_from_another_thread_ends_the_request),
        cmocka_unit_test(stream_hands_on_2xx_and_keeps_errors),
        cmocka_unit_test(header_callback_sees_the_answer_headers),
        cmocka_unit_test(unreachable_and_tls_failures),
        cmocka_unit_test(escape_encodes_one_segment),
    };
    int rc;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    rc = cmocka_run_group_tests(tests, server_up, server_down);
    curl_global_cleanup();
    return rc;
}
