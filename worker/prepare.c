/*
 * prepare.c - checks, preparation and the start of an assignment's ranks
 * (see prepare.h).
 */
#include "prepare.h"

#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cause.h"
#include "isolate.h"
#include "log.h"
#include "netns.h"
#include "pathchk.h"
#include "pathpol.h"
#include "refuse.h"
#include "state.h"
#include "utf8cut.h"

/*
 * The rank-0 node confirms the rendezvous port is free before starting: a
 * port taken by another program would make every rank hang in init and fail
 * much later. Refusing at once lets the server re-place the attempt with a
 * new port (and not count it against max_restarts).
 */
static int port_free(int port)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

    if (fd < 0)
        return 1; /* cannot tell; let the ranks try */
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
    close(fd);
    return ok;
}

/*
 * The data-residency check on this node, before anything starts: work_dir,
 * output_dir and checkpoint_dir (created), resume_from and every local dataset must
 * resolve, symlinks followed, inside this worker's --allowed-root dirs and
 * the job's site roots. On refusal reason says which path and why
 * ("policy violation: ..."; the server records it as such).
 */
static enum rc check_paths(struct wrk_agent *a, const struct wrk_assignment *as,
                           const struct wrk_ident *id, char *work, char *ckpt, char *reason,
                           size_t reason_size)
{
    const char *const *site = (const char *const *)as->site_roots;
    char tmp[PATH_MAX], dsfield[32];
    const char *field = "work_dir";
    struct err e;
    enum rc rc;

    err_init(&e);
    /* The directories the ranks write are made by their account. */
    rc = wrk_path_check_as(as->work_dir, a->roots, a->nroots, site, as->nsite_roots, 1, id, work,
                           PATH_MAX, &e);
    if (rc == RC_OK && as->output_dir != NULL) {
        field = "output_dir";
        rc = wrk_path_check_as(as->output_dir, a->roots, a->nroots, site, as->nsite_roots, 1, id,
                               tmp, sizeof(tmp), &e);
    }
    if (rc == RC_OK) {
        field = "checkpoint_dir";
        rc = wrk_path_check_as(as->checkpoint_dir, a->roots, a->nroots, site, as->nsite_roots, 1,
                               id, ckpt, PATH_MAX, &e);
    }
    if (rc == RC_OK && as->resume_from[0] != '\0') {
        field = "resume_from";
        rc = wrk_path_check_site(as->resume_from, a->roots, a->nroots, site, as->nsite_roots, 0,
                                 tmp, sizeof(tmp), &e);
    }
    for (size_t i = 0; rc == RC_OK && i < as->ndatasets; i++) {
        snprintf(dsfield, sizeof(dsfield), "datasets[%zu]", i);
        field = dsfield;
        rc = wrk_path_check_site(as->datasets[i], a->roots, a->nroots, site, as->nsite_roots, 0,
                                 tmp, sizeof(tmp), &e);
    }
    if (rc == RC_OK)
        return RC_OK;
    if (rc == RC_EPOLICY)
        snprintf(reason, reason_size, "policy violation: %s: %s%s%s", field, e.message,
                 e.detail[0] ? " " : "", e.detail);
    else
        snprintf(reason, reason_size, "cannot prepare %s: %s", field, e.message);
    utf8_cut_tail(reason);
    return rc;
}

/*
 * "python3 train.py" whose train.py is not there fails with exit 2 on every
 * attempt: refuse it before spawning, as script_not_found (cause.h).
 * Returns 1 when refused. work is the resolved working directory.
 */
static int refuse_missing_script(struct wrk_agent *a, const struct wrk_assignment *as,
                                 const char *work)
{
    const char *script = wrk_cause_script_arg(as->command);
    char q[160], reason[256];

    if (script == NULL || !wrk_cause_script_missing(work, script))
        return 0;
    pathpol_quote(script, strlen(script), q, sizeof(q));
    snprintf(reason, sizeof(reason), "the script \"%s\" does not exist%s", q,
             script[0] == '/' ? "" : " in the working directory");
    utf8_cut_tail(reason);
    wrk_refuse_cause(a->shipper, as->attempt_id, as, RSN_SCRIPT_NOT_FOUND,
                     json_pack("{s:s}", "script", q), reason, WRK_CAUSE_SCRIPT_NOT_FOUND, q);
    return 1;
}

/*
 * The account as's ranks run as: the one the assignment names when this
 * node's --job-users (or --job-user) allows it, else the worker's
 * --job-user. 1 with *id, 0 when as was refused.
 */
