/*
 * jobs_hooks.h - what the jobs API asks of the scheduling side (jobs.c):
 * checks at submit, the placement shown with a job, and cancelling.
 *
 * Thread-safety: any handler thread, with the request's connection.
 */
#ifndef TY_SERVER_JOBS_HOOKS_H
#define TY_SERVER_JOBS_HOOKS_H

#include <jansson.h>
#include <stdint.h>

#include "db_jobs.h"
#include "err.h"
#include "jobspec.h"
#include "srv.h"

/*
 * Checks beyond the spec's shape, before anything is written: the
 * data-residency policy of the spec's site (common/pathpol.h). Every dataset
 * (a registered dataset's name, an absolute path, a file: URI or a remote URI
 * on an allowed network), output_dir and working_dir must lie inside the
 * site's storage roots after normalization. A registered dataset must belong
 * to the site, and to the job's team unless it is public.
 * On RC_OK *out (caller storage; db_job_compliance_cleanup() it on every
 * return) holds the site, the job's classification (the highest of its
 * registered datasets; the policy's default for plain paths or none) and the
 * normalized local paths. A refusal returns RC_EPOLICY with req->err naming
 * the field ("datasets[2]", "output_dir", "working_dir") after recording a
 * "policy.violation" audit event and webhook (api_policy.h); an unknown site
 * is RC_EINVAL ("site").
 */
enum rc jobs_check_submit(struct srv_req *req, const struct jobspec *spec, int64_t team_id,
                          struct db_job_compliance *out) TY_WUR;

/*
 * Whether the job can ever run on its site's registered nodes (any state):
 * its GPUs at most the site's, and with gpus_per_node k, at least gpus / k
 * nodes of k GPUs or more (a gang takes exactly k GPUs on distinct nodes).
 * A site with no node yet takes the job (nodes join later; jobplan says the
 * same). A job that cannot is refused before anything is written: RC_ECONFLICT
 * (409) with code "site_too_small", params {site, gpus, gpus_per_node,
 * site_nodes, site_gpus, largest_node_gpus, nodes_with_gpus_per_node}, and
 * a "job.submit" audit event with outcome "denied" in its own transaction.
 */
enum rc jobs_check_site_fits(struct srv_req *req, const struct jobspec *spec,
                             int64_t site_id) TY_WUR;

/* Add "allocations" (node, GPU indices, ranks) of the current attempt and "nccl"
 * (the NCCL/gloo settings of the latest handed-out attempt, db_alloc.h) to row. */
enum rc jobs_decorate(struct srv_req *req, int64_t job_id, json_t *row) TY_WUR;

/*
 * Cancel job_id (currently in state) inside the open transaction: a job that
 * holds no running ranks ends at once and gives its GPUs back; a running one
 * is marked, its workers are told to stop the ranks, and it ends when they
 * report.
 */
enum rc jobs_cancel(struct srv_req *req, int64_t job_id, const char *state) TY_WUR;

#endif
