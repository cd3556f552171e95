/*
 * register.c - POST register (see register.h).
 */
#include "register.h"

#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "ncclbw.h"
#include "topo.h"

#ifndef TY_VERSION
#define TY_VERSION "0.1.0"
#endif

#define NCCL_PROBE_MAX_BYTES (1 << 20) /* a probe file is a few KiB */

/*
 * Network interfaces and InfiniBand ports (topo.h) plus the GPUs' PCIe and
 * NVLink paths (gpu.h), read at each register so that a link brought up
 * since the last start is seen. New reference or NULL (ENOMEM).
 */
static json_t *interconnect_json(struct wrk_agent *a)
{
    struct wrk_topo *t = malloc(sizeof(*t));
    struct ifaddrs *ifa = NULL;
    json_t *o = NULL, *g = NULL;

    if (t == NULL)
        return NULL;
    if (getifaddrs(&ifa) != 0)
        ifa = NULL; /* no addresses: still the IB ports */
    wrk_topo_read(a->cfg->sys_root ? a->cfg->sys_root : "/sys", ifa, t);
    if (ifa != NULL)
        freeifaddrs(ifa);
    o = wrk_topo_json(t);
    g = wrk_gpus_interconnect_json(a->gpus);
    if (o == NULL || g == NULL || json_object_update(o, g) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(g);
    free(t);
    return o;
}

/*
 * --nccl-probe-file: read and check it with the server's rules (ncclbw.h).
 * A missing or bad file is logged and left out of register, never fatal: the
 * server would refuse the whole register over it, and the node is usable
 * without a probe.
 */
json_t *wrk_register_nccl_probe(const char *path)
{
    json_error_t jerr;
    char why[160];
    json_t *j;
    struct stat sb;

    if (path == NULL)
        return NULL;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > NCCL_PROBE_MAX_BYTES) {
        LOG_WARN("agent", "nccl probe file missing or too large, not reported", "path=%s", path);
        return NULL;
    }
    j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (j == NULL) {
        LOG_WARN("agent", "nccl probe file is not JSON, not reported", "path=%s line=%d", path,
                 jerr.line);
        return NULL;
    }
    if (!wrk_ncclbw_check(j, why, sizeof(why))) {
        LOG_WARN("agent", "nccl probe file is invalid, not reported", "path=%s error=\"%s\"", path,
                 why);
        json_decref(j);
        return NULL;
    }
    LOG_INFO("agent", "nccl probe loaded", "path=%s gpus=%lld", path,
             (long long)json_integer_value(json_object_get(j, "gpus")));
    return j;
}

json_t *wrk_register_body(struct wrk_agent *a, const struct wrk_state *st)
{
    json_t *running = json_array(), *gpus = wrk_gpus_register_json(a->gpus);
    for (size_t i = 0; running != NULL && st != NULL && i < st->n; i++) {
        const struct wrk_state_attempt *sa = &st->attempts[i];
        json_t *pids = json_array();
        for (size_t j = 0; pids != NULL && j < sa->nprocs; j++)
            json_array_append_new(pids, json_integer(sa->procs[j].pid));
        json_array_append_new(running,
                              json_pack("{s:s, s:o*}", "attempt_id", sa->attempt_id, "pids", pids));
    }
    return json_pack("{s:s, s:s, s:O, s:i, s:I, s:s, s:o*, s:o*, s:O, s:o*, s:O*}", "hostname",
                     a->hostname, "addr", a->addr, "labels", a->labels, "cpus", wrk_host_cpus(),
                     "memory_mb", (json_int_t)wrk_host_memory_mb(), "version", TY_VERSION, "gpus",
                     gpus, "running", running, "capabilities", a->caps, "interconnect",
                     interconnect_json(a), "nccl_probe", a->nccl_probe);
}

static int in_list(const json_t *arr, const char *id)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (s != NULL && strcmp(s, id) == 0)
            return 1;
    }
    return 0;
}

/* Keep only the attempts of st with a live process. */
void wrk_register_prune_dead(struct wrk_state *st)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++) {
        int alive = 0;
        for (size_t j = 0; j < st->attempts[i].nprocs; j++)
            alive |=
                wrk_proc_alive(st->attempts[i].procs[j].pid, st->attempts[i].procs[j].starttime);
        if (alive)
            st->attempts[n++] = st->attempts[i];
        else
            LOG_INFO("agent", "recorded attempt no longer running", "attempt_id=%s",
                     st->attempts[i].attempt_id);
    }
    st->n = n;
}

/*
 * Register, retrying until it works or we are told to stop. 0 ok, -1 give
 * up, -2 the credential was refused.
 */
int wrk_register(struct wrk_agent *a, struct wrk_state *st)
{
    int backoff = 1000;
    for (;;) {
        json_t *body = wrk_register_body(a, st), *resp = NULL;
        long status = 0;
        enum rc rc;

        if (body == NULL)
            return -1;
        rc = wrk_http_request(a->http, "POST", "/api/v1/agent/register", body, WRK_REQ_TIMEOUT_MS,
                              &status, &resp);
        json_decref(body);
        if (rc == RC_OK && status == 200) {
            const json_t *keep = json_object_get(resp, "keep"),
                         *kill = json_object_get(resp, "kill");
            json_int_t hb = json_integer_value(json_object_get(resp, "heartbeat_interval_ms"));
            const char *id = json_string_value(json_object_get(resp, "node_id"));
            if (hb >= 100 && hb <= 60000)
                a->hb_ms = (int)hb;
            if (id != NULL && strlen(id) < sizeof(a->node_id))
                snprintf(a->node_id, sizeof(a->node_id), "%s", id);
            for (size_t i = 0; i < st->n; i++) {
                const struct wrk_state_attempt *sa = &st->attempts[i];
                if (wrk_launcher_adopt(a->launcher, sa) != RC_OK)
                    continue;
                if (in_list(kill, sa->attempt_id) || !in_list(keep, sa->attempt_id)) {
                    LOG_INFO("agent", "stopping a left-over attempt", "attempt_id=%s",
                             sa->attempt_id);
                    wrk_launcher_cancel(a->launcher, sa->attempt_id,
                                        "stopped by the server after a worker restart");
                } else {
                    LOG_INFO("agent", "reattached", "attempt_id=%s", sa->attempt_id);
                }
            }
            json_decref(resp);
            LOG_INFO("agent", "registered", "node_id=%s gpus=%d heartbeat_ms=%d", a->node_id,
                     wrk_gpus_count(a->gpus), a->hb_ms);
            return 0;
        }
        if (rc == RC_OK && status == 400) {
            /* for example a "site" label naming no site: an admin must act */
            const char *m =
                json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
            LOG_ERROR("agent", "register refused, retrying", "status=%ld error=\"%.200s\"", status,
                      m ? m : "");
        }
        json_decref(resp);
        if (rc == RC_OK && (status == 401 || status == 403)) {
            LOG_ERROR("agent", "register refused: the node credential is not valid", "status=%ld",
                      status);
            return -2;
        }
        if (!(rc == RC_OK && status == 400))
            LOG_WARN("agent", "register failed, retrying", "status=%ld", status);
        for (int t = 0; t < backoff; t += 100) {
            if (wrk_agent_stopping(a))
                return -1;
            wrk_sleep_ms(100);
        }
        if (backoff < 10000)
            backoff *= 2;
    }
}
