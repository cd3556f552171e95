/*
 * audit_keeper.h - the server's audit signing key at start-up, and the
 * thread that keeps the signed side of the audit trail: periodic
 * checkpoints of the chain head and daily retention.
 *
 * Only one replica keeps: the thread takes its own PostgreSQL session
 * advisory lock (apart from the scheduler's, so a busy scheduling pass never
 * delays a checkpoint) and holds its connection while it leads; the others
 * try again every few seconds without holding a connection.
 *
 * As leader it makes a checkpoint at once when there is none yet, then one
 * every cfg->audit_checkpoint_interval_s when the head moved, and runs
 * retention (db_audit_sign.h) when it starts leading and then every 24 hours,
 * when cfg->audit_retention_days is not 0 (off, the default: kept forever).
 *
 * Threads: one thread; main starts and stops it.
 */
#ifndef TY_SERVER_AUDIT_KEEPER_H
#define TY_SERVER_AUDIT_KEEPER_H

#include "app.h"
#include "audit_sign.h"
#include "config.h"
#include "err.h"

struct audit_keeper;

/*
 * Create cfg->data_dir if it is missing (mode 0700), then load the key at
 * cfg->audit_key_path or create it there (audit_sign.h). Logs the key id,
 * or why the key cannot be used (readable by group or others, not an
 * Ed25519 key, unreadable). *out owned by the caller (audit_key_free).
 * Main thread, before other threads start.
 */
enum rc audit_keeper_load_key(const struct srv_config *cfg, struct audit_key **out) TY_WUR;

/*
 * Record app->audit_key in the key ring (db_audit_keys.h): a key not seen
 * before retires the current one, with an audit.key_rotated event. Logs the
 * rotation. Main thread, after audit_keeper_load_key().
 */
enum rc audit_keeper_register_key(struct srv_app *app) TY_WUR;

/* Start the thread; app->audit_key must be set. *out freed by audit_keeper_stop. */
enum rc audit_keeper_start(struct srv_app *app, struct audit_keeper **out) TY_WUR;

/* Stop and join the thread, give up the lead, free it; NULL is a no-op. */
void audit_keeper_stop(struct audit_keeper *k);

#endif
