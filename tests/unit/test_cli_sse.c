/*
 * test_cli_sse.c - the Server-Sent Events reader of `trainyard logs -f`
 * (cli/sse.c): events split anywhere across reads, LF, CR LF and CR line
 * ends, comments (the server's pings) skipped, repeated data joined, the
 * id kept, a stop from the callback, and the size bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sse.h"

struct seen {
    char text[4096];
    int n, stop_after;
};

static int on_event(const char *event, const char *id, const char *data, void *ud)
{
    struct seen *s = ud;
    size_t k = strlen(s->text);

    snprintf(s->text + k, sizeof(s->text) - k, "[%s|%s|%s]", event, id, data);
    s->n++;
    return s->stop_after > 0 && s->n >= s->stop_after ? -1 : 0;
}

static const char STREAM[] = ": ping\n\n"
                             "id: 5\nevent: log\ndata: {\"text\":\"a\"}\n\n"
                             "data: one\r\ndata:two\r\n\r\n"
                             "event: end\rdata: {\"state\":\"SUCCEEDED\"}\r\r"
                             "retry: 10\nevent: nodata\n\n";
static const char WANT[] = "[log|5|{\"text\":\"a\"}][message|5|one\ntwo]"
                           "[end|5|{\"state\":\"SUCCEEDED\"}]";

static void test_whole_and_split(void **state)
{
    (void)state;
    size_t n = sizeof(STREAM) - 1;

    for (size_t step = 1; step <= n; step++) {
        struct cli_sse r;
        struct seen s = {"", 0, 0};
        cli_sse_init(&r);
        for (size_t i = 0; i < n; i += step)
            assert_int_equal(
                cli_sse_feed(&r, STREAM + i, i + step > n ? n - i : step, on_event, &s), RC_OK);
        if (strcmp(s.text, WANT) != 0)
            fail_msg("read %zu bytes at a time: %s", step, s.text);
        cli_sse_cleanup(&r);
    }
}

static void test_stop_and_bounds(void **state)
{
    (void)state;
    struct cli_sse r;
    struct seen s = {"", 0, 1};
    char *big;

    cli_sse_init(&r);
    assert_int_equal(cli_sse_feed(&r, STREAM, sizeof(STREAM) - 1, on_event, &s), RC_ECONFLICT);
    assert_int_equal(s.n, 1);
    cli_sse_cleanup(&r);

    big = malloc(CLI_SSE_MAX + 16);
    assert_non_null(big);
    memcpy(big, "data: ", 6);
    memset(big + 6, 'x', CLI_SSE_MAX + 9);
    cli_sse_init(&r);
    assert_int_equal(cli_sse_feed(&r, big, CLI_SSE_MAX + 15, on_event, &s), RC_ETOOBIG);
    cli_sse_cleanup(&r);
    /* Many data lines that add up past the bound: refused too. */
    free(big);
    size_t lines = CLI_SSE_MAX / 95 + 2, len = lines * 101;
    big = malloc(len);
    assert_non_null(big);
    for (size_t i = 0; i < lines; i++) {
        memcpy(big + i * 101, "data: ", 6);
        memset(big + i * 101 + 6, 'x', 94);
        big[i * 101 + 100] = '\n';
    }
    cli_sse_init(&r);
    assert_int_equal(cli_sse_feed(&r, big, len, on_event, &s), RC_ETOOBIG);
    cli_sse_cleanup(&r);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_and_split),
        cmocka_unit_test(test_stop_and_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
