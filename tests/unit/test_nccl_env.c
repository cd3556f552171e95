/*
 * test_nccl_env.c - the NCCL/gloo settings the server derives for each node
 * of a job from what the nodes reported (server/jobs/nccl_env.h): the socket
 * interface (rendezvous address held, on its subnet, or routed), InfiniBand
 * on every node or on some, the P2P level from the GPU paths, NCCL_ALGO /
 * NCCL_PROTO only where the probe measured a gain, and the user's own env
 * winning with "set by the user".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nccl_env.h"

#define LO "{\"name\":\"lo\",\"addrs\":[\"127.0.0.1/8\",\"::1/128\"],\"loopback\":true}"
#define IB_OK                                                                                      \
    "\"infiniband\":[{\"hca\":\"mlx5_0\",\"port\":1,\"state\":\"ACTIVE\",\"rate_gbps\":200,"       \
    "\"link_layer\":\"InfiniBand\"},{\"hca\":\"mlx5_0\",\"port\":2,\"state\":\"DOWN\","            \
    "\"rate_gbps\":10,\"link_layer\":\"InfiniBand\"},{\"hca\":\"mlx5_1\",\"port\":1,"              \
    "\"state\":\"ACTIVE\",\"rate_gbps\":400,\"link_layer\":\"InfiniBand\"}]"

static json_t *J(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (j == NULL) {
        print_error("bad test JSON at %d: %s\n", je.position, je.text);
        fail();
    }
    return j;
}

struct out {
    json_t *env, *shown;
};

static struct out derive(const char *master, const char *user_env, const char *nodes, size_t self)
{
    struct out o = {NULL, NULL};
    json_t *u = user_env ? J(user_env) : NULL, *n = J(nodes);
    assert_int_equal(nccl_env_derive(master, u, n, self, &o.env, &o.shown), RC_OK);
    assert_int_equal(json_array_size(o.shown), 7);
    json_decref(u);
    json_decref(n);
    return o;
}

static void done(struct out *o)
{
    json_decref(o->env);
    json_decref(o->shown);
}

static const json_t *var(const struct out *o, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(o->shown, i, v)
    {
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
            return v;
    }
    fail_msg("no variable %s", name);
    return NULL;
}

/* value (NULL: not set), source, and a piece of the English reason; zh-CN present. */
static void check(const struct out *o, const char *name, const char *value, const char *source,
                  const char *reason_part)
{
    const json_t *v = var(o, name);
    const json_t *reason = json_object_get(v, "reason");
    const char *en = json_string_value(json_object_get(reason, "en"));
    const char *zh = json_string_value(json_object_get(reason, "zh-CN"));
    const char *sent = json_string_value(json_object_get(o->env, name));

    if (value == NULL)
        assert_true(json_is_null(json_object_get(v, "value")));
    else
        assert_string_equal(json_string_value(json_object_get(v, "value")), value);
    assert_string_equal(json_string_value(json_object_get(v, "source")), source);
    assert_non_null(en);
    assert_non_null(zh);
    assert_true(strlen(zh) > 0);
    if (strstr(en, reason_part) == NULL)
        fail_msg("%s: reason \"%s\" lacks \"%s\"", name, en, reason_part);
    /* the worker gets exactly the derived values; a user's are in the job's env already */
    if (value != NULL && strcmp(source, "derived") == 0)
        assert_string_equal(sent, value);
    else
        assert_null(sent);
}

