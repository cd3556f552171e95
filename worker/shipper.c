/*
 * shipper.c - bounded output queue and the thread that posts it (see
 * shipper.h).
 *
 * Lock: s->mu guards the queue, the counters and the drop table; it is never
 * held while posting. The queue is a singly linked FIFO; batches take the
 * lines of one attempt from anywhere in it but never pass that attempt's next
 * report, which keeps "started < output < exit" per attempt.
 *
 * Dropping when full takes the oldest plain log line, and a metric line only
 * when no plain line is queued: a loss curve is worth more than the progress
 * bars printed around it. log_lines counts the plain lines so that a queue
 * holding none is not scanned for one; scan_after remembers where the last
 * scan for a plain line stopped (nothing at or before it is plain), so a
 * queue whose head has filled with metric lines is not walked from the start
 * on every push. Anything that unlinks items elsewhere resets it.
 */
#include "shipper.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lines.h"
#include "log.h"

#define DROP_SLOTS 64

enum item_kind { IT_LINE = 0, IT_STARTED = 1, IT_EXIT = 2 };

struct item {
    struct item *next;
    enum item_kind kind;
    char attempt_id[WRK_ID_MAX + 1];
    int rank;
    int is_stderr;
    uint64_t seq;
    int64_t ts_ms;
    int64_t queued_ms; /* monotonic */
    char *text;        /* IT_LINE: owned, NUL-terminated, len bytes */
    size_t len;
    json_t *body; /* reports: owned */
    int keep;     /* never dropped */
    int metric;   /* a TRAINYARD_METRIC line: dropped only after every plain line */
};

struct dropc {
    char attempt_id[WRK_ID_MAX + 1];
    uint64_t n;
};

