/*
 * netns.c - network namespaces for --isolate-network (see netns.h).
 *
 * Names, all derived from the attempt id so that a sweep can find them:
 *   namespace  ty-<attempt id>           (/run/netns/ty-<attempt id>)
 *   tag        the id when it is at most 12 digits, else "x" + 8 hex digits
 *              of its FNV-1a hash (interface names have 15 bytes)
 *   veth       tyh<tag> (host side), tyn<tag> (namespace side)
 *   firewall   nft table "ip ty_<tag>", or iptables chains TY-<tag>-POST,
 *              TY-<tag>-FLT (filter) and TY-<tag>-PRE (nat)
 * Addresses: /30 block k of 169.254.1.0 - 169.254.254.255 (the third octet
 * 169, where cloud metadata lives, is skipped), host side .1, namespace .2;
 * the first block from hash(tag) whose host address no interface holds.
 *
 * Everything runs on the control thread except wrk_netns_call(), which uses
 * only its own stack.
 */
#include "netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "assign.h"
#include "log.h"
#include "pathpol.h"

#define NETNS_DIR "/run/netns"
#define TOOL_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MAX_ARGS 32
#define TAG_SIZE 16
#define NFT_SCRIPT_MAX 16384

/* ------------------------------------------------------------------ */
/* Running ip, nft and iptables                                         */

/* The absolute path of tool into out; 0 when it is not installed. */
static int find_tool(const char *tool, char *out, size_t size)
{
    static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                       "/usr/bin",        "/sbin",          "/bin"};

    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        if (snprintf(out, size, "%s/%s", dirs[i], tool) < (int)size && access(out, X_OK) == 0)
            return 1;
    }
    out[0] = '\0';
    return 0;
}

/* Append up to what fits of buf[0..n) to out (NUL-terminated, *len used). */
static void keep_output(char *out, size_t size, size_t *len, const char *buf, size_t n)
{
    if (out == NULL || size == 0)
        return;
    if (*len + 1 < size) {
        size_t take = n < size - 1 - *len ? n : size - 1 - *len;
        memcpy(out + *len, buf, take);
        *len += take;
    }
    out[*len] = '\0';
}

/*
 * Run argv (argv[0] absolute) with PATH=TOOL_PATH LC_ALL=C and stdin
 * /dev/null; stdout goes to out and stderr to errb (both may be NULL,
 * truncated to fit). Returns the exit status, 128+signal, or -1 when it
 * could not start.
 */
static int run_argv(char *const *argv, char *out, size_t out_size, char *errb, size_t err_size)
{
    static char *const envp[] = {"PATH=" TOOL_PATH, "LC_ALL=C", NULL};
    posix_spawn_file_actions_t fa;
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, st = 0, ret = -1;
    size_t olen = 0, elen = 0;
    pid_t pid;

    if (out != NULL && out_size > 0)
        out[0] = '\0';
    if (errb != NULL && err_size > 0)
        errb[0] = '\0';
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0)
        goto out;
    if (posix_spawn_file_actions_init(&fa) != 0)
        goto out;
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, po[1], 1) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, pe[1], 2) != 0 ||
        posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        goto out;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    po[1] = pe[1] = -1;
    while (po[0] >= 0 || pe[0] >= 0) {
        struct pollfd p[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        char buf[4096];
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            int *fd = i == 0 ? &po[0] : &pe[0];
            ssize_t n;
            if (*fd < 0 || p[i].revents == 0)
                continue;
            n = read(*fd, buf, sizeof(buf));
            if (n > 0) {
                if (i == 0)
                    keep_output(out, out_size, &olen, buf, (size_t)n);
                else
                    keep_output(errb, err_size, &elen, buf, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                close(*fd);
                *fd = -1;
            }
        }
    }
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            st = -1;
            break;
        }
    }
    ret = st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
out:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    if (errb != NULL && err_size > 0)
        errb[strcspn(errb, "\n")] = '\0'; /* the first line says it */
    return ret;
}

/*
 * Run tool with the NULL-terminated arguments that follow. On failure fill e
 * (when not NULL) with "<what>: <first stderr line>" and return RC_EUNAVAIL.
 * out (may be NULL) receives stdout.
 */
