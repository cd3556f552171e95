/*
 * heartbeat.c - one heartbeat (see heartbeat.h).
 */
#include "heartbeat.h"

#include <jansson.h>

#include "log.h"

void wrk_heartbeat(struct wrk_http *h, struct wrk_gpus *g, struct wrk_launcher *l, int draining)
{
    json_t *body, *resp = NULL;
    long status = 0;

    wrk_gpus_sample(g, wrk_launcher_gpu_busy, l);
    body = json_pack("{s:o*, s:o*, s:b}", "gpus", wrk_gpus_heartbeat_json(g), "running",
                     wrk_launcher_running_json(l), "draining", draining);
    if (body == NULL)
        return;
    if (wrk_http_request(h, "POST", "/api/v1/agent/heartbeat", body, 5000L, &status, &resp) !=
        RC_OK) {
        LOG_WARN("agent", "heartbeat failed", "");
    } else if (status != 200) {
        LOG_WARN("agent", "heartbeat refused", "status=%ld", status);
    } else {
        const json_t *cancel = json_object_get(resp, "cancel");
        for (size_t i = 0; i < json_array_size(cancel); i++) {
            const char *id = json_string_value(json_array_get(cancel, i));
            if (id != NULL && wrk_launcher_cancel(l, id, "cancelled"))
                LOG_INFO("agent", "cancel", "attempt_id=%s", id);
        }
    }
    json_decref(body);
    json_decref(resp);
}
