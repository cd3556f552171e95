/*
 * advisor_json.c - strict request parsing and plan rendering (see
 * advisor_json.h, docs/advisor.md).
 *
 * Structure: small typed getters (integer, number, bool, enum string) that
 * fill struct err with the dotted path, one function per request object,
 * each refusing unknown keys first; the renderer builds the plan with
 * jansson's *_new setters and stops at the first failed one (every setter's
 * result is checked, so an allocation failure never yields a partial plan).
 *
 * Reentrant: no globals besides constant tables.
 */
#include "advisor_json.h"

#include "advisor_int.h"
#include "json_check.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing helpers ------------------------------------------------------ */

/* The part of a dotted path after the last dot, for messages. */
static const char *leaf(const char *field)
{
    const char *d = strrchr(field, '.');
    return d ? d + 1 : field;
}

static void join(char *buf, size_t size, const char *prefix, const char *key)
{
    snprintf(buf, size, "%s%s%s", prefix, prefix[0] ? "." : "", key);
}

/* Refuse the smallest key of obj not in known (n names); prefix for the path. */
static enum rc check_unknown(const json_t *obj, const char *prefix, const char *const *known,
                             size_t n, struct err *e)
{
    size_t len;
    const char *worst = jcheck_unknown_key(obj, known, n, &len);
    char field[128], k[72];

    if (worst == NULL)
        return RC_OK;
    jcheck_printable(worst, len, 0, k, sizeof(k));
    join(field, sizeof(field), prefix, k);
    return jcheck_bad_cut(e, field, NULL, "unknown field \"%s\"", k);
}

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static enum rc need_object(const json_t *v, const char *field, struct err *e)
{
    if (!json_is_object(v))
        return jcheck_bad_cut(e, field, v, "%s must be an object", leaf(field));
    return RC_OK;
}

/* An integer field in lo..hi; absent keeps *out (the default) unless required. */
static enum rc get_i64(const json_t *obj, const char *key, const char *prefix, bool required,
                       long long lo, long long hi, long long *out, struct err *e)
{
    const json_t *v = json_object_get(obj, key);
    char field[128];

    join(field, sizeof(field), prefix, key);
    if (v == NULL) {
        if (required)
            return jcheck_bad_cut(e, field, NULL, "%s is required", key);
        return RC_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return jcheck_bad_cut(e, field, v, "%s must be an integer from %lld to %lld", key, lo, hi);
    *out = json_integer_value(v);
    return RC_OK;
}

static enum rc get_int(const json_t *obj, const char *key, const char *prefix, bool required,
                       int lo, int hi, int *out, struct err *e)
{
    long long v = *out;
    enum rc rc = get_i64(obj, key, prefix, required, lo, hi, &v, e);

    if (rc == RC_OK)
        *out = (int)v;
    return rc;
}

/* A number (integer or real) in lo..hi. */
static enum rc get_num(const json_t *obj, const char *key, const char *prefix, bool required,
                       double lo, double hi, double *out, struct err *e)
{
    const json_t *v = json_object_get(obj, key);
    char field[128];
    double x;

    join(field, sizeof(field), prefix, key);
    if (v == NULL) {
        if (required)
            return jcheck_bad_cut(e, field, NULL, "%s is required", key);
        return RC_OK;
    }
    if (!json_is_number(v))
        return jcheck_bad_cut(e, field, v, "%s must be a number from %g to %g", key, lo, hi);
    x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return jcheck_bad_cut(e, field, v, "%s must be a number from %g to %g", key, lo, hi);
    *out = x;
    return RC_OK;
}

static enum rc get_bool(const json_t *obj, const char *key, const char *prefix, bool *out,
                        struct err *e)
{
    const json_t *v = json_object_get(obj, key);
    char field[128];

    if (v == NULL)
        return RC_OK;
    join(field, sizeof(field), prefix, key);
    if (!json_is_boolean(v))
        return jcheck_bad_cut(e, field, v, "%s must be true or false", key);
    *out = json_is_true(v);
    return RC_OK;
}

/* One of n names; absent keeps *out unless required. */
static enum rc get_enum(const json_t *obj, const char *key, const char *prefix, bool required,
                        const char *const *names, size_t n, int *out, struct err *e)
{
    const json_t *v = json_object_get(obj, key);
    char field[128], list[192];
    int i;

    join(field, sizeof(field), prefix, key);
    if (v == NULL) {
        if (required)
            return jcheck_bad_cut(e, field, NULL, "%s is required", key);
        return RC_OK;
    }
    if ((i = jcheck_name_index(v, names, n)) >= 0) {
        *out = i;
        return RC_OK;
    }
    jcheck_list(list, sizeof(list), names, n);
    return jcheck_bad_cut(e, field, v, "%s must be one of %s", key, list);
}

/* A string of 0..max bytes without NUL or control characters, copied into buf. */
static enum rc get_label(const json_t *obj, const char *key, const char *prefix, char *buf,
                         size_t size, struct err *e)
{
    const json_t *v = json_object_get(obj, key);
    char field[128];
    const char *s;
    size_t len;

    if (v == NULL)
        return RC_OK;
    join(field, sizeof(field), prefix, key);
    if (!json_is_string(v))
        return jcheck_bad_cut(e, field, v, "%s must be a string", key);
    s = json_string_value(v);
    len = json_string_length(v);
    if (len >= size)
        return jcheck_bad_cut(e, field, NULL, "%s must be at most %zu bytes", key, size - 1);
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return jcheck_bad_cut(e, field, v, "%s must not contain control characters", key);
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    return RC_OK;
}

/* "M.m[.p][+local]" or "M.m[.p]a0"; only major and minor are kept. */
static bool parse_version(const char *s, size_t len, int *major, int *minor)
{
    long long mj = 0, mn = 0;
    size_t i = 0, d;

    for (d = 0; i < len && s[i] >= '0' && s[i] <= '9' && d < 3; i++, d++)
        mj = mj * 10 + (s[i] - '0');
    if (d == 0 || i >= len || s[i] != '.')
        return false;
    i++;
    for (d = 0; i < len && s[i] >= '0' && s[i] <= '9' && d < 4; i++, d++)
        mn = mn * 10 + (s[i] - '0');
    if (d == 0 || mj > 99 || mn > 999)
        return false;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e)
            return false;
    }
    *major = (int)mj;
    *minor = (int)mn;
    return true;
}

