/*
 * webhooks.h - the thread that delivers queued webhook notifications with
 * libcurl, in the receiver's format (generic JSON, WeCom, DingTalk, Feishu),
 * signed with HMAC-SHA256 and retried with exponential backoff.
 *
 * Signatures: every request carries X-Trainyard-Timestamp and
 * X-Trainyard-Signature: sha256=HEX(HMAC(secret, timestamp + "." + body)).
 * DingTalk and Feishu also get their own robot signatures (timestamp + sign
 * in the URL, or in the body), so their "signed robot" setting works.
 *
 * Exactly once, across replicas: the thread claims one due delivery at a time
 * (SKIP LOCKED) with a lease of twice webhook_timeout_ms plus a second, gives
 * the database connection back, sends, then takes a connection again to
 * record the outcome, only if its claim is still the latest
 * (db_delivery_result). A delivery is sent twice only when a sender outlives
 * its lease (a database slower than the lease allows) or dies after sending
 * and before recording; receivers can tell by X-Trainyard-Delivery.
 *
 * Threads: one delivery thread per replica; several replicas may run it.
 */
#ifndef TY_SERVER_WEBHOOKS_H
#define TY_SERVER_WEBHOOKS_H

#include "app.h"
#include "err.h"

struct webhooks;

enum rc webhooks_start(struct srv_app *app, struct webhooks **out) TY_WUR;
void webhooks_stop(struct webhooks *w);

/*
 * Render the body sent for a generic payload in format (generic, wecom,
 * dingtalk, feishu); feishu_sign is used only for feishu ("" = unsigned).
 * Returns a malloc'ed string or NULL.
 */
char *webhooks_render(const char *format, const char *payload, long timestamp,
                      const char *feishu_sign);

#endif
