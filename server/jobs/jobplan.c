/*
 * jobplan.c - a job's plan from its spec and its nodes (see jobplan.h).
 *
 * Structure: a node (or the GPUs an attempt holds on it) is reduced to a
 * struct kind (memory, compute capability, links, RAM, what it can run);
 * several are combined by taking the weakest of each; the result is the
 * advisor's "allocation" and "capabilities" objects, and the advisor's own
 * JSON layer does the rest (adv_json_advise). Figures the nodes do not
 * report are left to the advisor's documented defaults (docs/advisor.md).
 *
 * Reentrant: no globals besides constant tables.
 */
#include "jobplan.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advisor_json.h"

#define MIB (UINT64_C(1) << 20)
#define NVLINK_GBPS_PER_LINK 25.0 /* NVLink 3/4: 25 GB/s per link and direction */
#define NVLINK_GBPS_UNKNOWN 300.0 /* 12 links (A100) when the link count is not reported */

/* What the advisor is told about one node, or the weakest of several. */
struct kind {
    bool cpu;          /* fake GPUs: CPU processes */
    int count;         /* GPUs (or CPU ranks) used on the node */
    uint64_t gpu_mem;  /* bytes of the smallest GPU; 0 on CPU */
    int cc10;          /* lowest compute capability x 10; 0 on CPU */
    uint64_t host_mem; /* bytes of RAM of the node; 0 = not reported */
    bool nvlink;       /* every pair of the used GPUs is NVLink-connected */
    double intra_gbps; /* per GPU; 0 = the advisor's default */
    bool ib;           /* an active InfiniBand port */
    double inter_gbps; /* per node; 0 = the advisor's default */
    double busbw;      /* measured all-reduce bus bandwidth, GB/s; 0 = none */
    bool caps_known;   /* the node reported what it can run */
    int torch_major, torch_minor;
    bool fsdp, deepspeed;
    const char *model; /* borrowed GPU model name, for the reason */
    const char *name;  /* borrowed node name */
};

static int64_t jint(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);

    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

static double jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);

    return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* "8.0" -> 80, "" or junk -> 0. */
static int cc_of(const char *s)
{
    int major = 0, minor = 0;

    if (s == NULL || sscanf(s, "%d.%d", &major, &minor) < 1 || major < 0 || major > 99 ||
        minor < 0 || minor > 9)
        return 0;
    return major * 10 + minor;
}

/* GB/s per lane and direction of PCIe generation gen (PCI-SIG), 0 unknown. */
static double pcie_lane_gbps(int64_t gen)
{
    static const double lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};

    return gen >= 1 && gen <= 6 ? lane[gen] : 0.0;
}

/* The interconnect's entry for GPU idx, or NULL. */
static const json_t *topo_gpu(const json_t *ic, int64_t idx)
{
    size_t i;
    json_t *g;

    json_array_foreach(json_object_get(ic, "gpus"), i, g)
    {
        if (jint(g, "index") == idx)
            return g;
    }
    return NULL;
}

/* Whether GPU a lists b among its NVLink peers. */
static bool peers(const json_t *a, int64_t b)
{
    size_t i;
    json_t *p;

    json_array_foreach(json_object_get(a, "nvlink_peers"), i, p)
    {
        if (json_is_integer(p) && json_integer_value(p) == b)
            return true;
    }
    return false;
}

/* The links of a node's used GPUs. */
static void node_links(const json_t *node, const json_t *gpus, struct kind *k)
{
    const json_t *ic = json_object_get(node, "interconnect");
    double intra = 0, inter = 0, ib = 0;
    size_t i, j;
    json_t *g, *h;

    k->nvlink = json_array_size(gpus) > 1;
    json_array_foreach(gpus, i, g)
    {
        json_array_foreach(gpus, j, h)
        {
            if (i != j && !peers(g, jint(h, "idx")))
                k->nvlink = false;
        }
    }
    json_array_foreach(gpus, i, g)
    {
        const json_t *t = topo_gpu(ic, jint(g, "idx"));
        double v;
        if (k->nvlink) {
            int64_t links = jint(t, "nvlinks");
            v = links > 0 ? NVLINK_GBPS_PER_LINK * (double)links : NVLINK_GBPS_UNKNOWN;
        } else {
            const json_t *pc = json_object_get(t, "pcie");
            v = pcie_lane_gbps(jint(pc, "gen")) * (double)jint(pc, "width");
        }
        if (v <= 0) {
            intra = 0;
            break;
        }
        if (i == 0 || v < intra)
            intra = v;
    }
    k->intra_gbps = k->nvlink && intra <= 0 ? NVLINK_GBPS_UNKNOWN : intra;
    json_array_foreach(json_object_get(ic, "infiniband"), i, g)
    {
        const json_t *st = json_object_get(g, "state");
        if (json_is_string(st) && strcmp(json_string_value(st), "ACTIVE") == 0)
            ib += jnum(g, "rate_gbps") / 8.0; /* Gb/s -> GB/s */
    }
    json_array_foreach(json_object_get(ic, "interfaces"), i, g)
    {
        const json_t *st = json_object_get(g, "state");
        if (json_is_true(json_object_get(g, "loopback")) || !json_is_string(st) ||
            strcmp(json_string_value(st), "up") != 0)
            continue;
        if (jnum(g, "speed_mbps") / 8000.0 > inter)
            inter = jnum(g, "speed_mbps") / 8000.0;
    }
    k->ib = ib > 0;
    k->inter_gbps = ib > 0 ? ib : inter;
}