/* ---- the request ---------------------------------------------------------- */

static const char *const arch_names[] = {"decoder", "encoder"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};
static const char *const attn_names[] = {"eager", "fused"};
static const char *const opt_names[] = {"adamw", "adam", "sgd", "sgd-momentum"};
static const char *const intra_names[] = {"pcie", "nvlink"};
static const char *const inter_names[] = {"ethernet", "ib"};

static enum rc parse_transformer(const json_t *v, struct adv_transformer *t, struct err *e)
{
    static const char *const keys[] = {
        "arch",     "layers",  "hidden",    "heads",     "kv_heads",        "ffn",
        "vocab",    "seq_len", "positions", "gated_mlp", "tied_embeddings", "bias",
        "qkv_bias", "dropout", "norm"};
    const char *p = "model.transformer";
    int arch = 0, norm = 0;
    enum rc rc;

    if ((rc = need_object(v, p, e)) != RC_OK || (rc = check_unknown(v, p, keys, NKEYS(keys), e)))
        return rc;
    memset(t, 0, sizeof(*t));
    t->tied_embeddings = true;
    t->bias = true;
    t->dropout = true;
    if ((rc = get_enum(v, "arch", p, true, arch_names, 2, &arch, e)) ||
        (rc = get_int(v, "layers", p, true, 1, 1024, &t->layers, e)) ||
        (rc = get_int(v, "hidden", p, true, 1, 65536, &t->hidden, e)) ||
        (rc = get_int(v, "heads", p, true, 1, 1024, &t->heads, e)) ||
        (rc = get_int(v, "kv_heads", p, false, 1, 1024, &t->kv_heads, e)) ||
        (rc = get_int(v, "ffn", p, true, 1, 1048576, &t->ffn, e)) ||
        (rc = get_int(v, "vocab", p, true, 0, 4194304, &t->vocab, e)) ||
        (rc = get_int(v, "seq_len", p, true, 1, 1048576, &t->seq_len, e)) ||
        (rc = get_int(v, "positions", p, false, 0, 1048576, &t->positions, e)) ||
        (rc = get_bool(v, "gated_mlp", p, &t->gated_mlp, e)) ||
        (rc = get_bool(v, "tied_embeddings", p, &t->tied_embeddings, e)) ||
        (rc = get_bool(v, "bias", p, &t->bias, e)) ||
        (rc = get_bool(v, "qkv_bias", p, &t->qkv_bias, e)) ||
        (rc = get_bool(v, "dropout", p, &t->dropout, e)) ||
        (rc = get_enum(v, "norm", p, false, norm_names, 2, &norm, e)))
        return rc;
    t->arch = (enum adv_arch)arch;
    t->norm = (enum adv_norm)norm;
    return RC_OK;
}

static enum rc parse_measured(const json_t *v, struct adv_measured *m, struct err *e)
{
    static const char *const keys[] = {"params",
                                       "activation_bytes_per_sample",
                                       "activation_bytes_per_sample_16bit",
                                       "activation_fixed_bytes",
                                       "forward_flops_per_sample",
                                       "largest_layer_params"};
    const char *p = "model.measured";
    enum rc rc;

