/*
 * main.c - trainyard-worker command line: parse options, install the signal
 * handlers (they only set a flag), curl_global_init() once before any thread,
 * then run the agent (agent.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "agent.h"
#include "crypto.h"
#include "gpu.h"
#include "join.h"
#include "log.h"
#include "netns.h"

/*
 * Written only by on_signal(), read by the agent's control thread. The
 * kernel runs the handler on any thread that does not block the signal (the
 * poller, the shipper, the launcher's I/O thread or the control thread
 * itself), so a volatile sig_atomic_t, which is safe only within one thread,
 * would be a data race. A lock-free atomic is both: C11 lets a signal handler
 * store to one (7.14.1.1), and the store is seen by every thread.
 */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag must be a lock-free atomic");
static atomic_int g_stop;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&g_stop, 1);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: trainyard-worker --server URL [--join-token-file PATH] [--name N]\n"
               "         [--labels rack=r1,switch=s1] [--fake-gpus COUNT[:MEMORY_GIB[:MODEL]]]\n"
               "         [--work-dir DIR] [--addr IP] [--allowed-root PATH ...] [--grace-s 30]\n"
               "         [--heartbeat-ms 2000] [--ca-file PEM] [--log-level info]\n"
               "         [--log-debug comps] [--discover] [--isolate-network]\n"
               "         [--python python3] [--nccl-probe-file FILE] [--sys-root /sys]\n"
               "The join token is needed only on the first start; the node credential is\n"
               "then kept in WORK_DIR/node.json (mode 0600). It is read from\n"
               "--join-token-file (a file of this user or root, mode 0600 or stricter) or\n"
               "from the environment variable TRAINYARD_JOIN_TOKEN, never from the command\n"
               "line, which every local user can read.\n"
               "--python: the interpreter whose PyTorch, FSDP and DeepSpeed are probed at\n"
               "start and reported (\"\" turns the probe off). --nccl-probe-file: the JSON\n"
               "of trainyard-nccl-probe --json, uploaded with register.\n"
               "--isolate-network (root only): ranks run in a network namespace that reaches\n"
               "only loopback and the site's allowed networks (worker/README.md).\n");
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Exit statuses of the option parser; PARSE_OK carries on to the agent. */
#define PARSE_OK (-1)

/* A validated option: PARSE_OK, or 2 after saying what is wrong with arg. */
static int set_checked_option(int c, const char *arg, struct wrk_config *cfg, struct err *e)
{
    enum log_level lvl;

    switch (c) {
    case 'f':
        if (wrk_fake_parse(arg, &cfg->fake_spec, e) != RC_OK) {
            fprintf(stderr, "trainyard-worker: %s\n", e->message);
            return 2;
        }
        cfg->fake = 1;
        return PARSE_OK;
    case 'r':
        if (cfg->nroots >= WRK_MAX_ROOTS || arg[0] != '/') {
            fprintf(stderr,
                    "trainyard-worker: --allowed-root needs an absolute path (at most %d)\n",
                    WRK_MAX_ROOTS);
            return 2;
        }
        cfg->roots[cfg->nroots++] = arg;
        return PARSE_OK;
    case 'g':
        if (parse_int(arg, 0, 3600, &cfg->grace_s) != 0) {
            fprintf(stderr, "trainyard-worker: --grace-s must be 0..3600\n");
            return 2;
        }
        return PARSE_OK;
    case 'b':
        if (parse_int(arg, 100, 60000, &cfg->heartbeat_ms) != 0) {
            fprintf(stderr, "trainyard-worker: --heartbeat-ms must be 100..60000\n");
            return 2;
        }
        return PARSE_OK;
    case 'L':
        if (log_parse_level(arg, &lvl) != RC_OK) {
            fprintf(stderr, "trainyard-worker: --log-level must be error|warn|info|debug\n");
            return 2;
        }
        log_set_level(lvl);
        return PARSE_OK;
    case 'S':
        if (arg[0] != '/') {
            fprintf(stderr, "trainyard-worker: --sys-root must be absolute\n");
            return 2;
        }
        cfg->sys_root = arg;
        return PARSE_OK;
    default:
        usage(stderr);
        return 2;
    }
}

