/*
 * test_wrk_topo.c - what register reports as "interconnect": interfaces
 * from a hand-built getifaddrs() list and a fake /sys tree
 * (tests/data/topo/sys: Ethernet with speed and MTU, a down link whose speed
 * is -1, InfiniBand ports ACTIVE and DOWN, a RoCE port), the JSON of it, and
 * the GPU side (PCIe, NVLink paths) built from NVML-shaped GPU info; fake
 * GPUs report no topology and no per-process memory.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "gpu.h"
#include "topo.h"

#define SYS TY_SOURCE_DIR "/tests/data/topo/sys"

/* One getifaddrs() entry; storage for the addresses lives in the entry. */
struct fake_ifa {
    struct ifaddrs ifa;
    struct sockaddr_storage addr, mask;
    char name[32];
};

static void set_ip(struct sockaddr_storage *ss, const char *ip)
{
    memset(ss, 0, sizeof(*ss));
    if (strchr(ip, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
    }
}

/* name, ip (NULL: an AF_PACKET-like entry without address), mask, flags */
static void fill(struct fake_ifa *f, struct fake_ifa *next, const char *name, const char *ip,
                 const char *mask, unsigned flags)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->ifa.ifa_name = f->name;
    f->ifa.ifa_flags = flags;
    f->ifa.ifa_next = next ? &next->ifa : NULL;
    if (ip != NULL) {
        set_ip(&f->addr, ip);
        set_ip(&f->mask, mask);
        f->ifa.ifa_addr = (struct sockaddr *)&f->addr;
        f->ifa.ifa_netmask = (struct sockaddr *)&f->mask;
    }
}

static struct fake_ifa L[8];

