/*
 * fuzz_cli_config.c - libFuzzer target for the CLI's login file reader
 * (cli/config.c cli_config_parse): any bytes in ~/.config/trainyard/config
 * must parse or be refused with a line and a reason, never crash or read
 * out of bounds; what parses must write back (cli_config_format) and read
 * again to the same values.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy so ASan sees any read past the end */
    char *copy = malloc(size ? size : 1), *text = malloc(16384);
    struct cli_config a, b;
    enum cli_msg why;
    int line;

    if (copy == NULL || text == NULL)
        goto out;
    if (size)
        memcpy(copy, data, size);
    if (cli_config_parse(copy, size, &a, &line, &why) != RC_OK) {
        if (line < 0 || (size_t)line > size + 1)
            abort();
        goto out;
    }
    if (line != 0)
        abort();
    /* Values are text without control characters: they always write back. */
    if (cli_config_format(&a, text, 16384) != RC_OK)
        abort();
    if (cli_config_parse(text, strlen(text), &b, &line, &why) != RC_OK ||
        memcmp(&a, &b, sizeof(a)) != 0)
        abort();
out:
    free(text);
    free(copy);
    return 0;
}
