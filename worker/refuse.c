/*
 * refuse.c - reports of attempts that never started (see refuse.h).
 */
#include "refuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "utf8cut.h"

void wrk_refuse_cause(struct wrk_shipper *s, const char *attempt_id,
                      const struct wrk_assignment *as, const char *code, json_t *params,
                      const char *reason, const char *cause, const char *detail)
{
    struct wrk_exit_report r;
    char *ps;

    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "%s", attempt_id);
    utf8_copy(r.reason, sizeof(r.reason), reason);
    snprintf(r.reason_code, sizeof(r.reason_code), "%s", code);
    ps = params != NULL ? json_dumps(params, JSON_COMPACT) : NULL;
    /* Too long for the report: the code alone (the text still says it all). */
    snprintf(r.reason_params, sizeof(r.reason_params), "%s",
             ps != NULL && strlen(ps) < sizeof(r.reason_params) ? ps : "{}");
    free(ps);
    json_decref(params);
    if (cause != NULL) {
        snprintf(r.failure, sizeof(r.failure), "%s", cause);
        utf8_copy(r.failure_detail, sizeof(r.failure_detail), detail ? detail : "");
    }
    if (as != NULL) {
        r.node_rank = as->node_rank;
        for (size_t i = 0; i < as->nranks && i < WRK_MAX_RANKS; i++) {
            r.ranks[i].rank = as->ranks[i].rank;
            r.ranks[i].exit_code = -1;
        }
        r.nranks = as->nranks;
    }
    LOG_WARN("agent", "attempt refused", "attempt_id=%s reason=\"%s\" failure=%s", attempt_id,
             reason, cause ? cause : "");
    wrk_shipper_exit(s, &r);
}

void wrk_refuse(struct wrk_shipper *s, const char *attempt_id, const struct wrk_assignment *as,
                const char *code, json_t *params, const char *reason)
{
    wrk_refuse_cause(s, attempt_id, as, code, params, reason, NULL, NULL);
}

json_t *wrk_refuse_detail(const char *text)
{
    return json_pack("{s:s}", "detail", text);
}
