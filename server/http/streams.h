/*
 * streams.h - how many long-lived requests each caller holds: parked
 * long-polls and streamed answers (a followed log, an audit export). Each
 * holds a connection for as long as it lasts, and libmicrohttpd accepts a
 * bounded number (HTTP_CONNECTION_LIMIT, http.h), so one caller must not be
 * able to take them all.
 *
 * Two classes that never take from each other:
 * - a user's requests (or an anonymous one's): at most per_user per signed-in
 *   user, per_addr per source address, and total_user for every user
 *   together (which leaves connections for nodes and short requests);
 * - a node's requests (its assignments long-poll): at most per_node per node
 *   credential, and not counted per address, so that members' streams from
 *   a node's address or behind the same NAT never take a worker's slot.
 *
 * A request takes a slot once (streams_take) and gives it back once when it
 * ends, however it ends (streams_give from the request-completed callback);
 * the slot records what it counted, so the give undoes exactly the take.
 *
 * Threads: every function is thread-safe; one mutex, a leaf, never held
 * while calling out.
 */
#ifndef TY_SERVER_STREAMS_H
#define TY_SERVER_STREAMS_H

#include <stdint.h>

#include "err.h"

struct streams;

struct streams_limits {
    int per_user;   /* long-lived requests of one signed-in user */
    int per_addr;   /* user requests from one source address */
    int total_user; /* user requests of every caller together */
    int per_node;   /* long-lived requests of one node credential */
};

enum streams_class { STREAMS_USER = 0, STREAMS_NODE = 1 };

/* What one request holds: caller storage, zeroed before the first take. */
struct streams_slot {
    int held;                 /* 1 between a successful take and its give */
    enum streams_class klass; /* the class it was counted in */
    int64_t owner;            /* user id (0: anonymous, by address only) or node id */
    char addr[64];            /* source address (user class); "" = none */
};

/* New counters with these caps (each >= 1; copied). NULL when out of memory. */
struct streams *streams_new(const struct streams_limits *lim);

/*
 * Count one more long-lived request of owner from addr (borrowed; NULL or ""
 * for none) in class klass into slot. RC_OK: counted, slot->held = 1.
 * RC_ERATE: a cap is reached, *limit (out) is that cap and nothing changed.
 * RC_ENOMEM: nothing changed. A slot already held is RC_OK without a count.
 */
enum rc streams_take(struct streams *s, enum streams_class klass, int64_t owner, const char *addr,
                     struct streams_slot *slot, int *limit) TY_WUR;

/* Give back what slot holds (nothing when it holds nothing); slot->held = 0. */
void streams_give(struct streams *s, struct streams_slot *slot);

/* How many requests are counted now for owner in klass (addr NULL), or for
 * the address addr (user class; owner ignored); for tests and metrics. */
int streams_count(struct streams *s, enum streams_class klass, int64_t owner, const char *addr);

/* Free; every slot must have been given back. NULL is a no-op. */
void streams_free(struct streams *s);

#endif
