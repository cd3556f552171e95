/*
 * ncclbw.c - trainyard-nccl-probe's arithmetic and JSON (see ncclbw.h).
 */
#include "ncclbw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double wrk_ncclbw_bus_factor(int nranks)
{
    return nranks < 2 ? 0.0 : 2.0 * (double)(nranks - 1) / (double)nranks;
}

double wrk_ncclbw_algbw_gbs(uint64_t bytes, double time_us)
{
    return time_us > 0 ? (double)bytes / (time_us * 1e-6) / 1e9 : 0.0;
}

size_t wrk_ncclbw_sizes(uint64_t min_bytes, uint64_t max_bytes, uint64_t *out, size_t cap)
{
    size_t n = 0;

    if (min_bytes == 0 || min_bytes > max_bytes)
        return 0;
    for (uint64_t b = min_bytes; b <= max_bytes && n < cap; b *= 2) {
        out[n++] = b;
        if (b > UINT64_MAX / 2)
            break;
    }
    return n;
}

void wrk_ncclbw_point_set(struct wrk_ncclbw_point *p, uint64_t bytes, double time_us, int nranks)
{
    p->bytes = bytes;
    p->time_us = time_us;
    p->algbw_gbs = wrk_ncclbw_algbw_gbs(bytes, time_us);
    p->busbw_gbs = p->algbw_gbs * wrk_ncclbw_bus_factor(nranks);
}

/* Three decimals are what nccl-tests prints; the JSON keeps the same precision. */
static double round3(double v)
{
    return round(v * 1000.0) / 1000.0;
}

static json_t *results_json(const struct wrk_ncclbw_series *s)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr != NULL && i < s->n; i++) {
        const struct wrk_ncclbw_point *p = &s->pts[i];
        json_t *o = json_pack("{s:I, s:f, s:f, s:f}", "bytes", (json_int_t)p->bytes, "time_us",
                              round3(p->time_us), "algbw_gbs", round3(p->algbw_gbs), "busbw_gbs",
                              round3(p->busbw_gbs));
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *wrk_ncclbw_json(const struct wrk_ncclbw_run *r)
{
    json_t *variants = json_array(), *o;

    if (variants == NULL || r->nseries == 0)
        goto fail;
    for (size_t i = 1; i < r->nseries; i++) {
        const struct wrk_ncclbw_series *s = &r->series[i];
        json_t *v = json_pack("{s:{s:s}, s:o}", "env", s->env_name, s->env_value, "results",
                              results_json(s));
        if (v == NULL || json_array_append_new(variants, v) != 0)
            goto fail;
    }
    o = json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:o}", "version", 1, "op", "all_reduce",
                  "dtype", "float32", "gpus", r->gpus, "nccl_version", r->nccl_version, "warmup",
                  r->warmup, "iters", r->iters, "results", results_json(&r->series[0]), "variants",
                  variants);
    return o;
fail:
    json_decref(variants);
    return NULL;
}

static int num_in(const json_t *v, double lo, double hi)
{
    return json_is_number(v) && json_number_value(v) >= lo && json_number_value(v) <= hi;
}