/* One node, rendezvous on loopback, no InfiniBand, fake GPUs (no topology), no probe. */
static void test_single_node_loopback(void **state)
{
    struct out o;
    (void)state;
    o = derive("127.0.0.1", NULL,
               "[{\"node_rank\":0,\"name\":\"n1\",\"addr\":\"127.0.0.1\",\"gpus\":[0,1],"
               "\"interconnect\":{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/24\"]},"
               "" LO "],\"infiniband\":[]},\"nccl_probe\":null}]",
               0);
    check(&o, "NCCL_SOCKET_IFNAME", "=lo", "derived", "interface lo holds the rendezvous address");
    check(&o, "GLOO_SOCKET_IFNAME", "lo", "derived", "interface lo holds");
    check(&o, "NCCL_IB_DISABLE", "1", "derived", "no active InfiniBand port");
    check(&o, "NCCL_IB_HCA", NULL, "derived", "InfiniBand is off");
    check(&o, "NCCL_P2P_LEVEL", NULL, "derived", "no GPU topology");
    check(&o, "NCCL_ALGO", NULL, "derived", "no trainyard-nccl-probe results");
    check(&o, "NCCL_PROTO", NULL, "derived", "no trainyard-nccl-probe results");
    assert_int_equal(json_object_size(o.env), 3);
    done(&o);
}

#define TWO_IB_NODES                                                                               \
    "[{\"node_rank\":0,\"name\":\"gpu-07\",\"addr\":\"10.0.0.7\",\"gpus\":[0],"                    \
    "\"interconnect\":{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/24\"]}," LO "],"   \
    "" IB_OK "}},"                                                                                 \
    "{\"node_rank\":1,\"name\":\"gpu-08\",\"addr\":\"10.0.0.8\",\"gpus\":[0],"                     \
    "\"interconnect\":{\"interfaces\":[{\"name\":\"ens1\",\"addrs\":[\"10.0.0.8/16\"]},"           \
    "{\"name\":\"ens2\",\"addrs\":[\"10.0.0.9/24\"]}," LO "]," IB_OK "}}]"

