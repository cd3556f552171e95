/*
 * gpu.c - GPU discovery through NVML opened with dlopen("libnvidia-ml.so.1"),
 * or fake GPUs for development and CI.
 *
 * Only the few NVML entry points used are declared here, with the ABI of
 * nvml.h (stable since CUDA 10). Anything missing or failing degrades to "no
 * GPU" or "no NVLink peers": discovery is best effort and never fatal.
 * NVLink peers: nvmlDeviceGetP2PStatus(NVLINK) between each pair, which also
 * covers NVSwitch systems (the remote end of a link there is the switch).
 */
#include "gpu.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

typedef int nvml_ret_t;
typedef struct nvml_device_st *nvml_device_t;
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_util {
    unsigned int gpu, memory;
};
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

typedef nvml_ret_t (*nvml_void_fn)(void);
typedef nvml_ret_t (*nvml_count_fn)(unsigned int *);
typedef nvml_ret_t (*nvml_handle_fn)(unsigned int, nvml_device_t *);
typedef nvml_ret_t (*nvml_str_fn)(nvml_device_t, char *, unsigned int);
typedef nvml_ret_t (*nvml_mem_fn)(nvml_device_t, struct nvml_memory *);
typedef nvml_ret_t (*nvml_cc_fn)(nvml_device_t, int *, int *);
typedef nvml_ret_t (*nvml_util_fn)(nvml_device_t, struct nvml_util *);
typedef nvml_ret_t (*nvml_p2p_fn)(nvml_device_t, nvml_device_t, int, int *);

struct nvml {
    void *lib;
    nvml_void_fn shutdown;
    nvml_mem_fn mem;
    nvml_util_fn util;
};

struct wrk_gpus {
    int count;
    int fake;
    struct wrk_gpu_info *info; /* count entries */
    nvml_device_t *dev;        /* NVML handles, count entries; NULL when fake */
    struct nvml nv;
};

enum rc wrk_fake_parse(const char *s, struct wrk_fake_spec *out, struct err *e)
{
    char *end;
    long v;

    memset(out, 0, sizeof(*out));
    out->memory_gib = 80;
    snprintf(out->model, sizeof(out->model), "Fake GPU");
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return err_set(e, RC_EINVAL, "fake-gpus", "fake gpus must start with a count");
    v = strtol(s, &end, 10);
    if (v < 0 || v > WRK_MAX_GPUS || (*end != '\0' && *end != ':'))
        return err_set(e, RC_EINVAL, "fake-gpus", "fake gpu count must be 0..64");
    out->count = (int)v;
    if (*end == '\0')
        return RC_OK;
    s = end + 1;
    if (!isdigit((unsigned char)s[0]))
        return err_set(e, RC_EINVAL, "fake-gpus", "fake gpu memory must be 1..4096 GiB");
    v = strtol(s, &end, 10);
    if (v < 1 || v > 4096 || (*end != '\0' && *end != ':'))
        return err_set(e, RC_EINVAL, "fake-gpus", "fake gpu memory must be 1..4096 GiB");
    out->memory_gib = (int)v;
    if (*end == '\0')
        return RC_OK;
    s = end + 1;
    if (s[0] == '\0' || strlen(s) >= sizeof(out->model))
        return err_set(e, RC_EINVAL, "fake-gpus", "fake gpu model must be 1..63 characters");
    for (const char *p = s; *p; p++)
        if (!isprint((unsigned char)*p))
            return err_set(e, RC_EINVAL, "fake-gpus", "fake gpu model must be printable");
    snprintf(out->model, sizeof(out->model), "%s", s);
    return RC_OK;
}

static void fake_fill(struct wrk_gpus *g, const struct wrk_fake_spec *f, const char *node)
{
    for (int i = 0; i < g->count; i++) {
        struct wrk_gpu_info *gi = &g->info[i];
        gi->index = i;
        snprintf(gi->uuid, sizeof(gi->uuid), "GPU-fake-%.60s-%d", node ? node : "node", i);
        snprintf(gi->model, sizeof(gi->model), "%s", f->model);
        gi->memory_mb = (int64_t)f->memory_gib * 1024;
        snprintf(gi->compute_capability, sizeof(gi->compute_capability), "8.0");
    }
}

static void *sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

/* Open NVML and fill g; on any failure g->count stays 0. */
static void nvml_open(struct wrk_gpus *g)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_void_fn init;
    nvml_count_fn count;
    nvml_handle_fn handle;
    nvml_str_fn name, uuid;
    nvml_cc_fn cc;
    nvml_p2p_fn p2p;
    unsigned int n = 0;

    if (lib == NULL) {
        LOG_INFO("gpu", "nvml not available", "");
        return;
    }
    /* dlsym returns void *; converting through memcpy keeps -Wpedantic quiet. */
