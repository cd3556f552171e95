/*
 * nccl_env.c - NCCL and gloo settings from the reported interconnect (see
 * nccl_env.h).
 *
 * Every variable ends with a value or none, and always with a reason in
 * English and Chinese; the user's own env is applied last, over whatever was
 * derived. Names embedded in reasons (interfaces, HCAs, nodes) were checked
 * at register to be plain ([A-Za-z0-9_.:@-]) and short.
 */
#include "nccl_env.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

enum { V_NCCL_IF, V_GLOO_IF, V_IB_HCA, V_IB_DISABLE, V_P2P, V_ALGO, V_PROTO, V_COUNT };

static const char *const NAMES[V_COUNT] = {
    "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_DISABLE",
    "NCCL_P2P_LEVEL",     "NCCL_ALGO",          "NCCL_PROTO",
};

/* A variable whose group partner the user set is not derived either. */
static const int PARTNER[V_COUNT] = {-1, -1, V_IB_DISABLE, V_IB_HCA, -1, V_PROTO, V_ALGO};

struct var {
    int set;         /* value holds a derived value */
    int user;        /* the job's env sets it */
    char value[512]; /* derived value, or the user's */
    char en[512];    /* reason */
    char zh[512];
};

#define REASON(v, ...) snprintf((v)->en, sizeof((v)->en), __VA_ARGS__)
#define REASON_ZH(v, ...) snprintf((v)->zh, sizeof((v)->zh), __VA_ARGS__)

/* ---- addresses ---- */

struct ip {
    int fam; /* AF_INET or AF_INET6 */
    unsigned char b[16];
};

static int parse_ip(const char *s, struct ip *ip)
{
    memset(ip, 0, sizeof(*ip));
    if (s == NULL)
        return 0;
    if (inet_pton(AF_INET, s, ip->b) == 1) {
        ip->fam = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, s, ip->b) == 1) {
        ip->fam = AF_INET6;
        return 1;
    }
    return 0;
}

/* "10.0.0.7/24" -> address and prefix length. */
static int parse_cidr(const char *s, struct ip *ip, int *plen)
{
    char buf[64];
    const char *slash = s != NULL ? strchr(s, '/') : NULL;
    size_t n;

    if (slash == NULL || (n = (size_t)(slash - s)) >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!parse_ip(buf, ip))
        return 0;
    if (sscanf(slash + 1, "%d", plen) != 1 || *plen < 0 || *plen > (ip->fam == AF_INET ? 32 : 128))
        return 0;
    return 1;
}

static int same_prefix(const struct ip *a, const struct ip *b, int plen)
{
    if (a->fam != b->fam)
        return 0;
    for (int i = 0; i < plen; i++) {
        int m = 0x80 >> (i % 8);
        if ((a->b[i / 8] & m) != (b->b[i / 8] & m))
            return 0;
    }
    return 1;
}

/* ---- NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME ---- */

struct if_match {
    const char *name; /* borrowed from the node's JSON */
    const char *addr; /* the matching address, "10.0.0.8/24" */
    int plen;
};

/*
 * The interface of node that holds target exactly (exact), else, when
 * subnet, the one whose subnet holds it with the longest prefix. Loopback
 * interfaces match only exactly.
 */
static int find_if(const json_t *node, const struct ip *target, int subnet, struct if_match *m)
{
    const json_t *ifs = json_object_get(json_object_get(node, "interconnect"), "interfaces"), *i;
    size_t k;
    int found = 0;

    json_array_foreach(ifs, k, i)
    {
        const json_t *addrs = json_object_get(i, "addrs"), *a;
        const char *name = json_string_value(json_object_get(i, "name"));
        size_t x;
        if (name == NULL)
            continue;
        json_array_foreach(addrs, x, a)
        {
            struct ip ip;
            int plen;
            if (!parse_cidr(json_string_value(a), &ip, &plen))
                continue;
            if (!subnet && same_prefix(&ip, target, ip.fam == AF_INET ? 32 : 128)) {
                m->name = name;
                m->addr = json_string_value(a);
                m->plen = plen;
                return 1;
            }
            if (subnet && !json_is_true(json_object_get(i, "loopback")) &&
                same_prefix(&ip, target, plen) && (!found || plen > m->plen)) {
                m->name = name;
                m->addr = json_string_value(a);
                m->plen = plen;
                found = 1;
            }
        }
    }
    return found;
}