static int job_ident(struct wrk_agent *a, const struct wrk_assignment *as, struct wrk_ident *id)
{
    const struct wrk_config *cfg = a->cfg;
    const struct wrk_ident *dflt = cfg->job_ident;
    char reason[300];
    struct err e;

    err_init(&e);
    if (as->unix_account == NULL ||
        (dflt->switch_ids && strcmp(as->unix_account, dflt->name) == 0)) {
        *id = *dflt;
        return 1;
    }
    if (!dflt->switch_ids)
        snprintf(reason, sizeof(reason),
                 "the job must run as %s but this node runs ranks as the worker itself "
                 "(--job-user self)",
                 as->unix_account);
    else if (!wrk_ident_listed(as->unix_account,
                               (const char(*)[WRK_IDENT_NAME_MAX + 1]) cfg->job_users,
                               cfg->njob_users))
        snprintf(reason, sizeof(reason),
                 "the job must run as %s, which this node does not allow (--job-users)",
                 as->unix_account);
    else if (wrk_ident_resolve(as->unix_account, id, &e) != RC_OK)
        snprintf(reason, sizeof(reason), "the job must run as %s: %s", as->unix_account, e.message);
    else
        return 1;
    LOG_WARN("agent", "job account refused", "attempt_id=%s account=%s", as->attempt_id,
             as->unix_account);
    wrk_refuse(a->shipper, as->attempt_id, as, RSN_PREPARE_FAILED, wrk_refuse_detail(reason),
               reason);
    return 0;
}

struct ds_write {
    const char *path, *tmp, *text;
    size_t len;
};

/* ds_config.json into the run dir, which belongs to the ranks' account. */
static int ds_write_fn(void *arg)
{
    const struct ds_write *w = arg;
    return wrk_file_write_atomic_at(w->path, w->tmp, w->text, w->len, 0640);
}

/*
 * Everything checked before anything is built: 1 to go on, with work the
 * resolved working directory and ds_path the DeepSpeed config (written
 * when the launcher needs it); 0 when as was refused.
 */
static int check_node(struct wrk_agent *a, const struct wrk_assignment *as,
                      const struct wrk_ident *id, char *work, char *ds_path, size_t ds_size)
{
    char ds_tmp[PATH_MAX + 48];
    char ckpt[PATH_MAX], reason[300];
    int isolated = a->cfg->isolate_network;
    enum rc rc;

    if (a->draining) {
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_NODE_DRAINING, NULL, "node is draining");
        return 0;
    }
    /* In an isolated single-node attempt the port is in a fresh namespace. */
    if (as->node_rank == 0 && !(isolated && as->nnodes == 1) && !port_free(as->master_port)) {
        snprintf(reason, sizeof(reason), "rendezvous port %d is in use on this node",
                 as->master_port);
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_RENDEZVOUS_PORT_BUSY,
                   json_pack("{s:i}", "port", as->master_port), reason);
        return 0;
    }
    rc = check_paths(a, as, id, work, ckpt, reason, sizeof(reason));
    if (rc == RC_EPOLICY) { /* the same paths are refused on every attempt */
        const char *prefix = "policy violation: ";
        size_t n = strlen(prefix);
        const char *what = strncmp(reason, prefix, n) == 0 ? reason + n : reason;
        wrk_refuse_cause(a->shipper, as->attempt_id, as, RSN_PATH_REFUSED, wrk_refuse_detail(what),
                         reason, WRK_CAUSE_PATH_REFUSED, what);
        return 0;
    }
    if (rc != RC_OK) {
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_PREPARE_FAILED, wrk_refuse_detail(reason),
                   reason);
        return 0;
    }
    if (refuse_missing_script(a, as, work))
        return 0;
    snprintf(ds_path, ds_size, "%s/ds_config.json", work);
    snprintf(ds_tmp, sizeof(ds_tmp), "%s.tmp", ds_path);
    if (as->launcher == WRK_LAUNCH_DEEPSPEED || as->ds_config != NULL) {
        const char *text = as->ds_config ? as->ds_config : wrk_default_ds_config();
        struct ds_write w = {ds_path, ds_tmp, text, strlen(text)};
        if (wrk_ident_call(id, ds_write_fn, &w) == 0)
            return 1;
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_PREPARE_FAILED,
                   wrk_refuse_detail("cannot write ds_config.json"), "cannot write ds_config.json");
        return 0;
    }
    return 1;
}