struct wrk_shipper {
    struct wrk_shipper_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thr;
    struct item *head, *tail;       /* under mu */
    size_t bytes, lines;            /* under mu: queued line bytes and count */
    size_t log_lines;               /* under mu: queued lines that are neither kept nor metrics */
    struct item *scan_after;        /* under mu: see the file comment; NULL = the head */
    size_t inflight;                /* under mu */
    uint64_t dropped;               /* under mu */
    uint64_t refused;               /* under mu: bodies the server refused for good */
    struct dropc drops[DROP_SLOTS]; /* under mu */
    int stop;                       /* under mu */
    int64_t stop_deadline_ms;       /* under mu */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timed_wait(struct wrk_shipper *s, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

static void item_free(struct item *it)
{
    if (it == NULL)
        return;
    free(it->text);
    json_decref(it->body);
    free(it);
}

char *wrk_utf8_clean(const char *text, size_t len)
{
    /* worst case: every byte becomes 3 bytes of U+FFFD */
    char *out = malloc(len * 3 + 1);
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0, i = 0;

    if (out == NULL)
        return NULL;
    while (i < len) {
        unsigned char c = p[i];
        size_t need = 0;
        uint32_t cp = 0, min = 0;
        if (c >= 0x01 && c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
            min = 0x10000;
        }
        if (need > 0) {
            size_t k;
            for (k = 1; k <= need; k++) {
                if (i + k >= len || (p[i + k] & 0xC0) != 0x80)
                    break;
                cp = (cp << 6) | (p[i + k] & 0x3F);
            }
            if (k > need && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
                memcpy(out + o, p + i, need + 1);
                o += need + 1;
                i += need + 1;
                continue;
            }
        }
        /* NUL, a stray continuation byte, a bad lead or a truncated sequence */
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        i++;
    }
    out[o] = '\0';
    return out;
}

/* ---- producers ---- */

static void push_locked(struct wrk_shipper *s, struct item *it)
{
    it->queued_ms = mono_ms();
    if (s->tail != NULL)
        s->tail->next = it;
    else
        s->head = it;
    s->tail = it;
    if (it->kind == IT_LINE) {
        s->bytes += it->len;
        s->lines++;
        if (!it->keep && !it->metric)
            s->log_lines++;
    }
    pthread_cond_signal(&s->cv);
}

/* Under mu: n more lines of attempt id to report as dropped in its next batch. */
static void drops_add_locked(struct wrk_shipper *s, const char *id, uint64_t n)
{
    struct dropc *free_slot = NULL;
    for (size_t i = 0; i < DROP_SLOTS; i++) {
        if (strcmp(s->drops[i].attempt_id, id) == 0) {
            s->drops[i].n += n;
            return;
        }
        if (free_slot == NULL && s->drops[i].attempt_id[0] == '\0')
            free_slot = &s->drops[i];
    }
    if (free_slot != NULL) {
        snprintf(free_slot->attempt_id, sizeof(free_slot->attempt_id), "%s", id);
        free_slot->n = n;
    }
}

static void count_drop_locked(struct wrk_shipper *s, const char *id)
{
    s->dropped++;
    drops_add_locked(s, id, 1);
}

/* Unlink line it (whose predecessor is prev, NULL at the head), count and free it. */
static void drop_line_locked(struct wrk_shipper *s, struct item *prev, struct item *it)
{
    if (prev != NULL)
        prev->next = it->next;
    else
        s->head = it->next;
    if (s->tail == it)
        s->tail = prev;
    if (s->scan_after == it)
        s->scan_after = prev;
    s->bytes -= it->len;
    s->lines--;
    if (!it->metric)
        s->log_lines--;
    count_drop_locked(s, it->attempt_id);
    item_free(it);
}

/* Drop the oldest plain line, else the oldest metric line; 0 if neither is queued. */
static int drop_oldest_locked(struct wrk_shipper *s)
{
    struct item *prev, *it;

    if (s->log_lines > 0) {
        prev = s->scan_after;
        for (it = prev != NULL ? prev->next : s->head; it != NULL; prev = it, it = it->next) {
            if (it->kind != IT_LINE || it->keep || it->metric)
                continue;
            drop_line_locked(s, prev, it);
            s->scan_after = prev;
            return 1;
        }
        /* Unreachable while log_lines is right; fall through to metrics. */
    }
    for (prev = NULL, it = s->head; it != NULL; prev = it, it = it->next) {
        if (it->kind != IT_LINE || it->keep)
            continue;
        drop_line_locked(s, prev, it);
        return 1;
    }
    return 0;
}

void wrk_shipper_line(struct wrk_shipper *s, const char *attempt_id, int rank, const char *stream,
                      uint64_t seq, int64_t ts_ms, const char *text, size_t len)
{
    struct item *it = calloc(1, sizeof(*it));

    if (it != NULL)
        it->text = malloc(len + 1);
    if (it == NULL || it->text == NULL) {
        item_free(it);
        pthread_mutex_lock(&s->mu);
        count_drop_locked(s, attempt_id);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    memcpy(it->text, text, len);
    it->text[len] = '\0';
    it->len = len;
    it->kind = IT_LINE;
    snprintf(it->attempt_id, sizeof(it->attempt_id), "%s", attempt_id);
    it->rank = rank;
    it->is_stderr = strcmp(stream, "stderr") == 0;
    it->seq = seq;
    it->ts_ms = ts_ms;
    it->keep = !it->is_stderr && len >= strlen(WRK_CHECKPOINT_PREFIX) &&
               memcmp(text, WRK_CHECKPOINT_PREFIX, strlen(WRK_CHECKPOINT_PREFIX)) == 0;
    it->metric = !it->is_stderr && len >= strlen(WRK_METRIC_PREFIX) &&
                 memcmp(text, WRK_METRIC_PREFIX, strlen(WRK_METRIC_PREFIX)) == 0;
    pthread_mutex_lock(&s->mu);
    while ((s->bytes + len > s->o.max_queue_bytes || s->lines + 1 > s->o.max_queue_items) &&
           drop_oldest_locked(s)) {
    }
    push_locked(s, it);
    pthread_mutex_unlock(&s->mu);
}

static void push_report(struct wrk_shipper *s, enum item_kind kind, const char *attempt_id,
                        json_t *body)
{
    struct item *it = calloc(1, sizeof(*it));
    if (it == NULL || body == NULL) {
        LOG_ERROR("ship", "out of memory, report lost", "attempt_id=%s", attempt_id);
        free(it);
        json_decref(body);
        return;
    }
    it->kind = kind;
    it->keep = 1;
    it->body = body;
    snprintf(it->attempt_id, sizeof(it->attempt_id), "%s", attempt_id);
    pthread_mutex_lock(&s->mu);
    push_locked(s, it);
    pthread_mutex_unlock(&s->mu);
}

void wrk_shipper_started(struct wrk_shipper *s, const char *attempt_id, int node_rank,
                         const pid_t *pids, size_t npids)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < npids; i++)
        json_array_append_new(arr, json_integer(pids[i]));
    push_report(s, IT_STARTED, attempt_id,
                json_pack("{s:i, s:o*}", "node_rank", node_rank, "pids", arr));
}

void wrk_shipper_exit(struct wrk_shipper *s, const struct wrk_exit_report *r)
{
    json_t *ranks = json_array();
    json_t *failure = NULL, *params = NULL;
    char *why;

    for (size_t i = 0; ranks != NULL && i < r->nranks; i++) {
        const struct wrk_exit_rank *x = &r->ranks[i];
        json_t *o = json_pack("{s:i, s:i, s:i}", "rank", x->rank, "exit_code", x->exit_code,
                              "signal", x->signal);
        /* Only what NVML measured: no figure at all for fake GPUs or an unseen rank. */
        if (o != NULL && x->gpu_mem_peak_bytes > 0)
            json_object_set_new(o, "gpu_mem_peak_bytes",
                                json_integer((json_int_t)x->gpu_mem_peak_bytes));
        json_array_append_new(ranks, o);
    }
    /* A deterministic cause (cause.h): the server fails the job without a restart. */
    if (r->failure[0] != '\0')
        failure = json_pack("{s:s, s:s}", "code", r->failure, "detail", r->failure_detail);
    /* The reason's code and params (docs/job-reasons.md), when it has one. */
    if (r->reason_code[0] != '\0') {
        params = json_loads(r->reason_params[0] ? r->reason_params : "{}", 0, NULL);
        if (!json_is_object(params)) {
            json_decref(params);
            params = json_object();
        }
    }
    /* The reason may hold a path or a message the node did not write (a cut
     * is already on a character boundary, utf8cut.h): made valid UTF-8, so
     * that the report can always be encoded and stored. */
    why = wrk_utf8_clean(r->reason, strlen(r->reason));
    push_report(s, IT_EXIT, r->attempt_id,
                json_pack("{s:i, s:o*, s:s, s:o*, s:s*, s:o*}", "node_rank", r->node_rank, "ranks",
                          ranks, "reason", why ? why : "", "failure", failure, "reason_code",
                          r->reason_code[0] ? r->reason_code : NULL, "reason_params", params));
    free(why);
}

/* A counter of s (one of its fields, under mu), read under mu. */
static uint64_t read_locked(struct wrk_shipper *s, const uint64_t *counter)
{
    uint64_t n;
    pthread_mutex_lock(&s->mu);
    n = *counter;
    pthread_mutex_unlock(&s->mu);
    return n;
}

uint64_t wrk_shipper_dropped(struct wrk_shipper *s)
{
    return read_locked(s, &s->dropped);
}

uint64_t wrk_shipper_refused(struct wrk_shipper *s)
{
    return read_locked(s, &s->refused);
}

size_t wrk_shipper_pending(struct wrk_shipper *s)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (struct item *it = s->head; it != NULL; it = it->next)
        n++;
    n += s->inflight;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- the shipper thread ---- */

/* Add one line to the output body. */
static int add_line(json_t *logs, json_t *metrics, json_t *ckpts, const struct item *it)
{
    struct wrk_line pl;
    char *clean = wrk_utf8_clean(it->text, it->len);
    json_t *o;

    if (clean == NULL)
        return -1;
    o = json_pack("{s:i, s:s, s:I, s:I, s:s}", "rank", it->rank, "stream",
                  it->is_stderr ? "stderr" : "stdout", "seq", (json_int_t)it->seq, "ts_ms",
                  (json_int_t)it->ts_ms, "text", clean);
    free(clean);
    if (o == NULL || json_array_append_new(logs, o) != 0)
        return -1;
    if (it->is_stderr)
        return 0;
    if (wrk_line_parse(it->text, it->len, &pl) != RC_OK)
        return -1;
    if (pl.kind == WRK_LINE_METRIC) {
        /* jansson only parses valid UTF-8 without NUL, so names need no cleaning */
        o = json_pack("{s:i, s:I, s:I, s:O}", "rank", it->rank, "step", (json_int_t)pl.step,
                      "ts_ms", (json_int_t)it->ts_ms, "values", pl.values);
        if (o != NULL)
            json_array_append_new(metrics, o);
    } else if (pl.kind == WRK_LINE_CHECKPOINT) {
        char *cp = wrk_utf8_clean(pl.path, strlen(pl.path));
        if (cp != NULL)
            json_array_append_new(ckpts, json_pack("{s:i, s:I, s:s}", "rank", it->rank, "step",
                                                   (json_int_t)pl.step, "path", cp));
        free(cp);
    }
    wrk_line_cleanup(&pl);
    return 0;
}

/*
 * Post until the server answers something final or the stop deadline
 * passes. Returns 1 when the server refused the body for good (a 4xx other
 * than 408 and 429: the same body would be refused again, and retrying it
 * would hold up everything queued behind it on this one thread), else 0.
 * No answer, a 5xx, 408 and 429 are retried with backoff.
 */
static int post_retry(struct wrk_shipper *s, const char *path, const json_t *body)
{
    int backoff_ms = 250;
    for (;;) {
        long status = 0;
        enum rc rc = s->o.post(s->o.post_ctx, path, body, &status);
        int64_t deadline;
        if (rc == RC_OK && status >= 200 && status < 300)
            return 0;
        if (rc == RC_OK && status >= 400 && status < 500 && status != 408 && status != 429) {
            LOG_WARN("ship", "server refused a report, set aside", "path=%s status=%ld", path,
                     status);
            pthread_mutex_lock(&s->mu);
            s->refused++;
            pthread_mutex_unlock(&s->mu);
            return 1;
        }
        pthread_mutex_lock(&s->mu);
        deadline = s->stop ? s->stop_deadline_ms : 0;
        if (deadline != 0 && mono_ms() >= deadline) {
            pthread_mutex_unlock(&s->mu);
            LOG_WARN("ship", "giving up on a report at shutdown", "path=%s", path);
            return 0;
        }
        timed_wait(s, backoff_ms);
        pthread_mutex_unlock(&s->mu);
        if (backoff_ms < 5000)
            backoff_ms *= 2;
    }
}

/* Under mu: unlink and return the lines of head's attempt (up to the cap). */
static struct item *take_lines_locked(struct wrk_shipper *s, const char *id, uint64_t *dropped)
{
    struct item *batch = NULL, **btail = &batch, *prev = NULL, *it = s->head;
    size_t bytes = 0;