#define LOAD(var, nm)                                                                              \
    do {                                                                                           \
        void *p_ = sym(lib, nm);                                                                   \
        memcpy(&(var), &p_, sizeof(p_));                                                           \
    } while (0)
    LOAD(init, "nvmlInit_v2");
    LOAD(g->nv.shutdown, "nvmlShutdown");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(handle, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(name, "nvmlDeviceGetName");
    LOAD(uuid, "nvmlDeviceGetUUID");
    LOAD(g->nv.mem, "nvmlDeviceGetMemoryInfo");
    LOAD(cc, "nvmlDeviceGetCudaComputeCapability");
    LOAD(g->nv.util, "nvmlDeviceGetUtilizationRates");
    LOAD(p2p, "nvmlDeviceGetP2PStatus");
#undef LOAD
    if (init == NULL || g->nv.shutdown == NULL || count == NULL || handle == NULL || init() != 0) {
        LOG_WARN("gpu", "nvml init failed", "");
        dlclose(lib);
        memset(&g->nv, 0, sizeof(g->nv));
        return;
    }
    g->nv.lib = lib;
    if (count(&n) != 0 || n == 0)
        return;
    if (n > WRK_MAX_GPUS)
        n = WRK_MAX_GPUS;
    g->info = calloc(n, sizeof(*g->info));
    g->dev = calloc(n, sizeof(*g->dev));
    if (g->info == NULL || g->dev == NULL)
        return;
    for (unsigned int i = 0; i < n; i++) {
        struct wrk_gpu_info *gi = &g->info[i];
        struct nvml_memory m;
        int major = 0, minor = 0;
        gi->index = (int)i;
        if (handle(i, &g->dev[i]) != 0) {
            g->dev[i] = NULL;
            continue;
        }
        if (name == NULL || name(g->dev[i], gi->model, sizeof(gi->model)) != 0)
            snprintf(gi->model, sizeof(gi->model), "unknown");
        if (uuid == NULL || uuid(g->dev[i], gi->uuid, sizeof(gi->uuid)) != 0)
            snprintf(gi->uuid, sizeof(gi->uuid), "GPU-unknown-%u", i);
        if (g->nv.mem != NULL && g->nv.mem(g->dev[i], &m) == 0)
            gi->memory_mb = (int64_t)(m.total / (1024 * 1024));
        if (cc != NULL && cc(g->dev[i], &major, &minor) == 0)
            snprintf(gi->compute_capability, sizeof(gi->compute_capability), "%d.%d", major, minor);
    }
    g->count = (int)n;
    for (int i = 0; i < g->count && p2p != NULL; i++) {
        for (int j = 0; j < g->count; j++) {
            int st = -1;
            if (i == j || g->dev[i] == NULL || g->dev[j] == NULL)
                continue;
            if (p2p(g->dev[i], g->dev[j], NVML_P2P_CAPS_INDEX_NVLINK, &st) == 0 &&
                st == NVML_P2P_STATUS_OK)
                g->info[i].nvlink_peers[g->info[i].npeers++] = j;
        }
    }
    LOG_INFO("gpu", "nvml gpus found", "count=%d model=\"%s\"", g->count, g->info[0].model);
}

enum rc wrk_gpus_open(const struct wrk_fake_spec *fake, const char *node_name,
                      struct wrk_gpus **out)
{
    struct wrk_gpus *g = calloc(1, sizeof(*g));

    *out = NULL;
    if (g == NULL)
        return RC_ENOMEM;
    if (fake != NULL) {
        g->fake = 1;
        if (fake->count > 0) {
            g->info = calloc((size_t)fake->count, sizeof(*g->info));
            if (g->info == NULL) {
                free(g);
                return RC_ENOMEM;
            }
        }
        g->count = fake->count;
        fake_fill(g, fake, node_name);
    } else {
        nvml_open(g);
    }
    *out = g;
    return RC_OK;
}

void wrk_gpus_free(struct wrk_gpus *g)
{
    if (g == NULL)
        return;
    if (g->nv.lib != NULL) {
        g->nv.shutdown();
        dlclose(g->nv.lib);
    }
    free(g->info);
    free(g->dev);
    free(g);
}

int wrk_gpus_count(const struct wrk_gpus *g)
{
    return g == NULL ? 0 : g->count;
}

const struct wrk_gpu_info *wrk_gpus_get(const struct wrk_gpus *g, int i)
{
    return (g == NULL || i < 0 || i >= g->count) ? NULL : &g->info[i];
}

void wrk_gpus_sample(struct wrk_gpus *g, int (*busy)(void *ctx, int index), void *ctx)
{
    for (int i = 0; g != NULL && i < g->count; i++) {
        struct wrk_gpu_info *gi = &g->info[i];
        if (g->fake) {
            int b = busy != NULL && busy(ctx, i);
            gi->util_pct = b ? 100 : 0;
            gi->mem_used_mb = b ? gi->memory_mb / 2 : 0;
            continue;
        }
        if (g->dev == NULL || g->dev[i] == NULL)
            continue;
        struct nvml_util u;
        struct nvml_memory m;
        if (g->nv.util != NULL && g->nv.util(g->dev[i], &u) == 0)
            gi->util_pct = (int)u.gpu;
        if (g->nv.mem != NULL && g->nv.mem(g->dev[i], &m) == 0)
            gi->mem_used_mb = (int64_t)(m.used / (1024 * 1024));
    }
}

json_t *wrk_gpus_register_json(const struct wrk_gpus *g)
{
    json_t *arr = json_array();
    for (int i = 0; arr != NULL && g != NULL && i < g->count; i++) {
        const struct wrk_gpu_info *gi = &g->info[i];
        json_t *peers = json_array();
        for (int j = 0; peers != NULL && j < gi->npeers; j++)
            json_array_append_new(peers, json_integer(gi->nvlink_peers[j]));
        json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:s, s:o*}", "index", gi->index, "uuid",
                              gi->uuid, "model", gi->model, "memory_mb", (json_int_t)gi->memory_mb,
                              "compute_capability", gi->compute_capability, "nvlink_peers", peers);
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *wrk_gpus_heartbeat_json(const struct wrk_gpus *g)
{
    json_t *arr = json_array();
    for (int i = 0; arr != NULL && g != NULL && i < g->count; i++) {
        const struct wrk_gpu_info *gi = &g->info[i];
        json_t *o = json_pack("{s:i, s:i, s:I}", "index", gi->index, "util_pct", gi->util_pct,
                              "mem_used_mb", (json_int_t)gi->mem_used_mb);
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

int wrk_host_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int64_t wrk_host_memory_mb(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    int64_t mb = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        long long kb;
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) {
            mb = kb / 1024;
            break;
        }
    }
    fclose(f);
    return mb;
}
