/*
 * test_audit_target.c - audit targets: each kind is built in its one form,
 * what is not a name or an id is refused (and leaves no target behind), and
 * audit_target_valid() accepts exactly what the patterns of the "Targets"
 * table of docs/audit-export.md accept, read from the document itself so that
 * the two cannot drift apart.
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit_target.h"

#ifndef TY_SOURCE_DIR
#define TY_SOURCE_DIR "."
#endif

#define MAX_PATTERNS 32

static void test_named_kinds(void **state)
{
    char t[AUDIT_TARGET_SIZE];
    (void)state;

    assert_int_equal(audit_target_name(AUDIT_TARGET_USER, "li.wei", t), RC_OK);
    assert_string_equal(t, "user:li.wei");
    assert_int_equal(audit_target_name(AUDIT_TARGET_NODE, "gpu-07", t), RC_OK);
    assert_string_equal(t, "node:gpu-07");
    assert_int_equal(audit_target_name(AUDIT_TARGET_TEAM, "imaging", t), RC_OK);
    assert_string_equal(t, "team:imaging");
    assert_int_equal(audit_target_name(AUDIT_TARGET_SITE, "plant_a", t), RC_OK);
    assert_string_equal(t, "site:plant_a");
    assert_int_equal(audit_target_name(AUDIT_TARGET_DATASET, "ct-2025.v2", t), RC_OK);
    assert_string_equal(t, "dataset:ct-2025.v2");
    assert_int_equal(audit_target_name(AUDIT_TARGET_NODE, "7", t), RC_OK);
    assert_string_equal(t, "node:7");
}

static void test_names_refused(void **state)
{
    char t[AUDIT_TARGET_SIZE], longest[65], too_long[66];
    const char *bad[] = {"",      "Alice", "-x", ".x",   "_x",  "a b", "a:b",
                         "job:1", "a,b",   "ä",  "a\nb", "a/b", "a\"", NULL};
    (void)state;

    memset(longest, 'a', 64);
    longest[64] = '\0';
    memset(too_long, 'a', 65);
    too_long[65] = '\0';
    assert_int_equal(audit_target_name(AUDIT_TARGET_DATASET, longest, t), RC_OK);
    assert_int_equal(strlen(t), strlen("dataset:") + 64);
    assert_true(strlen(t) < AUDIT_TARGET_SIZE);
    for (int i = 0; bad[i] != NULL; i++) {
        memcpy(t, "junk", 5);
        assert_int_equal(audit_target_name(AUDIT_TARGET_USER, bad[i], t), RC_EINVAL);
        assert_string_equal(t, "");
    }
    memcpy(t, "junk", 5);
    assert_int_equal(audit_target_name(AUDIT_TARGET_USER, too_long, t), RC_EINVAL);
    assert_string_equal(t, "");
    assert_int_equal(audit_target_name(AUDIT_TARGET_USER, NULL, t), RC_EINVAL);
    assert_string_equal(t, "");
    assert_int_equal(audit_target_name((enum audit_target_named)99, "x", t), RC_EINVAL);
    assert_string_equal(t, "");
}

static void test_numbered_kinds(void **state)
{
    char t[AUDIT_TARGET_SIZE];
    (void)state;

    assert_int_equal(audit_target_id(AUDIT_TARGET_JOB, 42, t), RC_OK);
    assert_string_equal(t, "job:42");
    assert_int_equal(audit_target_id(AUDIT_TARGET_TOKEN, 1, t), RC_OK);
    assert_string_equal(t, "token:1");
    assert_int_equal(audit_target_id(AUDIT_TARGET_JOIN_TOKEN, INT64_MAX, t), RC_OK);
    assert_string_equal(t, "join_token:9223372036854775807");
    assert_true(strlen(t) < AUDIT_TARGET_SIZE);
    assert_int_equal(audit_target_id(AUDIT_TARGET_WEBHOOK, 3, t), RC_OK);
    assert_string_equal(t, "webhook:3");
    assert_int_equal(audit_target_id(AUDIT_TARGET_EXPORT, 17, t), RC_OK);
    assert_string_equal(t, "export:17");
    assert_int_equal(audit_target_id_text(AUDIT_TARGET_JOB, "42", t), RC_OK);
    assert_string_equal(t, "job:42");
    assert_int_equal(audit_target_id_text(AUDIT_TARGET_EXPORT, "9223372036854775807", t), RC_OK);
    assert_string_equal(t, "export:9223372036854775807");

    assert_int_equal(audit_target_id(AUDIT_TARGET_JOB, 0, t), RC_EINVAL);
    assert_string_equal(t, "");
    assert_int_equal(audit_target_id(AUDIT_TARGET_JOB, -5, t), RC_EINVAL);
    assert_int_equal(audit_target_id((enum audit_target_numbered)99, 5, t), RC_EINVAL);
    assert_string_equal(t, "");
    {
        const char *bad[] = {"",
                             "0",
                             "01",
                             "-1",
                             "+1",
                             "1a",
                             " 1",
                             "1 ",
                             "0x1",
                             "1.0",
                             "gpu-1",
                             "9223372036854775808",
                             "12345678901234567890",
                             NULL};
        for (int i = 0; bad[i] != NULL; i++) {
            memcpy(t, "junk", 5);
            assert_int_equal(audit_target_id_text(AUDIT_TARGET_JOB, bad[i], t), RC_EINVAL);
            assert_string_equal(t, "");
        }
        assert_int_equal(audit_target_id_text(AUDIT_TARGET_JOB, NULL, t), RC_EINVAL);
    }
}

/* The patterns of the "Targets" table of docs/audit-export.md (the third
 * column's `...`), compiled; returns how many. */
