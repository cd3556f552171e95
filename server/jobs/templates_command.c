/*
 * templates_command.c - what a template runs (see templates_int.h): a script
 * under examples_dir with its interpreter, or a command of its own; and the
 * model server a version registered from its jobs runs ("serve"). The
 * script's path is checked here as text only; whether the file is on this
 * host is the loader's warning (templates_set.c), since the server need not
 * be a node.
 *
 * Reentrant: no globals besides constant tables.
 */
#include "templates_int.h"

#include <stdio.h>
#include <string.h>

#include "json_check.h"
#include "templates.h"

#define MAX_SCRIPT 255
#define MAX_COMMAND 64

int tpl_script_inside(const char *s)
{
    const char *seg = s;

    if (*s == '/' || *s == '\0')
        return 0;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
        if (end == NULL)
            return 1;
        seg = end + 1;
    }
}

/* The program part of the command: interpreter + script, or command. */
enum rc tpl_check_program(const json_t *doc, const char *examples_dir, struct tpl_fields *f,
                          struct err *e)
{
    const json_t *script = json_object_get(doc, "script");
    const json_t *interp = json_object_get(doc, "interpreter");
    const json_t *command = json_object_get(doc, "command");
    char path[MAX_PATH_ARG + 1];
    size_t dl;
    enum rc rc;

    if (script != NULL) {
        if ((rc = tpl_want_str(script, "script", 1, MAX_SCRIPT, 1, &f->script, e)) != RC_OK)
            return rc;
        if (!tpl_script_inside(f->script))
            return jcheck_bad(
                e, "script", script,
                "script must be a relative path inside examples_dir, without \".\" or "
                "\"..\" segments");
    }
    if (interp != NULL) {
        if (script == NULL)
            return jcheck_bad(e, "interpreter", NULL, "interpreter is allowed only with script");
        if ((rc = tpl_want_str(interp, "interpreter", 2, MAX_SCRIPT, 1, &f->interpreter, e)) !=
            RC_OK)
            return rc;
        if (f->interpreter[0] != '/')
            return jcheck_bad(e, "interpreter", interp, "interpreter must be an absolute path");
    }
    if (command != NULL && script != NULL)
        return jcheck_bad(e, "command", NULL, "give script or command, not both");
    if (command == NULL && script == NULL)
        return jcheck_bad(e, "script", NULL, "script (or command) is required");
    if (command != NULL) {
        if ((rc = tpl_want_argv(command, "command", 1, MAX_COMMAND, f->argv, e)) != RC_OK)
            return rc;
        if (json_string_value(json_array_get(f->argv, 0))[0] != '/')
            return jcheck_bad(e, "command[0]", json_array_get(command, 0),
                              "command[0] must be an absolute path");
        return RC_OK;
    }
    if (examples_dir == NULL || examples_dir[0] != '/')
        return jcheck_bad(e, "script", NULL,
                          "script needs the examples_dir setting (an absolute directory)");
    if (f->interpreter == NULL)
        f->interpreter = TPL_DEFAULT_INTERPRETER;
    /* One '/' between the two however examples_dir ends. */
    dl = strlen(examples_dir);
    while (dl > 1 && examples_dir[dl - 1] == '/')
        dl--;
    if (dl + 1 + strlen(f->script) > MAX_PATH_ARG)
        return jcheck_bad(e, "script", NULL, "examples_dir and script together are too long");
    snprintf(path, sizeof(path), "%.*s/%s", (int)dl, examples_dir, f->script);
    if (json_array_append_new(f->argv, json_string(f->interpreter)) != 0 ||
        json_array_append_new(f->argv, json_string(path)) != 0)
        return tpl_oom(e);
    return RC_OK;
}

static const char *const serve_keys[] = {"kind", "script"};
static const char *const serve_kinds[] = {"chat", "classify", "embed", "image", "echo"};

/* A plain file name: [A-Za-z0-9._-], not starting with '.', so that it names
 * a file directly in examples_dir and nothing hidden or above it. */
static int is_plain_file_name(const char *s)
{
    if (*s == '\0' || *s == '.')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

enum rc tpl_check_serve(const json_t *v, struct tpl_fields *f, struct err *e)
{
    const json_t *script;
    const char *kind, *name;
    enum rc rc;

    f->serve = NULL;
    if (v == NULL || json_is_null(v))
        return RC_OK;
    if (!json_is_object(v))
        return jcheck_bad(e, "serve", v, "serve must be an object with kind and script");
    if ((rc = tpl_check_unknown(v, "serve", serve_keys, NELEM(serve_keys), e)) != RC_OK ||
        (rc = tpl_want_enum(json_object_get(v, "kind"), "serve.kind", serve_kinds,
                            NELEM(serve_kinds), NULL, &kind, e)) != RC_OK)
        return rc;
    if ((script = json_object_get(v, "script")) == NULL)
        return jcheck_bad(e, "serve.script", NULL, "serve.script is required");
    if ((rc = tpl_want_str(script, "serve.script", 1, MAX_SCRIPT, 1, &name, e)) != RC_OK)
        return rc;
    if (!is_plain_file_name(name))
        return jcheck_bad(e, "serve.script", script,
                          "serve.script must be a file name in examples_dir: A-Z, a-z, 0-9, '.', "
                          "'_', '-', not starting with '.'");
    f->serve = v;
    return RC_OK;
}
