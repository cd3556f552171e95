/*
 * test_topology.c - the register validators of a node's capabilities,
 * interconnect and NCCL probe (server/jobs/topology.h): what a real worker sends
 * passes, and each bad value is refused naming its field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "topology.h"

typedef enum rc (*check_fn)(const json_t *, struct err *);

static void ok(check_fn f, const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    struct err e;

    assert_non_null(j);
    err_init(&e);
    if (f(j, &e) != RC_OK)
        fail_msg("refused %s: %s (%s)", text, e.message, e.field);
    json_decref(j);
}

static void refused(check_fn f, const char *text, const char *field)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    struct err e;

    assert_non_null(j);
    err_init(&e);
    assert_int_equal(f(j, &e), RC_EINVAL);
    if (strcmp(e.field, field) != 0)
        fail_msg("%s: field \"%s\", want \"%s\" (%s)", text, e.field, field, e.message);
    assert_true(strlen(e.message) > 0);
    json_decref(j);
}

static void test_capabilities(void **state)
{
    (void)state;
    assert_int_equal(topo_check_capabilities(NULL, NULL), RC_OK);
    ok(topo_check_capabilities,
       "{\"probe\":\"ok\",\"python\":\"3.11.2\",\"torch\":\"1.13.0a0\",\"torch_cuda\":null,"
       "\"nccl\":false,\"fsdp\":false,\"deepspeed\":false}");
    ok(topo_check_capabilities,
       "{\"probe\":\"timeout\",\"python\":\"unknown\",\"torch\":\"unknown\",\"torch_cuda\":"
       "\"unknown\",\"nccl\":\"unknown\",\"fsdp\":\"unknown\",\"deepspeed\":\"unknown\"}");
    refused(topo_check_capabilities, "[]", "capabilities");
    refused(topo_check_capabilities, "{\"probe\":\"ok\",\"colour\":1}", "capabilities.colour");
    refused(topo_check_capabilities, "{\"probe\":\"maybe\"}", "capabilities.probe");
    refused(topo_check_capabilities, "{\"python\":\"3\"}", "capabilities.probe");
    refused(topo_check_capabilities, "{\"probe\":\"ok\",\"torch\":2}", "capabilities.torch");
    refused(topo_check_capabilities, "{\"probe\":\"ok\",\"fsdp\":\"no\"}", "capabilities.fsdp");
    refused(topo_check_capabilities, "{\"probe\":\"ok\",\"python\":\"3.11\\n\"}",
            "capabilities.python");
}

static void test_interconnect(void **state)
{
    (void)state;
    ok(topo_check_interconnect,
       "{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/24\",\"fe80::1/64\"],"
       "\"speed_mbps\":25000,\"state\":\"up\",\"mtu\":9000,\"loopback\":false},{\"name\":\"lo\","
       "\"addrs\":[\"127.0.0.1/8\"],\"speed_mbps\":null,\"state\":\"unknown\",\"mtu\":65536,"
       "\"loopback\":true}],\"infiniband\":[{\"hca\":\"mlx5_0\",\"port\":1,\"state\":\"ACTIVE\","
       "\"rate_gbps\":200.0,\"link_layer\":\"InfiniBand\"}],\"gpus\":[{\"index\":0,\"bus_id\":"
       "\"00000000:18:00.0\",\"pcie\":{\"gen\":5,\"width\":16,\"max_gen\":5,\"max_width\":16},"
       "\"nvlinks\":18}],\"p2p\":[[\"X\"]]}");
    ok(topo_check_interconnect, "{}");
    refused(topo_check_interconnect, "{\"wifi\":[]}", "interconnect.wifi");
    refused(topo_check_interconnect, "{\"interfaces\":{}}", "interconnect.interfaces");
    refused(topo_check_interconnect, "{\"interfaces\":[{\"name\":\"eth 0\"}]}",
            "interconnect.interfaces[0].name");
    refused(topo_check_interconnect,
            "{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/24\",\"10.0.0.300/24\"]}]}",
            "interconnect.interfaces[0].addrs[1]");
    refused(topo_check_interconnect,
            "{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/33\"]}]}",
            "interconnect.interfaces[0].addrs[0]");
    refused(topo_check_interconnect, "{\"interfaces\":[{\"name\":\"eth0\",\"speed_mbps\":-5}]}",
            "interconnect.interfaces[0].speed_mbps");
    refused(topo_check_interconnect, "{\"interfaces\":[{\"name\":\"eth0\",\"mac\":\"x\"}]}",
            "interconnect.interfaces[0].mac");
    refused(topo_check_interconnect, "{\"infiniband\":[{\"hca\":\"mlx5_0\",\"port\":0}]}",
            "interconnect.infiniband[0].port");
    refused(topo_check_interconnect,
            "{\"infiniband\":[{\"hca\":\"mlx5_0\",\"port\":1,\"state\":\"4: ACTIVE\"}]}",
            "interconnect.infiniband[0].state");
    refused(topo_check_interconnect, "{\"gpus\":[{\"index\":0,\"pcie\":{\"gen\":500}}]}",
            "interconnect.gpus[0].pcie.gen");
    refused(topo_check_interconnect, "{\"p2p\":[[\"X\",\"NV4\"]]}", "interconnect.p2p[0]");
    refused(topo_check_interconnect, "{\"p2p\":[[\"X\",\"NV0\"],[\"NV4\",\"X\"]]}",
            "interconnect.p2p[0][1]");
    refused(topo_check_interconnect, "{\"p2p\":[[\"X\",\"WIRE\"],[\"PIX\",\"X\"]]}",
            "interconnect.p2p[0][1]");
}

#define PROBE(results, variants)                                                                   \
    "{\"version\":1,\"op\":\"all_reduce\",\"dtype\":\"float32\",\"gpus\":8,\"nccl_version\":"      \
    "22105,\"warmup\":5,\"iters\":20,\"results\":" results ",\"variants\":" variants "}"
#define PT "{\"bytes\":8,\"time_us\":10.5,\"algbw_gbs\":0.001,\"busbw_gbs\":0.002}"

static void test_nccl_probe(void **state)
{
    (void)state;
    assert_int_equal(topo_check_nccl_probe(NULL, NULL), RC_OK);
    ok(topo_check_nccl_probe,
       PROBE("[" PT "]", "[{\"env\":{\"NCCL_ALGO\":\"Tree\"},\"results\":[" PT "]}]"));
    ok(topo_check_nccl_probe, PROBE("[" PT "]", "[]"));
    refused(topo_check_nccl_probe, "7", "nccl_probe");
    refused(topo_check_nccl_probe, "{\"version\":2}", "nccl_probe.version");
    refused(topo_check_nccl_probe, PROBE("[]", "[]"), "nccl_probe.results");
    refused(topo_check_nccl_probe,
            PROBE("[{\"bytes\":8,\"time_us\":-1,\"algbw_gbs\":0,\"busbw_gbs\":0}]", "[]"),
            "nccl_probe.results[0]");
    refused(topo_check_nccl_probe,
            PROBE("[" PT "]", "[{\"env\":{\"NCCL_DEBUG\":\"INFO\"},\"results\":[" PT "]}]"),
            "nccl_probe.variants[0].env");
    refused(topo_check_nccl_probe,
            PROBE("[" PT "]", "[{\"env\":{\"NCCL_ALGO\":\"Fast\"},\"results\":[" PT "]}]"),
            "nccl_probe.variants[0].env");
    refused(topo_check_nccl_probe, PROBE("[" PT "]", "[{\"env\":{\"NCCL_ALGO\":\"Ring\"}}]"),
            "nccl_probe.variants[0].results");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capabilities),
        cmocka_unit_test(test_interconnect),
        cmocka_unit_test(test_nccl_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
