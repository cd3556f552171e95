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
#include <unistd.h>

#include <curl/curl.h>

#include "agent.h"
#include "crypto.h"
#include "gpu.h"
#include "ident.h"
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
               "         [--job-user trainyard-job|self] [--job-users alice,bob]\n"
               "The join token is needed only on the first start; the node credential is\n"
               "then kept in WORK_DIR/node.json (mode 0600). It is read from\n"
               "--join-token-file (a file of this user or root, mode 0600 or stricter) or\n"
               "from the environment variable TRAINYARD_JOIN_TOKEN, never from the command\n"
               "line, which every local user can read.\n"
               "--python: the interpreter whose PyTorch, FSDP and DeepSpeed are probed at\n"
               "start and reported (\"\" turns the probe off). --nccl-probe-file: the JSON\n"
               "of trainyard-nccl-probe --json, uploaded with register.\n"
               "--isolate-network (root only): ranks run in a network namespace that reaches\n"
               "only loopback and the site's allowed networks (worker/README.md).\n"
               "--job-user: the account ranks run as (default trainyard-job; the worker needs\n"
               "root or CAP_SETUID+CAP_SETGID). \"self\" runs them as the worker's own user,\n"
               "which lets a rank read the node credential: for development only.\n"
               "--job-users: further accounts an assignment may ask for (a site's mapping of\n"
               "a user or team to a Unix account); any other is refused.\n");
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
    case 'U':
        if (wrk_ident_parse_list(arg, cfg->job_users, WRK_IDENT_MAX_USERS, &cfg->njob_users, e) !=
            RC_OK) {
            fprintf(stderr, "trainyard-worker: %s\n", e->message);
            return 2;
        }
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
    case 'u':
        cfg->job_user = arg;
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
        {"job-user", required_argument, NULL, 'u'},
        {"job-users", required_argument, NULL, 'U'},
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

/*
 * The account the ranks run as, settled before anything starts: a worker
 * that cannot switch to it refuses to start rather than run ranks as
 * itself, where they would read the node credential. 0 or 2.
 */
static int settle_job_ident(struct wrk_config *cfg, struct wrk_ident *id, struct err *e)
{
    memset(id, 0, sizeof(*id));
    cfg->job_ident = id;
    if (strcmp(cfg->job_user, WRK_IDENT_SELF) == 0) {
        LOG_WARN("agent",
                 "--job-user self: RANKS RUN AS THE WORKER'S OWN USER and can read the node "
                 "credential, act as this node towards the server and read other jobs' "
                 "assignments; for development only",
                 "uid=%d", (int)geteuid());
        return 0;
    }
    if (!wrk_ident_can_switch()) {
        fprintf(stderr,
                "trainyard-worker: cannot run ranks as %s: the worker (uid %d) has neither root "
                "nor CAP_SETUID and CAP_SETGID; start it as root or with those capabilities "
                "(the packaged unit does), or pass --job-user self to run ranks as the worker's "
                "own user (development only)\n",
                cfg->job_user, (int)geteuid());
        return 2;
    }
    if (wrk_ident_resolve(cfg->job_user, id, e) != RC_OK) {
        fprintf(stderr, "trainyard-worker: --job-user: %s\n", e->message);
        return 2;
    }
    LOG_INFO("agent", "ranks run as the job account", "account=%s uid=%d gid=%d", id->name,
             (int)id->uid, (int)id->gid);
    return 0;
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
    struct wrk_ident ident;
    char token[WRK_JOIN_TOKEN_MAX];
    int rc;

    memset(&cfg, 0, sizeof(cfg));
    cfg.work_dir = "/var/lib/trainyard-worker";
    cfg.grace_s = 30;
    cfg.heartbeat_ms = 2000;
    cfg.python = "python3";
    cfg.sys_root = "/sys";
    cfg.stop = &g_stop;
    cfg.job_user = WRK_IDENT_DEFAULT;
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
    if (!cfg.discover_only && (rc = settle_job_ident(&cfg, &ident, &e)) != 0) {
        crypto_wipe(token, sizeof(token));
        return rc;
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
