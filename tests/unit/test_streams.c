/*
 * test_streams.c - the long-lived request counters: each cap refuses at its
 * limit and changes nothing, a node's slots are apart from users' and
 * addresses', a give undoes exactly its take, and threads taking and giving
 * at once lose no count (run under ThreadSanitizer too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "streams.h"

static const struct streams_limits lim = {
    .per_user = 2, .per_addr = 3, .total_user = 5, .per_node = 1};

static void test_user_and_address_caps(void **state)
{
    struct streams *s = streams_new(&lim);
    struct streams_slot a[4], b = {0}, c = {0};
    int limit = 0;

    (void)state;
    memset(a, 0, sizeof(a));
    assert_non_null(s);
    assert_int_equal(streams_take(s, STREAMS_USER, 7, "10.0.0.1", &a[0], &limit), RC_OK);
    /* Taking again with a held slot counts nothing. */
    assert_int_equal(streams_take(s, STREAMS_USER, 7, "10.0.0.1", &a[0], &limit), RC_OK);
    assert_int_equal(streams_count(s, STREAMS_USER, 7, NULL), 1);
    assert_int_equal(streams_take(s, STREAMS_USER, 7, "10.0.0.1", &a[1], &limit), RC_OK);
    /* User 7 is at its cap: refused, and nothing changes. */
    assert_int_equal(streams_take(s, STREAMS_USER, 7, "10.0.0.2", &a[2], &limit), RC_ERATE);
    assert_int_equal(limit, 2);
    assert_int_equal(a[2].held, 0);
    assert_int_equal(streams_count(s, STREAMS_USER, 7, NULL), 2);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.0.2"), 0);
    /* Another user from the same address: the address's cap (3) next. */
    assert_int_equal(streams_take(s, STREAMS_USER, 8, "10.0.0.1", &b, &limit), RC_OK);
    assert_int_equal(streams_take(s, STREAMS_USER, 9, "10.0.0.1", &c, &limit), RC_ERATE);
    assert_int_equal(limit, 3);
    assert_int_equal(streams_count(s, STREAMS_USER, 9, NULL), 0);
    /* Giving one back lets the next in; a second give is a no-op. */
    streams_give(s, &a[0]);
    streams_give(s, &a[0]);
    assert_int_equal(streams_count(s, STREAMS_USER, 7, NULL), 1);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.0.1"), 2);
    assert_int_equal(streams_take(s, STREAMS_USER, 9, "10.0.0.1", &c, &limit), RC_OK);
    streams_give(s, &a[1]);
    streams_give(s, &b);
    streams_give(s, &c);
    assert_int_equal(streams_count(s, STREAMS_USER, 7, NULL), 0);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.0.1"), 0);
    streams_free(s);
}

static void test_total_and_nodes_apart(void **state)
{
    struct streams *s = streams_new(&lim);
    struct streams_slot u[6], n1 = {0}, n2 = {0}, n3 = {0};
    char addr[32];
    int limit = 0;

    (void)state;
    memset(u, 0, sizeof(u));
    for (int i = 0; i < 5; i++) {
        snprintf(addr, sizeof(addr), "10.0.1.%d", i);
        assert_int_equal(streams_take(s, STREAMS_USER, 100 + i, addr, &u[i], &limit), RC_OK);
    }
    assert_int_equal(streams_take(s, STREAMS_USER, 200, "10.0.2.1", &u[5], &limit), RC_ERATE);
    assert_int_equal(limit, 5);
    /* Users hold every user slot and the address is full: a node still
     * gets its own, counted per node and not per address. */
    assert_int_equal(streams_take(s, STREAMS_NODE, 1, "10.0.1.0", &n1, &limit), RC_OK);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.1.0"), 1);
    assert_int_equal(streams_take(s, STREAMS_NODE, 1, "10.0.1.0", &n2, &limit), RC_ERATE);
    assert_int_equal(limit, 1);
    assert_int_equal(streams_take(s, STREAMS_NODE, 2, "10.0.1.0", &n3, &limit), RC_OK);
    /* Node 1 and user 1 are different callers. */
    assert_int_equal(streams_count(s, STREAMS_NODE, 1, NULL), 1);
    assert_int_equal(streams_count(s, STREAMS_USER, 1, NULL), 0);
    streams_give(s, &n1);
    assert_int_equal(streams_take(s, STREAMS_NODE, 1, "10.0.1.0", &n2, &limit), RC_OK);
    streams_give(s, &n2);
    streams_give(s, &n3);
    for (int i = 0; i < 5; i++)
        streams_give(s, &u[i]);
    assert_int_equal(streams_take(s, STREAMS_USER, 200, "10.0.2.1", &u[5], &limit), RC_OK);
    streams_give(s, &u[5]);
    /* An anonymous caller counts by address only. */
    assert_int_equal(streams_take(s, STREAMS_USER, 0, "10.0.3.1", &u[0], &limit), RC_OK);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.3.1"), 1);
    streams_give(s, &u[0]);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "10.0.3.1"), 0);
    streams_free(s);
}

#define T_THREADS 8
#define T_ROUNDS 2000

struct worker_arg {
    struct streams *s;
    int id;
    int refused;
};

static void *churn(void *p)
{
    struct worker_arg *w = p;
    int limit;

    for (int i = 0; i < T_ROUNDS; i++) {
        struct streams_slot slot = {0};
        /* Two users and two addresses shared by all threads. */
        if (streams_take(w->s, STREAMS_USER, 1 + (w->id + i) % 2, (i % 3) ? "a" : "b", &slot,
                         &limit) != RC_OK) {
            w->refused++;
            continue;
        }
        streams_give(w->s, &slot);
    }
    return NULL;
}

static void test_threads_lose_no_count(void **state)
{
    struct streams_limits big = {.per_user = 3, .per_addr = 4, .total_user = 6, .per_node = 1};
    struct streams *s = streams_new(&big);
    pthread_t t[T_THREADS];
    struct worker_arg w[T_THREADS];
    struct streams_slot held[4];
    int limit;

    (void)state;
    memset(held, 0, sizeof(held));
    for (int i = 0; i < T_THREADS; i++) {
        w[i] = (struct worker_arg){s, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < T_THREADS; i++)
        pthread_join(t[i], NULL);
    /* Every take was given back: all counters are at zero again. */
    assert_int_equal(streams_count(s, STREAMS_USER, 1, NULL), 0);
    assert_int_equal(streams_count(s, STREAMS_USER, 2, NULL), 0);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "a"), 0);
    assert_int_equal(streams_count(s, STREAMS_USER, 0, "b"), 0);
    /* ... so the whole cap is free again, and no more than it. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(streams_take(s, STREAMS_USER, 1, "a", &held[i], &limit), RC_OK);
    assert_int_equal(streams_take(s, STREAMS_USER, 1, "a", &held[3], &limit), RC_ERATE);
    for (int i = 0; i < 3; i++)
        streams_give(s, &held[i]);
    streams_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_and_address_caps),
        cmocka_unit_test(test_total_and_nodes_apart),
        cmocka_unit_test(test_threads_lose_no_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