static void derive_ifname(const char *master, const json_t *me, struct var *v)
{
    const char *own = json_string_value(json_object_get(me, "addr"));
    struct ip target, self_ip;
    struct if_match m;
    struct var *n = &v[V_NCCL_IF];

    memset(&m, 0, sizeof(m));
    if (!parse_ip(master, &target)) {
        REASON(n,
               "the rendezvous address \"%.64s\" is not an IP address: NCCL and gloo choose "
               "the interface themselves",
               master ? master : "");
        REASON_ZH(n, "汇合地址“%.64s”不是 IP 地址：由 NCCL 和 gloo 自行选择网卡",
                  master ? master : "");
    } else if (find_if(me, &target, 0, &m)) {
        n->set = 1;
        REASON(n, "interface %s holds the rendezvous address %s (rank 0 listens there)", m.name,
               master);
        REASON_ZH(n, "网卡 %s 持有汇合地址 %s（rank 0 在此监听）", m.name, master);
    } else if (find_if(me, &target, 1, &m)) {
        n->set = 1;
        REASON(n, "interface %s (%s) is on the subnet of the rendezvous address %s", m.name, m.addr,
               master);
        REASON_ZH(n, "网卡 %s（%s）与汇合地址 %s 位于同一子网", m.name, m.addr, master);
    } else if (parse_ip(own, &self_ip) && find_if(me, &self_ip, 0, &m)) {
        n->set = 1;
        REASON(n,
               "no interface is on the subnet of the rendezvous address %s (it is routed); "
               "interface %s holds this node's address %s",
               master, m.name, own);
        REASON_ZH(n, "没有网卡与汇合地址 %s 位于同一子网（经路由到达）；网卡 %s 持有本节点地址 %s",
                  master, m.name, own);
    } else {
        REASON(n,
               "no interface of this node carries the rendezvous address %s or this node's "
               "address: NCCL and gloo choose one themselves",
               master);
        REASON_ZH(n, "本节点没有网卡承载汇合地址 %s 或本节点地址：由 NCCL 和 gloo 自行选择",
                  master);
    }
    v[V_GLOO_IF] = *n;
    if (n->set) {
        /* "=" makes NCCL match the name exactly: "eth0" alone would also take eth0.100 */
        snprintf(n->value, sizeof(n->value), "=%s", m.name);
        snprintf(v[V_GLOO_IF].value, sizeof(v[V_GLOO_IF].value), "%s", m.name);
    }
}

/* ---- NCCL_IB_HCA / NCCL_IB_DISABLE ---- */

/* The node's ACTIVE ports as "=hca:port,..." (list) and a readable form (desc). */
static int active_ports(const json_t *node, char *list, size_t lsize, char *desc, size_t dsize)
{
    const json_t *ib = json_object_get(json_object_get(node, "interconnect"), "infiniband"), *p;
    size_t k, lo = 0, dlen = 0;
    int n = 0;

    list[0] = desc[0] = '\0';
    json_array_foreach(ib, k, p)
    {
        const char *hca = json_string_value(json_object_get(p, "hca"));
        const char *st = json_string_value(json_object_get(p, "state"));
        const char *ll = json_string_value(json_object_get(p, "link_layer"));
        double rate = json_number_value(json_object_get(p, "rate_gbps"));
        int port = (int)json_integer_value(json_object_get(p, "port"));
        int w;
        if (hca == NULL || st == NULL || strcmp(st, "ACTIVE") != 0 || port < 1)
            continue;
        w = snprintf(list + lo, lsize - lo, "%s%s:%d", n ? "," : "=", hca, port);
        if (w < 0 || (size_t)w >= lsize - lo)
            break; /* the list is full: the ports named so far */
        lo += (size_t)w;
        if (dlen < dsize) {
            w = snprintf(desc + dlen, dsize - dlen, "%s%s:%d %.0f Gb/s%s", n ? ", " : "", hca, port,
                         rate, ll != NULL && strcmp(ll, "Ethernet") == 0 ? " RoCE" : "");
            dlen = w > 0 ? dlen + (size_t)w : dlen;
        }
        n++;
    }
    return n;
}

