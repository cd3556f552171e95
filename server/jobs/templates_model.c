/*
 * templates_model.c - a template's "model" (see templates_int.h): the model
 * its script trains, in the strategy advisor's terms (advisor.h), so the
 * advisor can plan a submit by template. A known name is looked up in the
 * advisor's own table, so the two cannot drift apart.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates_int.h"

#include <stdio.h>
#include <string.h>

#include "advisor.h"
#include "json_check.h"
#include "templates.h"

/* Model bounds: far beyond today's models, small enough that the advisor's
 * products of them cannot overflow 64 bits. */

#define MAX_MODEL_PARAMS INT64_C(10000000000000) /* 10^13 parameters */
#define MAX_ACTIVATION_BYTES (INT64_C(1) << 40)  /* 1 TiB per sample */

static const char *const model_keys[] = {"name", "transformer", "params",
                                         "activation_bytes_per_sample"};
static const char *const transformer_keys[] = {"layers", "hidden",  "heads", "ffn",
                                               "vocab",  "seq_len", "kind"};
static const char *const transformer_kinds[] = {"decoder", "encoder"};

/* model.transformer: the shape the advisor counts activations from. */
static enum rc check_transformer(const json_t *v, struct err *e)
{
    /* Upper bounds of transformer_keys[0..5], in that order. */
    static const json_int_t max[] = {1024, 65536, 1024, 262144, 4194304, 1048576};
    json_int_t n[NELEM(max)];
    const char *kind;
    char field[48];
    enum rc rc;

    if (!json_is_object(v))
        return jcheck_bad(
            e, "model.transformer", v,
            "model.transformer must be an object of layers, hidden, heads, ffn, vocab, "
            "seq_len and kind");
    if ((rc = tpl_check_unknown(v, "model.transformer", transformer_keys, NELEM(transformer_keys),
                                e)) != RC_OK)
        return rc;
    for (size_t i = 0; i < NELEM(max); i++) {
        snprintf(field, sizeof(field), "model.transformer.%s", transformer_keys[i]);
        if ((rc = tpl_need_int(json_object_get(v, transformer_keys[i]), field, 1, max[i], &n[i],
                               e)) != RC_OK)
            return rc;
    }
    if (n[1] % n[2] != 0)
        return jcheck_bad(e, "model.transformer.heads", json_object_get(v, "heads"),
                          "model.transformer.heads must divide hidden (%" JSON_INTEGER_FORMAT ")",
                          n[1]);
    return tpl_want_enum(json_object_get(v, "kind"), "model.transformer.kind", transformer_kinds,
                         NELEM(transformer_kinds), NULL, &kind, e);
}

/* model.name: a name of the advisor's known-model table (advisor.h), so the
 * two cannot drift apart. */
static enum rc check_known_model(const json_t *v, struct err *e)
{
    char list[320] = "";
    size_t n;
    const struct adv_known *t = adv_known_table(&n);

    if (json_is_string(v) && adv_known_find(json_string_value(v)) != NULL)
        return RC_OK;
    for (size_t i = 0; i < n; i++)
        jcheck_list_add(list, sizeof(list), i, t[i].name);
    return jcheck_bad(e, "model.name", v, "model.name must be one of %s", list);
}

/* model: exactly one of a known name, a transformer shape, or a parameter
 * count with the measured activation bytes per sample (the advisor's terms). */
enum rc tpl_check_model(const json_t *v, struct err *e)
{
    const json_t *name, *tr, *params, *act;
    json_int_t n;
    enum rc rc;

    if (!json_is_object(v))
        return jcheck_bad(e, "model", v,
                          "model must be an object with name, transformer, or params and "
                          "activation_bytes_per_sample");
    if ((rc = tpl_check_unknown(v, "model", model_keys, NELEM(model_keys), e)) != RC_OK)
        return rc;
    name = json_object_get(v, "name");
    tr = json_object_get(v, "transformer");
    params = json_object_get(v, "params");
    act = json_object_get(v, "activation_bytes_per_sample");
    if ((name != NULL) + (tr != NULL) + (params != NULL) != 1)
        return jcheck_bad(e, "model", NULL,
                          "model must have exactly one of name, transformer and params");
    if (name != NULL)
        rc = check_known_model(name, e);
    else if (tr != NULL)
        rc = check_transformer(tr, e);
    else
        rc = tpl_want_int(params, "model.params", 1, MAX_MODEL_PARAMS, 0, &n, e);
    if (rc != RC_OK)
        return rc;
    if (params == NULL && act != NULL)
        return jcheck_bad(e, "model.activation_bytes_per_sample", NULL,
                          "model.activation_bytes_per_sample goes only with model.params");
    if (params != NULL)
        return tpl_need_int(act, "model.activation_bytes_per_sample", 1, MAX_ACTIVATION_BYTES, &n,
                            e);
    return RC_OK;
}
