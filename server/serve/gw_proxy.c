/*
 * gw_proxy.c - one thread, one libcurl multi handle, every call to a
 * replica (gw_proxy.h). Submitted calls wait in a list under the queue lock
 * until the thread adds them; curl_multi_wakeup() cuts its poll short. The
 * thread owns every easy handle; a call's answer buffer is shared with its
 * request under the call's lock. A call whose request went away is aborted
 * by the progress callback (about once a second) or the next write.
 *
 * Flow control: a stream's reader drops what it relayed; when what is kept
 * would pass GW_PROXY_MAX_BODY the write callback pauses the transfer (TCP
 * then holds the replica back), and the reader, once it has taken half of
 * it, queues the call for the thread to let it go on (only the thread that
 * drives the multi handle may unpause it).
 */
#include "gw_proxy.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "log.h"
#include "waiters.h"

struct gw_call {
    pthread_mutex_t lock; /* guards the answer fields below */
    atomic_int refs;
    atomic_int cancelled; /* the request let go of it */
    char *url;            /* owned */
    char *auth;           /* owned; "Authorization: Bearer ..." */
    char *body;           /* owned; the request body */
    size_t len;
    int64_t key;            /* waiters key to notify */
    struct gw_proxy *proxy; /* set when submitted */
    CURL *easy;             /* the proxy thread's */
    struct curl_slist *hdrs;
    struct gw_call *next;        /* in the pending list */
    struct gw_call *resume_next; /* in the resume list, under the proxy's lock */
    int queued_resume;           /* on the resume list (holds a reference) */
    /* answer, under lock: buf holds bytes base..st.have of it (a stream's
     * reader drops what it has relayed, gw_call_read) */
    struct gw_call_state st;
    int paused; /* the transfer waits for the reader to take what is kept */
    char *buf;
    size_t base;
    size_t cap;
};

struct gw_proxy {
    struct waiters *waiters; /* borrowed */
    int timeout_s;
    CURLM *multi;
    pthread_mutex_t lock; /* guards pending and stopping */
    struct gw_call *pending;
    struct gw_call *resumes; /* paused calls whose reader made room */
    atomic_int stopping;     /* written under lock; read by the callbacks too */
    pthread_t thread;
    int started;
};

struct gw_call *gw_call_new(const char *url, const char *token, const char *body, size_t len,
                            int64_t key)
{
    struct gw_call *c = calloc(1, sizeof(*c));
    size_t alen = strlen(token) + 32;

    if (c == NULL)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->refs, 1);
    c->url = strdup(url);
    c->auth = malloc(alen);
    c->body = malloc(len + 1);
    if (c->url == NULL || c->auth == NULL || c->body == NULL) {
        gw_call_release(c);
        return NULL;
    }
    snprintf(c->auth, alen, "Authorization: Bearer %s", token);
    memcpy(c->body, body, len);
    c->body[len] = '\0';
    c->len = len;
    c->key = key;
    return c;
}

/* Ask the proxy thread to let c's paused transfer go on (it alone may). */
static void want_cont(struct gw_call *c)
{
    struct gw_proxy *p = c->proxy;

    pthread_mutex_lock(&p->lock);
    if (!c->queued_resume) {
        c->queued_resume = 1;
        atomic_fetch_add(&c->refs, 1);
        c->resume_next = p->resumes;
        p->resumes = c;
    }
    pthread_mutex_unlock(&p->lock);
    curl_multi_wakeup(p->multi);
}

static void call_unref(struct gw_call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&c->lock);
    if (c->auth != NULL)
        memset(c->auth, 0, strlen(c->auth));
    free(c->url);
    free(c->auth);
    free(c->body);
    free(c->buf);
    free(c);
}

void gw_call_release(struct gw_call *c)
{
    int paused;

    if (c == NULL)
        return;
    atomic_store(&c->cancelled, 1);
    pthread_mutex_lock(&c->lock);
    paused = c->paused;
    c->paused = 0;
    pthread_mutex_unlock(&c->lock);
    /* A paused transfer runs its callbacks again only once let go on: let
     * it, so that it sees the cancel and ends. */
    if (paused)
        want_cont(c);
    call_unref(c);
}

