/*
 * audit_target.h - the one builder of audit event targets, and the check that
 * a target has one of the forms docs/audit-export.md ("Targets") lists.
 *
 * A target is "<kind>:<key>", one form per kind of object, so that an auditor
 * who filters on one string finds every event about the object:
 *
 * - by name: users, nodes, teams, sites, datasets, models and deployments. Each has a unique name
 *   that no API changes, and the name is what people know the object by and
 *   what actors carry ("user:alice" acts, "user:alice" is acted on).
 * - by id: jobs, API tokens, join tokens, webhooks, export requests and
 *   sealed batches of gateway request records ("serve:batch", a kind with a
 *   colon of its own: the key is what follows the last colon). Their names,
 *   where they have one, are neither unique nor required.
 *
 * The compliance policy ("policy") and the audit trail ("audit:events") have
 * one fixed target each; an event about no single object has the empty one.
 * A name is [a-z0-9][a-z0-9._-]{0,63}, the rule every named kind's own rule
 * fits in (team and site names have no '.', node names are at most 63); an id
 * is a positive decimal without leading zeros.
 *
 * Pure: no I/O, no allocation. Thread-safe.
 */
#ifndef TY_SERVER_AUDIT_TARGET_H
#define TY_SERVER_AUDIT_TARGET_H

#include <stdint.h>

#include "err.h"

/* Bytes of the longest target ("join_token:" and a 19-digit id, or "dataset:"
 * and a 64-byte name) and its NUL. */
#define AUDIT_TARGET_SIZE 80

#define AUDIT_TARGET_POLICY "policy"      /* policy.update */
#define AUDIT_TARGET_AUDIT "audit:events" /* audit.retention */
#define AUDIT_TARGET_NONE ""              /* no single object: audit.export, audit.key_rotated */

/* Kinds named by their name. */
enum audit_target_named {
    AUDIT_TARGET_USER,
    AUDIT_TARGET_NODE,
    AUDIT_TARGET_TEAM,
    AUDIT_TARGET_SITE,
    AUDIT_TARGET_DATASET,
    AUDIT_TARGET_MODEL,
    AUDIT_TARGET_DEPLOYMENT
};

/* Kinds named by their id. */
enum audit_target_numbered {
    AUDIT_TARGET_JOB,
    AUDIT_TARGET_TOKEN,
    AUDIT_TARGET_JOIN_TOKEN,
    AUDIT_TARGET_WEBHOOK,
    AUDIT_TARGET_EXPORT,
    AUDIT_TARGET_SERVE_KEY,
    AUDIT_TARGET_SERVE_BATCH /* "serve:batch:<id>": a sealed batch of gateway request records */
};

/*
 * Write "<kind>:<name>" to out (AUDIT_TARGET_SIZE bytes, caller's). name is
 * borrowed. RC_EINVAL, with out "", when name is NULL or not a name (a
 * refused sign-in may carry any text as a username) or kind is unknown.
 */
enum rc audit_target_name(enum audit_target_named kind, const char *name, char *out) TY_WUR;

/* Write "<kind>:<id>" to out (AUDIT_TARGET_SIZE bytes). RC_EINVAL, out "", when id < 1. */
enum rc audit_target_id(enum audit_target_numbered kind, int64_t id, char *out) TY_WUR;

/*
 * The same from the decimal text the database returns for an id (a row's
 * "id"), borrowed. RC_EINVAL, out "", when id is NULL or not a positive
 * decimal of at most 19 digits without leading zeros.
 */
enum rc audit_target_id_text(enum audit_target_numbered kind, const char *id, char *out) TY_WUR;

/* 1 when target (NULL counts as "") has one of the documented forms, else 0. */
int audit_target_valid(const char *target);

#endif
