/*
 * isolate.c - --isolate-network glue between assignments and netns.c (see
 * isolate.h).
 */
#include "isolate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netns.h"

/*
 * Give every rank key=val unless the job's own env sets key. A value the
 * server derived (nccl_env) is replaced: it names a host interface the
 * namespace does not have.
 */
static enum rc env_default(struct wrk_assignment *as, const char *key, const char *val)
{
    for (size_t i = 0; i < as->nenv; i++) {
        char *v;
        if (strcmp(as->env_keys[i], key) != 0)
            continue;
        if (i < as->nenv_job)
            return RC_OK;
        if ((v = strdup(val)) == NULL)
            return RC_ENOMEM;
        free(as->env_vals[i]);
        as->env_vals[i] = v;
        return RC_OK;
    }
    if (as->nenv >= WRK_MAX_ENV)
        return RC_OK; /* a full table is the job's own choice of variables */
    as->env_keys[as->nenv] = strdup(key);
    as->env_vals[as->nenv] = strdup(val);
    if (as->env_keys[as->nenv] == NULL || as->env_vals[as->nenv] == NULL) {
        free(as->env_keys[as->nenv]);
        free(as->env_vals[as->nenv]);
        as->env_keys[as->nenv] = as->env_vals[as->nenv] = NULL;
        return RC_ENOMEM;
    }
    as->nenv++;
    return RC_OK;
}

enum rc wrk_isolate_prepare(const char *owner, struct wrk_assignment *as)
{
    char ifname[32];
    enum rc rc;

    if (as->node_rank == 0) {
        char *m = strdup("127.0.0.1");
        if (m == NULL)
            return RC_ENOMEM;
        free(as->master_addr);
        as->master_addr = m;
    }
    if (as->nnodes > 1)
        wrk_netns_ifname(owner, as->attempt_id, ifname, sizeof(ifname));
    else
        snprintf(ifname, sizeof(ifname), "lo");
    if ((rc = env_default(as, "GLOO_SOCKET_IFNAME", ifname)) != RC_OK)
        return rc;
    return env_default(as, "NCCL_SOCKET_IFNAME", ifname);
}

enum rc wrk_isolate_setup(const char *owner, const struct wrk_assignment *as, const char *master,
                          const json_t *networks, char *ns_path, size_t ns_size, struct err *e)
{
    const char *cidrs[WRK_NETNS_MAX_CIDRS];
    struct wrk_netns_spec s;
    size_t n = 0, i;
    json_t *v;
    enum rc rc;

    json_array_foreach(networks, i, v)
    {
        if (json_is_string(v) && n < WRK_NETNS_MAX_CIDRS)
            cidrs[n++] = json_string_value(v);
    }
    memset(&s, 0, sizeof(s));
    s.owner = owner;
    s.attempt_id = as->attempt_id;
    s.nnodes = as->nnodes;
    s.node_rank = as->node_rank;
    s.master_addr = master;
    s.master_port = as->master_port;
    s.cidrs = cidrs;
    s.ncidrs = n;
    rc = wrk_netns_setup(&s, e);
    if (rc == RC_OK)
        wrk_netns_path(s.owner, as->attempt_id, ns_path, ns_size);
    return rc;
}

void wrk_isolate_sweep(const char *owner, struct wrk_launcher *l)
{
    json_t *running = l != NULL ? wrk_launcher_running_json(l) : json_array();
    const char **keep = NULL;
    size_t n = 0, i;
    json_t *v;

    if (running == NULL)
        return; /* out of memory: the next change sweeps */
    keep = calloc(json_array_size(running) + 1, sizeof(*keep));
    if (keep != NULL) {
        json_array_foreach(running, i, v)
        {
            const char *id = json_string_value(json_object_get(v, "attempt_id"));
            if (id != NULL)
                keep[n++] = id;
        }
        wrk_netns_sweep(owner, keep, n);
    }
    free(keep);
    json_decref(running);
}
