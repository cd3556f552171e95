/*
 * topo.c - network interfaces and InfiniBand ports of this node (see topo.h).
 *
 * Sources: getifaddrs() for names, flags and addresses (the caller passes
 * the list), sysfs for what getifaddrs lacks: class/net/<if>/{speed,
 * operstate,mtu} and class/infiniband/<hca>/ports/<n>/{state,rate,
 * link_layer}. sysfs files are one short line each; a read error (speed of
 * a down link is EINVAL) leaves the field unknown.
 */
#include "topo.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"

/* Interface and HCA names go into JSON, logs and NCCL variables: keep them plain. */
static int plain_name(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n >= max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':' || c == '@'))
            return 0;
    }
    return 1;
}

/* The first line of a small sysfs file, without its newline; 0 on success. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    int ok;

    buf[0] = '\0';
    if (f == NULL)
        return -1;
    ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (!ok) {
        buf[0] = '\0';
        return -1;
    }
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

static int read_i64(const char *path, int64_t *out)
{
    char buf[64], *end = NULL;
    long long v;

    if (read_line(path, buf, sizeof(buf)) != 0 || buf[0] == '\0')
        return -1;
    v = strtoll(buf, &end, 10);
    if (end == buf || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int prefix_len(const struct sockaddr *mask)
{
    const unsigned char *b;
    size_t n;
    int bits = 0;

    if (mask == NULL)
        return -1;
    if (mask->sa_family == AF_INET) {
        b = (const unsigned char *)&((const struct sockaddr_in *)(const void *)mask)->sin_addr;
        n = 4;
    } else if (mask->sa_family == AF_INET6) {
        b = (const unsigned char *)&((const struct sockaddr_in6 *)(const void *)mask)->sin6_addr;
        n = 16;
    } else {
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        for (int k = 7; k >= 0 && (b[i] >> k) & 1; k--)
            bits++;
    return bits;
}

static struct wrk_netif *netif_get(struct wrk_topo *t, const char *name)
{
    for (size_t i = 0; i < t->nifs; i++)
        if (strcmp(t->ifs[i].name, name) == 0)
            return &t->ifs[i];
    if (t->nifs >= WRK_TOPO_MAX_IFS)
        return NULL;
    struct wrk_netif *n = &t->ifs[t->nifs++];
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->speed_mbps = -1;
    return n;
}

static void add_addr(struct wrk_netif *n, const struct ifaddrs *i)
{
    char ip[INET6_ADDRSTRLEN];
    const void *src;
    int fam = i->ifa_addr->sa_family, plen;

    if (fam == AF_INET)
        src = &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
    else
        src = &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr;
    if (n->naddrs >= WRK_TOPO_MAX_ADDRS || inet_ntop(fam, src, ip, sizeof(ip)) == NULL)
        return;
    plen = prefix_len(i->ifa_netmask);
    if (plen < 0)
        plen = fam == AF_INET ? 32 : 128;
    snprintf(n->addrs[n->naddrs++], sizeof(n->addrs[0]), "%s/%d", ip, plen);
}

static void read_netif_sys(const char *root, struct wrk_netif *n)
{
    char path[PATH_MAX];
    int64_t v;

    if (snprintf(path, sizeof(path), "%s/class/net/%s/speed", root, n->name) < (int)sizeof(path) &&
        read_i64(path, &v) == 0 && v > 0 && v <= 10000000) /* the server's bound: 10 Tb/s */
        n->speed_mbps = v;
    if (snprintf(path, sizeof(path), "%s/class/net/%s/mtu", root, n->name) < (int)sizeof(path) &&
        read_i64(path, &v) == 0 && v > 0 && v <= 1 << 20)
        n->mtu = (int)v;
    if (snprintf(path, sizeof(path), "%s/class/net/%s/operstate", root, n->name) <
            (int)sizeof(path) &&
        read_line(path, n->state, sizeof(n->state)) == 0 && !plain_name(n->state, sizeof(n->state)))
        n->state[0] = '\0';
}

/* "4: ACTIVE" -> "ACTIVE"; "200 Gb/sec (4X HDR)" -> 200. */
static void read_ib_port(const char *dir, struct wrk_ib_port *p)
{
    char path[PATH_MAX], buf[128];

    if (snprintf(path, sizeof(path), "%s/state", dir) < (int)sizeof(path) &&
        read_line(path, buf, sizeof(buf)) == 0) {
        const char *s = strchr(buf, ':');
        s = s != NULL ? s + 1 : buf;
        while (*s == ' ')
            s++;
        if (plain_name(s, sizeof(p->state)))
            snprintf(p->state, sizeof(p->state), "%s", s);
    }
    if (snprintf(path, sizeof(path), "%s/rate", dir) < (int)sizeof(path) &&
        read_line(path, buf, sizeof(buf)) == 0) {
        char *end = NULL;
        double v = strtod(buf, &end);
        if (end != buf && v > 0 && v <= 1e5)
            p->rate_gbps = v;
    }
    if (snprintf(path, sizeof(path), "%s/link_layer", dir) < (int)sizeof(path) &&
        read_line(path, buf, sizeof(buf)) == 0 && plain_name(buf, sizeof(p->link_layer)))
        snprintf(p->link_layer, sizeof(p->link_layer), "%s", buf);
}

