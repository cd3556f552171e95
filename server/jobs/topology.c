/*
 * topology.c - validators of a node's capabilities, interconnect and NCCL
 * probe (see topology.h). Fields are checked in a fixed order (unknown keys
 * first), so the same bad input always names the same field.
 */
#include "topology.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define F_MAX 96 /* longest field path: "interconnect.infiniband[31].link_layer" */

static enum rc bad(struct err *e, const char *field, const char *what)
{
    return err_set(e, RC_EINVAL, field, "%s %s", field, what);
}

static enum rc only_keys(const json_t *o, const char *const *allowed, const char *where,
                         struct err *e)
{
    const char *k;
    json_t *v;
    char f[F_MAX];

    json_object_foreach((json_t *)o, k, v)
    {
        size_t i;
        for (i = 0; allowed[i] != NULL && strcmp(allowed[i], k) != 0; i++) {
        }
        if (allowed[i] == NULL) {
            snprintf(f, sizeof(f), "%s.%.32s", where, k);
            return err_set(e, RC_EINVAL, f, "%s is not a known field", f);
        }
    }
    return RC_OK;
}

static int printable(const json_t *v, size_t min, size_t max)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);

    if (s == NULL || n < min || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)s[i]))
            return 0;
    return 1;
}

/* [A-Za-z0-9_.:@-]{min..max}: names that go into NCCL variables and reasons. */
static int plain(const json_t *v, size_t min, size_t max)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);

    if (s == NULL || n < min || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':' || c == '@'))
            return 0;
    }
    return 1;
}

static int int_in(const json_t *v, json_int_t lo, json_int_t hi)
{
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

static int num_in(const json_t *v, double lo, double hi)
{
    return json_is_number(v) && json_number_value(v) >= lo && json_number_value(v) <= hi;
}

/* ---- capabilities ---- */

enum rc topo_check_capabilities(const json_t *v, struct err *e)
{
    static const char *const keys[] = {"probe", "python", "torch",     "torch_cuda",
                                       "nccl",  "fsdp",   "deepspeed", NULL};
    static const char *const probes[] = {"ok", "failed", "timeout", "skipped", NULL};
    static const char *const flags[] = {"nccl", "fsdp", "deepspeed", NULL};
    const char *p;
    const json_t *x;
    enum rc rc;
    int known = 0;

    if (v == NULL)
        return RC_OK;
    if (!json_is_object(v))
        return bad(e, "capabilities", "must be an object");
    if ((rc = only_keys(v, keys, "capabilities", e)) != RC_OK)
        return rc;
    p = json_string_value(json_object_get(v, "probe"));
    for (size_t i = 0; p != NULL && probes[i] != NULL; i++)
        known |= strcmp(p, probes[i]) == 0;
    if (!known)
        return bad(e, "capabilities.probe", "must be ok, failed, timeout or skipped");
    if ((x = json_object_get(v, "python")) != NULL && !printable(x, 1, 32))
        return bad(e, "capabilities.python", "must be a printable string of 1..32 bytes");
    if ((x = json_object_get(v, "torch")) != NULL && !json_is_null(x) && !printable(x, 1, 64))
        return bad(e, "capabilities.torch", "must be a printable string of 1..64 bytes or null");
    if ((x = json_object_get(v, "torch_cuda")) != NULL && !json_is_null(x) && !printable(x, 1, 32))
        return bad(e, "capabilities.torch_cuda",
                   "must be a printable string of 1..32 bytes or null");
    for (size_t i = 0; flags[i] != NULL; i++) {
        char f[F_MAX];
        x = json_object_get(v, flags[i]);
        if (x == NULL || json_is_boolean(x) ||
            (json_is_string(x) && strcmp(json_string_value(x), "unknown") == 0))
            continue;
        snprintf(f, sizeof(f), "capabilities.%s", flags[i]);
        return bad(e, f, "must be true, false or \"unknown\"");
    }
    return RC_OK;
}

/* ---- interconnect ---- */

static int valid_cidr(const char *s)
{
    char ip[64], *end = NULL;
    const char *slash = s != NULL ? strchr(s, '/') : NULL;
    unsigned char buf[16];
    size_t n;
    long plen;
    int fam;

    if (slash == NULL || (n = (size_t)(slash - s)) == 0 || n >= sizeof(ip))
        return 0;
    memcpy(ip, s, n);
    ip[n] = '\0';
    if (inet_pton(AF_INET, ip, buf) == 1)
        fam = AF_INET;
    else if (inet_pton(AF_INET6, ip, buf) == 1)
        fam = AF_INET6;
    else
        return 0;
    if (!isdigit((unsigned char)slash[1]))
        return 0;
    plen = strtol(slash + 1, &end, 10);
    return *end == '\0' && plen >= 0 && plen <= (fam == AF_INET ? 32 : 128);
}

static enum rc check_interfaces(const json_t *arr, struct err *e)
{
    static const char *const keys[] = {"name", "addrs",    "speed_mbps", "state",
                                       "mtu",  "loopback", NULL};
    char f[F_MAX];
    size_t i, k;
    const json_t *x, *a;
    enum rc rc;

    if (!json_is_array(arr) || json_array_size(arr) > 32)
        return bad(e, "interconnect.interfaces", "must be an array of at most 32 interfaces");
    json_array_foreach(arr, i, x)
    {
        const json_t *addrs = json_object_get(x, "addrs"), *y;
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu]", i);
        if (!json_is_object(x))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(x, keys, f, e)) != RC_OK)
            return rc;
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].name", i);
        if (!plain(json_object_get(x, "name"), 1, 31))
            return bad(e, f, "must be 1..31 characters of A-Z a-z 0-9 _ . : @ -");
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].addrs", i);
        if (addrs != NULL && (!json_is_array(addrs) || json_array_size(addrs) > 8))
            return bad(e, f, "must be an array of at most 8 addresses");
        json_array_foreach(addrs, k, a)
        {
            if (!valid_cidr(json_string_value(a))) {
                snprintf(f, sizeof(f), "interconnect.interfaces[%zu].addrs[%zu]", i, k);
                return bad(e, f, "must be an address with its prefix length, like 10.0.0.7/24");
            }
        }
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].speed_mbps", i);
        if ((y = json_object_get(x, "speed_mbps")) != NULL && !json_is_null(y) &&
            !int_in(y, 1, 10000000))
            return bad(e, f, "must be 1..10000000 or null");
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].state", i);
        if ((y = json_object_get(x, "state")) != NULL && !plain(y, 0, 15))
            return bad(e, f, "must be a word of at most 15 characters");
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].mtu", i);
        if ((y = json_object_get(x, "mtu")) != NULL && !json_is_null(y) && !int_in(y, 1, 1 << 20))
            return bad(e, f, "must be 1..1048576 or null");
        snprintf(f, sizeof(f), "interconnect.interfaces[%zu].loopback", i);
        if ((y = json_object_get(x, "loopback")) != NULL && !json_is_boolean(y))
            return bad(e, f, "must be a boolean");
    }
    return RC_OK;
}

