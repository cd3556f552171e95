/*
 * sse.c - the event stream reader (sse.h), fuzzed by
 * tests/fuzz/fuzz_cli_sse.c.
 */
#include <stdlib.h>
#include <string.h>

#include "sse.h"

void cli_sse_init(struct cli_sse *s)
{
    memset(s, 0, sizeof(*s));
}

void cli_sse_cleanup(struct cli_sse *s)
{
    free(s->line);
    free(s->data);
    memset(s, 0, sizeof(*s));
}

static int grow(char **p, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 256;
    char *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if ((q = realloc(*p, c)) == NULL)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The field of one complete line (s->line, s->len bytes, terminated). */
static enum rc field(struct cli_sse *s, cli_sse_fn fn, void *ud)
{
    const char *l = s->line, *colon, *v;
    size_t nl = s->len, vl;

    if (nl == 0) { /* blank line: dispatch */
        int r = 0;
        if (s->has_data) {
            s->data[s->dlen] = '\0';
            r = fn(s->event[0] ? s->event : "message", s->id, s->data, ud);
        }
        s->has_data = 0;
        s->dlen = 0;
        s->event[0] = '\0';
        return r == 0 ? RC_OK : RC_ECONFLICT;
    }
    if (l[0] == ':')
        return RC_OK;
    colon = memchr(l, ':', nl);
    v = colon ? colon + 1 : l + nl;
    if (colon && *v == ' ')
        v++;
    vl = (size_t)(l + nl - v);
    nl = colon ? (size_t)(colon - l) : nl;
    if (nl == 5 && memcmp(l, "event", 5) == 0) {
        if (vl < sizeof(s->event) && memchr(v, '\0', vl) == NULL) {
            memcpy(s->event, v, vl);
            s->event[vl] = '\0';
        }
    } else if (nl == 4 && memcmp(l, "data", 4) == 0) {
        size_t need = s->dlen + (s->has_data ? 1 : 0) + vl + 1;
        if (need > CLI_SSE_MAX)
            return RC_ETOOBIG;
        if (grow(&s->data, &s->dcap, need) != 0)
            return RC_ENOMEM;
        if (s->has_data)
            s->data[s->dlen++] = '\n';
        memcpy(s->data + s->dlen, v, vl);
        s->dlen += vl;
        s->has_data = 1;
    } else if (nl == 2 && memcmp(l, "id", 2) == 0) {
        if (vl < sizeof(s->id) && memchr(v, '\0', vl) == NULL) {
            memcpy(s->id, v, vl);
            s->id[vl] = '\0';
        }
    }
    return RC_OK;
}

enum rc cli_sse_feed(struct cli_sse *s, const char *buf, size_t n, cli_sse_fn fn, void *ud)
{
    enum rc rc;

    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        if (ch == '\n' && s->last_cr) {
            s->last_cr = 0;
            continue;
        }
        s->last_cr = ch == '\r';
        if (ch == '\n' || ch == '\r') {
            if (grow(&s->line, &s->cap, s->len + 1) != 0)
                return RC_ENOMEM;
            s->line[s->len] = '\0';
            rc = field(s, fn, ud);
            s->len = 0;
            if (rc != RC_OK)
                return rc;
            continue;
        }
        if (s->len + 1 >= CLI_SSE_MAX)
            return RC_ETOOBIG;
        if (grow(&s->line, &s->cap, s->len + 2) != 0)
            return RC_ENOMEM;
        s->line[s->len++] = ch;
    }
    return RC_OK;
}