static int doc_patterns(regex_t *re, int max)
{
    char path[1024], line[2048];
    int n = 0, in_section = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/docs/audit-export.md", TY_SOURCE_DIR);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char *col = line, *open, *close;
        if (strncmp(line, "## ", 3) == 0) {
            in_section = strcmp(line, "## Targets\n") == 0;
            continue;
        }
        if (!in_section || line[0] != '|')
            continue;
        for (int i = 0; i < 2 && col != NULL; i++) /* to the bar before the third column */
            col = strchr(col + 1, '|');
        if (col == NULL || (open = strchr(col, '`')) == NULL || open > strchr(col + 1, '|'))
            continue; /* the header and the rule under it */
        close = strchr(open + 1, '`');
        assert_non_null(close);
        *close = '\0';
        assert_true(n < max);
        assert_int_equal(regcomp(&re[n], open + 1, REG_EXTENDED | REG_NOSUB), 0);
        n++;
    }
    fclose(f);
    return n;
}

static int doc_accepts(regex_t *re, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (regexec(&re[i], s, 0, NULL, 0) == 0)
            return 1;
    return 0;
}

static void test_valid_agrees_with_the_document(void **state)
{
    regex_t re[MAX_PATTERNS];
    char t[AUDIT_TARGET_SIZE], long_name[80];
    const char *samples[] = {
        "", "policy", "audit:events", "user:alice", "user:li.wei", "node:gpu-07", "node:7",
        "team:alpha", "site:default", "dataset:ct-2025.v2", "job:1", "job:42", "token:3",
        "join_token:5", "webhook:9", "export:12", "job:9223372036854775807", "serve:batch:1",
        "serve:batch:4096",
        /* not a form */
        "user:", "user:Alice", "user:-x", "user:a b", "user:a:b", "node:gpu 7", "job:", "job:0",
        "job:01", "job:-1", "job:gpu-1", "job:1a", "token:x", "export:", "team:", "policy:1",
        "Policy", "audit", "audit:", "audit:event", "audit:events ", " job:1", "job:1 ", "job",
        "jobs:1", "users:alice", "node", ":", "x:y", "join-token:1", "join_token:a", "webhook:1,2",
        "dataset:a/b", "user:alice\n", "serve:batch:", "serve:batch:0", "serve:batch:x", "serve:1",
        "serve:batch", "batch:1", "serve:batch:1:2", "job:serve:batch:1", NULL};
    int n = doc_patterns(re, MAX_PATTERNS);
    (void)state;

    assert_true(n >= 13); /* every kind, the two fixed targets and the empty one */
    for (int i = 0; samples[i] != NULL; i++) {
        if (audit_target_valid(samples[i]) != doc_accepts(re, n, samples[i]))
            fail_msg("audit_target_valid(\"%s\") is %d, the document says %d", samples[i],
                     audit_target_valid(samples[i]), doc_accepts(re, n, samples[i]));
    }
    assert_true(audit_target_valid(NULL));
    /* 65-byte names: too long for both */
    snprintf(long_name, sizeof(long_name), "site:%065d", 0);
    long_name[5] = 'a';
    assert_false(audit_target_valid(long_name));
    assert_false(doc_accepts(re, n, long_name));
    /* whatever the builders make is documented */
    assert_int_equal(audit_target_name(AUDIT_TARGET_SITE, "a.b_c-d", t), RC_OK);
    assert_true(audit_target_valid(t) && doc_accepts(re, n, t));
    assert_int_equal(audit_target_id(AUDIT_TARGET_JOIN_TOKEN, 1234, t), RC_OK);
    assert_true(audit_target_valid(t) && doc_accepts(re, n, t));
    /* the one gap between a regular expression and int64_t: ids past INT64_MAX */
    assert_false(audit_target_valid("job:9223372036854775808"));
    for (int i = 0; i < n; i++)
        regfree(&re[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_named_kinds),
        cmocka_unit_test(test_names_refused),
        cmocka_unit_test(test_numbered_kinds),
        cmocka_unit_test(test_valid_agrees_with_the_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