static enum rc run(struct err *e, const char *what, char *out, size_t out_size, const char *tool,
                   ...)
{
    char path[256], errb[256], line[1024];
    char *argv[MAX_ARGS + 1];
    size_t n = 0, off = 0;
    va_list ap;
    int st;

    if (!find_tool(tool, path, sizeof(path))) {
        if (e != NULL)
            err_set(e, RC_EUNAVAIL, NULL, "network isolation: %s: the %s program is missing", what,
                    tool);
        return RC_EUNAVAIL;
    }
    argv[n++] = path;
    va_start(ap, tool);
    for (const char *s = va_arg(ap, const char *); s != NULL && n < MAX_ARGS;
         s = va_arg(ap, const char *))
        argv[n++] = (char *)s;
    va_end(ap);
    argv[n] = NULL;
    line[0] = '\0';
    for (size_t i = 0; i < n && off < sizeof(line); i++) {
        int w = snprintf(line + off, sizeof(line) - off, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    st = run_argv(argv, out, out_size, errb, sizeof(errb));
    LOG_DEBUG("netns", "command", "cmd=\"%.600s\" status=%d", line, st);
    if (st == 0)
        return RC_OK;
    if (e != NULL)
        err_set(e, RC_EUNAVAIL, NULL, "network isolation: %s failed: %s", what,
                errb[0] ? errb : (st < 0 ? "cannot start it" : "non-zero exit"));
    return RC_EUNAVAIL;
}

static int have_tool(const char *tool)
{
    char path[256];
    return find_tool(tool, path, sizeof(path));
}

/* ------------------------------------------------------------------ */
/* Names and addresses                                                  */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* 4 hex digits of the owner (the worker's work dir) that keep the names of
 * two workers on one host apart. */
static void owner_prefix(const char *owner, char out[8])
{
    snprintf(out, 8, "%04x", (unsigned)(fnv1a(owner) & 0xffff));
}

/* Owner prefix, then the id when it is at most 8 digits, else "x" + 7 hex. */
static void make_tag(const char *owner, const char *id, char tag[TAG_SIZE])
{
    char p[8];
    size_t n = strlen(id);

    owner_prefix(owner, p);
    if (n > 0 && n <= 8 && strspn(id, "0123456789") == n)
        snprintf(tag, TAG_SIZE, "%s%s", p, id);
    else
        snprintf(tag, TAG_SIZE, "%sx%07x", p, (unsigned)(fnv1a(id) & 0xfffffff));
}

/* "ty-<owner prefix>-<attempt id>" */
static void ns_name(const char *owner, const char *attempt_id, char *out, size_t out_size)
{
    char p[8];

    owner_prefix(owner, p);
    snprintf(out, out_size, "ty-%s-%s", p, attempt_id);
}

void wrk_netns_path(const char *owner, const char *attempt_id, char *out, size_t out_size)
{
    char ns[WRK_ID_MAX + 16];

    ns_name(owner, attempt_id, ns, sizeof(ns));
    snprintf(out, out_size, NETNS_DIR "/%s", ns);
}

void wrk_netns_ifname(const char *owner, const char *attempt_id, char *out, size_t out_size)
{
    char tag[TAG_SIZE];

    make_tag(owner, attempt_id, tag);
    snprintf(out, out_size, "tyn%s", tag);
}

/* The block count and the host-order address of block k's network. */
#define SLOT_COUNT (253 * 64)
static uint32_t slot_net(unsigned k)
{
    unsigned third = 1 + k / 64;

    if (third >= 169)
        third++; /* skip 169.254.169.0/24 */
    return (169u << 24) | (254u << 16) | (third << 8) | ((k % 64) * 4);
}

/* A free /30: host side h, namespace side n (dotted strings). */
static enum rc pick_slot(const char *tag, char *h, char *n, size_t size, struct err *e)
{
    struct ifaddrs *ifa = NULL;
    uint32_t hash = 2166136261u;

    for (const char *p = tag; *p != '\0'; p++) {
        hash ^= (unsigned char)*p;
        hash *= 16777619u;
    }
    if (getifaddrs(&ifa) != 0)
        return err_set(e, RC_EUNAVAIL, NULL, "network isolation: cannot list interfaces");
    for (unsigned i = 0; i < SLOT_COUNT; i++) {
        unsigned k = (hash + i) % SLOT_COUNT;
        uint32_t net = slot_net(k);
        int used = 0;
        for (struct ifaddrs *a = ifa; a != NULL && !used; a = a->ifa_next) {
            if (a->ifa_addr != NULL && a->ifa_addr->sa_family == AF_INET) {
                uint32_t v =
                    ntohl(((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr.s_addr);
                used = (v & ~3u) == net;
            }
        }
        if (!used) {
            struct in_addr x;
            x.s_addr = htonl(net + 1);
            inet_ntop(AF_INET, &x, h, (socklen_t)size);
            x.s_addr = htonl(net + 2);
            inet_ntop(AF_INET, &x, n, (socklen_t)size);
            freeifaddrs(ifa);
            return RC_OK;
        }
    }
    freeifaddrs(ifa);
    return err_set(e, RC_EUNAVAIL, NULL, "network isolation: no free address block");
}

/* ------------------------------------------------------------------ */
/* Firewall                                                             */

struct fw {
    const char *tag;
    const char *host_if; /* tyh<tag> */
    const char *ns_addr; /* the namespace side */
    char cidrs[WRK_NETNS_MAX_CIDRS + 1][48];
    size_t ncidrs;
    const char *dnat_addr; /* rank-0 node: this node's address, else NULL */
    int dnat_port;
};

/* nft: one table per attempt, created in one transaction. */
static enum rc fw_nft(const struct fw *f, struct err *e)
{
    char *s = malloc(NFT_SCRIPT_MAX), set[WRK_NETNS_MAX_CIDRS * 48 + 8];
    static const char *const chains[] = {"filt_fwd", "forward", "filt_in", "input"};
    size_t off = 0, so = 0;
    enum rc rc;

#define NFT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(s + off, NFT_SCRIPT_MAX - off, __VA_ARGS__);                             \
        if (w_ < 0 || (size_t)w_ >= NFT_SCRIPT_MAX - off)                                          \
            goto toolong;                                                                          \
        off += (size_t)w_;                                                                         \
    } while (0)

    if (s == NULL)
        return RC_ENOMEM;
    set[0] = '\0';
    for (size_t i = 0; i < f->ncidrs; i++)
        so += (size_t)snprintf(set + so, sizeof(set) - so, "%s%s", i ? ", " : "", f->cidrs[i]);
    NFT("add table ip ty_%s\n", f->tag);
    NFT("add chain ip ty_%s nat_post { type nat hook postrouting priority 100 ; }\n", f->tag);
    NFT("add rule ip ty_%s nat_post ip saddr %s oifname != \"%s\" masquerade\n", f->tag, f->ns_addr,
        f->host_if);
    for (size_t c = 0; c < 4; c += 2) {
        NFT("add chain ip ty_%s %s { type filter hook %s priority 0 ; }\n", f->tag, chains[c],
            chains[c + 1]);
        NFT("add rule ip ty_%s %s iifname \"%s\" ct state established,related accept\n", f->tag,
            chains[c], f->host_if);
        /* The original destination, so a connection another attempt's
         * DNAT redirected is judged by where it was sent. */
        if (f->ncidrs > 0)
            NFT("add rule ip ty_%s %s iifname \"%s\" ct original ip daddr { %s } accept\n", f->tag,
                chains[c], f->host_if, set);
        NFT("add rule ip ty_%s %s iifname \"%s\" drop\n", f->tag, chains[c], f->host_if);
    }
    if (f->dnat_addr != NULL) {
        NFT("add chain ip ty_%s nat_pre { type nat hook prerouting priority -100 ; }\n", f->tag);
        NFT("add rule ip ty_%s nat_pre ip daddr %s tcp dport %d dnat to %s:%d\n", f->tag,
            f->dnat_addr, f->dnat_port, f->ns_addr, f->dnat_port);
        NFT("add chain ip ty_%s nat_out { type nat hook output priority -100 ; }\n", f->tag);
        NFT("add rule ip ty_%s nat_out ip daddr %s tcp dport %d dnat to %s:%d\n", f->tag,
            f->dnat_addr, f->dnat_port, f->ns_addr, f->dnat_port);
    }
#undef NFT
    rc = run(e, "nft", NULL, 0, "nft", s, (char *)NULL);
    free(s);
    return rc;
toolong:
    free(s);
    return err_set(e, RC_EINVAL, NULL, "network isolation: too many allowed networks");
}

/* iptables: chains TY-<tag>-*, jumped to from the built-in chains. */
static enum rc fw_iptables(const struct fw *f, struct err *e)
{
    char post[32], flt[32], pre[32], src[40], port[8], to[48];
    enum rc rc;

    snprintf(post, sizeof(post), "TY-%s-POST", f->tag);
    snprintf(flt, sizeof(flt), "TY-%s-FLT", f->tag);
    snprintf(pre, sizeof(pre), "TY-%s-PRE", f->tag);
    snprintf(src, sizeof(src), "%s/32", f->ns_addr);
    snprintf(port, sizeof(port), "%d", f->dnat_port);
    snprintf(to, sizeof(to), "%s:%d", f->ns_addr, f->dnat_port);
    rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-N", post, (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-A", post, "-s", src, "!",
                 "-o", f->host_if, "-j", "MASQUERADE", (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-A", "POSTROUTING", "-j",
                 post, (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-N", flt, (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-A", flt, "-i", f->host_if, "-m",
                 "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT", (char *)NULL);
    for (size_t i = 0; rc == RC_OK && i < f->ncidrs; i++)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-A", flt, "-i", f->host_if, "-m",
                 "conntrack", "--ctorigdst", f->cidrs[i], "-j", "ACCEPT", (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-A", flt, "-i", f->host_if, "-j",
                 "DROP", (char *)NULL);
    if (rc == RC_OK)
        rc =
            run(e, "iptables", NULL, 0, "iptables", "-w", "-I", "FORWARD", "-j", flt, (char *)NULL);
    if (rc == RC_OK)
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-I", "INPUT", "-j", flt, (char *)NULL);
    if (rc == RC_OK && f->dnat_addr != NULL) {
        rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-N", pre, (char *)NULL);
        if (rc == RC_OK)
            rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-A", pre, "-d",
                     f->dnat_addr, "-p", "tcp", "--dport", port, "-j", "DNAT", "--to-destination",
                     to, (char *)NULL);
        if (rc == RC_OK)
            rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-A", "PREROUTING",
                     "-j", pre, (char *)NULL);
        if (rc == RC_OK)
            rc = run(e, "iptables", NULL, 0, "iptables", "-w", "-t", "nat", "-A", "OUTPUT", "-j",
                     pre, (char *)NULL);
    }
    return rc;
}

static void fw_iptables_remove(const char *tag)
{
    char post[32], flt[32], pre[32];

    snprintf(post, sizeof(post), "TY-%s-POST", tag);
    snprintf(flt, sizeof(flt), "TY-%s-FLT", tag);
    snprintf(pre, sizeof(pre), "TY-%s-PRE", tag);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-D", "POSTROUTING", "-j", post,
              (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-F", post, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-X", post, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-D", "FORWARD", "-j", flt, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-D", "INPUT", "-j", flt, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-F", flt, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-X", flt, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-D", "PREROUTING", "-j", pre,
              (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-D", "OUTPUT", "-j", pre,
              (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-F", pre, (char *)NULL);
    (void)run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-X", pre, (char *)NULL);
}

/* Remove the firewall rules and the veth of tag. */
static void remove_tag(const char *tag)
{
    char table[32], chain[32], host_if[IF_NAMESIZE + 8];

    snprintf(table, sizeof(table), "ty_%s", tag);
    snprintf(chain, sizeof(chain), "TY-%s-POST", tag);
    snprintf(host_if, sizeof(host_if), "tyh%s", tag);
    if (have_tool("nft"))
        (void)run(NULL, "", NULL, 0, "nft", "delete", "table", "ip", table, (char *)NULL);
    if (have_tool("iptables") &&
        run(NULL, "", NULL, 0, "iptables", "-w", "-t", "nat", "-S", chain, (char *)NULL) == RC_OK)
        fw_iptables_remove(tag);
    if (if_nametoindex(host_if) != 0)
        (void)run(NULL, "", NULL, 0, "ip", "link", "del", host_if, (char *)NULL);
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                   */

/* Whether ip_forward is on; turns it on when off (multi-node needs it). */
static enum rc enable_forwarding(struct err *e)
{
    char c = '0';
    int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDWR | O_CLOEXEC);

    if (fd < 0)
        return err_set(e, RC_EUNAVAIL, NULL, "network isolation: cannot read ip_forward");
    if (read(fd, &c, 1) == 1 && c == '1') {
        close(fd);
        return RC_OK;
    }
    if (pwrite(fd, "1\n", 2, 0) != 2) {
        close(fd);
        return err_set(e, RC_EUNAVAIL, NULL, "network isolation: cannot enable ip_forward");
    }
    close(fd);
    LOG_WARN("netns", "enabled IPv4 forwarding for isolated multi-node attempts",
             "sysctl=net.ipv4.ip_forward");
    return RC_OK;
}

/* Parse the allowed IPv4 networks (IPv6 ones cannot be reached: skipped). */
static enum rc parse_cidrs(const struct wrk_netns_spec *s, struct fw *f, struct err *e)
{
    for (size_t i = 0; i < s->ncidrs && i < WRK_NETNS_MAX_CIDRS; i++) {
        struct pathpol_cidr c;
        char a[INET_ADDRSTRLEN];
        if (pathpol_parse_cidr(s->cidrs[i], &c, NULL) != RC_OK)
            return err_set(e, RC_EINVAL, NULL, "network isolation: invalid allowed network");
        if (c.family != 4) {
            LOG_DEBUG("netns", "IPv6 network not routed", "cidr=%s", s->cidrs[i]);
            continue;
        }
        inet_ntop(AF_INET, c.addr, a, sizeof(a));
        snprintf(f->cidrs[f->ncidrs++], sizeof(f->cidrs[0]), "%s/%u", a, c.prefix);
    }
    return RC_OK;
}

/* The veth pair, addresses, routes and firewall of a multi-node attempt. */
static enum rc setup_link(const struct wrk_netns_spec *s, const char *ns, const char *tag,
                          struct err *e)
{
    char host_if[24], ns_if[24], h[INET_ADDRSTRLEN], n[INET_ADDRSTRLEN], h30[32], n30[32];
    char master32[48];
    struct in_addr m;
    struct fw f;
    enum rc rc;

    memset(&f, 0, sizeof(f));
    if (inet_pton(AF_INET, s->master_addr, &m) != 1 || (ntohl(m.s_addr) >> 24) == 127)
        return err_set(e, RC_EINVAL, NULL,
                       "network isolation of a multi-node attempt needs the rank-0 node's "
                       "address to be a non-loopback IPv4 address (worker --addr), got %.64s",
                       s->master_addr);
    if (!have_tool("nft") && !have_tool("iptables"))
        return err_set(e, RC_EUNAVAIL, NULL,
                       "network isolation of a multi-node attempt needs nft or iptables on the "
                       "node; refusing to launch it unisolated");
    if ((rc = parse_cidrs(s, &f, e)) != RC_OK)
        return rc;
    snprintf(master32, sizeof(master32), "%s/32", s->master_addr);
    if (s->node_rank != 0) /* the rendezvous: the rank-0 node's address */
        snprintf(f.cidrs[f.ncidrs++], sizeof(f.cidrs[0]), "%s", master32);
    snprintf(host_if, sizeof(host_if), "tyh%s", tag);
    snprintf(ns_if, sizeof(ns_if), "tyn%s", tag);
    if ((rc = pick_slot(tag, h, n, sizeof(h), e)) != RC_OK || (rc = enable_forwarding(e)) != RC_OK)
        return rc;
    snprintf(h30, sizeof(h30), "%s/30", h);
    snprintf(n30, sizeof(n30), "%s/30", n);
    if ((rc = run(e, "ip link add", NULL, 0, "ip", "link", "add", host_if, "type", "veth", "peer",
                  "name", ns_if, "netns", ns, (char *)NULL)) != RC_OK ||
        (rc = run(e, "ip addr add", NULL, 0, "ip", "addr", "add", h30, "dev", host_if,
                  (char *)NULL)) != RC_OK ||
        (rc = run(e, "ip link set up", NULL, 0, "ip", "link", "set", host_if, "up",
                  (char *)NULL)) != RC_OK ||
        (rc = run(e, "ip addr add", NULL, 0, "ip", "-n", ns, "addr", "add", n30, "dev", ns_if,
                  (char *)NULL)) != RC_OK ||
        (rc = run(e, "ip link set up", NULL, 0, "ip", "-n", ns, "link", "set", ns_if, "up",
                  (char *)NULL)) != RC_OK)
        return rc;
    for (size_t i = 0; i < f.ncidrs; i++)
        if ((rc = run(e, "ip route", NULL, 0, "ip", "-n", ns, "route", "replace", f.cidrs[i], "via",
                      h, (char *)NULL)) != RC_OK)
            return rc;
    f.tag = tag;
    f.host_if = host_if;
    f.ns_addr = n;
    f.dnat_addr = s->node_rank == 0 ? s->master_addr : NULL;
    f.dnat_port = s->master_port;
    rc = have_tool("nft") ? fw_nft(&f, e) : fw_iptables(&f, e);
    if (rc == RC_OK)
        LOG_INFO("netns", "attempt network", "ns=%s host_if=%s host_addr=%s ns_addr=%s routes=%zu",
                 ns, host_if, h, n, f.ncidrs);
    return rc;
}

enum rc wrk_netns_setup(const struct wrk_netns_spec *s, struct err *e)
{
    char ns[WRK_ID_MAX + 16], tag[TAG_SIZE];
    enum rc rc;

    if (!wrk_id_valid(s->attempt_id))
        return err_set(e, RC_EINVAL, NULL, "network isolation: invalid attempt id");
    ns_name(s->owner, s->attempt_id, ns, sizeof(ns));
    make_tag(s->owner, s->attempt_id, tag);
    rc = run(e, "ip netns add", NULL, 0, "ip", "netns", "add", ns, (char *)NULL);
    if (rc != RC_OK) {
        /* A leftover of the same attempt (a failed launch): remove and retry. */
        wrk_netns_teardown(s->owner, s->attempt_id);
        if (e != NULL)
            err_init(e);
        rc = run(e, "ip netns add", NULL, 0, "ip", "netns", "add", ns, (char *)NULL);
    }
    if (rc == RC_OK)
        rc = run(e, "ip link set lo up", NULL, 0, "ip", "-n", ns, "link", "set", "lo", "up",
                 (char *)NULL);
    if (rc == RC_OK && s->nnodes > 1)
        rc = setup_link(s, ns, tag, e);
    if (rc != RC_OK) {
        wrk_netns_teardown(s->owner, s->attempt_id);
        return rc;
    }
    LOG_INFO("netns", "namespace ready", "attempt_id=%s ns=%s nnodes=%d", s->attempt_id, ns,
             s->nnodes);
    return RC_OK;
}

void wrk_netns_teardown(const char *owner, const char *attempt_id)
{
    char tag[TAG_SIZE], path[WRK_ID_MAX + 32], ns[WRK_ID_MAX + 16];

    if (!wrk_id_valid(attempt_id))
        return;
    make_tag(owner, attempt_id, tag);
    remove_tag(tag);
    ns_name(owner, attempt_id, ns, sizeof(ns));
    wrk_netns_path(owner, attempt_id, path, sizeof(path));
    if (access(path, F_OK) == 0) {
        if (run(NULL, "", NULL, 0, "ip", "netns", "del", ns, (char *)NULL) == RC_OK)
            LOG_INFO("netns", "namespace removed", "ns=%s", ns);
        else
            LOG_WARN("netns", "cannot remove a namespace", "ns=%s", ns);
    }
}

/* Whether tag is this owner's and belongs to none of the kept attempts. */
static int tag_stale(const char *owner, const char *tag, const char *const *keep, size_t nkeep)
{
    char t[TAG_SIZE], p[8];
    size_t n = strlen(tag);

    owner_prefix(owner, p);
    if (n <= 4 || strncmp(tag, p, 4) != 0 || strspn(tag, "0123456789abcdefx") != n)
        return 0;
    for (size_t i = 0; i < nkeep; i++) {
        make_tag(owner, keep[i], t);
        if (strcmp(t, tag) == 0)
            return 0;
    }
    return 1;
}

/* Remove the stale tags named in out after prefix (up to a char of stops). */
static void sweep_listing(const char *owner, const char *out, const char *prefix, const char *stops,
                          const char *const *keep, size_t nkeep)
{
    size_t pl = strlen(prefix);

    for (const char *p = strstr(out, prefix); p != NULL; p = strstr(p + pl, prefix)) {
        char tag[TAG_SIZE];
        size_t n = strcspn(p + pl, stops);
        if (n == 0 || n >= sizeof(tag))
            continue;
        memcpy(tag, p + pl, n);
        tag[n] = '\0';
        if (tag_stale(owner, tag, keep, nkeep)) {
            LOG_INFO("netns", "removing left-over isolation", "tag=%s", tag);
            remove_tag(tag);
        }
    }
}

void wrk_netns_sweep(const char *owner, const char *const *keep, size_t nkeep)
{
    char *out = malloc(65536), prefix[16];
    struct if_nameindex *ifs;
    size_t pl;
    DIR *d;

    if (out == NULL)
        return;
    ns_name(owner, "", prefix, sizeof(prefix)); /* "ty-<owner prefix>-" */
    pl = strlen(prefix);
    /* Namespaces first: removing one takes its veth with it. */
    d = opendir(NETNS_DIR);
    while (d != NULL) {
        struct dirent *de = readdir(d);
        int kept = 0;
        if (de == NULL)
            break;
        if (strncmp(de->d_name, prefix, pl) != 0 || !wrk_id_valid(de->d_name + pl))
            continue;
        for (size_t i = 0; i < nkeep && !kept; i++)
            kept = strcmp(keep[i], de->d_name + pl) == 0;
        if (!kept) {
            LOG_INFO("netns", "removing a left-over namespace", "ns=%s", de->d_name);
            wrk_netns_teardown(owner, de->d_name + pl);
        }
    }
    if (d != NULL)
        closedir(d);
    ifs = if_nameindex();
    for (struct if_nameindex *i = ifs; i != NULL && i->if_name != NULL; i++) {
        if (strncmp(i->if_name, "tyh", 3) == 0 && tag_stale(owner, i->if_name + 3, keep, nkeep)) {
            char tag[TAG_SIZE];
            snprintf(tag, sizeof(tag), "%s", i->if_name + 3);
            remove_tag(tag);
        }
    }
    if (ifs != NULL)
        if_freenameindex(ifs);
    if (have_tool("nft") &&
        run(NULL, "", out, 65536, "nft", "list", "tables", (char *)NULL) == RC_OK)
        sweep_listing(owner, out, "table ip ty_", "\n ", keep, nkeep);
    if (have_tool("iptables") &&
        run(NULL, "", out, 65536, "iptables", "-w", "-t", "nat", "-S", (char *)NULL) == RC_OK)
        sweep_listing(owner, out, "-N TY-", "-\n ", keep, nkeep);
    free(out);
}

/* ------------------------------------------------------------------ */
/* Entering a namespace                                                 */

struct call {
    const char *path;
    enum rc (*fn)(void *arg);
    void *arg;
    enum rc rc;
    int err_no;
};

static void *call_main(void *p)
{
    struct call *c = p;
    int fd = open(c->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        c->err_no = errno;
        c->rc = RC_EUNAVAIL;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    close(fd);
    c->rc = c->fn(c->arg);
    return NULL;
}

enum rc wrk_netns_call(const char *path, enum rc (*fn)(void *arg), void *arg, struct err *e)
{
    struct call c = {path, fn, arg, RC_EINTERNAL, 0};
    pthread_t t;

    if (pthread_create(&t, NULL, call_main, &c) != 0)
        return err_set(e, RC_EUNAVAIL, NULL, "network isolation: cannot start a thread");
    pthread_join(t, NULL);
    if (c.err_no != 0)
        return err_set(e, RC_EUNAVAIL, NULL, "network isolation: cannot enter the namespace: %s",
                       strerror(c.err_no));
    return c.rc;
}

static void *probe_main(void *p)
{
    int *err_no = p;

    /* This thread alone moves to a new, empty namespace, which goes away
     * when the thread ends. */
    *err_no = unshare(CLONE_NEWNET) == 0 ? 0 : errno;
    return NULL;
}

enum rc wrk_netns_check_host(struct err *e)
{
    pthread_t t;
    int err_no = 0;

    if (geteuid() != 0)
        return err_set(e, RC_EPERM, NULL, "--isolate-network needs root (running as uid %d)",
                       (int)geteuid());
    if (!have_tool("ip"))
        return err_set(e, RC_EUNAVAIL, NULL,
                       "--isolate-network needs the ip program (iproute2) in " TOOL_PATH);
    if (pthread_create(&t, NULL, probe_main, &err_no) != 0)
        return err_set(e, RC_EUNAVAIL, NULL, "--isolate-network: cannot start a thread");
    pthread_join(t, NULL);
    if (err_no != 0)
        return err_set(e, RC_EPERM, NULL,
                       "--isolate-network: cannot create a network namespace here: %s",
                       strerror(err_no));
    if (!have_tool("nft") && !have_tool("iptables"))
        LOG_WARN("netns", "neither nft nor iptables found: multi-node attempts will be refused",
                 "");
    return RC_OK;
}
