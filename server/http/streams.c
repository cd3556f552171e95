/*
 * streams.c - see streams.h. One hash table of counters, each keyed by a
 * kind (a user, a node or an address) and its id or address text, chained
 * in buckets; a counter leaves the table when it drops to zero, so the
 * table holds only callers with a request open (bounded by the connection
 * limit).
 */
#include "streams.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAMS_BUCKETS 512

enum streams_kind { KIND_USER = 'u', KIND_NODE = 'n', KIND_ADDR = 'a' };

struct counter {
    int kind;      /* enum streams_kind */
    int64_t id;    /* user or node id; 0 for an address */
    char addr[64]; /* the address; "" for a user or a node */
    int count;     /* requests counted now, > 0 while in the table */
    struct counter *next;
};

struct streams {
    pthread_mutex_t lock;
    struct streams_limits lim;
    int total_user; /* user-class requests counted now */
    struct counter *bucket[STREAMS_BUCKETS];
};

static size_t slot_of(int kind, int64_t id, const char *addr)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    h = (h ^ (uint64_t)kind) * 1099511628211ULL;
    h = (h ^ (uint64_t)id) * 1099511628211ULL;
    for (const char *p = addr; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return (size_t)(h % STREAMS_BUCKETS);
}

/* The counter of (kind, id, addr), or NULL; under the lock. */
static struct counter *find(struct streams *s, int kind, int64_t id, const char *addr)
{
    struct counter *c = s->bucket[slot_of(kind, id, addr)];

    while (c != NULL && (c->kind != kind || c->id != id || strcmp(c->addr, addr) != 0))
        c = c->next;
    return c;
}

/* The counter, created at zero when missing; NULL when out of memory. */
static struct counter *find_or_add(struct streams *s, int kind, int64_t id, const char *addr)
{
    struct counter *c = find(s, kind, id, addr);
    size_t b;

    if (c != NULL)
        return c;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->kind = kind;
    c->id = id;
    snprintf(c->addr, sizeof(c->addr), "%s", addr);
    b = slot_of(kind, id, addr);
    c->next = s->bucket[b];
    s->bucket[b] = c;
    return c;
}

/* Unlink and free c when it counts nothing; under the lock. */
static void drop_if_zero(struct streams *s, struct counter *c)
{
    struct counter **pp;

    if (c == NULL || c->count > 0)
        return;
    for (pp = &s->bucket[slot_of(c->kind, c->id, c->addr)]; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            free(c);
            return;
        }
    }
}

struct streams *streams_new(const struct streams_limits *lim)
{
    struct streams *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return NULL;
    }
    s->lim = *lim;
    return s;
}

/* A user-class take under the lock: user and address counters and the total. */
static enum rc take_user(struct streams *s, int64_t owner, const char *addr, int *limit)
{
    struct counter *u = NULL, *a = NULL;
    enum rc rc = RC_OK;

    if (s->total_user >= s->lim.total_user) {
        *limit = s->lim.total_user;
        return RC_ERATE;
    }
    if (owner != 0 && (u = find_or_add(s, KIND_USER, owner, "")) == NULL)
        return RC_ENOMEM;
    if (addr[0] != '\0' && (a = find_or_add(s, KIND_ADDR, 0, addr)) == NULL) {
        rc = RC_ENOMEM;
    } else if (u != NULL && u->count >= s->lim.per_user) {
        *limit = s->lim.per_user;
        rc = RC_ERATE;
    } else if (a != NULL && a->count >= s->lim.per_addr) {
        *limit = s->lim.per_addr;
        rc = RC_ERATE;
    }
    if (rc != RC_OK) {
        drop_if_zero(s, u);
        drop_if_zero(s, a);
        return rc;
    }
    if (u != NULL)
        u->count++;
    if (a != NULL)
        a->count++;
    s->total_user++;
    return RC_OK;
}

enum rc streams_take(struct streams *s, enum streams_class klass, int64_t owner, const char *addr,
                     struct streams_slot *slot, int *limit)
{
    enum rc rc = RC_OK;

    if (slot->held)
        return RC_OK;
    if (addr == NULL || klass == STREAMS_NODE)
        addr = "";
    pthread_mutex_lock(&s->lock);
    if (klass == STREAMS_NODE) {
        struct counter *n = find_or_add(s, KIND_NODE, owner, "");
        if (n == NULL) {
            rc = RC_ENOMEM;
        } else if (n->count >= s->lim.per_node) {
            *limit = s->lim.per_node;
            drop_if_zero(s, n);
            rc = RC_ERATE;
        } else {
            n->count++;
        }
    } else {
        rc = take_user(s, owner, addr, limit);
    }
    pthread_mutex_unlock(&s->lock);
    if (rc == RC_OK) {
        slot->held = 1;
        slot->klass = klass;
        slot->owner = owner;
        snprintf(slot->addr, sizeof(slot->addr), "%s", addr);
    }
    return rc;
}

/* One less on (kind, id, addr); a counter that is missing is a bug (NEVER). */
static void decrement(struct streams *s, int kind, int64_t id, const char *addr)
{
    struct counter *c = find(s, kind, id, addr);

    if (NEVER(c == NULL || c->count <= 0))
        return;
    c->count--;
    drop_if_zero(s, c);
}

void streams_give(struct streams *s, struct streams_slot *slot)
{
    if (s == NULL || !slot->held)
        return;
    pthread_mutex_lock(&s->lock);
    if (slot->klass == STREAMS_NODE) {
        decrement(s, KIND_NODE, slot->owner, "");
    } else {
        if (slot->owner != 0)
            decrement(s, KIND_USER, slot->owner, "");
        if (slot->addr[0] != '\0')
            decrement(s, KIND_ADDR, 0, slot->addr);
        if (s->total_user > 0)
            s->total_user--;
    }
    pthread_mutex_unlock(&s->lock);
    slot->held = 0;
}

int streams_count(struct streams *s, enum streams_class klass, int64_t owner, const char *addr)
{
    struct counter *c;
    int n;

    pthread_mutex_lock(&s->lock);
    if (addr != NULL)
        c = find(s, KIND_ADDR, 0, addr);
    else
        c = find(s, klass == STREAMS_NODE ? KIND_NODE : KIND_USER, owner, "");
    n = c != NULL ? c->count : 0;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void streams_free(struct streams *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < STREAMS_BUCKETS; i++) {
        while (s->bucket[i] != NULL) {
            struct counter *c = s->bucket[i];
            s->bucket[i] = c->next;
            free(c);
        }
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}
