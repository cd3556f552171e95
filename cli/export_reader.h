/*
 * export_reader.h - a streaming reader of an audit export (docs/audit-export.md):
 * JSON Lines or CSV, told apart by the first bytes, one event record at a
 * time, with the signed manifest that ends the file.
 *
 * The manifest comes last but the verifier needs it first (the first event
 * links to its prev_hash, the checkpoints name events by id), so opening the
 * reader reads the file's last line before anything else. That needs a
 * seekable input: export_reader_open_fd() copies a pipe (stdin) to an
 * unlinked temporary file first. Memory stays bounded either way: one record
 * of at most EXPORT_MAX_LINE bytes, plus the manifest.
 *
 * Line format (decided here, see the doc's "Line endings"): every line ends
 * with LF. A record ending in CR LF is refused as malformed (a converted file
 * no longer matches events_sha256 anyway, so handling it would only delay the
 * failure). The manifest line may lack its final LF; nothing may follow it.
 *
 * CSV records follow RFC 4180 (quoted fields may hold commas, quotes as "",
 * and line breaks, so a record may span several lines; it is named by the
 * line it starts on). Fields are UTF-8 without NUL bytes; the canonical text
 * is rebuilt from them (see export_reader_recanonicalize()).
 *
 * Thread-safety: a reader is used by one thread at a time.
 */
#ifndef TY_CLI_EXPORT_READER_H
#define TY_CLI_EXPORT_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"

/* The longest line (CSV: record) a reader accepts, without its LF. */
#define EXPORT_MAX_LINE (1 << 20)

/* The CSV header line, without its LF. */
#define EXPORT_CSV_HEADER "id,ts,actor,source,action,target,outcome,details,prev_hash,hash"

enum export_format {
    EXPORT_JSONL = 1,
    EXPORT_CSV = 2,
};

/* "jsonl" or "csv" (the manifest's "format"). */
const char *export_format_str(enum export_format f);

/* 1 when s[0..n) is 64 lower-case hex digits. */
int export_is_hex64(const char *s, size_t n);

/*
 * A decimal id s[0..n): digits only, no sign, spaces or leading zeros, at
 * least 1 ("0" too when allow_zero), below INT64_MAX. Returns 0 and sets
 * *out, or -1.
 */
int export_parse_id(const char *s, size_t n, int allow_zero, int64_t *out);

enum export_manifest_state {
    EXPORT_MANIFEST_OK = 0,    /* the last line is a manifest line holding a JSON object */
    EXPORT_MANIFEST_ABSENT,    /* the last line is not a manifest line */
    EXPORT_MANIFEST_MALFORMED, /* it looks like one but does not parse */
};

/*
 * One record: an event, or (serve set) a gateway request record line, whose
 * JSON object is at serve_json (JSON Lines: {"serve_record":{...}}; CSV:
 * #serve_record,"{...}"). A serve record has no id, hashes or canonical
 * text here (id 0, hash ""); verify.c parses its object (serve_proof.h).
 * Filled by export_reader_next().
 */
struct export_record {
    int64_t line;                              /* 1-based line the record starts on */
    int serve;                                 /* 1: a gateway request record line */
    const char *serve_json;                    /* borrowed until the next call: its object */
    size_t serve_json_len;                     /* bytes at serve_json */
    int64_t id;                                /* event id, >= 1 */
    char hash[CRYPTO_SHA256_HEX_LEN + 1];      /* stored hash: 64 lower-case hex digits */
    char prev_hash[CRYPTO_SHA256_HEX_LEN + 1]; /* event's prev_hash; "" unless 64 lower hex */
    const char *canonical; /* borrowed, valid until the next call: the hashed bytes */
    size_t canonical_len;  /* bytes at canonical (no NUL counted) */
};

struct export_reader;

/*
 * Open an export on fd (borrowed; the caller closes it after
 * export_reader_free()). A regular file is read in place with pread(); any
 * other fd (pipe, terminal) is first copied to an unlinked temporary file in
 * $TMPDIR (or /tmp). Detects the format and reads the manifest.
 * Returns RC_OK; RC_EINVAL when the input is not an audit export at all (e
 * says why); RC_EUNAVAIL on a read or temporary-file error; RC_ENOMEM.
 * *out is owned by the caller: free with export_reader_free(). e may be NULL.
 */
enum rc export_reader_open_fd(int fd, struct export_reader **out, struct err *e) TY_WUR;

/* The same over data[0..len) (borrowed; must outlive the reader). */
enum rc export_reader_open_mem(const void *data, size_t len, struct export_reader **out,
                               struct err *e) TY_WUR;

void export_reader_free(struct export_reader *r);

enum export_format export_reader_format(const struct export_reader *r);

/*
 * The manifest: on EXPORT_MANIFEST_OK, *manifest (borrowed, lives as long as
 * the reader) is the manifest object as parsed (duplicate keys refused), not
 * yet checked in any way. Otherwise *manifest is NULL and *why (borrowed) says
 * what is wrong. Either out-param may be NULL.
 */
enum export_manifest_state export_reader_manifest(const struct export_reader *r,
                                                  const json_t **manifest, const char **why);

/*
 * The next event record, in file order. Returns:
 *   RC_OK        rec is filled;
 *   RC_ENOTFOUND no records are left (the manifest line or the end was reached);
 *   RC_EINVAL    the record is malformed: rec->line names it, e says why;
 *   RC_ETOOBIG   the record is longer than EXPORT_MAX_LINE (rec->line, e);
 *   RC_EUNAVAIL  a read error; RC_ENOMEM.
 * After RC_EINVAL or RC_ETOOBIG the reader has skipped the record and may be
 * called again. e may be NULL.
 */
enum rc export_reader_next(struct export_reader *r, struct export_record *rec,
                           struct err *e) TY_WUR;

/*
 * 1 when every byte before the manifest line (or of the input) has been cut
 * into records: after a malformed record, whether it was the last one.
 */
int export_reader_eof(const struct export_reader *r);

/*
 * CSV: rebuild the canonical text of the record that export_reader_next()
 * just returned with audit_canonical() (parsing details with jansson), and
 * point rec->canonical at it. next() writes the canonical text directly from
 * the fields, with details as it stands in the file: the same bytes as
 * audit_canonical() for what the server writes, several times faster. A
 * verifier whose hash does not match calls this before concluding, so the
 * verdict is always that of the doc's rebuild. Returns RC_OK (rec updated),
 * RC_ENOTFOUND (nothing to rebuild: JSONL, or rec is already rebuilt),
 * RC_EINVAL (details is not valid JSON; e says so) or RC_ENOMEM.
 */
enum rc export_reader_recanonicalize(struct export_reader *r, struct export_record *rec,
                                     struct err *e) TY_WUR;

/* Records rebuilt with audit_canonical() so far (for tests and benchmarks). */
size_t export_reader_rebuilt(const struct export_reader *r);

/* Lines consumed so far: after RC_ENOTFOUND, the manifest is on line lines+1. */
int64_t export_reader_lines(const struct export_reader *r);

/*
 * The SHA-256 (64 hex digits) of every byte before the manifest line (of the
 * whole input when there is none). Returns 1 and fills out once
 * export_reader_next() has returned RC_ENOTFOUND, else 0.
 */
int export_reader_events_sha256(const struct export_reader *r, char out[CRYPTO_SHA256_HEX_LEN + 1]);

#endif