/* The node's PyTorch, FSDP and DeepSpeed as its worker probed them. */
static void node_caps(const json_t *node, struct kind *k)
{
    const json_t *c = json_object_get(node, "capabilities");
    const json_t *probe = json_object_get(c, "probe");
    const char *torch = json_string_value(json_object_get(c, "torch"));
    int major = 0, minor = 0;

    k->caps_known = json_is_string(probe) && strcmp(json_string_value(probe), "ok") == 0 &&
                    torch != NULL && sscanf(torch, "%d.%d", &major, &minor) == 2 && major > 0 &&
                    major < 100 && minor >= 0 && minor < 1000;
    k->torch_major = k->caps_known ? major : 0;
    k->torch_minor = k->caps_known ? minor : 0;
    k->fsdp = k->caps_known && json_is_true(json_object_get(c, "fsdp"));
    k->deepspeed = k->caps_known && json_is_true(json_object_get(c, "deepspeed"));
}

/* The busiest measured all-reduce bus bandwidth of the node's probe. */
static double node_busbw(const json_t *node)
{
    const json_t *probe = json_object_get(node, "nccl_probe");
    double best = 0;
    size_t i;
    json_t *r;

    json_array_foreach(json_object_get(probe, "results"), i, r)
    {
        if (jnum(r, "busbw_gbs") > best)
            best = jnum(r, "busbw_gbs");
    }
    return best;
}

/*
 * One node with the GPUs of gpus (a subset of its "gpus", borrowed): real
 * GPUs when it has any (fake ones are then ignored), else its fake GPUs as
 * CPU ranks. Returns false when no GPU is left.
 */
static bool node_kind(const json_t *node, const json_t *all, struct kind *k)
{
    json_t *used = json_array();
    size_t i;
    json_t *g;
    bool real = false;

    memset(k, 0, sizeof(*k));
    if (used == NULL)
        return false;
    json_array_foreach(all, i, g)
    {
        if (!json_is_true(json_object_get(g, "fake")))
            real = true;
    }
    json_array_foreach(all, i, g)
    {
        bool fake = json_is_true(json_object_get(g, "fake"));
        if (real && fake)
            continue;
        json_array_append(used, g);
        if (!fake) {
            uint64_t mem = (uint64_t)jint(g, "memory_mb") * MIB;
            int cc = cc_of(json_string_value(json_object_get(g, "compute_capability")));
            if (k->count == 0 || mem < k->gpu_mem)
                k->gpu_mem = mem;
            if (k->count == 0 || cc < k->cc10)
                k->cc10 = cc;
            if (k->model == NULL)
                k->model = json_string_value(json_object_get(g, "model"));
        }
        k->count++;
    }
    k->cpu = !real;
    if (k->cpu) {
        k->gpu_mem = 0;
        k->cc10 = 0;
    }
    k->host_mem = (uint64_t)jint(node, "memory_mb") * MIB;
    k->name = json_string_value(json_object_get(node, "name"));
    node_links(node, used, k);
    node_caps(node, k);
    k->busbw = k->cpu ? 0 : node_busbw(node);
    json_decref(used);
    return k->count > 0;
}