void gw_call_state(struct gw_call *c, struct gw_call_state *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->st;
    pthread_mutex_unlock(&c->lock);
}

size_t gw_call_read(struct gw_call *c, size_t pos, char *buf, size_t max)
{
    size_t n = 0;
    int cont;

    pthread_mutex_lock(&c->lock);
    if (pos >= c->base && pos < c->st.have) {
        n = c->st.have - pos < max ? c->st.have - pos : max;
        memcpy(buf, c->buf + (pos - c->base), n);
        /* Relayed: no longer kept, so a long stream needs no more memory
         * than what its client has not taken yet. */
        memmove(c->buf, c->buf + (pos + n - c->base), c->st.have - (pos + n));
        c->base = pos + n;
    }
    /* Room again for what the replica sends: let the transfer go on. */
    cont = c->paused && c->st.have - c->base < GW_PROXY_MAX_BODY / 2;
    if (cont)
        c->paused = 0;
    pthread_mutex_unlock(&c->lock);
    if (cont)
        want_cont(c);
    return n;
}

const char *gw_call_body(struct gw_call *c, size_t *len)
{
    *len = c->st.have - c->base;
    return c->buf ? c->buf : "";
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
    struct gw_call *c = ud;
    size_t n = size * nmemb;
    int ok = 1;

    if (atomic_load(&c->cancelled))
        return 0;
    pthread_mutex_lock(&c->lock);
    if (c->st.have == 0) {
        char *ct = NULL;
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->st.status);
        curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct);
        c->st.event_stream = ct != NULL && strncasecmp(ct, "text/event-stream", 17) == 0;
        c->st.first_byte_us = srv_mono_us();
    }
    size_t kept = c->st.have - c->base;
    if (kept > 0 && kept + n + 1 > GW_PROXY_MAX_BODY) {
        /* The reader is behind: hold the replica back (libcurl hands
         * these bytes again once the transfer goes on), not the memory. */
        c->paused = 1;
        pthread_mutex_unlock(&c->lock);
        return CURL_WRITEFUNC_PAUSE;
    }
    if (kept + n + 1 > GW_PROXY_MAX_BODY) {
        ok = 0;
    } else if (kept + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < kept + n + 1)
            cap *= 2;
        char *nb = realloc(c->buf, cap);
        if (nb == NULL) {
            ok = 0;
        } else {
            c->buf = nb;
            c->cap = cap;
        }
    }
    if (ok) {
        memcpy(c->buf + kept, data, n);
        c->st.have += n;
        c->buf[kept + n] = '\0';
    }
    pthread_mutex_unlock(&c->lock);
    /* A stream's request is woken for each piece, not only at the end. */
    if (ok)
        waiters_notify(c->proxy->waiters, c->key);
    return ok ? n : 0;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct gw_call *c = ud;

    (void)dt, (void)dn, (void)ut, (void)un;
    return atomic_load(&c->cancelled) || atomic_load(&c->proxy->stopping) ? 1 : 0;
}

/* Set up c's easy handle and add it; on failure end it at once. */
static void start_call(struct gw_proxy *p, struct gw_call *c)
{
    struct curl_slist *h = NULL, *t;

    c->easy = curl_easy_init();
    h = curl_slist_append(NULL, c->auth);
    if (h != NULL && (t = curl_slist_append(h, "Content-Type: application/json")) != NULL)
        h = t;
    if (h != NULL && (t = curl_slist_append(h, "Expect:")) != NULL)
        h = t;
    c->hdrs = h;
    if (c->easy == NULL || h == NULL) {
        pthread_mutex_lock(&c->lock);
        c->st.done = c->st.failed = 1;
        pthread_mutex_unlock(&c->lock);
        waiters_notify(p->waiters, c->key);
        curl_slist_free_all(h);
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
        call_unref(c);
        return;
    }
    curl_easy_setopt(c->easy, CURLOPT_URL, c->url);
    curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c->easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->len);
    curl_easy_setopt(c->easy, CURLOPT_TIMEOUT, (long)p->timeout_s);
    curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c->easy, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
    curl_multi_add_handle(p->multi, c->easy);
}

