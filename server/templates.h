/*
 * templates.h - the job templates the dashboard offers (GET /api/v1/templates):
 * one JSON file each under the templates_dir config key, loaded and validated
 * once at start; a bad file stops the server (the file and the field named).
 *
 * A template file is one JSON object (every other key is refused):
 *   id            string, required, 1..64 bytes of [a-z0-9_-], starting with
 *                 [a-z0-9]; unique in the directory
 *   name          object {"zh-CN": text, "en": text}, required, 1..128 bytes each
 *   description   object {"zh-CN": text, "en": text}, required, 1..1024 bytes each
 *                 (texts: no control characters)
 *   industry      "manufacturing" | "ecommerce" | "services" | "benchmark" | "general",
 *                 required
 *   script        string 1..255: a file relative to the examples_dir config key
 *                 (no leading '/', no empty, "." or ".." segment); run with
 *   interpreter   an absolute path, default "/usr/bin/python3" (only with script)
 *   command       array of 1..64 strings, the first an absolute path: the
 *                 program itself, for templates without a script
 *   args          array of <= 64 strings (1..4096 bytes each), appended
 *   gpus          integer 1..1024, required
 *   gpus_per_node integer 1..64 (gpus a multiple of it) or null
 *   launcher      "native" (default) | "torchrun" | "deepspeed" | "horovod"
 *   max_restarts  integer 0..100, default 3
 *   time_limit_s  integer 1..2592000, default 86400
 *   priority      "low" | "normal" (default) | "high"
 *   dataset       "synthetic" (default) | "image-folder" | "text-lines" | "chat-jsonl"
 * Exactly one of script and command. Checks run in a fixed order (unknown
 * keys first, in byte order, then the keys above in that order), so the same
 * bad file always names the same field.
 *
 * The public form of a template (what the API answers) has every key above
 * with its default filled in (absent ones null) plus "job": a job spec ready
 * for POST /api/v1/jobs once a "team" is added:
 *   {"name": id, "command": [interpreter, "<examples_dir>/<script>", args...]
 *    or [command..., args...], "launcher", "resources": {"gpus", "gpus_per_node"},
 *    "max_restarts", "time_limit_s", "priority", "template": id}
 * The script's absolute path is built from examples_dir, which must name the
 * same directory on every node (like storage_root): the job's working
 * directory is its own folder under the storage root, not the repository.
 *
 * Thread-safety: tpl_parse() is reentrant. A struct tpl_set is built once
 * before threads start and is immutable afterwards; its readers may run on
 * any thread at once.
 */
#ifndef TY_SERVER_TEMPLATES_H
#define TY_SERVER_TEMPLATES_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

#define TPL_MAX_FILE_BYTES 65536 /* a template file larger than this is refused */
#define TPL_MAX_TEMPLATES 256    /* files per templates_dir */
#define TPL_DEFAULT_INTERPRETER "/usr/bin/python3"

struct tpl_set;

/*
 * Validate one template file's text (text[0..len), borrowed; need not be
 * NUL-terminated) and build its public form. examples_dir (borrowed) is the
 * absolute directory script is relative to; "" or NULL is allowed only when
 * the template has no script. On RC_OK *out is a new reference (json_decref
 * it); on error *out is NULL and e names the field ("gpus", "name.en",
 * "args[2]"; "" for text that is not a JSON object). Pure: no I/O.
 * Returns RC_OK, RC_EINVAL or RC_ENOMEM. e may be NULL.
 */
enum rc tpl_parse(const char *text, size_t len, const char *examples_dir, json_t **out /* out */,
                  struct err *e) TY_WUR;

/*
 * Load every "*.json" file of dir (borrowed; file names starting with '.'
 * skipped), in byte order of their names, with tpl_parse(). dir "" or NULL
 * gives an empty set. A file that cannot be read, is too large or is invalid,
 * a duplicate id, or more than TPL_MAX_TEMPLATES files fail the whole load:
 * e->message then starts with the file's path and e->field names the field.
 * A script that is not a regular file under examples_dir on this host is
 * logged as a warning, not refused: the server need not be a node. On RC_OK
 * *out is a new set (free with tpl_set_free()). Returns RC_OK, RC_EINVAL
 * (bad or unreadable file or directory) or RC_ENOMEM. Main thread, at start.
 */
enum rc tpl_set_load(const char *dir, const char *examples_dir, struct tpl_set **out /* out */,
                     struct err *e) TY_WUR;

/* Free a set; NULL is a no-op. */
void tpl_set_free(struct tpl_set *set);

/* The number of templates; 0 for NULL. Thread-safe. */
size_t tpl_set_count(const struct tpl_set *set);

/* The public forms as a new JSON array (deep copies, in load order), or NULL
 * when out of memory. set may be NULL (an empty array). Thread-safe. */
json_t *tpl_set_list(const struct tpl_set *set);

/* The public form of template id as a new deep copy; *out NULL and
 * RC_ENOTFOUND when there is none, RC_ENOMEM when out of memory. Thread-safe. */
enum rc tpl_set_get(const struct tpl_set *set, const char *id, json_t **out /* out */) TY_WUR;

#endif
