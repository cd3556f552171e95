/*
 * lease.c - the scheduling lease's decisions (see lease.h).
 */
#include "lease.h"

int lease_renew_period_ms(int lease_ms)
{
    int p = lease_ms / LEASE_RENEWALS;

    return p < LEASE_MIN_RENEW_MS ? LEASE_MIN_RENEW_MS : p;
}

int64_t lease_next_renew_ms(const struct lease_holder *h)
{
    return h->renew_sent_ms + lease_renew_period_ms(h->lease_ms);
}

int lease_lapsed(const struct lease_holder *h, int64_t now_ms)
{
    return now_ms - h->renew_sent_ms >= h->lease_ms;
}

enum lease_verdict lease_after_renew(struct lease_holder *h, int64_t sent_ms, int64_t now_ms,
                                     enum rc rc, int held)
{
    if (rc == RC_OK && held) {
        h->renew_sent_ms = sent_ms;
        return LEASE_KEEP;
    }
    if (rc == RC_OK)
        return LEASE_LOST_TAKEN;
    /* A statement that failed on a live session (a timeout, a full disk)
     * is tried again while the lease lasts; past it a follower may already
     * be ending this session, so stop leading before it does. */
    if (rc == RC_EUNAVAIL)
        return LEASE_LOST_SESSION;
    return lease_lapsed(h, now_ms) ? LEASE_LOST_LAPSED : LEASE_RETRY;
}

const char *lease_verdict_str(enum lease_verdict v)
{
    switch (v) {
    case LEASE_KEEP:
        return "renewed";
    case LEASE_RETRY:
        return "not_renewed";
    case LEASE_LOST_TAKEN:
        return "taken_by_another";
    case LEASE_LOST_SESSION:
        return "session_ended";
    case LEASE_LOST_LAPSED:
        return "lapsed";
    }
    return "unknown";
}

int lease_should_end_holder(int expired, int holder_has_lock)
{
    return expired && holder_has_lock;
}