/* Fit as to its namespace and build its launch plan: 1 with *plan, 0 when refused. */
static int build_plan(struct wrk_agent *a, struct wrk_assignment *as, const struct wrk_ident *id,
                      const char *work, const char *ds_path, struct wrk_plan **plan)
{
    int isolated = a->cfg->isolate_network;
    struct wrk_plan_opts o;
    struct err e;

    err_init(&e);
    if (isolated && wrk_isolate_prepare(a->cfg->work_dir, as) != RC_OK) {
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_NODE_OUT_OF_MEMORY, NULL, "out of memory");
        return 0;
    }
    memset(&o, 0, sizeof(o));
    o.path = getenv("PATH");
    /* The worker's HOME is not the job account's to write: its own, or the run dir. */
    o.home = !id->switch_ids ? getenv("HOME") : id->home[0] ? id->home : work;
    o.lang = getenv("LANG");
    o.pythonpath = getenv("PYTHONPATH");
    o.hostname = isolated && as->nnodes == 1 ? "127.0.0.1" : a->addr;
    o.ds_config_path = ds_path;
    if (wrk_plan_build(as, &o, plan, &e) != RC_OK) {
        const char *m = e.message[0] ? e.message : "cannot build the launch plan";
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_PREPARE_FAILED, wrk_refuse_detail(m), m);
        return 0;
    }
    return 1;
}

/*
 * Make the namespace (isolated) and start the ranks of plan (borrowed) in
 * work; master is the rendezvous address as the server sent it. 1 when they
 * started, 0 when refused.
 */
static int start_ranks(struct wrk_agent *a, const struct wrk_assignment *as, const json_t *networks,
                       const struct wrk_ident *id, const char *work, const char *master,
                       const struct wrk_plan *plan)
{
    char ns_path[WRK_ID_MAX + 32];
    int isolated = a->cfg->isolate_network;
    struct wrk_launch_req req;
    struct err e;

    err_init(&e);
    /* Never launched unisolated: a namespace that cannot be made refuses the attempt. */
    if (isolated && wrk_isolate_setup(a->cfg->work_dir, as, master, networks, ns_path,
                                      sizeof(ns_path), &e) != RC_OK) {
        const char *m = e.message[0] ? e.message : "network isolation failed";
        wrk_refuse(a->shipper, as->attempt_id, as, RSN_ISOLATION_FAILED, wrk_refuse_detail(m), m);
        return 0;
    }
    memset(&req, 0, sizeof(req));
    req.attempt_id = as->attempt_id;
    req.job_id = as->job_id;
    req.node_rank = as->node_rank;
    req.cwd = work;
    req.plan = plan;
    req.time_limit_s = as->time_limit_s;
    req.grace_s = as->grace_s;
    req.netns_path = isolated ? ns_path : NULL;
    req.ident = id;
    LOG_INFO("agent", "launching",
             "attempt_id=%s job_id=%s launcher=%s procs=%zu isolated=%d account=%s", as->attempt_id,
             as->job_id, wrk_launcher_name(as->launcher), plan->nprocs, isolated,
             id->switch_ids ? id->name : "self");
    if (wrk_launcher_start(a->launcher, &req, &e) != RC_OK) {
        int for_good = strcmp(e.code, WRK_CAUSE_EXEC_FAILED) == 0;
        const char *m = e.message[0] ? e.message : "cannot start the ranks";
        wrk_refuse_cause(a->shipper, as->attempt_id, as,
                         for_good ? RSN_EXEC_FAILED : RSN_SPAWN_FAILED,
                         wrk_refuse_detail(e.detail[0] ? e.detail : m), m,
                         for_good ? WRK_CAUSE_EXEC_FAILED : NULL, e.detail);
        if (isolated)
            wrk_netns_teardown(a->cfg->work_dir, as->attempt_id);
        return 0;
    }
    return 1;
}

int wrk_prepare_start(struct wrk_agent *a, struct wrk_assignment *as, const json_t *networks)
{
    char work[PATH_MAX], ds_path[PATH_MAX + 32], master[256];
    struct wrk_plan *plan = NULL;
    struct wrk_ident id;
    int started;

    if (wrk_launcher_has(a->launcher, as->attempt_id))
        return 0; /* delivered twice */
    if (!job_ident(a, as, &id) || !check_node(a, as, &id, work, ds_path, sizeof(ds_path)))
        return 0;
    /* As sent: isolation may point this node's own ranks at loopback. */
    snprintf(master, sizeof(master), "%s", as->master_addr);
    if (!build_plan(a, as, &id, work, ds_path, &plan))
        return 0;
    started = start_ranks(a, as, networks, &id, work, master, plan);
    wrk_plan_free(plan);
    return started;
}