    if ((rc = need_object(v, p, e)) != RC_OK || (rc = check_unknown(v, p, keys, NKEYS(keys), e)))
        return rc;
    memset(m, 0, sizeof(*m));
    if ((rc = get_num(v, "params", p, true, 1, ADV_MAX_PARAMS, &m->params, e)) ||
        (rc = get_num(v, "activation_bytes_per_sample", p, true, 1, 1e15, &m->act_bytes_per_sample,
                      e)) ||
        (rc = get_num(v, "activation_bytes_per_sample_16bit", p, false, 0, 1e15,
                      &m->act_bytes_per_sample16, e)) ||
        (rc = get_num(v, "activation_fixed_bytes", p, false, 0, 1e15, &m->act_fixed_bytes, e)) ||
        (rc = get_num(v, "forward_flops_per_sample", p, false, 0, 1e18, &m->fwd_flops_per_sample,
                      e)) ||
        (rc = get_num(v, "largest_layer_params", p, false, 0, m->params, &m->largest_layer_params,
                      e)))
        return rc;
    return RC_OK;
}

static enum rc parse_model(const json_t *v, struct adv_model *m, struct err *e)
{
    static const char *const keys[] = {"name",        "seq_len",  "attention",
                                       "transformer", "measured", "label"};
    const json_t *name, *tf, *ms;
    int attn = 0, forms;
    enum rc rc;

    if (v == NULL)
        return jcheck_bad_cut(e, "model", NULL, "model is required");
    if ((rc = need_object(v, "model", e)) != RC_OK ||
        (rc = check_unknown(v, "model", keys, NKEYS(keys), e)))
        return rc;
    name = json_object_get(v, "name");
    tf = json_object_get(v, "transformer");
    ms = json_object_get(v, "measured");
    forms = (name != NULL) + (tf != NULL) + (ms != NULL);
    if (forms != 1)
        return jcheck_bad_cut(e, "model", NULL,
                              "model needs exactly one of name, transformer or measured");
    if ((rc = get_enum(v, "attention", "model", false, attn_names, 2, &attn, e)))
        return rc;
    m->attn = (enum adv_attn)attn;
    if (name != NULL) {
        if (json_object_get(v, "label") != NULL)
            return jcheck_bad_cut(e, "model.label", NULL,
                                  "label is only for transformer or measured models");
        if (!json_is_string(name) || adv_known_find(json_string_value(name)) == NULL ||
            json_string_length(name) >= sizeof(m->name)) {
            char list[400] = "";
            size_t n;
            const struct adv_known *k = adv_known_table(&n);
            for (size_t i = 0; i < n; i++)
                jcheck_list_add(list, sizeof(list), i, k[i].name);
            return jcheck_bad_cut(e, "model.name", name, "name must be one of %s", list);
        }
        m->kind = ADV_MODEL_KNOWN;
        snprintf(m->name, sizeof(m->name), "%s", json_string_value(name));
        return get_int(v, "seq_len", "model", false, 1, 1048576, &m->seq_len, e);
    }
    if (json_object_get(v, "seq_len") != NULL)
        return jcheck_bad_cut(e, "model.seq_len", NULL,
                              "seq_len goes inside model.transformer (or with a known name)");
    if ((rc = get_label(v, "label", "model", m->name, sizeof(m->name), e)))
        return rc;
    if (tf != NULL) {
        m->kind = ADV_MODEL_TRANSFORMER;
        return parse_transformer(tf, &m->tf, e);
    }
    if (json_object_get(v, "attention") != NULL)
        return jcheck_bad_cut(e, "model.attention", NULL, "attention is only for transformers");
    m->kind = ADV_MODEL_MEASURED;
    return parse_measured(ms, &m->ms, e);
}

static enum rc parse_link(const json_t *a, const char *key, const char *const *names, int *kind,
                          double *gbps, struct err *e)
{
    static const char *const keys[] = {"link", "gbps"};
    const json_t *v = json_object_get(a, key);
    char p[64];
    enum rc rc;

    if (v == NULL)
        return RC_OK;
    join(p, sizeof(p), "allocation", key);
    if ((rc = need_object(v, p, e)) || (rc = check_unknown(v, p, keys, NKEYS(keys), e)) ||
        (rc = get_enum(v, "link", p, true, names, 2, kind, e)) ||
        (rc = get_num(v, "gbps", p, true, 0.001, 1e5, gbps, e)))
        return rc;
    return RC_OK;
}

static enum rc parse_cc(const json_t *a, int *cc10, struct err *e)
{
    const json_t *v = json_object_get(a, "compute_capability");
    const char *f = "allocation.compute_capability";
    int mj, mn;