/* A transfer ended: its state, a wake-up, the proxy's reference dropped. */
static void end_call(struct gw_proxy *p, CURL *easy, CURLcode res)
{
    struct gw_call *c = NULL;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&c);
    curl_multi_remove_handle(p->multi, easy);
    pthread_mutex_lock(&c->lock);
    if (c->st.status == 0)
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &c->st.status);
    c->st.done = 1;
    c->st.failed = res != CURLE_OK;
    c->st.connect_failed = res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST;
    pthread_mutex_unlock(&c->lock);
    if (res != CURLE_OK && !atomic_load(&c->cancelled))
        LOG_WARN("gateway", "replica call failed", "url=\"%s\" error=\"%s\"", c->url,
                 curl_easy_strerror(res));
    curl_easy_cleanup(easy);
    c->easy = NULL;
    curl_slist_free_all(c->hdrs);
    c->hdrs = NULL;
    waiters_notify(p->waiters, c->key);
    call_unref(c);
}

static void *proxy_main(void *arg)
{
    struct gw_proxy *p = arg;
    int running = 0, stop = 0;

    while (!stop || running > 0) {
        struct gw_call *list, *resumes;
        CURLMsg *m;
        int left;

        pthread_mutex_lock(&p->lock);
        list = p->pending;
        p->pending = NULL;
        resumes = p->resumes;
        p->resumes = NULL;
        for (struct gw_call *r = resumes; r != NULL; r = r->resume_next)
            r->queued_resume = 0;
        stop = atomic_load(&p->stopping);
        pthread_mutex_unlock(&p->lock);
        while (list != NULL) {
            struct gw_call *next = list->next;
            if (stop)
                atomic_store(&list->cancelled, 1);
            start_call(p, list);
            list = next;
        }
        while (resumes != NULL) {
            struct gw_call *next = resumes->resume_next;
            if (resumes->easy != NULL)
                curl_easy_pause(resumes->easy, CURLPAUSE_CONT);
            call_unref(resumes);
            resumes = next;
        }
        curl_multi_perform(p->multi, &running);
        while ((m = curl_multi_info_read(p->multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
                end_call(p, m->easy_handle, m->data.result);
        if (!stop || running > 0)
            curl_multi_poll(p->multi, NULL, 0, 1000, NULL);
    }
    return NULL;
}

struct gw_proxy *gw_proxy_new(struct waiters *w, int timeout_s)
{
    struct gw_proxy *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->waiters = w;
    p->timeout_s = timeout_s;
    pthread_mutex_init(&p->lock, NULL);
    p->multi = curl_multi_init();
    if (p->multi == NULL) {
        gw_proxy_free(p);
        return NULL;
    }
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, 512L);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        gw_proxy_free(p);
        return NULL;
    }
    p->started = 1;
    return p;
}

enum rc gw_proxy_submit(struct gw_proxy *p, struct gw_call *c)
{
    pthread_mutex_lock(&p->lock);
    if (atomic_load(&p->stopping)) {
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_lock(&c->lock);
        c->st.done = c->st.failed = 1;
        pthread_mutex_unlock(&c->lock);
        return RC_EUNAVAIL;
    }
    atomic_fetch_add(&c->refs, 1);
    c->proxy = p;
    c->next = p->pending;
    p->pending = c;
    pthread_mutex_unlock(&p->lock);
    curl_multi_wakeup(p->multi);
    return RC_OK;
}

void gw_proxy_free(struct gw_proxy *p)
{
    if (p == NULL)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->stopping, 1);
        pthread_mutex_unlock(&p->lock);
        curl_multi_wakeup(p->multi);
        pthread_join(p->thread, NULL);
    }
    while (p->resumes != NULL) { /* asked for after the thread's last turn */
        struct gw_call *next = p->resumes->resume_next;
        call_unref(p->resumes);
        p->resumes = next;
    }
    if (p->multi != NULL)
        curl_multi_cleanup(p->multi);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
