/*
 * lines.c - parser for the TRAINYARD_METRIC / TRAINYARD_CHECKPOINT stdout
 * lines. See lines.h for the contract; fuzzed by tests/fuzz/fuzz_wrk_lines.c.
 *
 * Why strict: a metric becomes a database row, so a step must be an exact
 * non-negative integer (a real with a fraction or beyond 2^53 would be stored
 * differently than printed), and values must be finite (JSON has no NaN, but
 * jansson reals may overflow to inf on input like 1e999 and are refused there).
 */
#include "lines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int has_prefix(const char *text, size_t len, const char *prefix, size_t *plen)
{
    size_t n = strlen(prefix);
    if (len < n || memcmp(text, prefix, n) != 0)
        return 0;
    *plen = n;
    return 1;
}

/* An exact step in [0, 2^53): integers, or reals with an integral value. */
static int get_step(const json_t *obj, int64_t *out)
{
    const json_t *v = json_object_get(obj, "step");
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > WRK_LINE_STEP_MAX)
            return 0;
        *out = (int64_t)i;
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < 0 || d > (double)WRK_LINE_STEP_MAX || floor(d) != d)
            return 0;
        *out = (int64_t)d;
        return 1;
    }
    return 0;
}

static enum rc parse_metric(const json_t *obj, struct wrk_line *out)
{
    const char *key;
    json_t *v;
    json_t *values = json_object();
    size_t n = 0;

    if (values == NULL)
        return RC_ENOMEM;
    json_object_foreach((json_t *)obj, key, v)
    {
        double d;
        json_t *num;
        if (strcmp(key, "step") == 0 || !json_is_number(v))
            continue;
        if (key[0] == '\0' || strlen(key) > WRK_LINE_NAME_MAX)
            continue;
        d = json_number_value(v);
        if (!isfinite(d))
            continue;
        if (n >= WRK_LINE_MAX_VALUES)
            break;
        num = json_is_integer(v) ? json_integer(json_integer_value(v)) : json_real(d);
        if (num == NULL || json_object_set_new(values, key, num) != 0) {
            json_decref(values);
            return RC_ENOMEM;
        }
        n++;
    }
    if (n == 0) {
        json_decref(values);
        return RC_OK; /* stays a log line */
    }
    out->values = values;
    out->kind = WRK_LINE_METRIC;
    return RC_OK;
}

static enum rc parse_checkpoint(const json_t *obj, struct wrk_line *out)
{
    const json_t *p = json_object_get(obj, "path");
    size_t n;

    if (!json_is_string(p))
        return RC_OK;
    n = json_string_length(p);
    if (n == 0 || n > WRK_LINE_PATH_MAX || memchr(json_string_value(p), '\0', n) != NULL)
        return RC_OK;
    out->path = strdup(json_string_value(p));
    if (out->path == NULL)
        return RC_ENOMEM;
    out->kind = WRK_LINE_CHECKPOINT;
    return RC_OK;
}

enum rc wrk_line_parse(const char *text, size_t len, struct wrk_line *out)
{
    enum rc rc = RC_OK;
    size_t plen = 0;
    int metric;
    json_t *obj = NULL;
    json_error_t jerr;

    memset(out, 0, sizeof(*out));
    out->kind = WRK_LINE_LOG;
    if (text == NULL)
        return RC_OK;
    if (len > 0 && text[len - 1] == '\n')
        len--;
    if (len > 0 && text[len - 1] == '\r')
        len--;
    if (has_prefix(text, len, WRK_METRIC_PREFIX, &plen))
        metric = 1;
    else if (has_prefix(text, len, WRK_CHECKPOINT_PREFIX, &plen))
        metric = 0;
    else
        return RC_OK;
    if (len - plen > WRK_LINE_JSON_MAX)
        return RC_OK;
    obj = json_loadb(text + plen, len - plen, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(obj))
        goto out;
    if (!get_step(obj, &out->step))
        goto out;
    rc = metric ? parse_metric(obj, out) : parse_checkpoint(obj, out);
out:
    json_decref(obj);
    if (rc != RC_OK)
        wrk_line_cleanup(out);
    return rc;
}

void wrk_line_cleanup(struct wrk_line *line)
{
    if (line == NULL)
        return;
    json_decref(line->values);
    free(line->path);
    memset(line, 0, sizeof(*line));
    line->kind = WRK_LINE_LOG;
}
