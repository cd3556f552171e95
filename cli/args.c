/*
 * args.c - shared option parsing (args.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "msg.h"

int cli_opt(int argc, char **argv, int *i, const char *name, const char **val, FILE *err)
{
    const char *a = argv[*i];
    size_t n = strlen(name);

    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '='))
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
    } else if (*i + 1 < argc) {
        *val = argv[++*i];
    } else {
        cli_errf(err, M_NEEDS_VALUE, name);
        return -1;
    }
    if ((*val)[0] == '\0') {
        cli_errf(err, M_NEEDS_VALUE, name);
        return -1;
    }
    return 1;
}

int cli_common_opt(int argc, char **argv, int *i, struct cli_common *c, FILE *err)
{
    const char *a = argv[*i];

    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        c->help = 1;
        return 1;
    }
    if (strcmp(a, "--json") == 0) {
        c->json = 1;
        return 1;
    }
    return cli_opt(argc, argv, i, "--server", &c->server, err);
}

int cli_long(const char *opt, const char *v, long lo, long hi, long *out, FILE *err)
{
    char *end = NULL;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
        cli_errf(err, M_BAD_INT, opt, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_usage_error(FILE *err, const char *cmd)
{
    char buf[256];

    cli_msgf(buf, sizeof(buf), M_SEE_HELP, cmd);
    fprintf(err, "%s\n", buf);
    return CLI_EXIT_USAGE;
}

int cli_bad_arg(const char *a, FILE *err)
{
    if (a[0] == '-' && a[1] != '\0')
        cli_errf(err, M_UNKNOWN_OPTION, a);
    else
        cli_errf(err, M_EXTRA_ARG, a);
    return -1;
}

int cli_read_json_file(const char *path, json_t **out, FILE *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    json_error_t je;
    int code = CLI_EXIT_USAGE;

    *out = NULL;
    if (f == NULL) {
        cli_errf(err, M_READ_FILE, path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    if ((buf = malloc(CLI_MAX_INPUT + 1)) == NULL) {
        cli_errf(err, M_OOM);
        goto out;
    }
    n = fread(buf, 1, CLI_MAX_INPUT + 1, f);
    if (ferror(f)) {
        cli_errf(err, M_READ_FILE, path, strerror(errno));
        goto out;
    }
    if (n > CLI_MAX_INPUT) {
        cli_errf(err, M_READ_FILE, path, "over 4 MiB");
        goto out;
    }
    *out = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(*out)) {
        cli_errf(err, M_NOT_JSON, path, *out ? "not an object" : je.text, *out ? 1 : je.line);
        json_decref(*out);
        *out = NULL;
        goto out;
    }
    code = CLI_EXIT_OK;
out:
    free(buf);
    if (f != stdin)
        fclose(f);
    return code;
}