static void test_two_nodes_infiniband(void **state)
{
    struct out o;
    (void)state;
    o = derive("10.0.0.7", NULL, TWO_IB_NODES, 0);
    check(&o, "NCCL_SOCKET_IFNAME", "=eth0", "derived", "holds the rendezvous address 10.0.0.7");
    check(&o, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1", "derived", "every node of the job has one");
    check(&o, "NCCL_IB_DISABLE", NULL, "derived", "InfiniBand is used");
    check(&o, "NCCL_P2P_LEVEL", NULL, "derived", "one GPU on this node");
    check(&o, "NCCL_ALGO", NULL, "derived", "the probe measures one node");
    done(&o);
    /* the other node: the longest prefix that holds the address wins (/24 over /16) */
    o = derive("10.0.0.7", NULL, TWO_IB_NODES, 1);
    check(&o, "NCCL_SOCKET_IFNAME", "=ens2", "derived", "ens2 (10.0.0.9/24) is on the subnet");
    check(&o, "GLOO_SOCKET_IFNAME", "ens2", "derived", "on the subnet of the rendezvous");
    done(&o);
}

static void test_one_node_without_infiniband(void **state)
{
    struct out o;
    (void)state;
    o = derive("10.0.0.7", NULL,
               "[{\"node_rank\":0,\"name\":\"gpu-07\",\"addr\":\"10.0.0.7\",\"gpus\":[0],"
               "\"interconnect\":{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"10.0.0.7/24\"]}],"
               "" IB_OK "}},{\"node_rank\":1,\"name\":\"cpu-01\",\"addr\":\"10.0.0.9\","
               "\"gpus\":[0],\"interconnect\":{}}]",
               0);
    check(&o, "NCCL_IB_DISABLE", "1", "derived", "node cpu-01 has no active InfiniBand port");
    check(&o, "NCCL_IB_HCA", NULL, "derived", "InfiniBand is off");
    done(&o);
}

/* The rendezvous address is on no local subnet (routed racks): the node's own address. */
static void test_routed_rendezvous(void **state)
{
    struct out o;
    (void)state;
    o = derive(
        "10.1.0.7", NULL,
        "[{\"node_rank\":0,\"name\":\"a\",\"addr\":\"10.1.0.7\",\"gpus\":[0]},"
        "{\"node_rank\":1,\"name\":\"b\",\"addr\":\"10.2.0.8\",\"gpus\":[0],"
        "\"interconnect\":{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"192.168.1.2/24\"]},"
        "{\"name\":\"eth1\",\"addrs\":[\"10.2.0.8/24\"]}," LO "]}}]",
        1);
    check(&o, "NCCL_SOCKET_IFNAME", "=eth1", "derived", "holds this node's address 10.2.0.8");
    done(&o);
    /* nothing matches at all, or the address is a name: left to NCCL and gloo */
    o = derive(
        "10.1.0.7", NULL,
        "[{\"node_rank\":0,\"name\":\"a\",\"addr\":\"10.9.9.9\",\"gpus\":[0],"
        "\"interconnect\":{\"interfaces\":[{\"name\":\"eth0\",\"addrs\":[\"192.168.1.2/24\"]}]}}]",
        0);
    check(&o, "NCCL_SOCKET_IFNAME", NULL, "derived", "choose one themselves");
    check(&o, "GLOO_SOCKET_IFNAME", NULL, "derived", "choose one themselves");
    done(&o);
    o = derive("head.example", NULL, "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0]}]", 0);
    check(&o, "NCCL_SOCKET_IFNAME", NULL, "derived", "is not an IP address");
    done(&o);
}

static void test_p2p_level(void **state)
{
    struct out o;
    (void)state;
    /* four GPUs on NVLink (an NVSwitch box); the job uses 0, 1 and 3 */
    o = derive("127.0.0.1", NULL,
               "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0,1,3],\"interconnect\":{\"p2p\":["
               "[\"X\",\"NV18\",\"NV18\",\"NV18\"],[\"NV18\",\"X\",\"NV18\",\"NV18\"],"
               "[\"NV18\",\"NV18\",\"X\",\"NV18\"],[\"NV18\",\"NV18\",\"NV18\",\"X\"]]}}]",
               0);
    check(&o, "NCCL_P2P_LEVEL", "NVL", "derived", "every pair of the job's 3 GPUs");
    done(&o);
    /* PCIe only: 0-1 share a switch, 1-2 meet at the CPU */
    o = derive("127.0.0.1", NULL,
               "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0,1,2],\"interconnect\":{\"p2p\":["
               "[\"X\",\"PIX\",\"SYS\"],[\"PIX\",\"X\",\"SYS\"],[\"SYS\",\"SYS\",\"X\"]]}}]",
               0);
    check(&o, "NCCL_P2P_LEVEL", "PXB", "derived", "GPU 0 and GPU 2 meet only at the CPU (SYS)");
    done(&o);
    o = derive("127.0.0.1", NULL,
               "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0,1],\"interconnect\":{\"p2p\":["
               "[\"X\",\"PXB\"],[\"PXB\",\"X\"]]}}]",
               0);
    check(&o, "NCCL_P2P_LEVEL", "PXB", "derived", "joined through PCIe switches (PXB)");
    done(&o);
    o = derive("127.0.0.1", NULL,
               "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0,1],\"interconnect\":{\"p2p\":["
               "[\"X\",\"\"],[\"\",\"X\"]]}}]",
               0);
    check(&o, "NCCL_P2P_LEVEL", NULL, "derived", "between GPU 0 and GPU 1 is unknown");
    done(&o);
}

/* A probe of 2 GPUs: the baseline and variants, algbw per size (8 B, 1 MiB, 1 GiB). */
static char *probe_node(int probe_gpus, const char *variants)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf),
             "[{\"node_rank\":0,\"name\":\"a\",\"gpus\":[0,1],\"nccl_probe\":{\"version\":1,"
             "\"op\":\"all_reduce\",\"dtype\":\"float32\",\"gpus\":%d,\"nccl_version\":22105,"
             "\"warmup\":5,\"iters\":20,\"results\":["
             "{\"bytes\":8,\"time_us\":10,\"algbw_gbs\":0.001,\"busbw_gbs\":0.001},"
             "{\"bytes\":1048576,\"time_us\":50,\"algbw_gbs\":20,\"busbw_gbs\":20},"
             "{\"bytes\":1073741824,\"time_us\":9000,\"algbw_gbs\":100,\"busbw_gbs\":100}],"
             "\"variants\":[%s]}}]",
             probe_gpus, variants);
    return buf;
}