/* Whether a is a better kind to plan for at submit than b. */
static bool better(const struct kind *a, const struct kind *b)
{
    if (a->cpu != b->cpu)
        return !a->cpu;
    if (a->cpu)
        return a->host_mem / (uint64_t)a->count > b->host_mem / (uint64_t)b->count;
    if (a->gpu_mem != b->gpu_mem)
        return a->gpu_mem > b->gpu_mem;
    if (a->cc10 != b->cc10)
        return a->cc10 > b->cc10;
    return a->count > b->count;
}

/* The weakest of a and b into a (placement over several nodes). */
static void weakest(struct kind *a, const struct kind *b)
{
    a->cpu = a->cpu && b->cpu;
    if (b->gpu_mem < a->gpu_mem)
        a->gpu_mem = b->gpu_mem;
    if (b->cc10 < a->cc10)
        a->cc10 = b->cc10;
    if (b->host_mem < a->host_mem)
        a->host_mem = b->host_mem;
    if (b->count > a->count)
        a->count = b->count;
    a->nvlink = a->nvlink && b->nvlink;
    a->intra_gbps =
        b->intra_gbps <= 0 || a->intra_gbps <= 0 ? 0 : fmin(a->intra_gbps, b->intra_gbps);
    a->ib = a->ib && b->ib;
    a->inter_gbps =
        b->inter_gbps <= 0 || a->inter_gbps <= 0 ? 0 : fmin(a->inter_gbps, b->inter_gbps);
    a->busbw = 0; /* the probe measures one node */
    if (!b->caps_known || !a->caps_known) {
        a->caps_known = false;
    } else if (b->torch_major < a->torch_major ||
               (b->torch_major == a->torch_major && b->torch_minor < a->torch_minor)) {
        a->torch_major = b->torch_major;
        a->torch_minor = b->torch_minor;
    }
    a->fsdp = a->caps_known && a->fsdp && b->fsdp;
    a->deepspeed = a->caps_known && a->deepspeed && b->deepspeed;
}