    if (v == NULL)
        return jcheck_bad_cut(e, f, NULL, "compute_capability is required (0 for CPU)");
    if (json_is_number(v)) {
        double x = json_number_value(v);
        if (!isfinite(x) || (x != 0 && (x < 3 || x > 20)))
            return jcheck_bad_cut(e, f, v, "compute_capability must be 0 (CPU) or 3.0 to 20.0");
        *cc10 = (int)lround(x * 10);
        return RC_OK;
    }
    if (!json_is_string(v) ||
        !parse_version(json_string_value(v), json_string_length(v), &mj, &mn) || mn > 9 ||
        json_string_length(v) > 5 || (mj * 10 + mn != 0 && (mj < 3 || mj > 20)))
        return jcheck_bad_cut(e, f, v,
                              "compute_capability must be \"M.m\" from 3.0 to 20.0, or 0 for CPU");
    *cc10 = mj * 10 + mn;
    return RC_OK;
}

static enum rc parse_alloc(const json_t *v, struct adv_alloc *a, struct err *e)
{
    static const char *const keys[] = {"gpus",
                                       "gpus_per_node",
                                       "gpu_memory_bytes",
                                       "compute_capability",
                                       "intra_node",
                                       "inter_node",
                                       "host_link_gbps",
                                       "cpu_memory_per_node_bytes",
                                       "measured_busbw_gbps"};
    static const char *const bw_keys[] = {"intra_node", "inter_node"};
    const char *p = "allocation";
    long long mem = 0, cpu = 0;
    int intra = (int)a->intra, inter = (int)a->inter;
    const json_t *bw;
    enum rc rc;

    if (v == NULL)
        return jcheck_bad_cut(e, p, NULL, "allocation is required");
    if ((rc = need_object(v, p, e)) || (rc = check_unknown(v, p, keys, NKEYS(keys), e)))
        return rc;
    if ((rc = get_int(v, "gpus", p, true, 1, ADV_MAX_GPUS, &a->gpus, e)) ||
        (rc = get_int(v, "gpus_per_node", p, true, 1, ADV_MAX_GPUS_PER_NODE, &a->gpus_per_node,
                      e)) ||
        (rc = get_i64(v, "gpu_memory_bytes", p, true, 0, 1LL << 50, &mem, e)) ||
        (rc = parse_cc(v, &a->cc10, e)) ||
        (rc = parse_link(v, "intra_node", intra_names, &intra, &a->intra_gbps, e)) ||
        (rc = parse_link(v, "inter_node", inter_names, &inter, &a->inter_gbps, e)) ||
        (rc = get_num(v, "host_link_gbps", p, false, 0, 1e5, &a->host_gbps, e)) ||
        (rc = get_i64(v, "cpu_memory_per_node_bytes", p, false, 0, 1LL << 50, &cpu, e)))
        return rc;
    a->gpu_mem_bytes = (uint64_t)mem;
    a->cpu_mem_per_node_bytes = (uint64_t)cpu;
    a->intra = (enum adv_intra)intra;
    a->inter = (enum adv_inter)inter;
    bw = json_object_get(v, "measured_busbw_gbps");
    if (bw != NULL) {
        const char *bp = "allocation.measured_busbw_gbps";
        if ((rc = need_object(bw, bp, e)) || (rc = check_unknown(bw, bp, bw_keys, 2, e)) ||
            (rc = get_num(bw, "intra_node", bp, false, 0, 1e5, &a->busbw_intra_gbps, e)) ||
            (rc = get_num(bw, "inter_node", bp, false, 0, 1e5, &a->busbw_inter_gbps, e)))
            return rc;
    }
    return RC_OK;
}

static enum rc parse_caps(const json_t *v, struct adv_caps *c, struct err *e)
{
    static const char *const keys[] = {"torch_version", "fsdp", "deepspeed"};
    const char *p = "capabilities";
    const json_t *tv;
    enum rc rc;

    if (v == NULL)
        return RC_OK;
    if ((rc = need_object(v, p, e)) || (rc = check_unknown(v, p, keys, NKEYS(keys), e)))
        return rc;
    tv = json_object_get(v, "torch_version");
    if (tv != NULL && (!json_is_string(tv) || json_string_length(tv) > 32 ||
                       !parse_version(json_string_value(tv), json_string_length(tv),
                                      &c->torch_major, &c->torch_minor)))
        return jcheck_bad_cut(
            e, "capabilities.torch_version", tv,
            "torch_version must be a version such as \"1.13.1\" (at most 32 bytes)");
    if ((rc = get_bool(v, "fsdp", p, &c->fsdp, e)) ||
        (rc = get_bool(v, "deepspeed", p, &c->deepspeed, e)))
        return rc;
    return RC_OK;
}

enum rc adv_json_parse_request(const json_t *j, struct adv_request *req, struct err *e)
{
    static const char *const keys[] = {"model",      "global_batch", "optimizer",
                                       "allocation", "capabilities", "strategy"};
    static const char *const strat[] = {"auto",
                                        "ddp",
                                        "zero1",
                                        "zero2",
                                        "zero3",
                                        "fsdp",
                                        "zero3_offload_optimizer",
                                        "zero3_offload_all",
                                        "fsdp_offload"};
    int opt = 0, s = 0;
    enum rc rc;

