/*
 * topo.h - how this node talks to others: its network interfaces (names,
 * addresses with prefix length, link speed, state) and its InfiniBand/RoCE
 * ports (HCA, port, state, rate, link layer). Register sends it as part of
 * "interconnect" (docs/agent-protocol.md); the server derives each job's
 * NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME and NCCL_IB_* from it
 * (server/nccl_env.h). The GPU side of the interconnect (NVLink, PCIe) comes
 * from NVML in gpu.c.
 *
 * The readers take the sysfs root ("/sys") and the getifaddrs() list as
 * arguments, so the unit tests feed a fake /sys tree (tests/data/topo/) and
 * a hand-built address list. Everything is best effort: a file that cannot
 * be read leaves its field unknown, never an error.
 *
 * Thread-safety: reentrant; a struct wrk_topo belongs to its caller.
 */
#ifndef TY_WORKER_TOPO_H
#define TY_WORKER_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"

struct ifaddrs;

#define WRK_TOPO_MAX_IFS 32  /* interfaces reported; more are dropped (logged) */
#define WRK_TOPO_MAX_ADDRS 8 /* addresses per interface */
#define WRK_TOPO_MAX_IB 32   /* InfiniBand ports reported */

struct wrk_netif {
    char name[32];                      /* [A-Za-z0-9_.:@-]{1,31} */
    char addrs[WRK_TOPO_MAX_ADDRS][64]; /* "10.0.0.7/24", "fe80::1/64" */
    size_t naddrs;
    int64_t speed_mbps; /* /sys/class/net/<if>/speed; -1 when unknown (virtual, down) */
    char state[16];     /* operstate: "up", "down", "unknown", ...; "" when unread */
    int mtu;            /* bytes; 0 when unknown */
    int loopback;       /* IFF_LOOPBACK */
};

struct wrk_ib_port {
    char hca[32];        /* /sys/class/infiniband/<hca> */
    int port;            /* 1.. */
    char state[16];      /* "ACTIVE", "DOWN", "INIT", ...; "" when unread */
    double rate_gbps;    /* from "200 Gb/sec (4X HDR)"; 0 when unknown */
    char link_layer[16]; /* "InfiniBand" or "Ethernet" (RoCE); "" when unread */
};

struct wrk_topo {
    size_t nifs;
    struct wrk_netif ifs[WRK_TOPO_MAX_IFS]; /* sorted by name */
    size_t nib;
    struct wrk_ib_port ib[WRK_TOPO_MAX_IB]; /* sorted by hca, then port */
};

/*
 * Fill t (caller storage, overwritten) from ifa (a getifaddrs() list,
 * borrowed; NULL for none) and the sysfs tree at sys_root (borrowed, e.g.
 * "/sys"): every interface of ifa with its AF_INET/AF_INET6 addresses, its
 * speed, operstate and mtu from <sys_root>/class/net/<if>/, and every port
 * under <sys_root>/class/infiniband/<hca>/ports/<n>/. Names that are not
 * plain are skipped. Cannot fail.
 */
void wrk_topo_read(const char *sys_root, const struct ifaddrs *ifa, struct wrk_topo *t);

/*
 * {"interfaces":[{"name","addrs":[...],"speed_mbps","state","mtu","loopback"}],
 *  "infiniband":[{"hca","port","state","rate_gbps","link_layer"}]}
 * as a new reference, or NULL on ENOMEM. speed_mbps and mtu are null when
 * unknown.
 */
json_t *wrk_topo_json(const struct wrk_topo *t);

#endif