/* The largest divisor of n not above cap (>= 1). */
static int divisor_at_most(int n, int cap)
{
    for (int d = cap < n ? cap : n; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}

static enum rc emit(const struct kind *k, int gpus, int gpn, int nnodes, json_t **alloc,
                    json_t **caps)
{
    json_t *a, *c;
    int ok = 1;

    *alloc = NULL;
    *caps = NULL;
    a = json_pack("{s:i,s:i,s:I,s:f}", "gpus", gpus, "gpus_per_node", gpn, "gpu_memory_bytes",
                  (json_int_t)k->gpu_mem, "compute_capability", k->cc10 / 10.0);
    c = json_object();
    if (a == NULL || c == NULL)
        goto fail;
    if (k->host_mem > 0 || k->cpu)
        /* On CPU the advisor needs the RAM; a node that reports none gets
         * 1 GiB, which plans small rather than not at all. */
        ok &= json_object_set_new(
                  a, "cpu_memory_per_node_bytes",
                  json_integer((json_int_t)(k->host_mem > 0 ? k->host_mem : 1024 * MIB))) == 0;
    if (k->intra_gbps > 0)
        ok &= json_object_set_new(a, "intra_node",
                                  json_pack("{s:s,s:f}", "link", k->nvlink ? "nvlink" : "pcie",
                                            "gbps", k->intra_gbps)) == 0;
    else if (k->nvlink)
        ok &= json_object_set_new(
                  a, "intra_node",
                  json_pack("{s:s,s:f}", "link", "nvlink", "gbps", NVLINK_GBPS_UNKNOWN)) == 0;
    if (k->inter_gbps > 0)
        ok &= json_object_set_new(a, "inter_node",
                                  json_pack("{s:s,s:f}", "link", k->ib ? "ib" : "ethernet", "gbps",
                                            k->inter_gbps)) == 0;
    if (k->busbw > 0 && nnodes == 1)
        ok &= json_object_set_new(a, "measured_busbw_gbps",
                                  json_pack("{s:f}", "intra_node", k->busbw)) == 0;
    if (k->caps_known) {
        char v[24];
        snprintf(v, sizeof(v), "%d.%d", k->torch_major, k->torch_minor);
        ok &= json_object_set_new(c, "torch_version", json_string(v)) == 0;
        ok &= json_object_set_new(c, "fsdp", json_boolean(k->fsdp)) == 0;
        ok &= json_object_set_new(c, "deepspeed", json_boolean(k->deepspeed)) == 0;
    }
    if (!ok)
        goto fail;
    *alloc = a;
    *caps = c;
    return RC_OK;
fail:
    json_decref(a);
    json_decref(c);
    return RC_ENOMEM;
}

static void kind_text(const struct kind *k, char *buf, size_t size)
{
    if (k->cpu)
        snprintf(buf, size, "CPU processes (fake GPUs), %.1f GiB RAM per node, %s",
                 (double)k->host_mem / (1024.0 * MIB),
                 k->caps_known ? "capabilities reported" : "capabilities unknown");
    else
        snprintf(buf, size, "%s GPUs (%.1f GiB, compute capability %d.%d, %s), %s",
                 k->model ? k->model : "unnamed", (double)k->gpu_mem / (1024.0 * MIB), k->cc10 / 10,
                 k->cc10 % 10, k->nvlink ? "NVLink" : "PCIe",
                 k->caps_known ? "capabilities reported" : "capabilities unknown");
}

enum rc jobplan_site_alloc(const json_t *nodes, int gpus, int gpus_per_node, json_t **alloc,
                           json_t **caps, char *why, size_t why_size)
{
    struct kind best = {0}, k;
    bool have = false;
    size_t i;
    json_t *n;
    int gpn, nnodes;
    char text[192];

    *alloc = NULL;
    *caps = NULL;
    json_array_foreach(nodes, i, n)
    {
        if (!node_kind(n, json_object_get(n, "gpus"), &k))
            continue;
        if (!have || better(&k, &best)) {
            best = k;
            have = true;
        }
    }
    if (!have || gpus < 1)
        return RC_ENOTFOUND;
    gpn = gpus_per_node > 0 ? gpus_per_node : divisor_at_most(gpus, best.count);
    nnodes = (gpus + gpn - 1) / gpn;
    kind_text(&best, text, sizeof(text));
    snprintf(why, why_size,
             "at submit, for the site's largest: %s on node %s, as if each of the job's %d "
             "node(s) had %d of them",
             text, best.name ? best.name : "?", nnodes, gpn);
    return emit(&best, gpus, gpn, nnodes, alloc, caps);
}

enum rc jobplan_placed_alloc(const json_t *nodes, json_t **alloc, json_t **caps, char *why,
                             size_t why_size)
{
    struct kind all = {0}, k;
    size_t i, nnodes = 0;
    json_t *n;
    int gpus = 0;
    char text[192];

    *alloc = NULL;
    *caps = NULL;
    json_array_foreach(nodes, i, n)
    {
        if (!node_kind(n, json_object_get(n, "gpus"), &k))
            continue;
        gpus += k.count;
        if (nnodes++ == 0)
            all = k;
        else
            weakest(&all, &k);
    }
    if (nnodes == 0)
        return RC_ENOTFOUND;
    kind_text(&all, text, sizeof(text));
    snprintf(why, why_size, "at placement, for the %d allocated on %zu node(s): %s", gpus, nnodes,
             text);
    return emit(&all, gpus, divisor_at_most(gpus, all.count), (int)nnodes, alloc, caps);
}

int jobplan_wanted(const json_t *spec)
{
    return json_is_string(json_object_get(spec, "strategy")) &&
           json_is_object(json_object_get(spec, "model")) &&
           json_is_integer(json_object_get(spec, "global_batch"));
}

enum rc jobplan_model_check(const json_t *model, struct err *e)
{
    json_t *req, *plan = NULL;
    enum rc rc;

    /* The advisor's own parser and planner, on a request that can only be
     * refused for the model: one CPU process with plenty of memory. */
    req = json_pack("{s:O,s:i,s:{s:i,s:i,s:i,s:i,s:I}}", "model", model, "global_batch", 1,
                    "allocation", "gpus", 1, "gpus_per_node", 1, "gpu_memory_bytes", 0,
                    "compute_capability", 0, "cpu_memory_per_node_bytes",
                    (json_int_t)(INT64_C(1) << 50));
    if (req == NULL)
        return err_set(e, RC_ENOMEM, NULL, "internal error");
    rc = adv_json_advise(req, &plan, e);
    json_decref(req);
    json_decref(plan);
    return rc;
}

json_t *jobplan_model_from_template(const json_t *tm)
{
    const json_t *tf = json_object_get(tm, "transformer");

    if (json_is_string(json_object_get(tm, "name")))
        return json_pack("{s:O}", "name", json_object_get(tm, "name"));
    if (json_is_object(tf)) {
        const json_t *kind = json_object_get(tf, "kind");
        return json_pack("{s:{s:s,s:O,s:O,s:O,s:O,s:O,s:O}}", "transformer", "arch",
                         json_is_string(kind) ? json_string_value(kind) : "decoder", "layers",
                         json_object_get(tf, "layers"), "hidden", json_object_get(tf, "hidden"),
                         "heads", json_object_get(tf, "heads"), "ffn", json_object_get(tf, "ffn"),
                         "vocab", json_object_get(tf, "vocab"), "seq_len",
                         json_object_get(tf, "seq_len"));
    }
    if (json_is_integer(json_object_get(tm, "params")))
        return json_pack("{s:{s:O,s:O}}", "measured", "params", json_object_get(tm, "params"),
                         "activation_bytes_per_sample",
                         json_object_get(tm, "activation_bytes_per_sample"));
    return NULL;
}

/* text + " " + more into the string at o[k] (a new string; unchanged on OOM). */
static void append_text(json_t *o, const char *k, const char *more)
{
    const char *t = json_string_value(json_object_get(o, k));
    size_t n = (t ? strlen(t) : 0) + strlen(more) + 2;
    char *s = malloc(n);

    if (s == NULL)
        return;
    snprintf(s, n, "%s%s%s", t ? t : "", t && *t ? " " : "", more);
    json_object_set_new(o, k, json_string(s));
    free(s);
}

enum rc jobplan_make(const json_t *spec, const json_t *alloc, const json_t *caps, const char *at,
                     const char *why, json_t **out, struct err *e)
{
    const json_t *opt = json_object_get(spec, "optimizer");
    json_t *req, *plan = NULL, *reason;
    char en[512], zh[512];
    enum rc rc;

    *out = NULL;
    req = json_pack("{s:O,s:O,s:s,s:O,s:O,s:O}", "model", json_object_get(spec, "model"),
                    "global_batch", json_object_get(spec, "global_batch"), "optimizer",
                    json_is_string(opt) ? json_string_value(opt) : "adamw", "allocation", alloc,
                    "capabilities", caps, "strategy", json_object_get(spec, "strategy"));
    if (req == NULL)
        return err_set(e, RC_ENOMEM, NULL, "internal error");
    rc = adv_json_advise(req, &plan, e);
    json_decref(req);
    if (rc != RC_OK)
        return rc;
    if (json_object_set_new(plan, "planned_for",
                            json_pack("{s:s,s:s,s:O,s:O}", "at", at, "node_kind", why, "allocation",
                                      alloc, "capabilities", caps)) != 0) {
        json_decref(plan);
        return err_set(e, RC_ENOMEM, NULL, "internal error");
    }
    /* The reason says what the plan was made for. */
    reason = json_object_get(plan, "reason");
    snprintf(en, sizeof(en), "Planned %s.", why);
    snprintf(zh, sizeof(zh), "规划依据（%s）：%s。",
             strcmp(at, "submit") == 0 ? "提交时" : "放置时", why);
    if (json_is_object(reason)) {
        append_text(reason, "en", en);
        append_text(reason, "zh-CN", zh);
    }
    *out = plan;
    return RC_OK;
}

/* o[k] if it is a string, else dflt. */
static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));

    return s != NULL ? s : dflt;
}

