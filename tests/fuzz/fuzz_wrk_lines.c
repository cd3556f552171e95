/*
 * fuzz_wrk_lines.c - libFuzzer target for worker/lines.c: any bytes a rank
 * prints must classify without crashing, leaking or reading out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "shipper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wrk_line l;
    /* an exact-size copy so ASan sees any read past the end */
    char *copy = malloc(size ? size : 1);
    char *clean;

    if (copy == NULL)
        return 0;
    if (size)
        memcpy(copy, data, size);
    if (wrk_line_parse(copy, size, &l) == RC_OK) {
        if (l.kind == WRK_LINE_METRIC && json_object_size(l.values) == 0)
            abort();
        if (l.kind == WRK_LINE_CHECKPOINT && (l.path == NULL || l.path[0] == '\0'))
            abort();
        wrk_line_cleanup(&l);
    }
    /* the UTF-8 cleaner sees the same bytes before they go out as JSON */
    clean = wrk_utf8_clean(copy, size);
    if (clean != NULL) {
        json_t *s = json_string(clean);
        if (s == NULL)
            abort(); /* the cleaner must produce valid UTF-8 */
        json_decref(s);
    }
    free(clean);
    free(copy);
    return 0;
}
