/*
 * fuzz_notify.c - the payload of a cross-replica wake-up (notify.h), which
 * the listener reads from the database: never read past the string, a
 * refused payload leaves an empty message, and an accepted one formats and
 * parses back to the same wake-ups.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct notify_msg a, b;
static char buf[NOTIFY_PAYLOAD_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (notify_parse(s, &a) != RC_OK) {
        if (a.nkeys != 0 || a.wake_scheduler || a.sender[0] != '\0')
            abort();
        free(s);
        return 0;
    }
    if (a.nkeys > NOTIFY_MAX_KEYS || a.sender[0] == '\0')
        abort();
    for (size_t i = 1; i < a.nkeys; i++)
        if (a.keys[i] == 0) /* 0 covers all: it stands alone */
            abort();
    if (notify_format(a.sender, a.keys, a.nkeys, a.wake_scheduler, buf, sizeof(buf)) != RC_OK)
        abort();
    if (notify_parse(buf, &b) != RC_OK || strcmp(a.sender, b.sender) != 0 ||
        a.wake_scheduler != b.wake_scheduler)
        abort();
    /* The same keys, or everyone when they did not fit. */
    if (!(b.nkeys == 1 && b.keys[0] == 0) &&
        (a.nkeys != b.nkeys || memcmp(a.keys, b.keys, a.nkeys * sizeof(a.keys[0])) != 0))
        abort();
    free(s);
    return 0;
}
