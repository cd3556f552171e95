/*
 * poller.c - the assignment long-poll (see poller.h): one thread, its
 * own curl handle, a queue for the control thread.
 */
#include "poller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_int.h"
#include "log.h"
#include "reason_codes.h"
#include "utf8cut.h"

void wrk_poller_init(struct wrk_poller *p)
{
    memset(p, 0, sizeof(*p));
    atomic_init(&p->stop, 0);
    atomic_init(&p->draining, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
}

static void enqueue(struct wrk_poller *p, struct wrk_qitem *q)
{
    pthread_mutex_lock(&p->mu);
    if (p->qtail != NULL)
        p->qtail->next = q;
    else
        p->qhead = q;
    p->qtail = q;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/*
 * A wait on the queue, not a sleep: an assignment starts the moment it
 * arrives instead of at the control loop's next tick (that tick cost
 * launches 0-100 ms; bench/RESULTS.md, "Launch").
 */
void wrk_poller_wait(struct wrk_poller *p, int ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    if (p->qhead == NULL)
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    pthread_mutex_unlock(&p->mu);
}

static void queue_cancel(struct wrk_poller *p, const char *id)
{
    struct wrk_qitem *q;
    if (!wrk_id_valid(id))
        return;
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return;
    q->is_cancel = 1;
    snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", id);
    enqueue(p, q);
}

/* 1 if the poller has received attempt_id before; else remembers it, 0. */
static int seen_before(struct wrk_poller *p, const char *attempt_id)
{
    size_t n = p->nseen < WRK_POLL_SEEN_MAX ? p->nseen : WRK_POLL_SEEN_MAX;

    for (size_t i = 0; i < n; i++)
        if (strcmp(p->seen[i], attempt_id) == 0)
            return 1;
    snprintf(p->seen[p->nseen % WRK_POLL_SEEN_MAX], sizeof(p->seen[0]), "%s", attempt_id);
    p->nseen++;
    return 0;
}

static void handle_assignments(struct wrk_poller *p, const json_t *resp)
{
    const json_t *arr = json_object_get(resp, "assignments");
    const json_t *cancel = json_object_get(resp, "cancel");

    for (size_t i = 0; i < json_array_size(arr) && i < 256; i++) {
        struct err e;
        struct wrk_assignment *as = NULL;
        char *bad_id = NULL;
        struct wrk_qitem *q = calloc(1, sizeof(*q));
        enum rc rc;
        if (q == NULL)
            return;
        err_init(&e);
        rc = wrk_assignment_parse(json_array_get(arr, i), &as, &bad_id, &e);
        if (rc == RC_OK && seen_before(p, as->attempt_id)) {
            LOG_INFO("agent", "assignment received again, ignored", "attempt_id=%s",
                     as->attempt_id);
            wrk_assignment_free(as);
            free(q);
            q = NULL;
        } else if (rc == RC_OK) {
            const json_t *nets = json_object_get(json_array_get(arr, i), "allowed_networks");
            /* A copy for the control thread, not a second reference: the
             * poller's json_decref(resp) and the control thread's
             * json_decref(q->networks) would race, as jansson's decrement
             * is release-only and the last one frees without an acquire. */
            q->networks = json_deep_copy(nets);
            snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", as->attempt_id);
            if (nets != NULL && q->networks == NULL) {
                /* Refused rather than run with fewer networks than asked. */
                snprintf(q->reason, sizeof(q->reason), "out of memory on the node");
                q->code = RSN_NODE_OUT_OF_MEMORY;
                wrk_assignment_free(as);
            } else {
                q->a = as;
            }
        } else if (bad_id != NULL) {
            LOG_WARN("agent", "invalid assignment", "attempt_id=%s error=\"%s\"", bad_id,
                     e.message);
            snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", bad_id);
            utf8_copy(q->reason, sizeof(q->reason), e.message);
            q->code = RSN_ASSIGNMENT_INVALID;
        } else {
            LOG_WARN("agent", "invalid assignment without an attempt id", "error=\"%s\"",
                     e.message);
            free(q);
            q = NULL;
        }
        free(bad_id);
        if (q != NULL)
            enqueue(p, q);
    }
    for (size_t i = 0; i < json_array_size(cancel); i++)
        queue_cancel(p, json_string_value(json_array_get(cancel, i)));
}

static void *poll_main(void *arg)
{
    struct wrk_poller *p = arg;
    int backoff = 500, resend = 0;
    char path[64];

    while (!atomic_load(&p->stop)) {
        json_t *resp = NULL;
        long status = 0;
        enum rc rc;
        if (atomic_load(&p->draining)) {
            wrk_sleep_ms(200);
            continue;
        }
        snprintf(path, sizeof(path), "/api/v1/agent/assignments?wait=%d%s", WRK_POLL_WAIT_S,
                 resend ? "&resend=1" : "");
        rc = wrk_http_request(p->http, "GET", path, NULL, (WRK_POLL_WAIT_S + 15) * 1000L, &status,
                              &resp);
        if (rc == RC_OK && status == 200) {
            handle_assignments(p, resp);
            json_decref(resp);
            backoff = 500;
            resend = 0;
            continue;
        }
        /* No answer at all: the server may have committed a handout that
         * never arrived. An answer other than 200 changed nothing. */
        if (rc != RC_OK)
            resend = 1;
        json_decref(resp);
        if (atomic_load(&p->stop))
            break;
        LOG_WARN("agent", "assignment poll failed", "status=%ld", status);
        for (int t = 0; t < backoff && !atomic_load(&p->stop); t += 100)
            wrk_sleep_ms(100);
        if (backoff < 8000)
            backoff *= 2;
    }
    return NULL;
}

enum rc wrk_poller_start(struct wrk_poller *p, struct wrk_http *http)
{
    p->http = http;
    if (pthread_create(&p->thr, NULL, poll_main, p) != 0)
        return RC_EINTERNAL;
    p->started = 1;
    return RC_OK;
}

void wrk_poller_drain(struct wrk_poller *p)
{
    atomic_store(&p->draining, 1);
}

void wrk_poller_stop(struct wrk_poller *p)
{
    if (!p->started)
        return;
    atomic_store(&p->stop, 1);
    wrk_http_abort(p->http);
    pthread_join(p->thr, NULL);
    p->started = 0;
}

struct wrk_qitem *wrk_poller_pop(struct wrk_poller *p)
{
    struct wrk_qitem *q;

    pthread_mutex_lock(&p->mu);
    q = p->qhead;
    if (q != NULL) {
        p->qhead = q->next;
        if (p->qhead == NULL)
            p->qtail = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    return q;
}

void wrk_qitem_free(struct wrk_qitem *q)
{
    if (q == NULL)
        return;
    wrk_assignment_free(q->a);
    json_decref(q->networks);
    free(q);
}

void wrk_poller_cleanup(struct wrk_poller *p)
{
    while (p->qhead != NULL) {
        struct wrk_qitem *q = p->qhead;
        p->qhead = q->next;
        wrk_qitem_free(q);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}