#define VARIANT(k, v, small, mid, big)                                                             \
    "{\"env\":{\"" k "\":\"" v "\"},\"results\":["                                                 \
    "{\"bytes\":8,\"time_us\":10,\"algbw_gbs\":" small ",\"busbw_gbs\":0},"                        \
    "{\"bytes\":1048576,\"time_us\":50,\"algbw_gbs\":" mid ",\"busbw_gbs\":0},"                    \
    "{\"bytes\":1073741824,\"time_us\":9000,\"algbw_gbs\":" big ",\"busbw_gbs\":0}]}"

static void test_algo_only_where_measured(void **state)
{
    struct out o;
    (void)state;
    /* Tree: +15 % and +20 % from 1 MiB up, 3 % slower at 8 B: applied.
     * LL128: +12 % too, but less than Tree; Ring: +8 %: not enough. */
    o = derive("127.0.0.1", NULL,
               probe_node(2, VARIANT("NCCL_ALGO", "Tree", "0.00097", "23", "120") "," VARIANT(
                                 "NCCL_PROTO", "LL128", "0.001", "22.4",
                                 "112") "," VARIANT("NCCL_ALGO", "Ring", "0.001", "21.6", "108")),
               0);
    check(&o, "NCCL_ALGO", "Tree", "derived", "NCCL_ALGO=Tree at least 15 % faster");
    check(&o, "NCCL_PROTO", NULL, "derived", "one at a time");
    done(&o);
    /* a big gain at 1 GiB but 10 % slower on small messages: not applied */
    o = derive("127.0.0.1", NULL,
               probe_node(2, VARIANT("NCCL_PROTO", "Simple", "0.0009", "30", "150")), 0);
    check(&o, "NCCL_PROTO", NULL, "derived", "no NCCL_PROTO the probe measured beat");
    check(&o, "NCCL_ALGO", NULL, "derived", "no NCCL_ALGO the probe measured beat");
    done(&o);
    /* the probe ran on 8 GPUs, the job uses 2 */
    o = derive("127.0.0.1", NULL, probe_node(8, VARIANT("NCCL_ALGO", "Tree", "0.001", "30", "150")),
               0);
    check(&o, "NCCL_ALGO", NULL, "derived", "the probe ran on 8 GPUs, the job uses 2");
    done(&o);
}

static void test_user_wins(void **state)
{
    struct out o;
    (void)state;
    o = derive("10.0.0.7",
               "{\"NCCL_SOCKET_IFNAME\":\"ib0\",\"NCCL_IB_HCA\":\"mlx5_3\",\"LR\":\"1\"}",
               TWO_IB_NODES, 0);
    check(&o, "NCCL_SOCKET_IFNAME", "ib0", "user", "set by the user");
    check(&o, "GLOO_SOCKET_IFNAME", "eth0", "derived", "holds the rendezvous address");
    check(&o, "NCCL_IB_HCA", "mlx5_3", "user", "set by the user");
    check(&o, "NCCL_IB_DISABLE", NULL, "derived", "the user set NCCL_IB_HCA");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(var(&o, "NCCL_IB_HCA"), "reason"), "zh-CN")),
                        "由用户设置");
    assert_int_equal(json_object_size(o.env), 1); /* GLOO_SOCKET_IFNAME only */
    done(&o);
}

static void test_bad_self(void **state)
{
    json_t *n = J("[{\"node_rank\":0}]"), *env = NULL, *shown = NULL;
    (void)state;
    assert_int_equal(nccl_env_derive("10.0.0.7", NULL, n, 1, &env, &shown), RC_EINVAL);
    assert_null(env);
    assert_null(shown);
    json_decref(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_node_loopback),
        cmocka_unit_test(test_two_nodes_infiniband),
        cmocka_unit_test(test_one_node_without_infiniband),
        cmocka_unit_test(test_routed_rendezvous),
        cmocka_unit_test(test_p2p_level),
        cmocka_unit_test(test_algo_only_where_measured),
        cmocka_unit_test(test_user_wins),
        cmocka_unit_test(test_bad_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
