/*
 * bench_forecast_store.c - what the leader's forecast store leaves behind
 * in PostgreSQL (server/store/db_forecast.c db_forecast_store), next to the
 * write it replaced: every row deleted and inserted again each refresh.
 *
 *   bench_forecast_store CONNINFO [JOBS] [REFRESHES]
 *
 * CONNINFO: a migrated trainyard database (forecast_store.sh makes one).
 * JOBS queued jobs (10000), REFRESHES stores per scenario (60: a minute at
 * the default forecast_interval_ms of 1000). For each scenario and each
 * write, the tables start from the same stored forecast; then REFRESHES
 * forecasts are stored one after the other and pg_stat_user_tables is read
 * before and after (pg_stat_force_next_flush() on this connection, the one
 * that wrote). Scenarios: steady (the same forecast each time), tail (10
 * jobs submitted at the queue's end each refresh), head (10 jobs at the
 * front placed each refresh, so every other job moves up 10 places).
 * Prints a Markdown table.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "db_forecast.h"

enum { STEP = 10 };

/* The forecast of queued jobs first..first+n-1 at positions 0..n-1. */
static void fill(struct db_forecast_entry *e, size_t n, int64_t first)
{
    for (size_t i = 0; i < n; i++)
        e[i] = (struct db_forecast_entry){.job_id = first + (int64_t)i,
                                          .position = (int)i,
                                          .reason = "resources",
                                          .need_gpus = 8,
                                          .free_gpus = 0,
                                          .run_ms = 3600000,
                                          .source = "template",
                                          .team_id = 1 + (first + (int64_t)i) % 7,
                                          .user_id = 1 + (first + (int64_t)i) % 31};
}

/* The replaced write: every row deleted and inserted again. */
static enum rc store_all(PGconn *c, const struct db_forecast_entry *e, size_t n,
                         const struct db_forecast_meta *m)
{
    size_t cap = n * 24 + 16;
    char *a[6] = {0};
    enum rc rc = RC_ENOMEM;

    for (int k = 0; k < 6; k++) {
        size_t len = 0;
        if ((a[k] = malloc(cap)) == NULL)
            goto out;
        a[k][len++] = '{';
        for (size_t i = 0; i < n; i++) {
            int64_t v[6] = {e[i].job_id, e[i].position, e[i].need_gpus,
                            e[i].run_ms, e[i].team_id,  e[i].user_id};
            len += (size_t)snprintf(a[k] + len, cap - len, "%s%" PRId64, i ? "," : "", v[k]);
        }
        snprintf(a[k] + len, cap - len, "}");
    }
    const char *p[] = {a[0], a[1], a[2], a[3], a[4], a[5]};
    char gen[24];
    const char *pm[] = {db_i64(m->generated_ms, gen, sizeof(gen))};
    if ((rc = db_begin(c)) != RC_OK)
        goto out;
    if ((rc = db_exec_ok(c, "bench", "DELETE FROM queue_forecast", 0, NULL)) == RC_OK)
        rc = db_exec_ok(
            c, "bench",
            "INSERT INTO queue_forecast (job_id, kind, position, reason, need_gpus, free_gpus, "
            "run_ms, source, team_id, user_id) SELECT j, 'queued', p, 'resources', ng, 0, rm, "
            "'template', t, u FROM unnest($1::bigint[], $2::int[], $3::int[], $4::bigint[], "
            "$5::bigint[], $6::bigint[]) AS x(j, p, ng, rm, t, u)",
            6, p);
    if (rc == RC_OK)
        rc = db_exec_ok(c, "bench", "DELETE FROM queue_forecast_totals", 0, NULL);
    if (rc == RC_OK)
        rc = db_exec_ok(c, "bench",
                        "INSERT INTO queue_forecast_totals (team_id, user_id, queued) SELECT "
                        "team_id, user_id, count(*) FROM queue_forecast WHERE kind = 'queued' "
                        "GROUP BY team_id, user_id",
                        0, NULL);
    if (rc == RC_OK)
        rc = db_exec_ok(c, "bench",
                        "INSERT INTO queue_forecast_meta (id, generated_at, truncated, "
                        "duration_us, queued, running) VALUES (true, timestamptz 'epoch' + "
                        "$1::bigint * interval '1 millisecond', false, 0, 0, 0) ON CONFLICT (id) "
                        "DO UPDATE SET generated_at = excluded.generated_at",
                        1, pm);
    if (rc == RC_OK)
        rc = db_commit(c);
    else
        db_rollback(c);
out:
    for (int k = 0; k < 6; k++)
        free(a[k]);
    return rc;
}

