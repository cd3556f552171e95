/*
 * test_lease.c - the scheduling lease's decisions (server/loops/lease.c):
 * the renewal period, when a renewal is due, when the leader's own clock
 * says its lease may have run out, what a renewal's answer means, and when
 * a follower ends the holder's session.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lease.h"

static void test_renew_period(void **state)
{
    (void)state;
    assert_int_equal(lease_renew_period_ms(10000), 2000);
    assert_int_equal(lease_renew_period_ms(1000), 200);
    /* Never a busy loop, whatever the lease. */
    assert_int_equal(lease_renew_period_ms(300), LEASE_MIN_RENEW_MS);
    assert_int_equal(lease_renew_period_ms(0), LEASE_MIN_RENEW_MS);
}

static void test_due_and_lapsed(void **state)
{
    struct lease_holder h = {7, 10000, 50000};

    (void)state;
    assert_int_equal(lease_next_renew_ms(&h), 52000);
    assert_false(lease_lapsed(&h, 50000));
    assert_false(lease_lapsed(&h, 59999));
    assert_true(lease_lapsed(&h, 60000)); /* a process stopped for the lease time */
    assert_true(lease_lapsed(&h, 1000000));
}

static void test_after_renew(void **state)
{
    struct lease_holder h = {7, 10000, 50000};

    (void)state;
    /* Renewed: measured from the sending, never from the answer. */
    assert_int_equal(lease_after_renew(&h, 52000, 52900, RC_OK, 1), LEASE_KEEP);
    assert_int_equal(h.renew_sent_ms, 52000);
    /* The row is another epoch's or another session's: taken. */
    assert_int_equal(lease_after_renew(&h, 54000, 54001, RC_OK, 0), LEASE_LOST_TAKEN);
    assert_int_equal(h.renew_sent_ms, 52000);
    /* The session ended (a follower ended it, or the database went away). */
    assert_int_equal(lease_after_renew(&h, 54000, 54001, RC_EUNAVAIL, 0), LEASE_LOST_SESSION);
    /* A statement error on a live session: tried again while the lease lasts. */
    assert_int_equal(lease_after_renew(&h, 54000, 54001, RC_EINTERNAL, 0), LEASE_RETRY);
    assert_int_equal(lease_after_renew(&h, 61999, 61999, RC_ERETRY, 0), LEASE_RETRY);
    assert_int_equal(lease_after_renew(&h, 62000, 62000, RC_EINTERNAL, 0), LEASE_LOST_LAPSED);
    assert_int_equal(h.renew_sent_ms, 52000);
}

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(lease_verdict_str(LEASE_LOST_SESSION), "session_ended");
    assert_string_equal(lease_verdict_str(LEASE_LOST_TAKEN), "taken_by_another");
    assert_string_equal(lease_verdict_str(LEASE_LOST_LAPSED), "lapsed");
    assert_string_equal(lease_verdict_str((enum lease_verdict)99), "unknown");
}

static void test_should_end_holder(void **state)
{
    (void)state;
    assert_true(lease_should_end_holder(1, 1));
    /* Not expired: the leader is alive, only slow to be seen. */
    assert_false(lease_should_end_holder(0, 1));
    /* The recorded session no longer holds the lock: nothing to end (the
     * lock is free or held by a session this lease does not know). */
    assert_false(lease_should_end_holder(1, 0));
    assert_false(lease_should_end_holder(0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renew_period),      cmocka_unit_test(test_due_and_lapsed),
        cmocka_unit_test(test_after_renew),       cmocka_unit_test(test_verdict_names),
        cmocka_unit_test(test_should_end_holder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