enum rc jobplan_launch(const json_t *plan, const json_t *spec, json_t **env, json_t **ds)
{
    const json_t *cfg = json_object_get(plan, "config");
    const json_t *penv = json_object_get(cfg, "env");
    const json_t *fsdp = json_object_get(cfg, "fsdp");
    const json_t *dsc = json_object_get(cfg, "deepspeed");
    const json_t *user = json_object_get(spec, "env");
    const json_t *strategy = json_object_get(spec, "strategy");
    const char *k;
    json_t *v, *o = json_object();
    int ok = o != NULL;

    *env = NULL;
    *ds = NULL;
    if (plan == NULL || !json_is_object(penv)) {
        /* No plan: an explicit strategy still reaches the scripts. */
        if (ok && json_is_string(strategy) && strcmp(json_string_value(strategy), "auto") != 0)
            ok = json_object_set(o, "TRAINYARD_STRATEGY", (json_t *)strategy) == 0;
    } else {
        json_object_foreach((json_t *)penv, k, v)
        {
            /* A plan that does not fit has no split: the script splits. */
            if ((strcmp(k, "TRAINYARD_MICRO_BATCH") == 0 ||
                 strcmp(k, "TRAINYARD_GRAD_ACCUM") == 0) &&
                json_is_string(v) && strcmp(json_string_value(v), "0") == 0)
                continue;
            if (ok && json_is_string(v))
                ok = json_object_set(o, k, v) == 0;
        }
        if (ok && json_is_object(fsdp)) {
            const json_t *mn = json_object_get(fsdp, "min_num_params");
            char n[32];
            ok = json_object_set_new(
                     o, "TRAINYARD_FSDP_SHARDING",
                     json_string(str_or(fsdp, "sharding_strategy", "FULL_SHARD"))) == 0 &&
                 json_object_set_new(
                     o, "TRAINYARD_FSDP_CPU_OFFLOAD",
                     json_string(json_is_true(json_object_get(fsdp, "cpu_offload")) ? "1" : "0")) ==
                     0 &&
                 json_object_set_new(
                     o, "TRAINYARD_FSDP_AUTO_WRAP",
                     json_string(str_or(fsdp, "auto_wrap_policy", "transformer_block"))) == 0;
            if (ok && json_is_integer(mn)) {
                snprintf(n, sizeof(n), "%" JSON_INTEGER_FORMAT, json_integer_value(mn));
                ok = json_object_set_new(o, "TRAINYARD_FSDP_MIN_NUM_PARAMS", json_string(n)) == 0;
            }
        }
    }
    /* A name the job's own env sets wins over the plan. */
    json_object_foreach((json_t *)user, k, v)
    {
        if (ok)
            json_object_del(o, k);
    }
    if (ok && json_is_object(dsc) && (*ds = json_deep_copy(dsc)) == NULL)
        ok = 0;
    if (!ok) {
        json_decref(o);
        json_decref(*ds);
        *ds = NULL;
        return RC_ENOMEM;
    }
    *env = o;
    return RC_OK;
}