static void read_ib(const char *root, struct wrk_topo *t)
{
    char path[PATH_MAX];
    DIR *d;
    struct dirent *e;

    if (snprintf(path, sizeof(path), "%s/class/infiniband", root) >= (int)sizeof(path) ||
        (d = opendir(path)) == NULL)
        return; /* no InfiniBand stack: the common case */
    while ((e = readdir(d)) != NULL) {
        char ports[PATH_MAX];
        DIR *pd;
        struct dirent *pe;
        if (!plain_name(e->d_name, sizeof(t->ib[0].hca)))
            continue;
        if (snprintf(ports, sizeof(ports), "%s/%s/ports", path, e->d_name) >= (int)sizeof(ports) ||
            (pd = opendir(ports)) == NULL)
            continue;
        while ((pe = readdir(pd)) != NULL) {
            char dir[PATH_MAX], *end = NULL;
            long port = strtol(pe->d_name, &end, 10);
            struct wrk_ib_port *p;
            if (end == pe->d_name || *end != '\0' || port < 1 || port > 255)
                continue;
            if (t->nib >= WRK_TOPO_MAX_IB) {
                LOG_WARN("topo", "too many infiniband ports, some are not reported", "max=%d",
                         WRK_TOPO_MAX_IB);
                break;
            }
            if (snprintf(dir, sizeof(dir), "%s/%s", ports, pe->d_name) >= (int)sizeof(dir))
                continue;
            p = &t->ib[t->nib++];
            memset(p, 0, sizeof(*p));
            snprintf(p->hca, sizeof(p->hca), "%s", e->d_name);
            p->port = (int)port;
            read_ib_port(dir, p);
        }
        closedir(pd);
    }
    closedir(d);
}

static int cmp_netif(const void *a, const void *b)
{
    return strcmp(((const struct wrk_netif *)a)->name, ((const struct wrk_netif *)b)->name);
}

static int cmp_ib(const void *a, const void *b)
{
    const struct wrk_ib_port *x = a, *y = b;
    int c = strcmp(x->hca, y->hca);
    return c != 0 ? c : (x->port > y->port) - (x->port < y->port);
}

void wrk_topo_read(const char *sys_root, const struct ifaddrs *ifa, struct wrk_topo *t)
{
    int dropped = 0;

    memset(t, 0, sizeof(*t));
    for (const struct ifaddrs *i = ifa; i != NULL; i = i->ifa_next) {
        struct wrk_netif *n;
        if (i->ifa_name == NULL || !plain_name(i->ifa_name, sizeof(t->ifs[0].name)))
            continue;
        if ((n = netif_get(t, i->ifa_name)) == NULL) {
            dropped = 1;
            continue;
        }
        if (i->ifa_flags & IFF_LOOPBACK)
            n->loopback = 1;
        if (i->ifa_addr != NULL &&
            (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            add_addr(n, i);
    }
    if (dropped)
        LOG_WARN("topo", "too many network interfaces, some are not reported", "max=%d",
                 WRK_TOPO_MAX_IFS);
    for (size_t k = 0; sys_root != NULL && k < t->nifs; k++)
        read_netif_sys(sys_root, &t->ifs[k]);
    if (sys_root != NULL)
        read_ib(sys_root, t);
    qsort(t->ifs, t->nifs, sizeof(t->ifs[0]), cmp_netif);
    qsort(t->ib, t->nib, sizeof(t->ib[0]), cmp_ib);
}

json_t *wrk_topo_json(const struct wrk_topo *t)
{
    json_t *ifs = json_array(), *ib = json_array(), *o = NULL;

    if (ifs == NULL || ib == NULL)
        goto fail;
    for (size_t i = 0; i < t->nifs; i++) {
        const struct wrk_netif *n = &t->ifs[i];
        json_t *addrs = json_array(), *x;
        for (size_t k = 0; addrs != NULL && k < n->naddrs; k++)
            if (json_array_append_new(addrs, json_string(n->addrs[k])) != 0) {
                json_decref(addrs);
                addrs = NULL;
            }
        if (addrs == NULL)
            goto fail;
        x = json_pack("{s:s, s:o, s:o, s:s, s:o, s:b}", "name", n->name, "addrs", addrs,
                      "speed_mbps",
                      n->speed_mbps > 0 ? json_integer((json_int_t)n->speed_mbps) : json_null(),
                      "state", n->state, "mtu", n->mtu > 0 ? json_integer(n->mtu) : json_null(),
                      "loopback", n->loopback);
        if (x == NULL || json_array_append_new(ifs, x) != 0)
            goto fail;
    }
    for (size_t i = 0; i < t->nib; i++) {
        const struct wrk_ib_port *p = &t->ib[i];
        json_t *x = json_pack("{s:s, s:i, s:s, s:f, s:s}", "hca", p->hca, "port", p->port, "state",
                              p->state, "rate_gbps", p->rate_gbps, "link_layer", p->link_layer);
        if (x == NULL || json_array_append_new(ib, x) != 0)
            goto fail;
    }
    o = json_pack("{s:o, s:o}", "interfaces", ifs, "infiniband", ib);
    return o;
fail:
    json_decref(ifs);
    json_decref(ib);
    return NULL;
}
