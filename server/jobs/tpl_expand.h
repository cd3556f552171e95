/*
 * tpl_expand.h - a submit by template made into a full job spec, and the
 * check of one parameter value against a template's schema.
 *
 * POST /api/v1/jobs with "template" and no "command" is a submit by
 * template: {"template": id, "params": {...}, "team": ..., and optionally any
 * other job-spec key but "command" (name, resources, datasets, output_dir,
 * working_dir, env, priority, max_restarts, time_limit_s, launcher, site,
 * strategy)}. tpl_expand() turns it into the job spec that is validated by
 * jobspec_parse() and stored, so that the stored spec alone reproduces the
 * job ("clone and edit" submits it back as it is):
 *   command       the template's base_command, then each parameter of the
 *                 schema in the schema's order, rendered as below with the
 *                 request's value or else the default
 *   params        every parameter of the schema with the value used
 *                 (defaults filled in), in the schema's order
 *   template      the template's id
 *   name          the request's, else the template's id
 *   launcher, priority, max_restarts, time_limit_s, strategy
 *                 the request's, else the template's
 *   resources     the request's; when absent or without gpus, the template's
 *                 gpus, and its gpus_per_node unless the request gives one
 *   env           the template's env with the request's on top
 *   model         the request's, else the template's model in the advisor's
 *                 terms (jobplan_model_from_template)
 *   global_batch  the request's, else the "batch" parameter's value, when
 *                 the template has one
 *   everything else as the request has it (jobspec_parse() names what is
 *                 wrong there, as for any submit)
 * A parameter becomes arguments by type:
 *   int           arg, the decimal value ("--steps", "200")
 *   float         arg, the shortest decimal that reads back as the same
 *                 double ("--lr", "0.001")
 *   enum, string  arg, the value; an empty string adds nothing (neither
 *                 may start with '-', which would read as another flag)
 *   bool          true adds arg alone (a flag); false adds nothing
 *
 * The template is its public form (templates.h): "id", "base_command",
 * "params" (name -> {"type", "label", "help", "arg", "default", "min",
 * "max", "values"}), "gpus", "gpus_per_node", "launcher", "priority",
 * "max_restarts", "time_limit_s", "strategy", "env"; it was validated when it
 * was loaded, so only the request is checked here.
 *
 * Pure and reentrant: no I/O, no globals besides constant tables.
 */
#ifndef TY_SERVER_TPL_EXPAND_H
#define TY_SERVER_TPL_EXPAND_H

#include <jansson.h>

#include "err.h"

#define TPL_MAX_STRING_PARAM 4096 /* bytes of a string parameter's value */

/* Whether body (borrowed, may be NULL) is a submit by template: a JSON
 * object with a "template" key and no "command" key. */
int tpl_expand_wanted(const json_t *body);

/*
 * Check value (borrowed; NULL counts as missing) against schema, one entry
 * of a template's "params" in its public form (borrowed, already valid):
 * its type, and min/max or values where the schema has them. field names the
 * value in e ("params.steps"). Returns RC_OK or RC_EINVAL (e filled: field,
 * a message with the allowed range or values, the value as detail). e may
 * be NULL.
 */
enum rc tpl_param_check(const json_t *schema, const json_t *value, const char *field,
                        struct err *e) TY_WUR;

/*
 * Expand req (borrowed, the submit body) with tpl (borrowed, a template's
 * public form) as described above. On RC_OK *out is a new reference to the
 * job spec (json_decref it); it still has to pass jobspec_parse(). On error
 * *out is NULL and e names the field: "params" (not an object),
 * "params.<name>" (unknown, or a value the schema refuses), "" (req is not
 * an object). Returns RC_OK, RC_EINVAL or RC_ENOMEM. e may be NULL.
 */
enum rc tpl_expand(const json_t *tpl, const json_t *req, json_t **out /* out */,
                   struct err *e) TY_WUR;

#endif