static enum rc check_infiniband(const json_t *arr, struct err *e)
{
    static const char *const keys[] = {"hca", "port", "state", "rate_gbps", "link_layer", NULL};
    char f[F_MAX];
    size_t i;
    const json_t *x, *y;
    enum rc rc;

    if (!json_is_array(arr) || json_array_size(arr) > 32)
        return bad(e, "interconnect.infiniband", "must be an array of at most 32 ports");
    json_array_foreach(arr, i, x)
    {
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu]", i);
        if (!json_is_object(x))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(x, keys, f, e)) != RC_OK)
            return rc;
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu].hca", i);
        if (!plain(json_object_get(x, "hca"), 1, 31))
            return bad(e, f, "must be 1..31 characters of A-Z a-z 0-9 _ . : @ -");
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu].port", i);
        if (!int_in(json_object_get(x, "port"), 1, 255))
            return bad(e, f, "must be 1..255");
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu].state", i);
        if ((y = json_object_get(x, "state")) != NULL && !plain(y, 0, 15))
            return bad(e, f, "must be a word of at most 15 characters");
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu].rate_gbps", i);
        if ((y = json_object_get(x, "rate_gbps")) != NULL && !num_in(y, 0, 100000))
            return bad(e, f, "must be a number 0..100000");
        snprintf(f, sizeof(f), "interconnect.infiniband[%zu].link_layer", i);
        if ((y = json_object_get(x, "link_layer")) != NULL && !plain(y, 0, 15))
            return bad(e, f, "must be a word of at most 15 characters");
    }
    return RC_OK;
}

static enum rc check_gpus(const json_t *arr, struct err *e)
{
    static const char *const keys[] = {"index", "bus_id", "pcie", "nvlinks", NULL};
    static const char *const pkeys[] = {"gen", "width", "max_gen", "max_width", NULL};
    char f[F_MAX];
    size_t i;
    const json_t *x, *y;
    enum rc rc;

