/*
 * export_writer.h - writes a signed audit export exactly as
 * docs/audit-export.md describes it: JSON Lines or CSV event lines, then the
 * signed manifest line. It is the reference implementation of the format
 * (the server writes the same bytes independently) and is used by the tests,
 * the fuzz seeds and bench/audit to make exports from synthetic events.
 *
 * The writer trusts its caller: it does not check that the events chain, so
 * tests can also write forged or broken exports. It hashes every byte it
 * writes before the manifest (events_sha256) and tracks count, first/last id
 * and hash for the manifest.
 *
 * Thread-safety: a writer is used by one thread at a time.
 */
#ifndef TY_CLI_EXPORT_WRITER_H
#define TY_CLI_EXPORT_WRITER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "audit_canon.h"
#include "audit_sign.h"
#include "err.h"
#include "export_reader.h"

struct export_writer;

/*
 * Start an export on out (borrowed; stays open, the caller closes it after
 * export_writer_free()). key (borrowed, must be able to sign) signs the
 * manifest. prev_hash (copied) is the hash of the event just before the
 * range: AUDIT_GENESIS_HASH when the range starts at event 1, the retention
 * checkpoint's hash when retention removed the events before it; for an
 * empty range the hash of the last event before it (genesis when none).
 * from/to (copied; NULL writes null) are the range as asked. The CSV header
 * is written here. Returns RC_OK, RC_EINVAL (key cannot sign, bad prev_hash),
 * RC_ENOMEM or RC_EUNAVAIL (write error).
 */
enum rc export_writer_new(FILE *out, enum export_format format, const struct audit_key *key,
                          const char *prev_hash, const char *from, const char *to,
                          struct export_writer **w) TY_WUR;

/*
 * Append one event. f is borrowed; when f->prev_hash is NULL the writer uses
 * the previous event's hash (prev_hash for the first event). hash_out (may be
 * NULL) receives the event's hash. Returns RC_OK, RC_ENOMEM, RC_EUNAVAIL.
 */
enum rc export_writer_event(struct export_writer *w, const struct audit_fields *f,
                            char hash_out[CRYPTO_SHA256_HEX_LEN + 1]) TY_WUR;

/*
 * Add a signed checkpoint object to the manifest's "checkpoints" (in the
 * order added). Takes a new reference to cp (the caller keeps its own).
 */
enum rc export_writer_checkpoint(struct export_writer *w, json_t *cp) TY_WUR;

/*
 * Write the signed manifest line and flush out. generated_at (copied) is
 * written as given; NULL means now. Call once; the writer accepts nothing
 * after it. Returns RC_OK, RC_ENOMEM, RC_EINTERNAL (signing) or RC_EUNAVAIL.
 */
enum rc export_writer_finish(struct export_writer *w, const char *generated_at) TY_WUR;

void export_writer_free(struct export_writer *w);

/*
 * A signed checkpoint {"type":"trainyard.audit.checkpoint","seq":"<seq>",
 * "hash":..,"created_at":..,"kind":..,"key_id":..,"signature":..}. kind is
 * "periodic" or "retention"; created_at NULL means now. *out is a new
 * reference (json_decref() it). Returns RC_OK, RC_EINVAL, RC_ENOMEM or
 * RC_EINTERNAL.
 */
enum rc export_checkpoint_new(const struct audit_key *key, int64_t seq, const char *hash,
                              const char *kind, const char *created_at, json_t **out) TY_WUR;

#endif
