/*
 * predictor.c - run-time quantiles per key (see predictor.h).
 *
 * Main structures: one open-addressing hash table (linear probing, power of
 * two, at most half full) of entries. An entry is one key of one level (its
 * level, strings and numbers owned by the entry) and its runs twice: a ring
 * in arrival order (which run to forget when the key is full) and the same
 * runs sorted (a quantile is then one array read, which keeps a forecast over
 * 10,000 queued jobs cheap). Observing is O(max_per_key) for the sorted
 * insert; predicting is four hash lookups and allocates nothing.
 *
 * Invariants: ring and sorted hold the same n runs; n <= max_per_key; the
 * table has a free slot (load <= 1/2), so a probe always ends.
 */
#include "predictor.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { LV_EXACT = 0, LV_TEMPLATE = 1, LV_USER = 2, LV_TEAM = 3, NLEVELS = 4 };

struct entry {
    bool used;
    int level;
    uint64_t hash;
    char *tpl; /* owned; NULL when the level does not use it */
    char *cmd; /* owned; NULL when the level does not use it */
    int64_t team, user;
    int gpus;
    int64_t *ring;   /* owned; cap entries, arrival order from head */
    int64_t *sorted; /* owned; n entries ascending */
    size_t n, cap, head;
};

struct pred_state {
    double q;
    size_t min_samples, max_per_key;
    struct entry *tab; /* owned; ncap slots */
    size_t ncap, nused;
    size_t observed;
};

/* The fields of k that one level uses; false when the level does not apply. */
struct view {
    int level;
    const char *tpl, *cmd;
    int64_t team, user;
    int gpus;
};

