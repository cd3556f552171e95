/*
 * test_wrk_state.c - state file round trip and /proc identity of processes.
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

#include "state.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ty-wrk-state-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char p[128];
    (void)state;
    snprintf(p, sizeof(p), "%s/state.json", dir);
    unlink(p);
    rmdir(dir);
    return 0;
}

static void test_round_trip(void **state)
{
    struct wrk_state *s = NULL, *r = NULL;
    struct wrk_state_attempt a;
    char path[128];
    struct stat st;
    (void)state;

    snprintf(path, sizeof(path), "%s/state.json", dir);
    assert_int_equal(wrk_state_new(&s), RC_OK);
    memset(&a, 0, sizeof(a));
    snprintf(a.attempt_id, sizeof(a.attempt_id), "31");
    snprintf(a.job_id, sizeof(a.job_id), "7");
    a.node_rank = 1;
    a.grace_s = 12;
    a.nprocs = 2;
    a.procs[0] = (struct wrk_state_proc){.rank = 2, .pid = 4242, .pgid = 4242, .starttime = 99};
    a.procs[1] = (struct wrk_state_proc){.rank = 3, .pid = 4243, .pgid = 4243, .starttime = 100};
    a.nreport = 2;
    a.report_ranks[0] = 2;
    a.report_ranks[1] = 3;
    assert_int_equal(wrk_state_add(s, &a), RC_OK);
    snprintf(a.attempt_id, sizeof(a.attempt_id), "32");
    a.nprocs = 1;
    assert_int_equal(wrk_state_add(s, &a), RC_OK);
    assert_int_equal(wrk_state_save(path, s), RC_OK);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    assert_int_equal(wrk_state_load(path, &r), RC_OK);
    assert_int_equal(r->n, 2);
    assert_string_equal(r->attempts[0].attempt_id, "31");
    assert_string_equal(r->attempts[0].job_id, "7");
    assert_int_equal(r->attempts[0].node_rank, 1);
    assert_int_equal(r->attempts[0].grace_s, 12);
    assert_int_equal(r->attempts[0].nprocs, 2);
    assert_int_equal(r->attempts[0].procs[1].pid, 4243);
    assert_int_equal(r->attempts[0].procs[1].pgid, 4243);
    assert_int_equal(r->attempts[0].procs[1].starttime, 100);
    assert_int_equal(r->attempts[0].procs[1].rank, 3);
    assert_int_equal(r->attempts[0].nreport, 2);
    assert_int_equal(r->attempts[1].nprocs, 1);
    wrk_state_free(r);
    wrk_state_free(s);
}

static void test_missing_and_corrupt(void **state)
{
    struct wrk_state *r = NULL;
    char path[128];
    FILE *f;
    (void)state;

    snprintf(path, sizeof(path), "%s/state.json", dir);
    unlink(path);
    assert_int_equal(wrk_state_load(path, &r), RC_OK);
    assert_int_equal(r->n, 0);
    wrk_state_free(r);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"attempts\":[{\"attempt_id\":\"../x\",\"job_id\":\"1\",\"node_rank\":0,\"procs\":"
          "[{\"rank\":0,\"pid\":5,\"pgid\":5,\"starttime\":1}]},{\"attempt_id\":\"9\",\"job_id\":"
          "\"1\","
          "\"node_rank\":0,\"procs\":[{\"rank\":0,\"pid\":1,\"pgid\":1,\"starttime\":1}]}]}",
          f);
    fclose(f);
    /* a bad id and pid 1 are skipped, not trusted */
    assert_int_equal(wrk_state_load(path, &r), RC_OK);
    assert_int_equal(r->n, 0);
    wrk_state_free(r);
    f = fopen(path, "w");
    fputs("{not json", f);
    fclose(f);
    assert_int_equal(wrk_state_load(path, &r), RC_EINVAL);
    assert_null(r);
}

static void test_proc_identity(void **state)
{
    uint64_t st = 0;
    (void)state;
    assert_int_equal(wrk_proc_starttime(getpid(), &st), RC_OK);
    assert_true(st > 0);
    assert_true(wrk_proc_alive(getpid(), st));
    assert_false(wrk_proc_alive(getpid(), st + 1)); /* a recycled pid does not match */
    assert_false(wrk_proc_alive(1, st));
    assert_int_equal(wrk_proc_starttime(999999999, &st), RC_ENOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_missing_and_corrupt),
        cmocka_unit_test(test_proc_identity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
