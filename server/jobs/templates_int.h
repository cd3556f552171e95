/*
 * templates_int.h - what the parts of the template validator share (not
 * for use outside server/jobs/templates_*.c). tpl_parse()
 * (templates_parse.c) walks a file's keys in the documented order
 * (templates.h) and hands each group to its part:
 *   templates_fields.c   the checkers of one value, used by every part
 *   templates_command.c  script, interpreter or command; serve
 *   templates_model.c    model
 *   templates_schema.c   params
 * and templates_set.c loads a directory of files through tpl_parse().
 *
 * Every checker fills e (may be NULL) with the offending field's path, the
 * message and a "got ..." detail (common/json_check.h's jcheck_bad()), and
 * returns RC_OK, RC_EINVAL or RC_ENOMEM; on RC_ENOMEM the message is "out of
 * memory". v arguments are borrowed; NULL stands for an absent key.
 *
 * Thread-safety: pure and reentrant.
 */
#ifndef TY_SERVER_TEMPLATES_INT_H
#define TY_SERVER_TEMPLATES_INT_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

#define MAX_PATH_ARG 4096 /* bytes of one argument, and of examples_dir/script */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The parsed fields of one template, the strings borrowed from its document. */
struct tpl_fields {
    const char *id, *industry, *script, *interpreter, *launcher, *priority, *dataset, *strategy;
    json_int_t gpus, gpus_per_node, max_restarts, time_limit_s, order;
    json_t *argv;        /* owned: the command before the parameters */
    const json_t *model; /* borrowed, or NULL */
    json_t *params;      /* owned: the schema in its public form */
    const json_t *serve; /* borrowed: the checked "serve" object, or NULL */
};

/* ---- templates_fields.c ---- */

/* Fill e with RC_ENOMEM and "out of memory"; returns RC_ENOMEM. */
enum rc tpl_oom(struct err *e);

/* v must be a string of min..max bytes without NUL (and, with no_ctrl,
 * without control characters). *out is borrowed from v. */
enum rc tpl_want_str(const json_t *v, const char *field, size_t min, size_t max, int no_ctrl,
                     const char **out /* out */, struct err *e);

/* v (NULL: absent, then def) must be an integer in min..max. */
enum rc tpl_want_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                     json_int_t def, json_int_t *out /* out */, struct err *e);

/* v (required) must be an integer in min..max. */
enum rc tpl_need_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                     json_int_t *out /* out */, struct err *e);

/* v must be one of the n names; absent (NULL) it is def, or refused when def
 * is NULL. *out points into names (or is def). */
enum rc tpl_want_enum(const json_t *v, const char *field, const char *const *names, size_t n,
                      const char *def, const char **out /* out */, struct err *e);

/* Refuse the smallest key (in byte order) of obj that is not in known[];
 * prefix ("" at the top) starts the field's path. */
enum rc tpl_check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                          size_t nknown, struct err *e);

/* v (required) must be a {"zh-CN": text, "en": text} object: both
 * languages, no others, texts of 1..max bytes without control characters. */
enum rc tpl_want_text(const json_t *v, const char *field, size_t max, struct err *e);

/* v must be an array of min..max strings of 1..MAX_PATH_ARG bytes; each is
 * appended to argv (borrowed, a JSON array). */
enum rc tpl_want_argv(const json_t *v, const char *field, size_t min, size_t max, json_t *argv,
                      struct err *e);

/* ---- the groups of keys ---- */

/* script, interpreter, command (templates_command.c): f->script and
 * f->interpreter set, and the program appended to f->argv (interpreter and
 * examples_dir/script, or the command). examples_dir borrowed, may be NULL
 * when the template has a command. */
enum rc tpl_check_program(const json_t *doc, const char *examples_dir, struct tpl_fields *f,
                          struct err *e);

/* serve (templates_command.c), v NULL when absent: {"kind": chat, classify,
 * embed, image or echo, "script": a plain file name in examples_dir}; f->serve set. */
enum rc tpl_check_serve(const json_t *v, struct tpl_fields *f, struct err *e);

/* model (templates_model.c), v not NULL: exactly one of a known name, a
 * transformer shape, or a parameter count with activation bytes. */
enum rc tpl_check_model(const json_t *v, struct err *e);

/* params (templates_schema.c), v NULL when absent: each parameter's public
 * form added to f->params in the file's order. args (borrowed, may be NULL)
 * is the template's args, whose flags a parameter may not reuse. */
enum rc tpl_check_params(const json_t *v, const json_t *args, struct tpl_fields *f, struct err *e);

#endif
