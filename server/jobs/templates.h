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
 *   dataset       "synthetic" (default) | "image-folder" | "text-lines" | "chat-jsonl":
 *                 what the script reads from the job's first dataset
 *                 (TRAINYARD_DATA)
 *   model         the model the script trains, in the strategy advisor's terms
 *                 (advisor.h), exactly one of:
 *                   {"name": a known model: resnet50, resnet101, vit-base,
 *                    bert-base, bert-large, gpt2, gpt2-medium, gpt2-large,
 *                    gpt2-xl, llama-2-7b, llama-2-13b, qwen2-7b, chatglm3-6b,
 *                    baichuan2-7b}
 *                   {"transformer": {"layers" 1..1024, "hidden" 1..65536,
 *                    "heads" 1..1024 (dividing hidden), "ffn" 1..262144,
 *                    "vocab" 1..4194304, "seq_len" 1..1048576,
 *                    "kind" "decoder" | "encoder"}} (every key required)
 *                   {"params": 1..10^13, "activation_bytes_per_sample":
 *                    1..2^40} (a parameter count and measured activations)
 *                 or null; required with strategy "auto"
 *   strategy      "auto" (default: the advisor picks) | "ddp" | "zero1" |
 *                 "zero2" | "zero3" | "fsdp"
 *   env           object of <= 32 variables for the job's env, under the job
 *                 spec's rules (jobspec.h); a submit's env goes on top
 *   params        the hyperparameter schema: an object, in the order the
 *                 wizard shows them and the command gets them, of <= 32
 *                 name ([a-z][a-z0-9_]{0,63}) -> {
 *                   type     "int" | "float" | "enum" | "bool" | "string", required
 *                   label    {"zh-CN", "en"} texts of 1..128 bytes, required
 *                   help     {"zh-CN", "en"} texts of 1..1024 bytes
 *                   arg      the script's flag, required: "--" then
 *                            [a-z0-9][a-z0-9-]*, <= 64 bytes, used by no
 *                            other parameter and not in args
 *                   min, max numbers of the type (int, float only), min <= max
 *                   values   1..64 distinct strings of 1..64 bytes, none
 *                            starting with '-' (enum only, required there)
 *                   default  a value of the type within the bounds, required
 *                 }; how values become arguments: tpl_expand.h
 *   order         integer 0..1000000, default 1000000: the list is sorted by
 *                 it, then by file name
 *   serve         {"kind": "chat" | "classify" | "embed" | "image" | "echo",
 *                 "script": a plain file name ([A-Za-z0-9._-], not starting
 *                 with '.') in examples_dir} or null (default): the model
 *                 server a version registered from the template's jobs runs
 *                 (docs/serving.md); a job of a template without it cannot
 *                 be registered
 * Exactly one of script and command. Checks run in a fixed order (unknown
 * keys first, in byte order, then the keys above in that order; parameters
 * in their order, each parameter's keys in the order above but default last),
 * so the same bad file always names the same field ("params.steps.default").
 *
 * The public form of a template (what the API answers) has every key above
 * with its default filled in (absent ones null; args, env and params
 * empty; each parameter with every key, absent ones null; "serve" null when
 * absent) plus
 *   "base_command" the command before the parameters:
 *                 [interpreter, "<examples_dir>/<script>", args...] or
 *                 [command..., args...]
 *   "job"         the job spec a submit by template with no params makes
 *                 (tpl_expand.h), ready for POST /api/v1/jobs once a "team"
 *                 is added: {"name": id, "command": base_command and every
 *                 parameter's default, "params": the defaults, "template": id,
 *                 "launcher", "resources": {"gpus", "gpus_per_node"},
 *                 "max_restarts", "time_limit_s", "priority", "strategy",
 *                 and "env" when the template has one}
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
#define TPL_MAX_PARAMS 32        /* parameters of one template */
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
 * skipped) with tpl_parse(), listed by "order", then by byte order of their
 * file names. dir "" or NULL
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

/* The public forms as a new JSON array (deep copies, in list order), or NULL
 * when out of memory. set may be NULL (an empty array). Thread-safe. */
json_t *tpl_set_list(const struct tpl_set *set);

/* The public form of template id as a new deep copy; *out NULL and
 * RC_ENOTFOUND when there is none, RC_ENOMEM when out of memory. Thread-safe. */
enum rc tpl_set_get(const struct tpl_set *set, const char *id, json_t **out /* out */) TY_WUR;

/*
 * Whether s is a script path relative to examples_dir that cannot leave it:
 * no leading '/', no empty, "." or ".." segment (symlinks inside
 * examples_dir are the admin's). A template's "script" and a model
 * version's serve_script (docs/serving.md) both must be. Pure.
 */
int tpl_script_inside(const char *s);

#endif
