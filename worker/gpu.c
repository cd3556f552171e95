/*
 * gpu.c - GPU discovery through NVML opened with dlopen("libnvidia-ml.so.1"),
 * or fake GPUs for development and CI.
 *
 * Only the few NVML entry points used are declared here, with the ABI of
 * nvml.h (stable since CUDA 10). Anything missing or failing degrades to "no
 * GPU" or "no NVLink peers": discovery is best effort and never fatal.
 * NVLink peers: nvmlDeviceGetP2PStatus(NVLINK) between each pair, which also
 * covers NVSwitch systems (the remote end of a link there is the switch).
 *
 * The path between two GPUs (wrk_gpu_info.path) follows nvidia-smi topo -m:
 * "NV<n>" when n active links of GPU i end at GPU j (their remote PCI
 * address), or, through an NVSwitch (the links end at the switch but P2P over
 * NVLink works), NV<all active links of i>; otherwise the PCIe level of the
 * pair's common ancestor (nvmlDeviceGetTopologyCommonAncestor). Per-process
 * memory uses nvmlDeviceGetComputeRunningProcesses_v3 (or _v2, the same
 * struct); the unversioned call has a shorter struct and is not used.
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
struct nvml_pci { /* nvmlPciInfo_t (_v3 of nvmlDeviceGetPciInfo) */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
struct nvml_proc { /* nvmlProcessInfo_t of the _v2/_v3 calls */
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
};
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0
#define NVML_NVLINK_MAX_LINKS 18 /* 12 before Hopper; asking past the end just fails */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define PROC_MAX 1024 /* compute processes read per GPU */

typedef nvml_ret_t (*nvml_void_fn)(void);
typedef nvml_ret_t (*nvml_count_fn)(unsigned int *);
typedef nvml_ret_t (*nvml_handle_fn)(unsigned int, nvml_device_t *);
typedef nvml_ret_t (*nvml_str_fn)(nvml_device_t, char *, unsigned int);
typedef nvml_ret_t (*nvml_mem_fn)(nvml_device_t, struct nvml_memory *);
typedef nvml_ret_t (*nvml_cc_fn)(nvml_device_t, int *, int *);
typedef nvml_ret_t (*nvml_util_fn)(nvml_device_t, struct nvml_util *);
typedef nvml_ret_t (*nvml_p2p_fn)(nvml_device_t, nvml_device_t, int, int *);
typedef nvml_ret_t (*nvml_pci_fn)(nvml_device_t, struct nvml_pci *);
typedef nvml_ret_t (*nvml_uint_fn)(nvml_device_t, unsigned int *);
typedef nvml_ret_t (*nvml_link_state_fn)(nvml_device_t, unsigned int, int *);
typedef nvml_ret_t (*nvml_link_pci_fn)(nvml_device_t, unsigned int, struct nvml_pci *);
typedef nvml_ret_t (*nvml_ancestor_fn)(nvml_device_t, nvml_device_t, int *);
typedef nvml_ret_t (*nvml_procs_fn)(nvml_device_t, unsigned int *, struct nvml_proc *);

struct nvml {
    void *lib;
    nvml_void_fn shutdown;
    nvml_mem_fn mem;
    nvml_util_fn util;
    nvml_procs_fn procs; /* NULL: the driver has neither _v3 nor _v2 */
};