    while (it != NULL) {
        struct item *next = it->next;
        if (strcmp(it->attempt_id, id) == 0) {
            if (it->kind != IT_LINE || bytes + it->len > WRK_BATCH_MAX_BYTES)
                break;
            if (prev != NULL)
                prev->next = next;
            else
                s->head = next;
            if (s->tail == it)
                s->tail = prev;
            s->bytes -= it->len;
            s->lines--;
            if (!it->keep && !it->metric)
                s->log_lines--;
            bytes += it->len + 96;
            it->next = NULL;
            *btail = it;
            btail = &it->next;
            s->inflight++;
        } else {
            prev = it;
        }
        it = next;
    }
    s->scan_after = NULL; /* it may have been taken */
    *dropped = 0;
    for (size_t i = 0; i < DROP_SLOTS; i++) {
        if (strcmp(s->drops[i].attempt_id, id) == 0) {
            *dropped = s->drops[i].n;
            memset(&s->drops[i], 0, sizeof(s->drops[i]));
        }
    }
    return batch;
}

static void send_lines(struct wrk_shipper *s, const char *id, struct item *batch, uint64_t dropped)
{
    json_t *logs = json_array(), *metrics = json_array(), *ckpts = json_array();
    json_t *body = NULL;
    char path[160];

    for (struct item *it = batch; it != NULL && logs && metrics && ckpts; it = it->next)
        if (add_line(logs, metrics, ckpts, it) != 0)
            LOG_WARN("ship", "out of memory, line lost", "attempt_id=%s", id);
    body = json_pack("{s:o*, s:o*, s:o*}", "logs", logs, "metrics", metrics, "checkpoints", ckpts);
    if (body != NULL && dropped > 0)
        json_object_set_new(body, "dropped_logs", json_integer((json_int_t)dropped));
    if (body == NULL) {
        LOG_ERROR("ship", "out of memory, batch lost", "attempt_id=%s", id);
        return;
    }
    snprintf(path, sizeof(path), "/api/v1/agent/attempts/%s/output", id);
    if (post_retry(s, path, body)) {
        /* The batch's lines are lost: counted as dropped, so the attempt's
         * next batch reports them (dropped_logs) with the lines the full
         * queue dropped, and the job shows how many never arrived. */
        uint64_t n = 0;
        for (struct item *it = batch; it != NULL; it = it->next)
            n++;
        pthread_mutex_lock(&s->mu);
        s->dropped += n;
        drops_add_locked(s, id, n + dropped); /* and the count the batch carried */
        pthread_mutex_unlock(&s->mu);
        LOG_WARN("ship", "output batch refused, lines counted as dropped",
                 "attempt_id=%s lines=%" PRIu64, id, n);
    }
    json_decref(body);
}

static void *ship_main(void *arg)
{
    struct wrk_shipper *s = arg;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct item *head, *batch;
        char id[WRK_ID_MAX + 1];
        uint64_t dropped = 0;
        int64_t age;
        int has_report = 0;

        while (s->head == NULL && !s->stop)
            timed_wait(s, 500);
        if (s->head == NULL)
            break; /* stopping and empty */
        if (s->stop && mono_ms() >= s->stop_deadline_ms) {
            LOG_WARN("ship", "shutdown deadline passed, dropping queued output", "");
            break;
        }
        for (struct item *it = s->head; it != NULL && !has_report; it = it->next)
            has_report = it->kind != IT_LINE;
        age = mono_ms() - s->head->queued_ms;
        if (!s->stop && !has_report && s->bytes < WRK_BATCH_MAX_BYTES && age < s->o.linger_ms) {
            timed_wait(s, (int)(s->o.linger_ms - age));
            continue;
        }
        head = s->head;
        snprintf(id, sizeof(id), "%s", head->attempt_id);
        if (head->kind != IT_LINE) {
            char path[160];
            s->head = head->next;
            if (s->tail == head)
                s->tail = NULL;
            if (s->scan_after == head)
                s->scan_after = NULL;
            s->inflight++;
            pthread_mutex_unlock(&s->mu);
            snprintf(path, sizeof(path), "/api/v1/agent/attempts/%s/%s", id,
                     head->kind == IT_STARTED ? "started" : "exit");
            post_retry(s, path, head->body);
            item_free(head);
            pthread_mutex_lock(&s->mu);
            s->inflight--;
            continue;
        }
        batch = take_lines_locked(s, id, &dropped);
        pthread_mutex_unlock(&s->mu);
        send_lines(s, id, batch, dropped);
        pthread_mutex_lock(&s->mu);
        while (batch != NULL) {
            struct item *n = batch->next;
            item_free(batch);
            s->inflight--;
            batch = n;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

enum rc wrk_shipper_new(const struct wrk_shipper_opts *opts, struct wrk_shipper **out)
{
    struct wrk_shipper *s = calloc(1, sizeof(*s));
    pthread_condattr_t ca;

    *out = NULL;
    if (s == NULL)
        return RC_ENOMEM;
    s->o = *opts;
    if (s->o.max_queue_bytes == 0)
        s->o.max_queue_bytes = 16u * 1024 * 1024;
    if (s->o.max_queue_items == 0)
        s->o.max_queue_items = 65536;
    if (s->o.linger_ms <= 0)
        s->o.linger_ms = 200;
    if (s->o.linger_ms > WRK_BATCH_MAX_AGE_MS)
        s->o.linger_ms = WRK_BATCH_MAX_AGE_MS;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&s->thr, NULL, ship_main, s) != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return RC_EINTERNAL;
    }
    *out = s;
    return RC_OK;
}

void wrk_shipper_free(struct wrk_shipper *s, int timeout_ms)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    s->stop_deadline_ms = mono_ms() + timeout_ms;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thr, NULL);
    while (s->head != NULL) {
        struct item *n = s->head->next;
        item_free(s->head);
        s->head = n;
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
