/*
 * lease.h - the decisions of the scheduling lease, apart from SQL and
 * threads (the statements are store/db_lease.h; the loop that acts on these
 * answers is sched_loop.c). Pure: every time is an argument, in the
 * caller's monotonic milliseconds; the database's clock decides expiry
 * (db_lease.h), these only decide when to ask it and what an answer means.
 *
 * Timing: the leader renews every lease_ms / 5 (LEASE_RENEWALS), so a
 * lease survives four renewals lost in a row (a slow statement, a pass that
 * runs long) before a follower may end it; a follower looks at the lease as
 * often, so a hung leader is replaced between lease_ms and lease_ms plus one
 * renewal period after its last renewal.
 *
 * Thread-safety: no state of its own; a struct lease_holder belongs to one
 * thread.
 */
#ifndef TY_SERVER_LEASE_H
#define TY_SERVER_LEASE_H

#include <stdint.h>

#include "err.h"

/* Renewals per lease time. */
#define LEASE_RENEWALS 5
/* The shortest renewal period, whatever the lease time. */
#define LEASE_MIN_RENEW_MS 100

/* The leader's side of its lease; zero it (= {0}) for "not leading". */
struct lease_holder {
    int64_t epoch;         /* the lease's epoch; 0 = not leading */
    int lease_ms;          /* the lease time (leader_lease_ms) */
    int64_t renew_sent_ms; /* when the latest renewal that held (or the take) was sent */
};

/* How often the leader renews and a follower looks: lease_ms / 5, at least
 * LEASE_MIN_RENEW_MS. */
int lease_renew_period_ms(int lease_ms);

/* When the leader's next renewal is due (monotonic ms). */
int64_t lease_next_renew_ms(const struct lease_holder *h);

/* 1 when, by the leader's own clock, its lease may have run out: no renewal
 * sent within lease_ms has held. Measured from the sending, so this errs
 * early: the database stamped the expiry after it was sent. */
int lease_lapsed(const struct lease_holder *h, int64_t now_ms);

/* What a leader does after a renewal. */
enum lease_verdict {
    LEASE_KEEP,         /* renewed: lead on */
    LEASE_RETRY,        /* not renewed, not lost yet: try again at the next turn */
    LEASE_LOST_TAKEN,   /* another epoch is current, or this session no longer holds it */
    LEASE_LOST_SESSION, /* the session is gone, and its advisory lock with it */
    LEASE_LOST_LAPSED,  /* no renewal held for the lease time: others may end it */
};

/* The verdict on a renewal sent at sent_ms that returned rc with held (1:
 * the row was renewed), judged at now_ms. On LEASE_KEEP h->renew_sent_ms
 * becomes sent_ms; a LOST verdict leaves h to the caller to clear. */
enum lease_verdict lease_after_renew(struct lease_holder *h, int64_t sent_ms, int64_t now_ms,
                                     enum rc rc, int held);

/* Why a leader stepped down, for its log line. */
const char *lease_verdict_str(enum lease_verdict v);

/* 1 when a follower that could not take the advisory lock should end the
 * holder's session: the lease is expired by the database's clock and the
 * session recorded with it holds the lock (else the lock's holder is not a
 * leader this lease knows of, such as a server of an older version, and is
 * left alone). */
int lease_should_end_holder(int expired, int holder_has_lock);

#endif
