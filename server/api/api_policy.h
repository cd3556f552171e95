/*
 * api_policy.h - what the policy API (api_policy.c) offers the other
 * handlers: recording a refusal by the data-residency policy. The route
 * handlers themselves are declared in api.h.
 *
 * Thread-safety: any handler thread, with the request's connection.
 */
#ifndef TY_SERVER_API_POLICY_H
#define TY_SERVER_API_POLICY_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"
#include "srv.h"

/*
 * Record a refusal and answer it: in one transaction of its own (no other
 * may be open on req), a "policy.violation" audit event (outcome "denied",
 * target as given; details: stage, field, reason, the escaped detail of e,
 * plus the members of ctx) and the "policy.violation" webhook of team_id
 * (team_id 0: none; job describes the refused job in the payload). Then
 * req->err becomes e with field set, and RC_EPOLICY is returned. If the
 * record cannot be written the refusal still stands (logged). The raw value
 * is never recorded: only e's escaped, shortened detail. ctx and job are
 * borrowed and may be NULL.
 */
enum rc policy_refuse(struct srv_req *req, int64_t team_id, const char *target, const char *stage,
                      const char *field, const struct err *e, const json_t *ctx, const json_t *job);

#endif