    if (!json_is_array(arr) || json_array_size(arr) > 64)
        return bad(e, "interconnect.gpus", "must be an array of at most 64 GPUs");
    json_array_foreach(arr, i, x)
    {
        snprintf(f, sizeof(f), "interconnect.gpus[%zu]", i);
        if (!json_is_object(x))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(x, keys, f, e)) != RC_OK)
            return rc;
        snprintf(f, sizeof(f), "interconnect.gpus[%zu].index", i);
        if (!int_in(json_object_get(x, "index"), 0, 63))
            return bad(e, f, "must be 0..63");
        snprintf(f, sizeof(f), "interconnect.gpus[%zu].bus_id", i);
        if ((y = json_object_get(x, "bus_id")) != NULL && !printable(y, 0, 31))
            return bad(e, f, "must be a printable string of at most 31 bytes");
        snprintf(f, sizeof(f), "interconnect.gpus[%zu].nvlinks", i);
        if ((y = json_object_get(x, "nvlinks")) != NULL && !int_in(y, 0, 64))
            return bad(e, f, "must be 0..64");
        snprintf(f, sizeof(f), "interconnect.gpus[%zu].pcie", i);
        if ((y = json_object_get(x, "pcie")) == NULL)
            continue;
        if (!json_is_object(y))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(y, pkeys, f, e)) != RC_OK)
            return rc;
        for (size_t k = 0; pkeys[k] != NULL; k++) {
            const json_t *z = json_object_get(y, pkeys[k]);
            if (z != NULL && !int_in(z, 0, 99)) {
                snprintf(f, sizeof(f), "interconnect.gpus[%zu].pcie.%s", i, pkeys[k]);
                return bad(e, f, "must be 0..99");
            }
        }
    }
    return RC_OK;
}

static int valid_path(const char *s)
{
    static const char *const names[] = {"", "X", "PIX", "PXB", "PHB", "NODE", "SYS", NULL};
    char *end = NULL;
    long n;

    if (s == NULL)
        return 0;
    for (size_t i = 0; names[i] != NULL; i++)
        if (strcmp(s, names[i]) == 0)
            return 1;
    if (strncmp(s, "NV", 2) != 0 || !isdigit((unsigned char)s[2]) || s[2] == '0')
        return 0;
    n = strtol(s + 2, &end, 10);
    return *end == '\0' && n >= 1 && n <= 64;
}

static enum rc check_p2p(const json_t *m, struct err *e)
{
    char f[F_MAX];
    size_t i, j, n = json_array_size(m);
    const json_t *row, *x;

    if (!json_is_array(m) || n > 64)
        return bad(e, "interconnect.p2p", "must be a square matrix of at most 64 rows");
    json_array_foreach(m, i, row)
    {
        snprintf(f, sizeof(f), "interconnect.p2p[%zu]", i);
        if (!json_is_array(row) || json_array_size(row) != n)
            return bad(e, f, "must be a row as long as the matrix is high");
        json_array_foreach(row, j, x)
        {
            if (!valid_path(json_string_value(x))) {
                snprintf(f, sizeof(f), "interconnect.p2p[%zu][%zu]", i, j);
                return bad(e, f, "must be X, PIX, PXB, PHB, NODE, SYS, NV1..NV64 or \"\"");
            }
        }
    }
    return RC_OK;
}

enum rc topo_check_interconnect(const json_t *v, struct err *e)
{
    static const char *const keys[] = {"interfaces", "infiniband", "gpus", "p2p", NULL};
    const json_t *x;
    enum rc rc;

    if (v == NULL)
        return RC_OK;
    if (!json_is_object(v))
        return bad(e, "interconnect", "must be an object");
    if ((rc = only_keys(v, keys, "interconnect", e)) != RC_OK)
        return rc;
    if ((x = json_object_get(v, "interfaces")) != NULL && (rc = check_interfaces(x, e)) != RC_OK)
        return rc;
    if ((x = json_object_get(v, "infiniband")) != NULL && (rc = check_infiniband(x, e)) != RC_OK)
        return rc;
    if ((x = json_object_get(v, "gpus")) != NULL && (rc = check_gpus(x, e)) != RC_OK)
        return rc;
    if ((x = json_object_get(v, "p2p")) != NULL && (rc = check_p2p(x, e)) != RC_OK)
        return rc;
    return RC_OK;
}

/* ---- nccl_probe ---- */

static enum rc check_results(const json_t *res, const char *where, struct err *e)
{
    static const char *const keys[] = {"bytes", "time_us", "algbw_gbs", "busbw_gbs", NULL};
    char f[F_MAX];
    size_t i;
    const json_t *p;
    enum rc rc;