/* One option from getopt_long(): PARSE_OK, 0 after --help, or 2. */
static int set_option(int c, const char *arg, struct wrk_config *cfg, struct err *e)
{
    switch (c) {
    case 's':
        cfg->server = arg;
        break;
    case 'j':
        fprintf(stderr, "trainyard-worker: --join-token is no longer accepted: every local user "
                        "reads the command line; use --join-token-file PATH (mode 0600) or the "
                        "environment variable TRAINYARD_JOIN_TOKEN\n");
        return 2;
    case 'J':
        cfg->join_token_file = arg;
        break;
    case 'n':
        cfg->name = arg;
        break;
    case 'l':
        cfg->labels = arg;
        break;
    case 'w':
        cfg->work_dir = arg;
        break;
    case 'a':
        cfg->addr = arg;
        break;
    case 'c':
        cfg->ca_file = arg;
        break;
    case 'D':
        log_set_debug(arg);
        break;
    case 'd':
        cfg->discover_only = 1;
        break;
    case 'I':
        cfg->isolate_network = 1;
        break;
    case 'P':
        cfg->python = arg;
        break;
    case 'N':
        cfg->nccl_probe_file = arg;
        break;
    case 'h':
        usage(stdout);
        return 0;
    default:
        return set_checked_option(c, arg, cfg, e);
    }
    return PARSE_OK;
}

/* Fill cfg from the command line: PARSE_OK, or the status to exit with. */
static int parse_args(int argc, char **argv, struct wrk_config *cfg, struct err *e)
{
    static const struct option opts[] = {
        {"server", required_argument, NULL, 's'},
        {"join-token", required_argument, NULL, 'j'}, /* refused with a pointer to the file */
        {"join-token-file", required_argument, NULL, 'J'},
        {"name", required_argument, NULL, 'n'},
        {"labels", required_argument, NULL, 'l'},
        {"fake-gpus", required_argument, NULL, 'f'},
        {"work-dir", required_argument, NULL, 'w'},
        {"addr", required_argument, NULL, 'a'},
        {"allowed-root", required_argument, NULL, 'r'},
        {"grace-s", required_argument, NULL, 'g'},
        {"heartbeat-ms", required_argument, NULL, 'b'},
        {"ca-file", required_argument, NULL, 'c'},
        {"log-level", required_argument, NULL, 'L'},
        {"log-debug", required_argument, NULL, 'D'},
        {"discover", no_argument, NULL, 'd'},
        {"isolate-network", no_argument, NULL, 'I'},
        {"python", required_argument, NULL, 'P'},
        {"nccl-probe-file", required_argument, NULL, 'N'},
        {"sys-root", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        if ((rc = set_option(c, optarg, cfg, e)) != PARSE_OK)
            return rc;
    if (optind != argc || (cfg->server == NULL && !cfg->discover_only)) {
        usage(stderr);
        return 2;
    }
    if (cfg->server == NULL)
        cfg->server = "http://127.0.0.1";
    if (cfg->work_dir[0] != '/') {
        fprintf(stderr, "trainyard-worker: --work-dir must be absolute\n");
        return 2;
    }
    return PARSE_OK;
}

static void install_signal_handlers(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

int main(int argc, char **argv)
{
    struct wrk_config cfg;
    struct err e;
    char token[WRK_JOIN_TOKEN_MAX];
    int rc;

    memset(&cfg, 0, sizeof(cfg));
    cfg.work_dir = "/var/lib/trainyard-worker";
    cfg.grace_s = 30;
    cfg.heartbeat_ms = 2000;
    cfg.python = "python3";
    cfg.sys_root = "/sys";
    cfg.stop = &g_stop;
    err_init(&e);
    if ((rc = parse_args(argc, argv, &cfg, &e)) != PARSE_OK)
        return rc;
    switch (wrk_join_token_load(cfg.join_token_file, token, sizeof(token), &e)) {
    case RC_OK:
        cfg.join_token = token;
        break;
    case RC_ENOTFOUND:
        break;
    default:
        fprintf(stderr, "trainyard-worker: %s\n", e.message);
        return 2;
    }

    /* Isolation is refused up front rather than found missing at a launch. */
    if (cfg.isolate_network && !cfg.discover_only && wrk_netns_check_host(&e) != RC_OK) {
        fprintf(stderr, "trainyard-worker: %s\n", e.message);
        return 2;
    }
    install_signal_handlers();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "trainyard-worker: curl init failed\n");
        return 1;
    }
    LOG_INFO("agent", "starting", "server=%s work_dir=%s fake_gpus=%d roots=%zu isolate_network=%d",
             cfg.server, cfg.work_dir, cfg.fake ? cfg.fake_spec.count : -1, cfg.nroots,
             cfg.isolate_network);
    rc = wrk_agent_run(&cfg);
    crypto_wipe(token, sizeof(token));
    curl_global_cleanup();
    LOG_INFO("agent", "stopped", "status=%d", rc);
    return rc;
}
