/*
 * fuzz_audit_range.c - the from/to bounds of GET /api/v1/audit/export, which
 * come straight from the query string: never read past the string, and an
 * accepted time has the shape PostgreSQL is then given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit_range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    size_t n;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    n = strlen(s);
    if (audit_id_ok(s) && (n < 1 || n > 18 || strspn(s, "0123456789") != n))
        abort();
    if (audit_time_ok(s)) {
        /* the date and clock are digits where they must be; the zone is
         * Z or a signed offset (a ' ' for '+' was rewritten) */
        if (n < 20 || n > 40 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':')
            abort();
        if (strchr(s, ' ') != NULL)
            abort();
        if (!audit_time_ok(s)) /* accepted once, accepted again */
            abort();
    }
    free(s);
    return 0;
}