static const struct ifaddrs *fake_list(void)
{
    fill(&L[6], NULL, "bad name", "10.9.9.9", "255.0.0.0", 0); /* not plain: skipped */
    fill(&L[5], &L[6], "ib0", "192.168.10.5", "255.255.255.0", IFF_UP);
    fill(&L[4], &L[5], "eth1", NULL, NULL, 0);
    fill(&L[3], &L[4], "eth0", "fe80::1", "ffff:ffff:ffff:ffff::", IFF_UP);
    fill(&L[2], &L[3], "eth0", "10.0.0.7", "255.255.240.0", IFF_UP);
    fill(&L[1], &L[2], "lo", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", IFF_LOOPBACK);
    fill(&L[0], &L[1], "lo", "127.0.0.1", "255.0.0.0", IFF_UP | IFF_LOOPBACK);
    return &L[0].ifa;
}

static void test_interfaces(void **state)
{
    struct wrk_topo t;

    (void)state;
    wrk_topo_read(SYS, fake_list(), &t);
    assert_int_equal(t.nifs, 4); /* sorted; "bad name" skipped */
    assert_string_equal(t.ifs[0].name, "eth0");
    assert_int_equal(t.ifs[0].naddrs, 2);
    assert_string_equal(t.ifs[0].addrs[0], "10.0.0.7/20");
    assert_string_equal(t.ifs[0].addrs[1], "fe80::1/64");
    assert_int_equal(t.ifs[0].speed_mbps, 25000);
    assert_int_equal(t.ifs[0].mtu, 9000);
    assert_string_equal(t.ifs[0].state, "up");
    assert_false(t.ifs[0].loopback);
    assert_string_equal(t.ifs[1].name, "eth1"); /* listed without an address */
    assert_int_equal(t.ifs[1].naddrs, 0);
    assert_int_equal(t.ifs[1].speed_mbps, -1); /* sysfs says -1 for a down link */
    assert_string_equal(t.ifs[1].state, "down");
    assert_string_equal(t.ifs[2].name, "ib0");
    assert_int_equal(t.ifs[2].speed_mbps, 200000);
    assert_string_equal(t.ifs[3].name, "lo");
    assert_true(t.ifs[3].loopback);
    assert_string_equal(t.ifs[3].addrs[0], "127.0.0.1/8");
    assert_string_equal(t.ifs[3].addrs[1], "::1/128");
    assert_int_equal(t.ifs[3].speed_mbps, -1); /* no speed file */
    assert_string_equal(t.ifs[3].state, "unknown");
}

static void test_infiniband(void **state)
{
    struct wrk_topo t;

    (void)state;
    wrk_topo_read(SYS, NULL, &t);
    assert_int_equal(t.nifs, 0);
    assert_int_equal(t.nib, 4); /* sorted by HCA, then port */
    assert_string_equal(t.ib[0].hca, "mlx5_0");
    assert_int_equal(t.ib[0].port, 1);
    assert_string_equal(t.ib[0].state, "ACTIVE");
    assert_true(t.ib[0].rate_gbps == 200.0);
    assert_string_equal(t.ib[0].link_layer, "InfiniBand");
    assert_string_equal(t.ib[1].hca, "mlx5_0");
    assert_int_equal(t.ib[1].port, 2);
    assert_string_equal(t.ib[1].state, "DOWN");
    assert_string_equal(t.ib[2].hca, "mlx5_1");
    assert_true(t.ib[2].rate_gbps == 400.0);
    assert_string_equal(t.ib[3].hca, "rocep1s0");
    assert_string_equal(t.ib[3].link_layer, "Ethernet");
}

static void test_no_sysfs(void **state)
{
    struct wrk_topo t;

    (void)state;
    wrk_topo_read("/nonexistent-sys", fake_list(), &t);
    assert_int_equal(t.nifs, 4);
    assert_int_equal(t.nib, 0);
    assert_int_equal(t.ifs[0].speed_mbps, -1);
    assert_int_equal(t.ifs[0].mtu, 0);
    assert_string_equal(t.ifs[0].state, "");
}

static void test_json(void **state)
{
    struct wrk_topo t;
    json_t *j, *eth0, *eth1, *ib;
    char *text;

    (void)state;
    wrk_topo_read(SYS, fake_list(), &t);
    j = wrk_topo_json(&t);
    assert_non_null(j);
    eth0 = json_array_get(json_object_get(j, "interfaces"), 0);
    eth1 = json_array_get(json_object_get(j, "interfaces"), 1);
    ib = json_array_get(json_object_get(j, "infiniband"), 0);
    text = json_dumps(eth0, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text,
                        "{\"addrs\":[\"10.0.0.7/20\",\"fe80::1/64\"],\"loopback\":false,"
                        "\"mtu\":9000,\"name\":\"eth0\",\"speed_mbps\":25000,\"state\":\"up\"}");
    free(text);
    assert_true(json_is_null(json_object_get(eth1, "speed_mbps")));
    text = json_dumps(ib, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"hca\":\"mlx5_0\",\"link_layer\":\"InfiniBand\",\"port\":1,"
                              "\"rate_gbps\":200.0,\"state\":\"ACTIVE\"}");
    free(text);
    json_decref(j);
}

static void test_level_names(void **state)
{
    (void)state;
    assert_string_equal(wrk_gpu_level_name(10), "PIX");
    assert_string_equal(wrk_gpu_level_name(20), "PXB");
    assert_string_equal(wrk_gpu_level_name(30), "PHB");
    assert_string_equal(wrk_gpu_level_name(40), "NODE");
    assert_string_equal(wrk_gpu_level_name(50), "SYS");
    assert_string_equal(wrk_gpu_level_name(0), "");
    assert_string_equal(wrk_gpu_level_name(99), "");
}

static void test_gpu_interconnect(void **state)
{
    struct wrk_gpu_info info[2];
    struct wrk_gpus *g = NULL;
    json_t *j;
    char *text;

    (void)state;
    memset(info, 0, sizeof(info));
    for (int i = 0; i < 2; i++) {
        info[i].index = i;
        snprintf(info[i].bus_id, sizeof(info[i].bus_id), "00000000:%02X:00.0", 0x18 + i);
        info[i].pcie_gen = 5;
        info[i].pcie_width = 16;
        info[i].pcie_max_gen = 5;
        info[i].pcie_max_width = 16;
        info[i].nvlinks = 18;
        snprintf(info[i].path[i], sizeof(info[i].path[i]), "X");
        snprintf(info[i].path[1 - i], sizeof(info[i].path[1 - i]), "NV18");
    }
    assert_int_equal(wrk_gpus_from_info(info, 2, &g), RC_OK);
    j = wrk_gpus_interconnect_json(g);
    text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text,
                        "{\"gpus\":[{\"bus_id\":\"00000000:18:00.0\",\"index\":0,\"nvlinks\":18,"
                        "\"pcie\":{\"gen\":5,\"max_gen\":5,\"max_width\":16,\"width\":16}},"
                        "{\"bus_id\":\"00000000:19:00.0\",\"index\":1,\"nvlinks\":18,"
                        "\"pcie\":{\"gen\":5,\"max_gen\":5,\"max_width\":16,\"width\":16}}],"
                        "\"p2p\":[[\"X\",\"NV18\"],[\"NV18\",\"X\"]]}");
    free(text);
    json_decref(j);
    wrk_gpus_free(g);
}

/* --fake-gpus: nothing is made up, neither topology nor per-process memory. */
static void test_fake_gpus_report_nothing(void **state)
{
    struct wrk_fake_spec f = {2, 80, "Fake GPU"};
    struct wrk_gpus *g = NULL;
    struct wrk_proc_mem pm[4];
    json_t *j;

    (void)state;
    assert_int_equal(wrk_gpus_open(&f, "n1", &g), RC_OK);
    j = wrk_gpus_interconnect_json(g);
    assert_non_null(j);
    assert_int_equal(json_object_size(j), 0);
    json_decref(j);
    assert_int_equal(wrk_gpus_proc_mem(g, pm, 4), -1);
    wrk_gpus_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interfaces),
        cmocka_unit_test(test_infiniband),
        cmocka_unit_test(test_no_sysfs),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_gpu_interconnect),
        cmocka_unit_test(test_fake_gpus_report_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