static bool nonempty(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static bool level_view(const struct pred_key *k, int level, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->level = level;
    switch (level) {
    case LV_EXACT:
        v->tpl = nonempty(k->template_id) ? k->template_id : "";
        v->cmd = k->command ? k->command : "";
        v->team = k->team_id;
        v->user = k->user_id;
        v->gpus = k->gpus;
        return true;
    case LV_TEMPLATE:
        /* without a template every own-command job would share one key */
        if (!nonempty(k->template_id))
            return false;
        v->tpl = k->template_id;
        v->gpus = k->gpus;
        return true;
    case LV_USER:
        if (!nonempty(k->command))
            return false;
        v->cmd = k->command;
        v->user = k->user_id;
        return true;
    default:
        v->team = k->team_id;
        v->gpus = k->gpus;
        return true;
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t view_hash(const struct view *v)
{
    uint64_t h = 1469598103934665603ULL;
    unsigned char sep = 0xff; /* not in UTF-8 text: "a" + "bc" differs from "ab" + "c" */

    h = fnv(h, &v->level, sizeof(v->level));
    if (v->tpl)
        h = fnv(h, v->tpl, strlen(v->tpl));
    h = fnv(h, &sep, 1);
    if (v->cmd)
        h = fnv(h, v->cmd, strlen(v->cmd));
    h = fnv(h, &sep, 1);
    h = fnv(h, &v->team, sizeof(v->team));
    h = fnv(h, &v->user, sizeof(v->user));
    h = fnv(h, &v->gpus, sizeof(v->gpus));
    return h;
}

static bool str_eq(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool entry_is(const struct entry *e, const struct view *v, uint64_t h)
{
    return e->hash == h && e->level == v->level && e->team == v->team && e->user == v->user &&
           e->gpus == v->gpus && str_eq(e->tpl, v->tpl) && str_eq(e->cmd, v->cmd);
}

/* The slot of v, or the free slot where it would go. */
static size_t slot_of(const struct pred_state *p, const struct view *v, uint64_t h)
{
    size_t m = p->ncap - 1, i = (size_t)h & m;

    while (p->tab[i].used && !entry_is(&p->tab[i], v, h))
        i = (i + 1) & m;
    return i;
}

static void entry_free(struct entry *e)
{
    free(e->tpl);
    free(e->cmd);
    free(e->ring);
    free(e->sorted);
}

static enum rc grow(struct pred_state *p)
{
    size_t nc = p->ncap ? p->ncap * 2 : 64;
    struct entry *nt = calloc(nc, sizeof(*nt));

    if (nt == NULL)
        return RC_ENOMEM;
    for (size_t i = 0; i < p->ncap; i++) {
        if (!p->tab[i].used)
            continue;
        size_t j = (size_t)p->tab[i].hash & (nc - 1);
        while (nt[j].used)
            j = (j + 1) & (nc - 1);
        nt[j] = p->tab[i];
    }
    free(p->tab);
    p->tab = nt;
    p->ncap = nc;
    return RC_OK;
}

static char *dup_or_null(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

enum rc pred_new(const struct pred_opts *opts, struct pred_state **out)
{
    struct pred_opts o = {0};
    struct pred_state *p = NULL;

    if (out == NULL)
        return RC_EINVAL;
    *out = NULL;
    if (opts)
        o = *opts;
    if (o.quantile == 0)
        o.quantile = 0.5;
    if (!(o.quantile > 0 && o.quantile < 1)) /* also refuses NaN */
        return RC_EINVAL;
    if (o.max_per_key == 0)
        o.max_per_key = 64;
    if (o.min_samples == 0)
        o.min_samples = 3;
    if (o.max_per_key > PRED_MAX_PER_KEY || o.min_samples > o.max_per_key)
        return RC_EINVAL;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return RC_ENOMEM;
    p->q = o.quantile;
    p->min_samples = o.min_samples;
    p->max_per_key = o.max_per_key;
    if (grow(p) != RC_OK) {
        free(p);
        return RC_ENOMEM;
    }
    *out = p;
    return RC_OK;
}

void pred_free(struct pred_state *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->ncap; i++)
        if (p->tab[i].used)
            entry_free(&p->tab[i]);
    free(p->tab);
    free(p);
}

/* Make room for one more run in e (arrays grow up to max_per_key). */
static enum rc entry_reserve(const struct pred_state *p, struct entry *e)
{
    if (e->n < e->cap || e->cap == p->max_per_key)
        return RC_OK;
    size_t nc = e->cap ? e->cap * 2 : 4;
    if (nc > p->max_per_key)
        nc = p->max_per_key;
    int64_t *r = malloc(nc * sizeof(*r));
    int64_t *s = realloc(e->sorted, nc * sizeof(*s));
    if (s)
        e->sorted = s;
    if (r == NULL || s == NULL) {
        free(r);
        return RC_ENOMEM;
    }
    /* the ring is not full yet (n < cap was false only at n == cap): unroll it */
    for (size_t i = 0; i < e->n; i++)
        r[i] = e->ring[(e->head + i) % e->cap];
    free(e->ring);
    e->ring = r;
    e->head = 0;
    e->cap = nc;
    return RC_OK;
}

static void sorted_remove(struct entry *e, int64_t v)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(e->sorted + lo, e->sorted + lo + 1, (e->n - lo - 1) * sizeof(int64_t));
    e->n--;
}

static void sorted_insert(struct entry *e, int64_t v)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->sorted[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(e->sorted + lo + 1, e->sorted + lo, (e->n - lo) * sizeof(int64_t));
    e->sorted[lo] = v;
    e->n++;
}

static void entry_add(const struct pred_state *p, struct entry *e, int64_t run_ms)
{
    if (e->n == p->max_per_key) { /* forget the oldest run */
        int64_t old = e->ring[e->head];
        sorted_remove(e, old);
        e->ring[e->head] = run_ms;
        e->head = (e->head + 1) % e->cap;
        sorted_insert(e, run_ms);
        return;
    }
    e->ring[(e->head + e->n) % e->cap] = run_ms;
    sorted_insert(e, run_ms);
}

enum rc pred_observe(struct pred_state *p, const struct pred_key *k, int64_t run_ms)
{
    struct entry *slots[NLEVELS] = {NULL};
    enum rc rc = RC_OK;

    if (p == NULL || k == NULL || run_ms <= 0 || k->gpus < 0)
        return RC_EINVAL;
    /* Find or create every level's entry and make room first, so that a
     * failed allocation leaves no level with the run and another without. */
    for (int lv = 0; lv < NLEVELS; lv++) {
        struct view v;
        if (!level_view(k, lv, &v))
            continue;
        if (2 * (p->nused + 1) > p->ncap) {
            if ((rc = grow(p)) != RC_OK)
                return rc;
            for (int i = 0; i < lv; i++)
                slots[i] = NULL; /* slots moved: look them up again below */
            for (int i = 0; i < lv; i++) {
                struct view w;
                if (level_view(k, i, &w))
                    slots[i] = &p->tab[slot_of(p, &w, view_hash(&w))];
            }
        }
        uint64_t h = view_hash(&v);
        struct entry *e = &p->tab[slot_of(p, &v, h)];
        if (!e->used) {
            char *t = dup_or_null(v.tpl), *c = dup_or_null(v.cmd);
            if ((v.tpl && !t) || (v.cmd && !c)) {
                free(t);
                free(c);
                return RC_ENOMEM;
            }
            memset(e, 0, sizeof(*e));
            e->used = true;
            e->level = lv;
            e->hash = h;
            e->tpl = t;
            e->cmd = c;
            e->team = v.team;
            e->user = v.user;
            e->gpus = v.gpus;
            p->nused++;
        }
        if ((rc = entry_reserve(p, e)) != RC_OK)
            return rc; /* the new empty entry stays: it holds no run */
        slots[lv] = e;
    }
    for (int lv = 0; lv < NLEVELS; lv++)
        if (slots[lv])
            entry_add(p, slots[lv], run_ms);
    p->observed++;
    return RC_OK;
}

int64_t pred_predict(const struct pred_state *p, const struct pred_key *k, int64_t time_limit_ms,
                     enum pred_source *src)
{
    static const enum pred_source srcs[NLEVELS] = {PRED_EXACT, PRED_TEMPLATE, PRED_USER, PRED_TEAM};

    for (int lv = 0; p != NULL && k != NULL && lv < NLEVELS; lv++) {
        struct view v;
        if (!level_view(k, lv, &v))
            continue;
        uint64_t h = view_hash(&v);
        const struct entry *e = &p->tab[slot_of(p, &v, h)];
        if (!e->used || e->n < p->min_samples)
            continue;
        /* nearest rank: the smallest run with at least q of the runs at or below it */
        size_t r = (size_t)ceil(p->q * (double)e->n);
        if (r < 1)
            r = 1;
        if (r > e->n)
            r = e->n;
        if (src)
            *src = srcs[lv];
        return e->sorted[r - 1];
    }
    if (time_limit_ms > 0) {
        if (src)
            *src = PRED_TIME_LIMIT;
        return time_limit_ms;
    }
    if (src)
        *src = PRED_NONE;
    return 0;
}

const char *pred_source_name(enum pred_source s)
{
    switch (s) {
    case PRED_NONE:
        return "none";
    case PRED_EXACT:
        return "exact";
    case PRED_TEMPLATE:
        return "template";
    case PRED_USER:
        return "user";
    case PRED_TEAM:
        return "team";
    case PRED_TIME_LIMIT:
        return "time_limit";
    }
    return "unknown";
}

size_t pred_observed(const struct pred_state *p)
{
    return p ? p->observed : 0;
}
