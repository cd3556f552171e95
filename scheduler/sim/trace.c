/*
 * trace.c - job-trace parsers for trainyard-sim (Philly summary CSV and a
 * plain CSV) and Pollux-style sampling. Input is outside data: every number is
 * read with checked strtoll/strtod, every row error names its line, nothing
 * aborts. Fuzzed by tests/fuzz/fuzz_sched_trace.c.
 */
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 8
#define MAX_FIELD 64
#define MAX_DURATION_S (10.0 * 365 * 86400) /* ten years: anything longer is a typo */

int64_t sim_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    /* Howard Hinnant's days_from_civil */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    long long v;

    if (*s == '\0')
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double *out)
{
    char *end = NULL;
    double v;

    if (*s == '\0')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* "YYYY-MM-DD HH:MM:SS" -> seconds since the epoch (no timezone). */
static bool parse_ts(const char *s, int64_t *out, int64_t *tod)
{
    int64_t v[6];
    const char seps[6] = {'-', '-', ' ', ':', ':', '\0'};
    const int width[6] = {4, 2, 2, 2, 2, 2};
    const int64_t lo[6] = {1970, 1, 1, 0, 0, 0}, hi[6] = {9999, 12, 31, 23, 59, 60};

    for (int i = 0; i < 6; i++) {
        char buf[8];
        for (int k = 0; k < width[i]; k++) {
            if (s[k] < '0' || s[k] > '9')
                return false;
            buf[k] = s[k];
        }
        buf[width[i]] = '\0';
        s += width[i];
        if (*s != seps[i])
            return false;
        if (i < 5)
            s++;
        if (!parse_i64(buf, lo[i], hi[i], &v[i]))
            return false;
    }
    *tod = v[3] * 3600 + v[4] * 60 + v[5];
    *out = sim_days_from_civil(v[0], (unsigned)v[1], (unsigned)v[2]) * 86400 + *tod;
    return true;
}

/* Split one line (no newline) into at most MAX_FIELDS trimmed fields. */
static int split(const char *p, size_t n, char f[MAX_FIELDS][MAX_FIELD])
{
    int nf = 0;
    size_t i = 0;

    for (;;) {
        size_t k = 0;
        if (nf == MAX_FIELDS)
            return -1;
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        while (i < n && p[i] != ',') {
            if (k + 1 >= MAX_FIELD || p[i] == '\0')
                return -1;
            f[nf][k++] = p[i++];
        }
        while (k > 0 && (f[nf][k - 1] == ' ' || f[nf][k - 1] == '\t' || f[nf][k - 1] == '\r'))
            k--;
        f[nf][k] = '\0';
        nf++;
        if (i >= n)
            return nf;
        i++; /* the comma */
    }
}

struct names {
    char (*s)[MAX_FIELD];
    size_t n, cap;
};

static int64_t team_of(struct names *nm, const char *name)
{
    for (size_t i = 0; i < nm->n; i++)
        if (strcmp(nm->s[i], name) == 0)
            return (int64_t)i;
    if (nm->n == nm->cap) {
        size_t nc = nm->cap ? nm->cap * 2 : 16;
        void *ns = realloc(nm->s, nc * sizeof(*nm->s));
        if (!ns)
            return -1;
        nm->s = ns;
        nm->cap = nc;
    }
    memcpy(nm->s[nm->n], name, MAX_FIELD);
    return (int64_t)nm->n++;
}

static int cmp_job(const void *a, const void *b)
{
    const struct sim_job *x = a, *y = b;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static enum rc row(enum sim_format fmt, char f[MAX_FIELDS][MAX_FIELD], int nf, long line,
                   struct names *nm, struct sim_job *j, struct err *e)
{
    double dur = 0, sub = 0;
    int64_t g = 0, ts = 0, tod = -1, lim = 0;

    memset(j, 0, sizeof(*j));
    j->line = line;
    if (fmt == SIM_FORMAT_PHILLY) {
        if (nf != 5)
            return err_set(e, RC_EINVAL, "trace", "line %ld: expected 5 fields, got %d", line, nf);
        if (!parse_ts(f[0], &ts, &tod))
            return err_set(e, RC_EINVAL, "trace", "line %ld: bad timestamp \"%s\"", line, f[0]);
        sub = (double)ts;
    } else {
        if (nf < 3 || nf > 5)
            return err_set(e, RC_EINVAL, "trace", "line %ld: expected 3 to 5 fields, got %d", line,
                           nf);
        if (!parse_f64(f[0], &sub) || sub < 0 || sub > MAX_DURATION_S)
            return err_set(e, RC_EINVAL, "trace", "line %ld: bad submit time \"%s\"", line, f[0]);
    }
    if (!parse_f64(f[1], &dur) || dur < 0 || dur > MAX_DURATION_S)
        return err_set(e, RC_EINVAL, "trace", "line %ld: bad duration \"%s\"", line, f[1]);
    if (!parse_i64(f[2], INT32_MIN, INT32_MAX, &g))
        return err_set(e, RC_EINVAL, "trace", "line %ld: bad gpu count \"%s\"", line, f[2]);
    if (g <= 0 || g > SCHED_MAX_JOB_GPUS)
        return err_set(e, RC_EINVAL, "trace", "line %ld: gpu count %lld out of range 1..%d", line,
                       (long long)g, SCHED_MAX_JOB_GPUS);
    if (fmt == SIM_FORMAT_PHILLY) {
        j->team = team_of(nm, f[4]);
    } else if (nf >= 4 && f[3][0] != '\0') {
        j->team = team_of(nm, f[3]);
    }
    if (j->team < 0)
        return RC_ENOMEM;
    if (fmt == SIM_FORMAT_CSV && nf == 5 && f[4][0] != '\0') {
        double l = 0;
        if (!parse_f64(f[4], &l) || l <= 0 || l > MAX_DURATION_S)
            return err_set(e, RC_EINVAL, "trace", "line %ld: bad time limit \"%s\"", line, f[4]);
        lim = (int64_t)ceil(l * 1000.0);
    }
    j->submit_ms = (int64_t)llround(sub * 1000.0);
    j->duration_ms = (int64_t)llround(dur * 1000.0);
    j->gpus = (int)g;
    j->time_limit_ms = lim;
    j->tod_s = tod;
    return RC_OK;
}

enum rc sim_trace_parse(const char *text, size_t len, enum sim_format fmt, struct sim_trace *out,
                        struct err *e)
{
    struct names nm = {0};
    struct sim_job *jobs = NULL;
    size_t nj = 0, cap = 0, pos = 0;
    long line = 0;
    enum rc rc = RC_EINVAL;
    char f[MAX_FIELDS][MAX_FIELD];

    memset(out, 0, sizeof(*out));
    if (fmt != SIM_FORMAT_PHILLY && fmt != SIM_FORMAT_CSV) {
        rc = err_set(e, RC_EINVAL, "format", "unknown trace format");
        goto out;
    }
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        const char *p = text + pos;
        size_t n = end - pos;
        pos = end + 1;
        line++;
        while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
            n--;
        if (n == 0 || p[0] == '#')
            continue;
        int nf = split(p, n, f);
        if (nf < 0) {
            rc = err_set(e, RC_EINVAL, "trace", "line %ld: malformed row", line);
            goto out;
        }
        /* a header: the first row whose first field is not a number or date */
        if (nj == 0 && (strcmp(f[0], "timestamp") == 0 || strcmp(f[0], "submit_s") == 0))
            continue;
        if (nj == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            struct sim_job *nb = realloc(jobs, nc * sizeof(*nb));
            if (!nb) {
                rc = RC_ENOMEM;
                goto out;
            }
            jobs = nb;
            cap = nc;
        }
        if ((rc = row(fmt, f, nf, line, &nm, &jobs[nj], e)) != RC_OK)
            goto out;
        nj++;
    }
    if (nj == 0) {
        rc = err_set(e, RC_EINVAL, "trace", "the trace has no jobs (%ld lines)", line);
        goto out;
    }
    qsort(jobs, nj, sizeof(*jobs), cmp_job);
    int64_t t0 = jobs[0].submit_ms;
    for (size_t i = 0; i < nj; i++)
        jobs[i].submit_ms -= t0;
    out->jobs = jobs;
    out->njobs = nj;
    out->nteams = (int64_t)(nm.n ? nm.n : 1);
    jobs = NULL;
    rc = RC_OK;
out:
    free(jobs);
    free(nm.s);
    return rc;
}

void sim_trace_free(struct sim_trace *t)
{
    if (t == NULL)
        return;
    free(t->jobs);
    memset(t, 0, sizeof(*t));
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

enum rc sim_trace_sample(struct sim_trace *t, size_t n, uint64_t seed, struct err *e)
{
    size_t k = 0;
    bool philly = t->njobs > 0 && t->jobs[0].tod_s >= 0;

    if (n == 0)
        return err_set(e, RC_EINVAL, "sample", "a sample needs at least one job");

    for (size_t i = 0; i < t->njobs; i++) {
        struct sim_job *j = &t->jobs[i];
        if (philly) {
            double gpuh = (double)j->duration_ms / 3.6e6 * j->gpus;
            if (j->duration_ms < 60000 || gpuh >= 1000.0 || j->tod_s < 2 * 3600 ||
                j->tod_s >= 10 * 3600)
                continue;
        }
        t->jobs[k++] = *j;
    }
    if (k < n)
        return err_set(e, RC_EINVAL, "sample", "only %zu jobs qualify for a sample of %zu", k, n);
    /* partial Fisher-Yates: the first n entries become the sample */
    for (size_t i = 0; i < n; i++) {
        size_t r = i + (size_t)(splitmix(&seed) % (uint64_t)(k - i));
        struct sim_job tmp = t->jobs[i];
        t->jobs[i] = t->jobs[r];
        t->jobs[r] = tmp;
    }
    for (size_t i = 0; i < n && philly; i++)
        t->jobs[i].submit_ms = (t->jobs[i].tod_s - 2 * 3600) * 1000;
    t->njobs = n;
    qsort(t->jobs, n, sizeof(*t->jobs), cmp_job);
    int64_t t0 = philly ? 0 : t->jobs[0].submit_ms;
    for (size_t i = 0; i < n; i++)
        t->jobs[i].submit_ms -= t0;
    return RC_OK;
}
