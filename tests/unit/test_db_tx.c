/*
 * test_db_tx.c - the retry loop of db_tx() (db_tx_run) with stand-ins for
 * BEGIN, COMMIT, ROLLBACK and the pause: which rc is retried, how often, in
 * which order the steps come, and how long it pauses; and how db_result_rc()
 * maps a result that carries no SQLSTATE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "db.h"

/* What the stand-ins saw, and what they and the body answer. */
struct fake {
    char steps[64]; /* B begin, b body, C commit, R rollback, P pause */
    size_t nsteps;
    long pauses[DB_TX_TRIES];
    int npauses;
    enum rc begin_rc;
    enum rc body_rc[DB_TX_TRIES + 1]; /* per run; RC_OK after the list */
    enum rc commit_rc[DB_TX_TRIES + 1];
    int runs, commits;
};

static void step(struct fake *f, char c)
{
    if (f->nsteps + 1 < sizeof(f->steps))
        f->steps[f->nsteps++] = c;
}

static enum rc fake_begin(void *ctx)
{
    struct fake *f = ctx;
    step(f, 'B');
    return f->begin_rc;
}

static enum rc fake_commit(void *ctx)
{
    struct fake *f = ctx;
    step(f, 'C');
    return f->commit_rc[f->commits++];
}

static void fake_rollback(void *ctx)
{
    step(ctx, 'R');
}

static void fake_pause(void *ctx, long us)
{
    struct fake *f = ctx;
    step(f, 'P');
    if (f->npauses < DB_TX_TRIES)
        f->pauses[f->npauses++] = us;
}

static enum rc body(void *arg)
{
    struct fake *f = arg;
    step(f, 'b');
    return f->body_rc[f->runs++];
}

static const struct db_tx_ops ops = {fake_begin, fake_commit, fake_rollback, fake_pause};

static enum rc run(struct fake *f)
{
    return db_tx_run(&ops, f, body, f, "r-test");
}

static void test_success_commits_once(void **state)
{
    struct fake f = {0};
    (void)state;
    assert_int_equal(run(&f), RC_OK);
    assert_string_equal(f.steps, "BbC");
}

static void test_deadlock_in_body_runs_it_again(void **state)
{
    struct fake f = {.body_rc = {RC_ERETRY, RC_ERETRY, RC_OK}};
    (void)state;
    assert_int_equal(run(&f), RC_OK);
    assert_string_equal(f.steps, "BbRPBbRPBbC");
    assert_int_equal(f.runs, 3);
    /* Jittered and growing: [0.5, 1) ms, then [1, 2) ms. */
    assert_in_range(f.pauses[0], 500, 999);
    assert_in_range(f.pauses[1], 1000, 1999);
}

static void test_conflict_at_commit_runs_it_again(void **state)
{
    struct fake f = {.commit_rc = {RC_ERETRY, RC_OK}};
    (void)state;
    assert_int_equal(run(&f), RC_OK);
    assert_string_equal(f.steps, "BbCRPBbC");
}

static void test_gives_up_after_the_last_try(void **state)
{
    struct fake f = {.body_rc = {RC_ERETRY, RC_ERETRY, RC_ERETRY, RC_ERETRY, RC_ERETRY, RC_OK}};
    (void)state;
    assert_int_equal(run(&f), RC_ERETRY);
    assert_int_equal(f.runs, DB_TX_TRIES);
    assert_int_equal(f.npauses, DB_TX_TRIES - 1);
    assert_string_equal(f.steps, "BbRPBbRPBbRPBbRPBbR");
}

static void test_other_errors_are_not_retried(void **state)
{
    static const enum rc once[] = {RC_ECONFLICT, RC_ENOTFOUND, RC_EINVAL, RC_EINTERNAL,
                                   RC_EUNAVAIL,  RC_ENOMEM,    RC_EPERM};
    (void)state;
    for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
        struct fake f = {.body_rc = {once[i], RC_OK}};
        assert_int_equal(run(&f), once[i]);
        assert_string_equal(f.steps, "BbR");
    }
    {
        struct fake f = {.commit_rc = {RC_EUNAVAIL, RC_OK}};
        assert_int_equal(run(&f), RC_EUNAVAIL);
        assert_string_equal(f.steps, "BbCR");
    }
}

static void test_failed_begin_runs_nothing(void **state)
{
    struct fake f = {.begin_rc = RC_EUNAVAIL};
    (void)state;
    assert_int_equal(run(&f), RC_EUNAVAIL);
    assert_string_equal(f.steps, "B");
    assert_int_equal(f.runs, 0);
}

static void test_backoff_bounds(void **state)
{
    static const unsigned rnd[] = {0, 1, 499, 500, 12345, 0xffffffffu};
    (void)state;
    for (size_t i = 0; i < sizeof(rnd) / sizeof(rnd[0]); i++) {
        assert_int_equal(db_tx_backoff_us(1, rnd[i]), 0);
        for (int r = 2; r <= DB_TX_TRIES; r++)
            assert_in_range(db_tx_backoff_us(r, rnd[i]), 500L << (r - 2), (1000L << (r - 2)) - 1);
        /* Beyond the last run it stays at the last run's range. */
        assert_in_range(db_tx_backoff_us(DB_TX_TRIES + 3, rnd[i]), 500L << (DB_TX_TRIES - 2),
                        (1000L << (DB_TX_TRIES - 2)) - 1);
    }
}

/* libpq's own errors carry no SQLSTATE: a connection lost under a statement
 * (a database restart) is "unavailable" (503), not an internal error (500).
 * A made-up result has no SQLSTATE either, which is what is tested here. */
static void test_result_without_sqlstate_is_unavailable(void **state)
{
    PGresult *fatal = PQmakeEmptyPGresult(NULL, PGRES_FATAL_ERROR);
    PGresult *ok = PQmakeEmptyPGresult(NULL, PGRES_COMMAND_OK);

    (void)state;
    assert_non_null(fatal);
    assert_non_null(ok);
    assert_int_equal(db_result_rc(fatal, "r-test"), RC_EUNAVAIL);
    assert_int_equal(db_result_rc(ok, "r-test"), RC_OK);
    assert_int_equal(db_result_rc(NULL, "r-test"), RC_EUNAVAIL);
    PQclear(fatal);
    PQclear(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_commits_once),
        cmocka_unit_test(test_deadlock_in_body_runs_it_again),
        cmocka_unit_test(test_conflict_at_commit_runs_it_again),
        cmocka_unit_test(test_gives_up_after_the_last_try),
        cmocka_unit_test(test_other_errors_are_not_retried),
        cmocka_unit_test(test_failed_begin_runs_nothing),
        cmocka_unit_test(test_backoff_bounds),
        cmocka_unit_test(test_result_without_sqlstate_is_unavailable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