    adv_request_init(req);
    if (!json_is_object(j))
        return jcheck_bad_cut(e, "", j, "the request must be a JSON object");
    if ((rc = check_unknown(j, "", keys, NKEYS(keys), e)) ||
        (rc = parse_model(json_object_get(j, "model"), &req->model, e)) ||
        (rc = get_int(j, "global_batch", "", true, 1, ADV_MAX_GLOBAL_BATCH, &req->global_batch,
                      e)) ||
        (rc = get_enum(j, "optimizer", "", false, opt_names, 4, &opt, e)) ||
        (rc = parse_alloc(json_object_get(j, "allocation"), &req->alloc, e)) ||
        (rc = parse_caps(json_object_get(j, "capabilities"), &req->caps, e)) ||
        (rc = get_enum(j, "strategy", "", false, strat, NKEYS(strat), &s, e))) {
        adv_request_init(req);
        return rc;
    }
    req->optimizer = (enum adv_optimizer)opt;
    req->strategy = (enum adv_strategy)s;
    return RC_OK;
}

/* ---- rendering ------------------------------------------------------------- */

/* Each setter steals its value (NULL fails); the first failure sticks in *ok. */
static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
    if (!*ok) {
        json_decref(v);
        return;
    }
    if (o == NULL) {
        json_decref(v);
        *ok = false;
        return;
    }
    if (json_object_set_new(o, k, v) != 0) /* it releases v on failure */
        *ok = false;
}

static json_t *jbytes(uint64_t b)
{
    return json_integer(b > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)b);
}

/* A real rounded to 6 significant digits, so the JSON text stays short and stable. */
static json_t *jreal(double x)
{
    char buf[32];

    if (!isfinite(x))
        return json_null();
    snprintf(buf, sizeof(buf), "%.6g", x);
    return json_real(strtod(buf, NULL));
}