/* {"predicted", "measured", "error_pct"} for one size. */
static json_t *pair(double predicted, const json_t *measured)
{
    double m = json_is_number(measured) ? json_number_value(measured) : 0;

    return json_pack("{s:I,s:O,s:o}", "predicted", (json_int_t)predicted, "measured",
                     measured ? (json_t *)measured : json_null(), "error_pct",
                     m > 0 ? json_real(round(1000.0 * (predicted - m) / m) / 10.0) : json_null());
}

json_t *jobplan_compare(const json_t *predicted, const json_t *metrics, const json_t *ranks)
{
    static const char *const sizes[][2] = {{"param_bytes", "param_bytes"},
                                           {"grad_bytes", "grad_bytes"},
                                           {"optim_state_bytes", "optimizer_bytes"},
                                           {"activation_bytes", "activation_bytes"},
                                           {"peak_mem_bytes", "peak_allocated_bytes"}};
    json_t *o = json_object(), *peaks = json_array(), *r, *ms = NULL;
    double peak = jnum(predicted, "peak_allocated_bytes");
    int ok = o != NULL && peaks != NULL;
    size_t i;

    for (size_t s = 0; ok && s < sizeof(sizes) / sizeof(sizes[0]); s++)
        ok = json_object_set_new(
                 o, sizes[s][0],
                 pair(jnum(predicted, sizes[s][1]), json_object_get(metrics, sizes[s][0]))) == 0;
    /* Model states: what the three measured sizes add up to, when all are there. */
    if (ok && json_is_number(json_object_get(metrics, "param_bytes")) &&
        json_is_number(json_object_get(metrics, "grad_bytes")) &&
        json_is_number(json_object_get(metrics, "optim_state_bytes")))
        ms = json_integer((json_int_t)(jnum(metrics, "param_bytes") + jnum(metrics, "grad_bytes") +
                                       jnum(metrics, "optim_state_bytes")));
    if (ok)
        ok = json_object_set_new(o, "model_state_bytes",
                                 pair(jnum(predicted, "model_state_bytes"), ms)) == 0;
    json_decref(ms);
    json_array_foreach(ranks, i, r)
    {
        const json_t *g = json_object_get(r, "gpu_mem_peak_bytes");
        json_t *p;
        if (!ok || !json_is_number(g))
            continue;
        p = pair(peak, g);
        ok = p != NULL && json_object_set_new(p, "rank", json_integer(jint(r, "rank"))) == 0;
        if (ok)
            ok = json_array_append_new(peaks, p) == 0;
        else
            json_decref(p);
    }
    if (ok)
        ok = json_object_set(o, "gpu_mem_peak", peaks) == 0;
    json_decref(peaks);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}
