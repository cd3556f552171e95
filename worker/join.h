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