static json_t *texts(const char *en, const char *zh)
{
    json_t *o = json_object();
    bool ok = true;

    put(o, "en", json_string(en), &ok);
    put(o, "zh-CN", json_string(zh), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *memory(const struct adv_memory *m)
{
    json_t *o = json_object();
    bool ok = true;

    put(o, "params", jbytes(m->params), &ok);
    put(o, "grads", jbytes(m->grads), &ok);
    put(o, "optimizer", jbytes(m->optimizer), &ok);
    put(o, "activations", jbytes(m->activations), &ok);
    put(o, "buffers", jbytes(m->buffers), &ok);
    put(o, "fixed", jbytes(m->fixed), &ok);
    put(o, "headroom", jbytes(m->headroom), &ok);
    put(o, "total", jbytes(m->total), &ok);
    put(o, "limit", jbytes(m->limit), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static const char *dtype(enum adv_precision p)
{
    return p == ADV_PREC_BF16 ? "bfloat16" : "float16";
}

static bool deepspeed_engine(const struct adv_plan *p)
{
    return p->engine == ADV_ENGINE_DEEPSPEED && p->micro_batch > 0;
}

static int zero_stage(enum adv_strategy s)
{
    return s == ADV_STRATEGY_ZERO1 ? 1 : s == ADV_STRATEGY_ZERO2 ? 2 : 3;
}

enum rc adv_json_deepspeed_config(const struct adv_plan *p, json_t **out)
{
    json_t *o = NULL, *z = NULL, *prec = NULL;
    bool ok = true;
    int stage = zero_stage(p->strategy);
    double rb = adv_ds_bucket_elems(&p->model);

    *out = NULL;
    if (!deepspeed_engine(p))
        return RC_OK;
    o = json_object();
    z = json_object();
    prec = json_object();
    if (o == NULL || z == NULL || prec == NULL) {
        json_decref(z);
        json_decref(prec);
        json_decref(o);
        return RC_ENOMEM;
    }
    put(o, "train_batch_size", json_integer(p->reached_batch), &ok);
    put(o, "train_micro_batch_size_per_gpu", json_integer(p->micro_batch), &ok);
    put(o, "gradient_accumulation_steps", json_integer(p->grad_accum), &ok);
    put(prec, "enabled", json_boolean(p->precision != ADV_PREC_FP32), &ok);
    if (p->precision == ADV_PREC_FP16) {
        put(prec, "loss_scale", json_integer(0), &ok); /* 0: dynamic */
        put(prec, "initial_scale_power", json_integer(16), &ok);
    }
    put(o, p->precision == ADV_PREC_FP16 ? "fp16" : "bf16", prec, &ok);
    put(z, "stage", json_integer(stage), &ok);
    put(z, "overlap_comm", json_true(), &ok);
    put(z, "contiguous_gradients", json_true(), &ok);
    put(z, "reduce_bucket_size", json_integer((json_int_t)rb), &ok);
    if (stage < 3) {
        put(z, "allgather_bucket_size", json_integer((json_int_t)rb), &ok);
    } else {
        double live =
            2 * p->model.largest_layer_params > rb ? 2 * p->model.largest_layer_params : rb;
        put(z, "stage3_prefetch_bucket_size", json_integer((json_int_t)rb), &ok);
        put(z, "stage3_max_live_parameters", json_integer((json_int_t)live), &ok);
        put(z, "stage3_param_persistence_threshold", json_integer(100000), &ok);
    }
    if (p->strategy == ADV_STRATEGY_ZERO3_OFFLOAD_OPT ||
        p->strategy == ADV_STRATEGY_ZERO3_OFFLOAD_ALL) {
        json_t *off = json_pack("{s:s, s:b}", "device", "cpu", "pin_memory", 1);
        put(z, "offload_optimizer", off, &ok);
    }
    if (p->strategy == ADV_STRATEGY_ZERO3_OFFLOAD_ALL) {
        json_t *off = json_pack("{s:s, s:b}", "device", "cpu", "pin_memory", 1);
        put(z, "offload_param", off, &ok);
    }
    put(o, "zero_optimization", z, &ok);
    put(o, "wall_clock_breakdown", json_false(), &ok);
    if (!ok) {
        json_decref(o);
        return RC_ENOMEM;
    }
    *out = o;
    return RC_OK;
}

static json_t *fsdp_settings(const struct adv_plan *p)
{
    json_t *o, *mp;
    bool ok = true;
    bool tf = p->model.kind == ADV_MODEL_TRANSFORMER;

    if (p->micro_batch == 0 ||
        (p->strategy != ADV_STRATEGY_FSDP && p->strategy != ADV_STRATEGY_FSDP_OFFLOAD))
        return json_null();
    o = json_object();
    put(o, "sharding_strategy", json_string("FULL_SHARD"), &ok);
    if (p->precision == ADV_PREC_FP32) {
        mp = json_null();
    } else {
        mp = json_pack("{s:s, s:s, s:s}", "param_dtype", dtype(p->precision), "reduce_dtype",
                       dtype(p->precision), "buffer_dtype", dtype(p->precision));
    }
    put(o, "mixed_precision", mp, &ok);
    put(o, "auto_wrap_policy", json_string(tf ? "transformer_block" : "size_based"), &ok);
    if (!tf)
        put(o, "min_num_params", json_integer((json_int_t)p->model.largest_layer_params), &ok);
    put(o, "backward_prefetch", json_string("BACKWARD_PRE"), &ok);
    put(o, "limit_all_gathers", json_true(), &ok);
    put(o, "cpu_offload", json_boolean(p->strategy == ADV_STRATEGY_FSDP_OFFLOAD), &ok);
    put(o, "sharded_grad_scaler", json_boolean(p->precision == ADV_PREC_FP16), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static bool torch_ddp(const struct adv_plan *p)
{
    return p->micro_batch > 0 &&
           (p->strategy == ADV_STRATEGY_DDP ||
            (p->strategy == ADV_STRATEGY_ZERO1 && p->engine == ADV_ENGINE_TORCH));
}

static json_t *ddp_settings(const struct adv_plan *p)
{
    json_t *o;
    bool ok = true;

    if (!torch_ddp(p))
        return json_null();
    o = json_object();
    put(o, "gradient_as_bucket_view", json_true(), &ok);
    put(o, "bucket_cap_mb", json_integer(25), &ok);
    put(o, "zero_redundancy_optimizer", json_boolean(p->strategy == ADV_STRATEGY_ZERO1), &ok);
    put(o, "autocast_dtype",
        p->precision == ADV_PREC_FP32 ? json_null() : json_string(dtype(p->precision)), &ok);
    put(o, "grad_scaler", json_boolean(p->precision == ADV_PREC_FP16), &ok);
    put(o, "backend", json_string(p->cpu ? "gloo" : "nccl"), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Predicted peak of torch.cuda.max_memory_allocated: everything but context and headroom. */
static uint64_t peak_allocated(const struct adv_memory *m)
{
    return m->params + m->grads + m->optimizer + m->activations + m->buffers;
}

/*
 * The saved activations of one rank at the plan's micro-batch, as
 * saved_tensors_hooks measures them: memory.activations less the logits the
 * model returns (s x V per sample in the activation dtype), which stay live
 * until the step ends but are not saved for the backward pass (the linear
 * head saves its input, log_softmax its own fp32 output).
 */
static uint64_t saved_activations(const struct adv_plan *p)
{
    double live = adv_logits_live_bytes(&p->model, p->precision == ADV_PREC_FP32 ? 4 : 2) *
                  (double)p->micro_batch;

    return (double)p->mem.activations > live ? p->mem.activations - (uint64_t)live : 0;
}

static void put_env_u64(json_t *o, const char *k, uint64_t v, bool *ok)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    put(o, k, json_string(buf), ok);
}

enum rc adv_json_env(const struct adv_plan *p, json_t **out)
{
    json_t *o = json_object();
    bool ok = true;

    *out = NULL;
    put(o, "TRAINYARD_STRATEGY", json_string(adv_strategy_name(p->strategy)), &ok);
    put(o, "TRAINYARD_ENGINE", json_string(adv_engine_name(p->engine)), &ok);
    put_env_u64(o, "TRAINYARD_MICRO_BATCH", (uint64_t)p->micro_batch, &ok);
    put_env_u64(o, "TRAINYARD_GRAD_ACCUM", (uint64_t)p->grad_accum, &ok);
    put_env_u64(o, "TRAINYARD_GLOBAL_BATCH", (uint64_t)p->reached_batch, &ok);
    put(o, "TRAINYARD_PRECISION", json_string(adv_precision_name(p->precision)), &ok);
    put(o, "TRAINYARD_ACTIVATION_CHECKPOINTING", json_string(p->checkpointing ? "1" : "0"), &ok);
    put(o, "TRAINYARD_DDP_BUCKET_VIEW", json_string(torch_ddp(p) ? "1" : "0"), &ok);
    put_env_u64(o, "TRAINYARD_PRED_PARAM_BYTES", p->mem.params, &ok);
    put_env_u64(o, "TRAINYARD_PRED_GRAD_BYTES", p->mem.grads, &ok);
    put_env_u64(o, "TRAINYARD_PRED_OPTIMIZER_BYTES", p->mem.optimizer, &ok);
    put_env_u64(o, "TRAINYARD_PRED_ACTIVATION_BYTES", saved_activations(p), &ok);
    put_env_u64(o, "TRAINYARD_PRED_PEAK_BYTES", peak_allocated(&p->mem), &ok);
    if (!ok) {
        json_decref(o);
        return RC_ENOMEM;
    }
    *out = o;
    return RC_OK;
}

static json_t *speed(const struct adv_speed *s)
{
    json_t *o = json_object();
    bool ok = true;

    put(o, "step_s", jreal(s->step_s), &ok);
    put(o, "samples_per_s", jreal(s->samples_per_s), &ok);
    put(o, "compute_s", jreal(s->compute_s), &ok);
    put(o, "comm_s", jreal(s->comm_s), &ok);
    put(o, "exposed_comm_s", jreal(s->exposed_comm_s), &ok);
    put(o, "offload_s", jreal(s->offload_s), &ok);
    put(o, "flops_per_step", jreal(s->flops_per_step), &ok);
    put(o, "peak_tflops", jreal(s->peak_flops / 1e12), &ok);
    put(o, "efficiency", jreal(s->efficiency), &ok);
    put(o, "busbw_gbps", jreal(s->busbw_gbps), &ok);
    put(o, "busbw_measured", json_boolean(s->busbw_measured), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *alternatives(const struct adv_plan *p)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < p->nalts; i++) {
        const struct adv_alternative *x = &p->alts[i];
        json_t *o = json_object();
        bool ok = true;

        put(o, "strategy", json_string(adv_strategy_name(x->strategy)), &ok);
        put(o, "engine", json_string(adv_engine_name(x->engine)), &ok);
        put(o, "status", json_string(adv_alt_status_name(x->status)), &ok);
        put(o, "activation_checkpointing", json_boolean(x->checkpointing), &ok);
        put(o, "micro_batch", json_integer(x->micro_batch), &ok);
        put(o, "memory", memory(&x->mem), &ok);
        put(o, "step_s", jreal(x->step_s), &ok);
        put(o, "over_bytes", jbytes((uint64_t)ceil(x->over_bytes)), &ok);
        put(o, "reason", texts(x->reason_en, x->reason_zh), &ok);
        if (!ok || json_array_append_new(a, o) != 0) {
            if (!ok)
                json_decref(o); /* append_new releases it itself when it fails */
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *warnings_json(const struct adv_plan *p)
{
    static const char *const codes[] = {"",
                                        "override_does_not_fit",
                                        "override_unavailable",
                                        "batch_inexact",
                                        "host_memory_for_loading",
                                        "no_speed"};
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < p->nwarnings; i++) {
        const struct adv_warning *w = &p->warnings[i];
        json_t *o = json_object();
        bool ok = true;
        unsigned c = (unsigned)w->code < NKEYS(codes) ? (unsigned)w->code : 0;

        put(o, "code", json_string(codes[c]), &ok);
        put(o, "en", json_string(w->en), &ok);
        put(o, "zh-CN", json_string(w->zh), &ok);
        if (!ok || json_array_append_new(a, o) != 0) {
            if (!ok)
                json_decref(o);
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *config(const struct adv_plan *p)
{
    json_t *o = json_object(), *env = NULL, *ds = NULL;
    bool ok = true;

    if (adv_json_env(p, &env) != RC_OK || adv_json_deepspeed_config(p, &ds) != RC_OK)
        ok = false;
    put(o, "env", env, &ok);
    put(o, "deepspeed", ds != NULL ? ds : json_null(), &ok);
    put(o, "fsdp", fsdp_settings(p), &ok);
    put(o, "ddp", ddp_settings(p), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *predicted(const struct adv_plan *p)
{
    json_t *o = json_object();
    bool ok = true;
    const struct adv_memory *m = &p->mem;

    put(o, "param_bytes", jbytes(m->params), &ok);
    put(o, "grad_bytes", jbytes(m->grads), &ok);
    put(o, "optimizer_bytes", jbytes(m->optimizer), &ok);
    put(o, "model_state_bytes", jbytes(m->params + m->grads + m->optimizer), &ok);
    put(o, "activation_bytes", jbytes(saved_activations(p)), &ok);
    put(o, "peak_allocated_bytes", jbytes(peak_allocated(m)), &ok);
    put(o, "step_s", jreal(p->speed.step_s), &ok);
    put(o, "samples_per_s", jreal(p->speed.samples_per_s), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *model_json(const struct adv_model_info *mi)
{
    json_t *o = json_object();
    bool ok = true;

    put(o, "name", json_string(mi->name), &ok);
    put(o, "kind", json_string(mi->kind == ADV_MODEL_TRANSFORMER ? "transformer" : "measured"),
        &ok);
    put(o, "params", json_integer((json_int_t)llround(mi->params)), &ok);
    put(o, "largest_layer_params", json_integer((json_int_t)llround(mi->largest_layer_params)),
        &ok);
    put(o, "seq_len", mi->seq_len > 0 ? json_integer(mi->seq_len) : json_null(), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

enum rc adv_json_plan(const struct adv_plan *p, json_t **out)
{
    json_t *o = json_object(), *b = NULL, *sm = json_null();
    bool ok = true;

    *out = NULL;
    put(o, "status", json_string(p->status == ADV_PLAN_OK ? "ok" : "does_not_fit"), &ok);
    put(o, "model", model_json(&p->model), &ok);
    put(o, "strategy", json_string(adv_strategy_name(p->strategy)), &ok);
    put(o, "engine", json_string(adv_engine_name(p->engine)), &ok);
    put(o, "recommended", json_string(adv_strategy_name(p->recommended)), &ok);
    put(o, "precision", json_string(adv_precision_name(p->precision)), &ok);
    put(o, "loss_scaling", json_boolean(p->loss_scaling), &ok);
    put(o, "activation_checkpointing", json_boolean(p->checkpointing), &ok);
    put(o, "micro_batch", json_integer(p->micro_batch), &ok);
    put(o, "grad_accum", json_integer(p->grad_accum), &ok);
    put(o, "dp_degree", json_integer(p->dp_degree), &ok);
    b = json_pack("{s:i, s:i, s:b}", "requested", p->requested_batch, "reached", p->reached_batch,
                  "exact", p->batch_exact);
    put(o, "global_batch", b, &ok);
    put(o, "memory", memory(&p->mem), &ok);
    put(o, "host_memory_per_node_bytes", jbytes(p->cpu_mem_per_node), &ok);
    put(o, "speed", speed(&p->speed), &ok);
    put(o, "predicted", predicted(p), &ok);
    put(o, "reason", texts(p->reason_en, p->reason_zh), &ok);
    put(o, "alternatives", alternatives(p), &ok);
    put(o, "warnings", warnings_json(p), &ok);
    if (p->status == ADV_PLAN_NO_FIT && (p->smallest_gpus > 0 || p->min_gpu_mem_bytes > 0)) {
        json_decref(sm);
        sm = json_object();
        put(sm, "gpus", p->smallest_gpus > 0 ? json_integer(p->smallest_gpus) : json_null(), &ok);
        put(sm, "gpu_memory_bytes_at_this_size",
            p->min_gpu_mem_bytes > 0 ? jbytes(p->min_gpu_mem_bytes) : json_null(), &ok);
    }
    put(o, "smallest_allocation", sm, &ok);
    put(o, "config", config(p), &ok);
    if (!ok) {
        json_decref(o);
        return RC_ENOMEM;
    }
    *out = o;
    return RC_OK;
}

enum rc adv_json_advise(const json_t *request, json_t **out, struct err *e)
{
    struct adv_request req;
    struct adv_plan *plan = NULL;
    enum rc rc;

    *out = NULL;
    rc = adv_json_parse_request(request, &req, e);
    if (rc != RC_OK)
        goto out;
    /* A plan is about 20 KiB: on the heap, not on an HTTP thread's stack. */
    plan = malloc(sizeof(*plan));
    if (plan == NULL) {
        rc = err_set(e, RC_ENOMEM, NULL, "internal error");
        goto out;
    }
    rc = adv_plan(&req, plan, e);
    if (rc != RC_OK)
        goto out;
    rc = adv_json_plan(plan, out);
    if (rc != RC_OK)
        err_set(e, rc, NULL, "internal error");
out:
    free(plan);
    return rc;
}
