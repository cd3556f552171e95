/*
 * labels.h - the node's labels as given on the command line (--labels
 * rack=r1,switch=s1): parsed once at start and sent with join and register;
 * the label "site" names the node's site (docs/agent-protocol.md).
 *
 * Thread-safety: reentrant; no state.
 */
#ifndef TY_WORKER_LABELS_H
#define TY_WORKER_LABELS_H

#include <jansson.h>

#include "err.h"

/*
 * Parse "k=v,k2=v2" (keys [A-Za-z0-9_.-]{1,63}, values printable without ','
 * or '=', at most 32 labels) into a new JSON object (*out, the caller's
 * reference). RC_OK, RC_EINVAL (e filled) or RC_ENOMEM. s may be NULL or ""
 * (empty object).
 */
enum rc wrk_labels_parse(const char *s, json_t **out, struct err *e) TY_WUR;

#endif
