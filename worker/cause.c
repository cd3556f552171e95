/*
 * cause.c - deterministic failure causes (see cause.h).
 */
#include "cause.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int wrk_cause_exec_errno(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case ENOEXEC:
    case ELOOP:
    case ENAMETOOLONG:
    case EISDIR:
    case E2BIG:
        return 1;
    default:
        return 0;
    }
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s != NULL ? s + 1 : path;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* python, python3, python3.11 */
static int is_python(const char *name)
{
    return strncmp(name, "python", 6) == 0 && strspn(name + 6, "0123456789.") == strlen(name + 6);
}

static int is_shell(const char *name)
{
    return strcmp(name, "sh") == 0 || strcmp(name, "bash") == 0 || strcmp(name, "dash") == 0;
}

const char *wrk_cause_script_arg(char *const *argv)
{
    const char *name, *script;

    if (argv == NULL || argv[0] == NULL || argv[1] == NULL)
        return NULL;
    name = base_name(argv[0]);
    script = argv[1];
    if (script[0] == '-')
        return NULL; /* an option: -m, -c, -u, "-" (stdin) */
    if (is_python(name) && ends_with(script, ".py"))
        return script;
    if (is_shell(name) && ends_with(script, ".sh") && strchr(script, '/') != NULL)
        return script;
    return NULL;
}

int wrk_cause_script_missing(const char *cwd, const char *script)
{
    char path[PATH_MAX];
    struct stat st;
    int n;

    if (script[0] == '/')
        n = snprintf(path, sizeof(path), "%s", script);
    else
        n = snprintf(path, sizeof(path), "%s/%s", cwd, script);
    if (n < 0 || (size_t)n >= sizeof(path))
        return 0; /* cannot tell: let the interpreter try */
    if (stat(path, &st) == 0)
        return 0;
    return errno == ENOENT || errno == ENOTDIR;
}