static int int_in(const json_t *v, json_int_t lo, json_int_t hi)
{
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int check_results(const json_t *res, const char *where, char *why, size_t n)
{
    size_t i;
    const json_t *p;

    if (!json_is_array(res) || json_array_size(res) == 0 ||
        json_array_size(res) > WRK_NCCLBW_MAX_POINTS) {
        snprintf(why, n, "%s.results must be an array of 1..%d points", where,
                 WRK_NCCLBW_MAX_POINTS);
        return 0;
    }
    json_array_foreach(res, i, p)
    {
        if (!json_is_object(p) || json_object_size(p) != 4 ||
            !int_in(json_object_get(p, "bytes"), 1, (json_int_t)1 << 40) ||
            !num_in(json_object_get(p, "time_us"), 0, 1e12) ||
            !num_in(json_object_get(p, "algbw_gbs"), 0, 1e6) ||
            !num_in(json_object_get(p, "busbw_gbs"), 0, 1e6)) {
            snprintf(why, n,
                     "%s.results[%zu] must be {bytes: 1..2^40, time_us, algbw_gbs, busbw_gbs: "
                     "numbers >= 0}",
                     where, i);
            return 0;
        }
    }
    return 1;
}

/* The NCCL variables and values a probe may force (NCCL's documented names). */
static int known_env(const char *k, const char *v)
{
    static const char *const algos[] = {"Ring", "Tree",     "CollnetDirect", "CollnetChain",
                                        "NVLS", "NVLSTree", "PAT",           NULL};
    static const char *const protos[] = {"LL", "LL128", "Simple", NULL};
    const char *const *set = strcmp(k, "NCCL_ALGO") == 0    ? algos
                             : strcmp(k, "NCCL_PROTO") == 0 ? protos
                                                            : NULL;
    for (size_t i = 0; set != NULL && set[i] != NULL; i++)
        if (strcmp(v, set[i]) == 0)
            return 1;
    return 0;
}

int wrk_ncclbw_check(const json_t *j, char *why, size_t n)
{
    static const char *const keys[] = {"version", "op",    "dtype",   "gpus",     "nccl_version",
                                       "warmup",  "iters", "results", "variants", NULL};
    const json_t *vars;
    const char *k;
    json_t *v;
    size_t i;

    if (!json_is_object(j)) {
        snprintf(why, n, "must be an object");
        return 0;
    }
    json_object_foreach((json_t *)j, k, v)
    {
        size_t x;
        for (x = 0; keys[x] != NULL && strcmp(keys[x], k) != 0; x++) {
        }
        if (keys[x] == NULL) {
            snprintf(why, n, "unknown field \"%.32s\"", k);
            return 0;
        }
    }
    if (!int_in(json_object_get(j, "version"), 1, 1) || !json_is_string(json_object_get(j, "op")) ||
        strcmp(json_string_value(json_object_get(j, "op")), "all_reduce") != 0 ||
        !json_is_string(json_object_get(j, "dtype")) ||
        json_string_length(json_object_get(j, "dtype")) > 16) {
        snprintf(why, n, "needs version 1, op \"all_reduce\" and a dtype");
        return 0;
    }
    if (!int_in(json_object_get(j, "gpus"), 1, WRK_NCCLBW_MAX_GPUS) ||
        !int_in(json_object_get(j, "nccl_version"), 0, 1000000) ||
        !int_in(json_object_get(j, "warmup"), 0, 100000) ||
        !int_in(json_object_get(j, "iters"), 1, 100000)) {
        snprintf(why, n, "gpus must be 1..%d, nccl_version, warmup and iters integers",
                 WRK_NCCLBW_MAX_GPUS);
        return 0;
    }
    if (!check_results(json_object_get(j, "results"), "nccl_probe", why, n))
        return 0;
    vars = json_object_get(j, "variants");
    if (vars != NULL && (!json_is_array(vars) || json_array_size(vars) > WRK_NCCLBW_MAX_VARIANTS)) {
        snprintf(why, n, "variants must be an array of at most %d", WRK_NCCLBW_MAX_VARIANTS);
        return 0;
    }
    json_array_foreach(vars, i, v)
    {
        const json_t *env = json_object_get(v, "env");
        char where[48];
        const char *ek;
        json_t *ev;
        if (!json_is_object(v) || json_object_size(v) != 2 || !json_is_object(env) ||
            json_object_size(env) < 1 || json_object_size(env) > 2) {
            snprintf(why, n, "variants[%zu] must be {env: {1..2 variables}, results}", i);
            return 0;
        }
        json_object_foreach((json_t *)env, ek, ev)
        {
            if (!json_is_string(ev) || !known_env(ek, json_string_value(ev))) {
                snprintf(why, n, "variants[%zu].env may only force NCCL_ALGO or NCCL_PROTO", i);
                return 0;
            }
        }
        snprintf(where, sizeof(where), "nccl_probe.variants[%zu]", i);
        if (!check_results(json_object_get(v, "results"), where, why, n))
            return 0;
    }
    return 1;
}