struct wrk_gpus {
    int count;
    int fake;
    int topo;                  /* the info carries a topology (NVML, or wrk_gpus_from_info) */
    struct wrk_gpu_info *info; /* count entries */
    nvml_device_t *dev;        /* NVML handles, count entries; NULL when fake */
    struct nvml nv;
    struct nvml_proc *procbuf; /* PROC_MAX entries, for wrk_gpus_proc_mem(); owned */
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

const char *wrk_gpu_level_name(int nvml_level)
{
    switch (nvml_level) {
    case 10: /* NVML_TOPOLOGY_SINGLE: one PCIe switch */
        return "PIX";
    case 20: /* NVML_TOPOLOGY_MULTIPLE: several PCIe switches, no host bridge */
        return "PXB";
    case 30: /* NVML_TOPOLOGY_HOSTBRIDGE */
        return "PHB";
    case 40: /* NVML_TOPOLOGY_NODE: host bridges of one NUMA node */
        return "NODE";
    case 50: /* NVML_TOPOLOGY_SYSTEM: across NUMA nodes (SMP interconnect) */
        return "SYS";
    default:
        return "";
    }
}

struct nvml_topo_fns {
    nvml_pci_fn pci;
    nvml_uint_fn gen, width, max_gen, max_width;
    nvml_link_state_fn link_state;
    nvml_link_pci_fn link_pci;
    nvml_ancestor_fn ancestor;
};

static int same_pci(const struct nvml_pci *a, const struct nvml_pci *b)
{
    return a->domain == b->domain && a->bus == b->bus && a->device == b->device;
}

static int is_peer(const struct wrk_gpu_info *gi, int j)
{
    for (int k = 0; k < gi->npeers; k++)
        if (gi->nvlink_peers[k] == j)
            return 1;
    return 0;
}

/* PCIe links, NVLink counts and the path matrix; a missing entry point leaves its fields unknown.
 */
static void nvml_topology(struct wrk_gpus *g, const struct nvml_topo_fns *f)
{
    struct nvml_pci *pci = calloc((size_t)g->count, sizeof(*pci));
    /* remote[i][l]: the PCI address at the far end of GPU i's active link l */
    struct nvml_pci(*remote)[NVML_NVLINK_MAX_LINKS] = calloc((size_t)g->count, sizeof(*remote));
    unsigned char(*active)[NVML_NVLINK_MAX_LINKS] = calloc((size_t)g->count, sizeof(*active));

    if (pci == NULL || remote == NULL || active == NULL)
        goto out;
    for (int i = 0; i < g->count; i++) {
        struct wrk_gpu_info *gi = &g->info[i];
        nvml_device_t d = g->dev[i];
        unsigned int v;
        if (d == NULL)
            continue;
        if (f->pci != NULL && f->pci(d, &pci[i]) == 0) {
            pci[i].bus_id[sizeof(pci[i].bus_id) - 1] = '\0';
            snprintf(gi->bus_id, sizeof(gi->bus_id), "%s", pci[i].bus_id);
            for (const char *c = gi->bus_id; *c; c++)
                if (!isprint((unsigned char)*c)) {
                    gi->bus_id[0] = '\0'; /* the server takes printable text only */
                    break;
                }
        }
        if (f->gen != NULL && f->gen(d, &v) == 0 && v < 100)
            gi->pcie_gen = (int)v;
        if (f->width != NULL && f->width(d, &v) == 0 && v < 100)
            gi->pcie_width = (int)v;
        if (f->max_gen != NULL && f->max_gen(d, &v) == 0 && v < 100)
            gi->pcie_max_gen = (int)v;
        if (f->max_width != NULL && f->max_width(d, &v) == 0 && v < 100)
            gi->pcie_max_width = (int)v;
        for (unsigned int l = 0; f->link_state != NULL && l < NVML_NVLINK_MAX_LINKS; l++) {
            int on = 0;
            if (f->link_state(d, l, &on) != 0 || on != 1)
                continue;
            gi->nvlinks++;
            active[i][l] = f->link_pci != NULL && f->link_pci(d, l, &remote[i][l]) == 0;
        }
    }
    for (int i = 0; i < g->count; i++) {
        struct wrk_gpu_info *gi = &g->info[i];
        for (int j = 0; j < g->count; j++) {
            int links = 0, level = -1;
            if (i == j) {
                snprintf(gi->path[j], sizeof(gi->path[j]), "X");
                continue;
            }
            for (int l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
                links += active[i][l] && same_pci(&remote[i][l], &pci[j]);
            if (links == 0 && is_peer(gi, j))
                links = gi->nvlinks; /* through an NVSwitch */
            if (links > 0)
                snprintf(gi->path[j], sizeof(gi->path[j]), "NV%d", links);
            else if (f->ancestor != NULL && g->dev[i] != NULL && g->dev[j] != NULL &&
                     f->ancestor(g->dev[i], g->dev[j], &level) == 0)
                snprintf(gi->path[j], sizeof(gi->path[j]), "%s", wrk_gpu_level_name(level));
        }
    }
    g->topo = 1;
out:
    free(pci);
    free(remote);
    free(active);
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
    struct nvml_topo_fns tf;

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
    LOAD(tf.pci, "nvmlDeviceGetPciInfo_v3");
    LOAD(tf.gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    LOAD(tf.width, "nvmlDeviceGetCurrPcieLinkWidth");
    LOAD(tf.max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    LOAD(tf.max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    LOAD(tf.link_state, "nvmlDeviceGetNvLinkState");
    LOAD(tf.link_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    LOAD(tf.ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    LOAD(g->nv.procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (g->nv.procs == NULL)
        LOAD(g->nv.procs, "nvmlDeviceGetComputeRunningProcesses_v2");
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
    nvml_topology(g, &tf);
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
    free(g->procbuf);
    free(g);
}

enum rc wrk_gpus_from_info(const struct wrk_gpu_info *info, int n, struct wrk_gpus **out)
{
    struct wrk_gpus *g = calloc(1, sizeof(*g));

    *out = NULL;
    if (g == NULL || n < 0 || n > WRK_MAX_GPUS)
        goto fail;
    if (n > 0 && (g->info = calloc((size_t)n, sizeof(*g->info))) == NULL)
        goto fail;
    if (n > 0)
        memcpy(g->info, info, (size_t)n * sizeof(*info));
    g->count = n;
    g->topo = 1;
    *out = g;
    return RC_OK;
fail:
    free(g);
    return RC_ENOMEM;
}

json_t *wrk_gpus_interconnect_json(const struct wrk_gpus *g)
{
    json_t *o = json_object(), *gpus = NULL, *p2p = NULL;

    if (o == NULL || g == NULL || !g->topo || g->count == 0)
        return o;
    gpus = json_array();
    p2p = json_array();
    if (gpus == NULL || p2p == NULL)
        goto fail;
    for (int i = 0; i < g->count; i++) {
        const struct wrk_gpu_info *gi = &g->info[i];
        json_t *row = json_array();
        json_t *x =
            json_pack("{s:i, s:s, s:{s:i, s:i, s:i, s:i}, s:i}", "index", gi->index, "bus_id",
                      gi->bus_id, "pcie", "gen", gi->pcie_gen, "width", gi->pcie_width, "max_gen",
                      gi->pcie_max_gen, "max_width", gi->pcie_max_width, "nvlinks", gi->nvlinks);
        if (x == NULL || json_array_append_new(gpus, x) != 0 || row == NULL) {
            json_decref(row);
            goto fail;
        }
        for (int j = 0; j < g->count; j++)
            if (json_array_append_new(row, json_string(gi->path[j])) != 0) {
                json_decref(row);
                goto fail;
            }
        if (json_array_append_new(p2p, row) != 0)
            goto fail;
    }
    if (json_object_set_new(o, "gpus", gpus) != 0) {
        gpus = NULL;
        goto fail;
    }
    gpus = NULL;
    if (json_object_set_new(o, "p2p", p2p) != 0) {
        p2p = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(gpus);
    json_decref(p2p);
    json_decref(o);
    return NULL;
}

int wrk_gpus_proc_mem(struct wrk_gpus *g, struct wrk_proc_mem *out, size_t max)
{
    size_t n = 0;
    int ok = 0;

    if (g == NULL || g->fake || g->nv.procs == NULL || g->dev == NULL)
        return -1;
    if (g->procbuf == NULL && (g->procbuf = calloc(PROC_MAX, sizeof(*g->procbuf))) == NULL)
        return -1;
    for (int i = 0; i < g->count; i++) {
        unsigned int cnt = PROC_MAX;
        if (g->dev[i] == NULL || g->nv.procs(g->dev[i], &cnt, g->procbuf) != 0 || cnt > PROC_MAX)
            continue; /* also when over PROC_MAX processes use one GPU (INSUFFICIENT_SIZE) */
        ok = 1;
        for (unsigned int k = 0; k < cnt; k++) {
            const struct nvml_proc *p = &g->procbuf[k];
            size_t j;
            if (p->used == NVML_VALUE_NOT_AVAILABLE || p->pid == 0)
                continue;
            for (j = 0; j < n && out[j].pid != (pid_t)p->pid; j++) {
            }
            if (j == n) {
                if (n >= max)
                    continue;
                out[n].pid = (pid_t)p->pid;
                out[n].bytes = 0;
                n++;
            }
            out[j].bytes += p->used;
        }
    }
    return ok ? (int)n : -1;
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