static void derive_ib(const json_t *nodes, const json_t *me, struct var *v)
{
    char list[400], desc[300], l2[400], d2[300];
    const char *lacking = NULL;
    struct var *hca = &v[V_IB_HCA], *dis = &v[V_IB_DISABLE];
    size_t k;
    const json_t *n;
    int mine = active_ports(me, list, sizeof(list), desc, sizeof(desc));

    json_array_foreach(nodes, k, n)
    {
        if (n != me && active_ports(n, l2, sizeof(l2), d2, sizeof(d2)) == 0 && lacking == NULL)
            lacking = json_string_value(json_object_get(n, "name"));
    }
    if (mine > 0 && lacking == NULL) {
        hca->set = 1;
        snprintf(hca->value, sizeof(hca->value), "%s", list);
        REASON(hca, "the active InfiniBand ports of this node (%s); every node of the job has one",
               desc);
        REASON_ZH(hca, "本节点处于 ACTIVE 状态的 InfiniBand 端口（%s）；作业的每个节点都有", desc);
        REASON(dis, "not set: InfiniBand is used");
        REASON_ZH(dis, "未设置：使用 InfiniBand");
        return;
    }
    dis->set = 1;
    snprintf(dis->value, sizeof(dis->value), "1");
    if (mine == 0) {
        REASON(dis, "this node has no active InfiniBand port: NCCL uses TCP sockets");
        REASON_ZH(dis, "本节点没有处于 ACTIVE 状态的 InfiniBand 端口：NCCL 使用 TCP 套接字");
    } else {
        REASON(dis,
               "node %.64s has no active InfiniBand port, and NCCL needs the same transport on "
               "every node: TCP sockets are used",
               lacking ? lacking : "?");
        REASON_ZH(dis,
                  "节点 %.64s 没有处于 ACTIVE 状态的 InfiniBand 端口，而 NCCL "
                  "要求所有节点使用相同的传输：改用 TCP 套接字",
                  lacking ? lacking : "?");
    }
    REASON(hca, "not set: InfiniBand is off (NCCL_IB_DISABLE)");
    REASON_ZH(hca, "未设置：InfiniBand 已关闭（NCCL_IB_DISABLE）");
}

/* ---- NCCL_P2P_LEVEL ---- */