    snprintf(f, sizeof(f), "%s.results", where);
    if (!json_is_array(res) || json_array_size(res) == 0 || json_array_size(res) > 64)
        return bad(e, f, "must be an array of 1..64 measurements");
    json_array_foreach(res, i, p)
    {
        snprintf(f, sizeof(f), "%s.results[%zu]", where, i);
        if (!json_is_object(p))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(p, keys, f, e)) != RC_OK)
            return rc;
        if (!int_in(json_object_get(p, "bytes"), 1, (json_int_t)1 << 40) ||
            !num_in(json_object_get(p, "time_us"), 0, 1e12) ||
            !num_in(json_object_get(p, "algbw_gbs"), 0, 1e6) ||
            !num_in(json_object_get(p, "busbw_gbs"), 0, 1e6))
            return bad(e, f,
                       "needs bytes 1..2^40 and time_us, algbw_gbs, busbw_gbs as numbers >= 0");
    }
    return RC_OK;
}

static int known_env(const char *k, const char *v)
{
    static const char *const algos[] = {"Ring", "Tree",     "CollnetDirect", "CollnetChain",
                                        "NVLS", "NVLSTree", "PAT",           NULL};
    static const char *const protos[] = {"LL", "LL128", "Simple", NULL};
    const char *const *set = strcmp(k, "NCCL_ALGO") == 0    ? algos
                             : strcmp(k, "NCCL_PROTO") == 0 ? protos
                                                            : NULL;
    for (size_t i = 0; v != NULL && set != NULL && set[i] != NULL; i++)
        if (strcmp(v, set[i]) == 0)
            return 1;
    return 0;
}

enum rc topo_check_nccl_probe(const json_t *v, struct err *e)
{
    static const char *const keys[] = {"version", "op",    "dtype",   "gpus",     "nccl_version",
                                       "warmup",  "iters", "results", "variants", NULL};
    static const char *const vkeys[] = {"env", "results", NULL};
    const json_t *vars, *x;
    const char *op;
    char f[F_MAX];
    size_t i;
    enum rc rc;

    if (v == NULL || json_is_null(v))
        return RC_OK;
    if (!json_is_object(v))
        return bad(e, "nccl_probe", "must be an object or null");
    if ((rc = only_keys(v, keys, "nccl_probe", e)) != RC_OK)
        return rc;
    if (!int_in(json_object_get(v, "version"), 1, 1))
        return bad(e, "nccl_probe.version", "must be 1");
    op = json_string_value(json_object_get(v, "op"));
    if (op == NULL || strcmp(op, "all_reduce") != 0)
        return bad(e, "nccl_probe.op", "must be all_reduce");
    if (!plain(json_object_get(v, "dtype"), 1, 16))
        return bad(e, "nccl_probe.dtype", "must be a word of 1..16 characters");
    if (!int_in(json_object_get(v, "gpus"), 1, 64))
        return bad(e, "nccl_probe.gpus", "must be 1..64");
    if (!int_in(json_object_get(v, "nccl_version"), 0, 1000000))
        return bad(e, "nccl_probe.nccl_version", "must be 0..1000000");
    if (!int_in(json_object_get(v, "warmup"), 0, 100000))
        return bad(e, "nccl_probe.warmup", "must be 0..100000");
    if (!int_in(json_object_get(v, "iters"), 1, 100000))
        return bad(e, "nccl_probe.iters", "must be 1..100000");
    if ((rc = check_results(json_object_get(v, "results"), "nccl_probe", e)) != RC_OK)
        return rc;
    vars = json_object_get(v, "variants");
    if (vars != NULL && (!json_is_array(vars) || json_array_size(vars) > 8))
        return bad(e, "nccl_probe.variants", "must be an array of at most 8 variants");
    json_array_foreach(vars, i, x)
    {
        const json_t *env = json_object_get(x, "env"), *ev;
        const char *ek;
        snprintf(f, sizeof(f), "nccl_probe.variants[%zu]", i);
        if (!json_is_object(x))
            return bad(e, f, "must be an object");
        if ((rc = only_keys(x, vkeys, f, e)) != RC_OK)
            return rc;
        snprintf(f, sizeof(f), "nccl_probe.variants[%zu].env", i);
        if (!json_is_object(env) || json_object_size(env) < 1 || json_object_size(env) > 2)
            return bad(e, f, "must be an object of 1..2 variables");
        json_object_foreach((json_t *)env, ek, ev)
        {
            if (!known_env(ek, json_string_value(ev)))
                return bad(e, f, "may only force NCCL_ALGO or NCCL_PROTO to one of NCCL's values");
        }
        snprintf(f, sizeof(f), "nccl_probe.variants[%zu]", i);
        if ((rc = check_results(json_object_get(x, "results"), f, e)) != RC_OK)
            return rc;
    }
    return RC_OK;
}
