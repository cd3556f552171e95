/*
 * reason_codes.c - see reason_codes.h.
 */
#include "reason_codes.h"

#include <stddef.h>
#include <string.h>

static const char *const codes[] = {RSN_SUBMITTED,
                                    RSN_PLACED,
                                    RSN_PLAN,
                                    RSN_ASSIGNMENT_TAKEN,
                                    RSN_ATTEMPT_RUNNING,
                                    RSN_SUCCEEDED,
                                    RSN_CANCELLED_BY_USER,
                                    RSN_CANCELLED,
                                    RSN_PREEMPTED,
                                    RSN_RESTARTING,
                                    RSN_FAILED_NO_RESTARTS,
                                    RSN_FAILED_FOR_GOOD,
                                    RSN_RANK_EXITED,
                                    RSN_RANK_SIGNALLED,
                                    RSN_NODE_FAILED,
                                    RSN_NODE_LOST,
                                    RSN_NODE_RANKS_LOST,
                                    RSN_EXEC_FAILED,
                                    RSN_PATH_REFUSED,
                                    RSN_SCRIPT_NOT_FOUND,
                                    RSN_PREPARE_FAILED,
                                    RSN_RENDEZVOUS_PORT_BUSY,
                                    RSN_SPAWN_FAILED,
                                    RSN_ASSIGNMENT_INVALID,
                                    RSN_NODE_OUT_OF_MEMORY,
                                    RSN_TIME_LIMIT_EXCEEDED,
                                    RSN_STOPPED_BY_SERVER,
                                    RSN_WORKER_SHUTDOWN,
                                    RSN_EXIT_STATUS_UNKNOWN,
                                    RSN_NODE_DRAINING,
                                    RSN_ISOLATION_FAILED,
                                    NULL};

const char *reason_code_find(const char *code)
{
    for (size_t i = 0; code != NULL && codes[i] != NULL; i++)
        if (strcmp(code, codes[i]) == 0)
            return codes[i];
    return NULL;
}

int reason_code_known(const char *code)
{
    return reason_code_find(code) != NULL;
}
