/*
 * fuzz_cli_sse.c - libFuzzer target for the CLI's Server-Sent Events
 * reader (cli/sse.c), what `trainyard logs -f` reads from the network:
 * any bytes, fed whole and then split at a point the input chooses, must
 * give the same events, never crash, leak or read out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct digest {
    unsigned long h;
    int n;
};

static int on_event(const char *event, const char *id, const char *d, void *ud)
{
    struct digest *g = ud;
    const char *parts[] = {event, id, d};

    for (size_t i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p != '\0'; p++)
            g->h = g->h * 31 + (unsigned char)*p;
    g->n++;
    return 0;
}

static enum rc run(const char *buf, size_t n, size_t split, struct digest *g)
{
    struct cli_sse s;
    enum rc rc;

    cli_sse_init(&s);
    rc = cli_sse_feed(&s, buf, split, on_event, g);
    if (rc == RC_OK)
        rc = cli_sse_feed(&s, buf + split, n - split, on_event, g);
    cli_sse_cleanup(&s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    struct digest whole = {0, 0}, parts = {0, 0};
    size_t split;
    enum rc a, b;

    if (copy == NULL)
        return 0;
    if (size)
        memcpy(copy, data, size);
    split = size ? (size_t)data[0] % (size + 1) : 0;
    a = run(copy, size, size, &whole);
    b = run(copy, size, split, &parts);
    if (a != b || whole.n != parts.n || whole.h != parts.h)
        abort();
    free(copy);
    return 0;
}