struct counts {
    int64_t upd, del, ins, dead;
};

static int stats(PGconn *c, struct counts *out)
{
    PGresult *r = PQexec(c, "SELECT pg_stat_force_next_flush()");
    PQclear(r);
    r = PQexec(c, "SELECT pg_stat_clear_snapshot()");
    PQclear(r);
    r = PQexec(c, "SELECT sum(n_tup_upd), sum(n_tup_del), sum(n_tup_ins), sum(n_dead_tup) FROM "
                  "pg_stat_user_tables WHERE relname IN ('queue_forecast', "
                  "'queue_forecast_totals', 'queue_forecast_meta')");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok) {
        out->upd = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        out->del = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        out->ins = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
        out->dead = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    }
    PQclear(r);
    return ok ? 0 : -1;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One scenario with one write; fills *d (deltas) and *ms (mean per store). */
static int run(PGconn *c, int diff, int scenario, size_t n, int refreshes, struct counts *d,
               double *ms)
{
    struct db_forecast_entry *e = calloc(n + (size_t)STEP * (size_t)refreshes, sizeof(*e));
    struct db_forecast_meta m = {.generated_ms = 1700000000000};
    struct counts a, b;
    double t0;
    int rc = -1;

    if (e == NULL)
        return -1;
    /* The same starting point for both writes: n jobs stored, vacuumed. */
    PQclear(PQexec(c, "TRUNCATE queue_forecast, queue_forecast_totals, queue_forecast_meta"));
    fill(e, n, 1);
    if (store_all(c, e, n, &m) != RC_OK)
        goto out;
    PQclear(PQexec(c, "VACUUM ANALYZE queue_forecast, queue_forecast_totals"));
    if (stats(c, &a) != 0)
        goto out;
    t0 = now_ms();
    for (int i = 1; i <= refreshes; i++) {
        size_t len = n;
        m.generated_ms += 1000;
        if (scenario == 1) { /* STEP more at the end each time */
            len = n + (size_t)STEP * (size_t)i;
            fill(e, len, 1);
        } else if (scenario == 2) { /* STEP leave the front each time */
            fill(e, n, 1 + (int64_t)STEP * i);
        }
        if ((diff ? db_forecast_store(c, e, len, &m) : store_all(c, e, len, &m)) != RC_OK)
            goto out;
    }
    *ms = (now_ms() - t0) / refreshes;
    if (stats(c, &b) != 0)
        goto out;
    *d = (struct counts){b.upd - a.upd, b.del - a.del, b.ins - a.ins, b.dead - a.dead};
    rc = 0;
out:
    free(e);
    return rc;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"steady", "tail: +10 jobs/refresh",
                                        "head: 10 jobs/refresh placed"};
    size_t n = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 10000;
    int refreshes = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 60;
    PGconn *c;

    if (argc < 2 || n == 0 || refreshes <= 0) {
        fprintf(stderr, "usage: bench_forecast_store CONNINFO [JOBS] [REFRESHES]\n");
        return 2;
    }
    c = PQconnectdb(argv[1]);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return 1;
    }
    printf("%zu queued jobs, %d refreshes (60: a minute at one a second); deltas of "
           "pg_stat_user_tables over the forecast's three tables\n\n",
           n, refreshes);
    printf("| scenario | write | n_tup_upd | n_tup_del | n_tup_ins | n_dead_tup | ms/store | "
           "upd+del vs old |\n|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < 3; s++) {
        struct counts d[2];
        double ms[2];
        for (int w = 0; w < 2; w++)
            if (run(c, w, s, n, refreshes, &d[w], &ms[w]) != 0) {
                fprintf(stderr, "%s: %s", names[s], PQerrorMessage(c));
                PQfinish(c);
                return 1;
            }
        for (int w = 0; w < 2; w++) {
            double old = (double)(d[0].upd + d[0].del), now = (double)(d[w].upd + d[w].del);
            printf("| %s | %s | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
                   " | %.1f | %.4f |\n",
                   names[s], w ? "diff (new)" : "delete+insert (old)", d[w].upd, d[w].del, d[w].ins,
                   d[w].dead, ms[w], old > 0 ? now / old : 0.0);
        }
    }
    PQfinish(c);
    return 0;
}
