/*
 * templates_fields.c - the checkers of one value of a template file (see
 * templates_int.h): strings, integers, names lists, unknown keys, the
 * {"zh-CN", "en"} texts and argument arrays. Each refuses with the field's
 * path, through common/json_check.c, so every part of the validator answers
 * a bad value the same way.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates_int.h"

#include <stdio.h>
#include <string.h>

#include "json_check.h"
#include "templates.h"

static const char *const languages[] = {"zh-CN", "en"};

enum rc tpl_oom(struct err *e)
{
    return err_set(e, RC_ENOMEM, NULL, "out of memory");
}

/* v must be a string of min..max bytes without NUL (and, with no_ctrl,
 * without control characters). *out is borrowed from v. */
enum rc tpl_want_str(const json_t *v, const char *field, size_t min, size_t max, int no_ctrl,
                     const char **out, struct err *e)
{
    size_t len;

    if (!json_is_string(v))
        return jcheck_bad(e, field, v, "%s must be a string", field);
    len = json_string_length(v);
    if (len < min || len > max) {
        jcheck_bad(e, field, NULL, "%s must be %zu to %zu bytes long", field, min, max);
        err_detail(e, "got %zu bytes", len);
        return RC_EINVAL;
    }
    if (memchr(json_string_value(v), '\0', len) != NULL)
        return jcheck_bad(e, field, NULL, "%s must not contain NUL characters", field);
    if (no_ctrl && jcheck_has_ctrl(json_string_value(v), len))
        return jcheck_bad(e, field, NULL, "%s must not contain control characters", field);
    *out = json_string_value(v);
    return RC_OK;
}

/* v (NULL: absent, then def) must be an integer in min..max. */
enum rc tpl_want_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                     json_int_t def, json_int_t *out, struct err *e)
{
    if (v == NULL) {
        *out = def;
        return RC_OK;
    }
    return jcheck_int(v, field, field, min, max, 0, out, e);
}

/* v (required) must be an integer in min..max. */
enum rc tpl_need_int(const json_t *v, const char *field, json_int_t min, json_int_t max,
                     json_int_t *out, struct err *e)
{
    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    return tpl_want_int(v, field, min, max, 0, out, e);
}

/* v must be one of names; absent (NULL) it is def, or refused when def is NULL. */
enum rc tpl_want_enum(const json_t *v, const char *field, const char *const *names, size_t n,
                      const char *def, const char **out, struct err *e)
{
    char list[200];
    int i;

    if (v == NULL && def != NULL) {
        *out = def;
        return RC_OK;
    }
    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if ((i = jcheck_name_index(v, names, n)) >= 0) {
        *out = names[i];
        return RC_OK;
    }
    jcheck_list(list, sizeof(list), names, n);
    return jcheck_bad(e, field, v, "%s must be one of %s", field, list);
}

/* Refuse the smallest key (in byte order) of obj that is not in known[]. */
enum rc tpl_check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                          size_t nknown, struct err *e)
{
    size_t len;
    const char *worst = jcheck_unknown_key(obj, known, nknown, &len);
    char field[96];

    if (worst == NULL)
        return RC_OK;
    /* The name is shown only when it is short and plain: it comes from a file.
     * A parsed key has no NUL (jansson refuses one), so len is its strlen. */
    if (len > 48 || jcheck_has_ctrl(worst, len) || strpbrk(worst, "\"\\") != NULL)
        worst = "?";
    snprintf(field, sizeof(field), "%s%s%s", prefix, prefix[0] ? "." : "", worst);
    return jcheck_bad(e, field, NULL, "unknown field \"%s\"", worst);
}

/* A {"zh-CN": text, "en": text} object: both languages, no others. */
enum rc tpl_want_text(const json_t *v, const char *field, size_t max, struct err *e)
{
    char sub[64];
    const char *s;
    enum rc rc;

    if (v == NULL)
        return jcheck_bad(e, field, NULL, "%s is required", field);
    if (!json_is_object(v))
        return jcheck_bad(e, field, v, "%s must be an object with \"zh-CN\" and \"en\" texts",
                          field);
    if ((rc = tpl_check_unknown(v, field, languages, NELEM(languages), e)) != RC_OK)
        return rc;
    for (size_t i = 0; i < NELEM(languages); i++) {
        snprintf(sub, sizeof(sub), "%s.%s", field, languages[i]);
        if (json_object_get(v, languages[i]) == NULL)
            return jcheck_bad(e, sub, NULL, "%s is required", sub);
        if ((rc = tpl_want_str(json_object_get(v, languages[i]), sub, 1, max, 1, &s, e)) != RC_OK)
            return rc;
    }
    return RC_OK;
}

/* An array of min..max strings of 1..MAX_PATH_ARG bytes, appended to argv. */
enum rc tpl_want_argv(const json_t *v, const char *field, size_t min, size_t max, json_t *argv,
                      struct err *e)
{
    char sub[64];
    const char *s;
    size_t i;
    json_t *x;
    enum rc rc;

    if (!json_is_array(v) || json_array_size(v) < min || json_array_size(v) > max) {
        jcheck_bad(e, field, json_is_array(v) ? NULL : v,
                   "%s must be an array of %zu to %zu strings", field, min, max);
        if (json_is_array(v))
            err_detail(e, "got %zu items", json_array_size(v));
        return RC_EINVAL;
    }
    json_array_foreach(v, i, x)
    {
        snprintf(sub, sizeof(sub), "%s[%zu]", field, i);
        if ((rc = tpl_want_str(x, sub, 1, MAX_PATH_ARG, 0, &s, e)) != RC_OK)
            return rc;
        if (json_array_append_new(argv, json_string(s)) != 0)
            return tpl_oom(e);
    }
    return RC_OK;
}
