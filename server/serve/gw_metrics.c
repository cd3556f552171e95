/*
 * gw_metrics.c - the gateway's series (gw_metrics.h): a fixed table of
 * (deployment, version) rows under one mutex; a scrape copies it and
 * renders with no lock held.
 */
#include "gw_metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double bounds_s[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                  0.25,  0.5,    1,     2.5,  5,     10,   30};
#define NB (sizeof(bounds_s) / sizeof(bounds_s[0]))

struct hist {
    int64_t b[NB + 1]; /* per bucket (not cumulative); the last is +Inf */
    double sum_s;
    int64_t count;
};

struct series {
    char deployment[64]; /* "" = unused slot */
    int64_t version;
    int64_t requests, errors, completion_tokens, inflight;
    struct hist latency, ttft;
};

struct gw_metrics {
    pthread_mutex_t lock;
    struct series s[GW_METRICS_SERIES + 1]; /* the last: "_other" */
};

struct gw_metrics *gw_metrics_new(void)
{
    struct gw_metrics *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    pthread_mutex_init(&m->lock, NULL);
    snprintf(m->s[GW_METRICS_SERIES].deployment, 64, "_other");
    return m;
}

/* The row of (d, v), made on first use; under lock. */
static struct series *row(struct gw_metrics *m, const char *d, int64_t v)
{
    for (int i = 0; i < GW_METRICS_SERIES; i++) {
        struct series *s = &m->s[i];
        if (s->deployment[0] == '\0') {
            snprintf(s->deployment, sizeof(s->deployment), "%s", d);
            s->version = v;
            return s;
        }
        if (s->version == v && strcmp(s->deployment, d) == 0)
            return s;
    }
    return &m->s[GW_METRICS_SERIES];
}

static void hist_add(struct hist *h, int64_t us)
{
    double s = (double)us / 1e6;
    size_t i = 0;

    while (i < NB && s > bounds_s[i])
        i++;
    h->b[i]++;
    h->sum_s += s;
    h->count++;
}

void gw_metrics_inflight(struct gw_metrics *m, const char *deployment, int64_t version, int delta)
{
    pthread_mutex_lock(&m->lock);
    row(m, deployment[0] ? deployment : "_none", version)->inflight += delta;
    pthread_mutex_unlock(&m->lock);
}

void gw_metrics_observe(struct gw_metrics *m, const char *deployment, int64_t version, int status,
                        int64_t latency_us, int64_t ttft_us, int64_t completion_tokens)
{
    struct series *s;

    pthread_mutex_lock(&m->lock);
    s = row(m, deployment[0] ? deployment : "_none", version);
    s->requests++;
    if (status >= 400)
        s->errors++;
    s->completion_tokens += completion_tokens;
    hist_add(&s->latency, latency_us);
    if (ttft_us > 0)
        hist_add(&s->ttft, ttft_us);
    pthread_mutex_unlock(&m->lock);
}

static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if (*buf != NULL && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        size_t ncap = (*cap ? *cap : 4096) * 2 + (size_t)n;
        char *nb = realloc(*buf, ncap);
        if (nb == NULL)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
}

static int put_hist(char **b, size_t *l, size_t *c, const char *name, const struct series *s,
                    const struct hist *h)
{
    int64_t cum = 0;
    int bad = 0;

    for (size_t i = 0; i <= NB; i++) {
        char le[24];
        cum += h->b[i];
        if (i < NB)
            snprintf(le, sizeof(le), "%g", bounds_s[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        bad |= put(b, l, c, "%s_bucket{deployment=\"%s\",version=\"%lld\",le=\"%s\"} %lld\n", name,
                   s->deployment, (long long)s->version, le, (long long)cum);
    }
    bad |= put(b, l, c, "%s_sum{deployment=\"%s\",version=\"%lld\"} %.6f\n", name, s->deployment,
               (long long)s->version, h->sum_s);
    bad |= put(b, l, c, "%s_count{deployment=\"%s\",version=\"%lld\"} %lld\n", name, s->deployment,
               (long long)s->version, (long long)h->count);
    return bad;
}

enum rc gw_metrics_render(struct gw_metrics *m, int64_t dropped, char **b, size_t *l, size_t *c)
{
    struct series *copy = malloc(sizeof(m->s));
    int bad = 0, n = 0;

    if (copy == NULL)
        return RC_ENOMEM;
    pthread_mutex_lock(&m->lock);
    memcpy(copy, m->s, sizeof(m->s));
    pthread_mutex_unlock(&m->lock);
    while (n < GW_METRICS_SERIES && copy[n].deployment[0] != '\0')
        n++;
    copy[n] = copy[GW_METRICS_SERIES];
    n++;
    static const struct {
        const char *name, *type, *help;
        size_t off;
    } counters[] = {
        {"trainyard_gateway_requests_total", "counter", "gateway requests answered",
         offsetof(struct series, requests)},
        {"trainyard_gateway_errors_total", "counter", "gateway requests answered 4xx or 5xx",
         offsetof(struct series, errors)},
        {"trainyard_gateway_completion_tokens_total", "counter",
         "completion tokens the replicas generated", offsetof(struct series, completion_tokens)},
        {"trainyard_gateway_inflight", "gauge", "gateway requests in flight",
         offsetof(struct series, inflight)},
    };
    for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
        bad |= put(b, l, c, "# HELP %s %s\n# TYPE %s %s\n", counters[k].name, counters[k].help,
                   counters[k].name, counters[k].type);
        for (int i = 0; i < n; i++)
            bad |= put(b, l, c, "%s{deployment=\"%s\",version=\"%lld\"} %lld\n", counters[k].name,
                       copy[i].deployment, (long long)copy[i].version,
                       (long long)*(const int64_t *)(const void *)((const char *)&copy[i] +
                                                                   counters[k].off));
    }
    bad |= put(b, l, c,
               "# HELP trainyard_gateway_latency_seconds gateway request latency, until the "
               "answer was sent\n# TYPE trainyard_gateway_latency_seconds histogram\n");
    for (int i = 0; i < n; i++)
        bad |= put_hist(b, l, c, "trainyard_gateway_latency_seconds", &copy[i], &copy[i].latency);
    bad |= put(b, l, c,
               "# HELP trainyard_gateway_ttft_seconds time to the replica's first answer byte\n"
               "# TYPE trainyard_gateway_ttft_seconds histogram\n");
    for (int i = 0; i < n; i++)
        bad |= put_hist(b, l, c, "trainyard_gateway_ttft_seconds", &copy[i], &copy[i].ttft);
    bad |= put(b, l, c,
               "# HELP trainyard_gateway_records_dropped_total request records dropped (writer "
               "queue full)\n# TYPE trainyard_gateway_records_dropped_total counter\n"
               "trainyard_gateway_records_dropped_total %lld\n",
               (long long)dropped);
    free(copy);
    return bad ? RC_ENOMEM : RC_OK;
}

void gw_metrics_free(struct gw_metrics *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}