/* 0 NVLink, 1 PIX, 2 PXB, 3 PHB, 4 NODE, 5 SYS; -1 unknown. */
static int path_rank(const char *s)
{
    static const char *const pcie[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    if (s == NULL)
        return -1;
    if (strncmp(s, "NV", 2) == 0 && s[2] >= '1' && s[2] <= '9')
        return 0;
    for (int i = 0; i < 5; i++)
        if (strcmp(s, pcie[i]) == 0)
            return i + 1;
    return -1;
}

static void derive_p2p(const json_t *me, struct var *v)
{
    const json_t *p2p = json_object_get(json_object_get(me, "interconnect"), "p2p");
    const json_t *gpus = json_object_get(me, "gpus");
    size_t n = json_array_size(gpus);
    int worst = 0, wi = -1, wj = -1;
    const char *wpath = "";

    if (n < 2) {
        REASON(v, "not set: the job has one GPU on this node, so no peer-to-peer traffic");
        REASON_ZH(v, "未设置：作业在本节点只有一块 GPU，没有点对点通信");
        return;
    }
    if (!json_is_array(p2p) || json_array_size(p2p) == 0) {
        REASON(v, "not set: this node reported no GPU topology (no NVML, or fake GPUs)");
        REASON_ZH(v, "未设置：本节点没有上报 GPU 拓扑（没有 NVML，或为模拟 GPU）");
        return;
    }
    for (size_t a = 0; a < n; a++) {
        for (size_t b = a + 1; b < n; b++) {
            json_int_t i = json_integer_value(json_array_get(gpus, a));
            json_int_t j = json_integer_value(json_array_get(gpus, b));
            const char *s =
                json_string_value(json_array_get(json_array_get(p2p, (size_t)i), (size_t)j));
            int r = path_rank(s);
            if (r < 0) {
                REASON(v, "not set: the path between GPU %lld and GPU %lld is unknown",
                       (long long)i, (long long)j);
                REASON_ZH(v, "未设置：GPU %lld 与 GPU %lld 之间的链路未知", (long long)i,
                          (long long)j);
                return;
            }
            if (r > worst || wi < 0) {
                worst = r > worst ? r : worst;
                wi = (int)i;
                wj = (int)j;
                wpath = s;
            }
        }
    }
    v->set = 1;
    if (worst == 0) {
        snprintf(v->value, sizeof(v->value), "NVL");
        REASON(v,
               "every pair of the job's %zu GPUs on this node is NVLink-connected: P2P over "
               "NVLink only",
               n);
        REASON_ZH(v, "作业在本节点的 %zu 块 GPU 两两之间都有 NVLink：点对点只走 NVLink", n);
    } else if (worst <= 2) {
        snprintf(v->value, sizeof(v->value), "PXB");
        REASON(v,
               "GPU %d and GPU %d are joined through PCIe switches (%s): P2P over NVLink and "
               "PCIe switches",
               wi, wj, wpath);
        REASON_ZH(v, "GPU %d 与 GPU %d 经 PCIe 交换机相连（%s）：点对点走 NVLink 和 PCIe 交换机",
                  wi, wj, wpath);
    } else {
        snprintf(v->value, sizeof(v->value), "PXB");
        REASON(v,
               "GPU %d and GPU %d meet only at the CPU (%s): P2P through the CPU is slow or hangs "
               "on many platforms, so it stays on NVLink and PCIe switches and such pairs go "
               "through host memory",
               wi, wj, wpath);
        REASON_ZH(
            v,
            "GPU %d 与 GPU %d 只在 CPU 处汇合（%s）：经 CPU 的点对点在许多平台上很慢或会挂起，"
            "因此只走 NVLink 和 PCIe 交换机，这样的 GPU 对经主机内存通信",
            wi, wj, wpath);
    }
}

/* ---- NCCL_ALGO / NCCL_PROTO ---- */

struct gain {
    const json_t *env; /* the variant's env object */
    double min_large;  /* smallest speed-up at >= 1 MiB, as a ratio */
    int ok;            /* qualifies */
};

static double algbw_at(const json_t *results, json_int_t bytes)
{
    size_t k;
    const json_t *p;

    json_array_foreach(results, k, p)
    {
        if (json_integer_value(json_object_get(p, "bytes")) == bytes)
            return json_number_value(json_object_get(p, "algbw_gbs"));
    }
    return 0;
}

static struct gain measure(const json_t *base, const json_t *variant)
{
    struct gain g = {json_object_get(variant, "env"), 0, 0};
    const json_t *res = json_object_get(variant, "results"), *p;
    double min_all = 1e300, min_large = 1e300;
    int large = 0;
    size_t k;

    json_array_foreach(res, k, p)
    {
        json_int_t bytes = json_integer_value(json_object_get(p, "bytes"));
        double b = algbw_at(base, bytes), x = json_number_value(json_object_get(p, "algbw_gbs"));
        if (b <= 0)
            continue;
        min_all = x / b < min_all ? x / b : min_all;
        if (bytes >= (json_int_t)NCCL_ENV_LARGE_BYTES) {
            large = 1;
            min_large = x / b < min_large ? x / b : min_large;
        }
    }
    g.min_large = large ? min_large : 0;
    g.ok = large && min_large >= 1.0 + NCCL_ENV_MIN_GAIN && min_all >= 1.0 - NCCL_ENV_MAX_LOSS;
    return g;
}

static void no_algo(struct var *v, const char *en, const char *zh)
{
    for (int i = V_ALGO; i <= V_PROTO; i++) {
        REASON(&v[i], "not set: %s", en);
        REASON_ZH(&v[i], "未设置：%s", zh);
    }
}

static void derive_algo(const json_t *nodes, const json_t *me, struct var *v)
{
    const json_t *probe = json_object_get(me, "nccl_probe"), *vars, *x;
    const json_t *base = json_object_get(probe, "results");
    json_int_t pg = json_integer_value(json_object_get(probe, "gpus"));
    size_t ngpus = json_array_size(json_object_get(me, "gpus")), k;
    struct gain best = {NULL, 0, 0};
    double best_of[2] = {0, 0}; /* per variable: the best qualifying gain */
    char en[160], zh[160];

    if (json_array_size(nodes) > 1) {
        no_algo(v, "the probe measures one node; across nodes NCCL's own choice is kept",
                "探测只测量单个节点；跨节点时沿用 NCCL 自己的选择");
        return;
    }
    if (!json_is_object(probe) || !json_is_array(base)) {
        no_algo(v, "no trainyard-nccl-probe results for this node",
                "本节点没有 trainyard-nccl-probe 结果");
        return;
    }
    if (pg != (json_int_t)ngpus) {
        snprintf(en, sizeof(en), "the probe ran on %lld GPUs, the job uses %zu on this node",
                 (long long)pg, ngpus);
        snprintf(zh, sizeof(zh), "探测使用了 %lld 块 GPU，作业在本节点使用 %zu 块", (long long)pg,
                 ngpus);
        no_algo(v, en, zh);
        return;
    }
    vars = json_object_get(probe, "variants");
    json_array_foreach(vars, k, x)
    {
        struct gain g = measure(base, x);
        const char *name;
        json_t *val;
        if (!g.ok)
            continue;
        json_object_foreach((json_t *)g.env, name, val)
        {
            int i = strcmp(name, "NCCL_ALGO") == 0 ? 0 : 1;
            best_of[i] = g.min_large > best_of[i] ? g.min_large : best_of[i];
        }
        if (g.min_large > best.min_large)
            best = g;
    }
    for (int i = V_ALGO; i <= V_PROTO; i++) {
        const char *val = json_string_value(json_object_get(best.env, NAMES[i]));
        if (best.env != NULL && val != NULL) {
            int pct = (int)((best.min_large - 1.0) * 100.0 + 1e-6); /* floor: "at least" */
            v[i].set = 1;
            snprintf(v[i].value, sizeof(v[i].value), "%s", val);
            REASON(&v[i],
                   "the probe on this node measured %s=%s at least %d %% faster than NCCL's own "
                   "choice for every all-reduce from 1 MiB up, and never more than %d %% slower",
                   NAMES[i], val, pct, (int)(NCCL_ENV_MAX_LOSS * 100));
            REASON_ZH(&v[i],
                      "本节点的探测测得 %s=%s 在 1 MiB 及以上的每个 all-reduce 上都比 NCCL "
                      "自己的选择快至少 %d%%，"
                      "且在任何大小上都不慢于 %d%%",
                      NAMES[i], val, pct, (int)(NCCL_ENV_MAX_LOSS * 100));
        } else if (best_of[i - V_ALGO] > 0) {
            REASON(&v[i],
                   "not set: a larger gain came from another variable, and the probe measures "
                   "variants one at a time");
            REASON_ZH(&v[i], "未设置：另一个变量的提升更大，而探测每次只测一个变体");
        } else {
            REASON(&v[i],
                   "not set: no %s the probe measured beat NCCL's own choice by %d %% at every "
                   "size from 1 MiB up",
                   NAMES[i], (int)(NCCL_ENV_MIN_GAIN * 100));
            REASON_ZH(&v[i],
                      "未设置：探测测得的 %s 变体都没有在 1 MiB 及以上的每个大小上比 NCCL "
                      "自己的选择快 %d%%",
                      NAMES[i], (int)(NCCL_ENV_MIN_GAIN * 100));
        }
    }
}

/* ---- the user's env, and the output ---- */

static void apply_user(const json_t *user_env, struct var *v)
{
    for (int i = 0; i < V_COUNT; i++) {
        const char *u = json_string_value(json_object_get(user_env, NAMES[i]));
        if (u == NULL)
            continue;
        v[i].user = 1;
        v[i].set = 0;
        snprintf(v[i].value, sizeof(v[i].value), "%s", u);
        REASON(&v[i], "set by the user");
        REASON_ZH(&v[i], "由用户设置");
    }
    for (int i = 0; i < V_COUNT; i++) {
        int p = PARTNER[i];
        if (p < 0 || v[i].user || !v[p].user)
            continue;
        v[i].set = 0;
        REASON(&v[i], "not set: the user set %s", NAMES[p]);
        REASON_ZH(&v[i], "未设置：用户已设置 %s", NAMES[p]);
    }
}

static enum rc output(const struct var *v, json_t **env, json_t **shown)
{
    json_t *e = json_object(), *s = json_array();

    if (e == NULL || s == NULL)
        goto fail;
    for (int i = 0; i < V_COUNT; i++) {
        int has = v[i].set || v[i].user;
        json_t *o =
            json_pack("{s:s, s:o, s:s, s:{s:s, s:s}}", "name", NAMES[i], "value",
                      has ? json_string(v[i].value) : json_null(), "source",
                      v[i].user ? "user" : "derived", "reason", "en", v[i].en, "zh-CN", v[i].zh);
        if (o == NULL || json_array_append_new(s, o) != 0)
            goto fail;
        if (v[i].set && json_object_set_new(e, NAMES[i], json_string(v[i].value)) != 0)
            goto fail;
    }
    *env = e;
    *shown = s;
    return RC_OK;
fail:
    json_decref(e);
    json_decref(s);
    return RC_ENOMEM;
}

enum rc nccl_env_derive(const char *master_addr, const json_t *user_env, const json_t *nodes,
                        size_t self, json_t **env, json_t **shown)
{
    struct var v[V_COUNT];
    const json_t *me = json_array_get(nodes, self);

    *env = *shown = NULL;
    if (!json_is_array(nodes) || !json_is_object(me))
        return RC_EINVAL;
    memset(v, 0, sizeof(v));
    derive_ifname(master_addr, me, v);
    derive_ib(nodes, me, v);
    derive_p2p(me, &v[V_P2P]);
    derive_algo(nodes, me, v);
    if (json_is_object(user_env))
        apply_user(user_env, v);
    return output(v, env, shown);
}
