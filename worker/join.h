/*
 * join.h - the node's identity: the address it gives other nodes, and the
 * node credential, read from WORK_DIR/node.json or bought once with the
 * join token (POST /api/v1/agent/join) and then written there (mode 0600,
 * atomically), so that later starts need no token.
 *
 * Threads: main thread only (the control thread's HTTP handle).
 */
#ifndef TY_WORKER_JOIN_H
#define TY_WORKER_JOIN_H

#include <stddef.h>

#include "agent_int.h"
#include "err.h"

/* The largest join token taken, with its terminating NUL. */
#define WRK_JOIN_TOKEN_MAX 256

/*
 * The join token into out (size bytes), never from the command line, where
 * every local user reads it (/proc/PID/cmdline): from the file at path when
 * path is not NULL (--join-token-file), else from TRAINYARD_JOIN_TOKEN.
 * Trailing white space (a final newline) is dropped. The file must be a
 * regular file, not a symbolic link, owned by this user or root, with no
 * permission for group or others (chmod 600), like the CLI's config file.
 * TRAINYARD_JOIN_TOKEN is removed from the environment, its text wiped, so
 * that the ranks do not inherit it. RC_ENOTFOUND when neither is given (an
 * empty variable counts as none); RC_EPERM (file mode or owner), RC_EINVAL
 * (empty file, too long, not printable) or RC_EUNAVAIL (cannot read) with e
 * filled. Main thread only, before any thread starts (it changes the
 * environment).
 */
enum rc wrk_join_token_load(const char *path, char *out, size_t size, struct err *e) TY_WUR;

/* The first non-loopback IPv4 address into out, else "127.0.0.1". */
void wrk_join_guess_addr(char *out, size_t size);

/*
 * POST join with cfg->join_token; on success write node.json and set
 * a->node_id and a->credential (replacing one the server refused). 1 on
 * success, 0 on a final refusal, -1 when worth retrying (no answer, 5xx).
 */
int wrk_join(struct wrk_agent *a);

/*
 * Take the credential from node.json, or join until that works (every 2 s
 * while the server is unreachable). 0 with a->credential set; -1 when there
 * is neither node.json nor a join token, the join was refused, or the worker
 * is stopping.
 */
int wrk_join_node(struct wrk_agent *a);

#endif
