/*
 * cmd_audit.c - "trainyard audit": export, which streams a signed export
 * of the audit log from the server (GET /api/v1/audit/export) to stdout or
 * a file, and verify, which checks an export against the server's public
 * key offline (verify.h) and prints one line (or one JSON object with
 * --json).
 *
 *   trainyard audit export [--format jsonl|csv] [--from X] [--to Y] [-o FILE]
 *                          [--server URL]
 *   trainyard audit verify EXPORT --public-key FILE [--json]
 *
 * EXPORT "-" is stdin. Exit codes: cli.h (0 verified, 1 failed, 2 usage,
 * I/O or not an export). Diagnostics for exit 2 go to err, verdicts to out.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "audit_sign.h"
#include "cli.h"
#include "client.h"
#include "export_reader.h"
#include "msg.h"
#include "verify.h"

#define KEY_FILE_MAX (64 * 1024)

struct verify_opts {
    const char *export_path; /* borrowed from argv; "-" = stdin */
    const char *key_path;    /* borrowed from argv */
    int json;                /* --json */
};

static void verify_usage(FILE *f)
{
    fprintf(f, "usage: trainyard audit verify EXPORT --public-key FILE [--json]\n"
               "Check a signed audit export (JSON Lines or CSV; EXPORT - reads stdin) with\n"
               "the server's public key (PEM, base64, or the JSON of\n"
               "GET /api/v1/audit/public-key). That JSON lists every key the server has\n"
               "used (\"keys\"): given it, checkpoints signed before a key rotation verify\n"
               "with the key they name.\n"
               "Exit status: 0 verified, 1 verification failed, 2 usage or I/O error or not\n"
               "an export.\n");
}

static void audit_usage(FILE *f)
{
    fprintf(f, "usage: trainyard audit SUBCOMMAND ...\n"
               "  export   download a signed export of the audit log\n"
               "  verify   check a signed audit export offline\n");
}

/* 0 on success; -1 after printing to err (exit 2); 1 when --help was asked. */
static int parse_verify(int argc, char **argv, struct verify_opts *o, FILE *err)
{
    int positional_only = 0;

    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!positional_only && strcmp(a, "--") == 0) {
            positional_only = 1;
        } else if (!positional_only && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            return 1;
        } else if (!positional_only && strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (!positional_only && strcmp(a, "--public-key") == 0) {
            if (i + 1 >= argc) {
                cli_errf(err, M_KEY_NEEDS_FILE);
                return -1;
            }
            o->key_path = argv[++i];
        } else if (!positional_only && strncmp(a, "--public-key=", 13) == 0) {
            o->key_path = a + 13;
        } else if (!positional_only && a[0] == '-' && a[1] != '\0') {
            cli_errf(err, M_UNKNOWN_OPTION, a);
            return -1;
        } else if (o->export_path == NULL) {
            o->export_path = a;
        } else {
            cli_errf(err, M_ONE_EXPORT, o->export_path, a);
            return -1;
        }
    }
    if (o->export_path == NULL || o->key_path == NULL) {
        cli_errf(err, M_REQUIRED, o->export_path == NULL ? "EXPORT" : "--public-key FILE");
        return -1;
    }
    return 0;
}

/* Load the public key file: a key ring (JSON with "keys") into *ring and
 * *nring, or one key; -1 after printing why to err. */
static int load_keys(const char *path, struct audit_key **key, struct audit_key ***ring,
                     size_t *nring, FILE *err)
{
    struct err e;
    enum rc rc = RC_EINVAL;
    char *text = malloc(KEY_FILE_MAX + 1);
    size_t n = 0;
    FILE *f;

    err_init(&e);
    *key = NULL;
    *ring = NULL;
    *nring = 0;
    if (text == NULL) {
        cli_errf(err, M_OOM);
        return -1;
    }
    if ((f = fopen(path, "rb")) == NULL) {
        cli_errf(err, M_KEY_OPEN, path, strerror(errno));
        goto out;
    }
    n = fread(text, 1, KEY_FILE_MAX + 1, f);
    if (ferror(f)) {
        cli_errf(err, M_KEY_READ, path, strerror(errno));
    } else if (n > KEY_FILE_MAX) {
        cli_errf(err, M_KEY_BIG, path, KEY_FILE_MAX);
    } else if ((rc = verify_ring_from_public(text, n, ring, nring, &e)) == RC_ENOTFOUND &&
               (rc = audit_key_from_public(text, n, key, &e)) != RC_OK) {
        cli_errf(err, M_KEY_BAD, path, e.message);
        *key = NULL;
    } else if (rc != RC_OK) {
        cli_errf(err, M_RING_BAD, path, e.message);
    }
    fclose(f);
out:
    free(text);
    return rc == RC_OK ? 0 : -1;
}

static void print_text(const struct verify_result *v, FILE *out)
{
    if (v->ok) {
        fprintf(out, "OK %lld event%s", (long long)v->events, v->events == 1 ? "" : "s");
        if (v->events > 0)
            fprintf(out, " (%lld..%lld)", (long long)v->first_id, (long long)v->last_id);
        fprintf(out, ", chain continuous, %zu checkpoint%s", v->checkpoints,
                v->checkpoints == 1 ? "" : "s");
        if (v->serve_records > 0)
            fprintf(out, ", %lld request record%s in %lld sealed batch%s proven",
                    (long long)v->serve_records, v->serve_records == 1 ? "" : "s",
                    (long long)v->serve_batches, v->serve_batches == 1 ? "" : "es");
        fprintf(out, ", signature valid, key %s\n", v->key_id);
    } else if (v->request_id[0] != '\0') {
        fprintf(out, "FAIL line %lld: request record %s (seal event %lld) %s: %s\n",
                (long long)v->line, v->request_id, (long long)v->event_id, verify_kind_str(v->kind),
                v->message);
    } else if (v->event_id > 0) {
        fprintf(out, "FAIL line %lld: event %lld %s: %s\n", (long long)v->line,
                (long long)v->event_id, verify_kind_str(v->kind), v->message);
    } else {
        fprintf(out, "FAIL line %lld: %s: %s\n", (long long)v->line, verify_kind_str(v->kind),
                v->message);
    }
}

static json_t *id_json(int64_t id)
{
    char buf[24];

    if (id <= 0)
        return json_null();
    snprintf(buf, sizeof(buf), "%lld", (long long)id);
    return json_string(buf);
}

/* {"ok":true,"format":..,"events":..,"first_id":..,...} or {"ok":false,"kind":..,...}. */
static int print_json(const struct verify_result *v, FILE *out, FILE *err)
{
    json_t *o = json_object();
    char *s = NULL;
    int bad;

    bad = o == NULL || json_object_set_new(o, "ok", json_boolean(v->ok)) != 0 ||
          json_object_set_new(o, "format", json_string(export_format_str(v->format))) != 0 ||
          json_object_set_new(o, "key_id", json_string(v->key_id)) != 0;
    if (!bad && v->ok)
        bad =
            json_object_set_new(o, "events", json_integer(v->events)) != 0 ||
            json_object_set_new(o, "first_id", id_json(v->first_id)) != 0 ||
            json_object_set_new(o, "last_id", id_json(v->last_id)) != 0 ||
            json_object_set_new(o, "checkpoints", json_integer((json_int_t)v->checkpoints)) != 0 ||
            json_object_set_new(o, "serve_records", json_integer(v->serve_records)) != 0 ||
            json_object_set_new(o, "serve_batches", json_integer(v->serve_batches)) != 0;
    else if (!bad)
        bad = json_object_set_new(o, "kind", json_string(verify_kind_str(v->kind))) != 0 ||
              json_object_set_new(o, "line", json_integer(v->line)) != 0 ||
              json_object_set_new(o, "event_id", id_json(v->event_id)) != 0 ||
              json_object_set_new(o, "message", json_string(v->message)) != 0 ||
              json_object_set_new(o, "request_id",
                                  v->request_id[0] ? json_string(v->request_id) : json_null()) != 0;
    if (!bad && (s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS)) != NULL)
        fprintf(out, "%s\n", s);
    else
        cli_errf(err, M_OOM);
    free(s);
    json_decref(o);
    return s != NULL ? 0 : -1;
}

static int cmd_audit_verify(int argc, char **argv, FILE *out, FILE *err)
{
    struct verify_opts o;
    struct audit_key *key = NULL, **ring = NULL;
    size_t nring = 0;
    struct export_reader *r = NULL;
    struct verify_result v;
    struct err e;
    int fd = -1, code = CLI_EXIT_USAGE, p;
    enum rc rc;

    err_init(&e);
    if ((p = parse_verify(argc, argv, &o, err)) != 0) {
        verify_usage(p > 0 ? out : err);
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (load_keys(o.key_path, &key, &ring, &nring, err) != 0)
        goto out;
    if (strcmp(o.export_path, "-") == 0) {
        fd = STDIN_FILENO;
    } else if ((fd = open(o.export_path, O_RDONLY | O_CLOEXEC)) < 0) {
        cli_errf(err, M_OPEN_FILE, o.export_path, strerror(errno));
        goto out;
    }
    if (export_reader_open_fd(fd, &r, &e) != RC_OK) {
        cli_errf(err, M_FILE_WHAT, o.export_path, e.message);
        goto out;
    }
    rc = ring != NULL ? verify_export_ring(r, (const struct audit_key *const *)ring, nring, &v)
                      : verify_export(r, key, &v);
    if (rc != RC_OK) {
        cli_errf(err, M_FILE_WHAT, o.export_path, v.message);
        goto out;
    }
    if ((o.json ? print_json(&v, out, err) : (print_text(&v, out), 0)) != 0)
        goto out;
    code = v.ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
    export_reader_free(r);
    if (fd > STDIN_FILENO)
        close(fd);
    audit_key_free(key);
    verify_ring_free(ring, nring);
    return code;
}

static void export_usage(FILE *f)
{
    fprintf(f, "usage: trainyard audit export [--format jsonl|csv] [--from X] [--to Y]\n"
               "                              [-o FILE] [--server URL]\n"
               "Download a signed export of the audit log (auditors and admins) to stdout\n"
               "or FILE. --from and --to are event ids or RFC 3339 times (inclusive).\n"
               "Check it with 'trainyard audit verify FILE --public-key KEY'.\n");
}

struct export_sink {
    FILE *f;
    int failed;
};

static int export_write(const char *data, size_t n, void *ud)
{
    struct export_sink *s = ud;

    if (fwrite(data, 1, n, s->f) != n) {
        s->failed = 1;
        return -1;
    }
    return 0;
}

static int cmd_audit_export(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *format = NULL, *from = NULL, *to = NULL, *file = NULL;
    const char *names[] = {"format", "from", "to"};
    struct cli_client *c = NULL;
    struct export_sink sink = {out, 0};
    json_t *resp = NULL;
    char path[1024] = "/api/v1/audit/export", part[512], fmt[32];
    long status = 0;
    int code = CLI_EXIT_FAIL, r;
    enum rc rc;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--format", &format, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--from", &from, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--to", &to, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "-o", &file, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--output", &file, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "audit export");
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "audit export");
        }
    }
    if (co.help) {
        export_usage(out);
        return CLI_EXIT_OK;
    }
    if (co.json) {
        cli_bad_arg("--json", err);
        return cli_usage_error(err, "audit export");
    }
    {
        const char *vals[] = {format, from, to};
        for (size_t k = 0; k < 3; k++) {
            if (vals[k] == NULL)
                continue;
            snprintf(fmt, sizeof(fmt), "%c%s=%%s", strchr(path, '?') ? '&' : '?', names[k]);
            if (cli_path(part, sizeof(part), fmt, vals[k]) != RC_OK ||
                strlen(path) + strlen(part) >= sizeof(path)) {
                cli_errf(err, M_OOM);
                return CLI_EXIT_FAIL;
            }
            memcpy(path + strlen(path), part, strlen(part) + 1);
        }
    }
    if ((code = cli_connect(co.server, &c, err)) != CLI_EXIT_OK)
        goto out;
    if (file != NULL && (sink.f = fopen(file, "wb")) == NULL) {
        cli_errf(err, M_WRITE_FILE, file, strerror(errno));
        code = CLI_EXIT_USAGE;
        goto out;
    }
    rc = cli_client_stream(c, path, NULL, 120, export_write, &sink, &status, &resp, err);
    if (rc != RC_OK) {
        code = cli_exit_for_rc(rc);
    } else if (status != 200) {
        code = cli_refused(err, M_W_EXPORT, status, resp);
    } else if (sink.failed || fflush(sink.f) != 0) {
        cli_errf(err, M_WRITE_FILE, file ? file : "stdout", strerror(errno));
        code = CLI_EXIT_FAIL;
    } else {
        code = CLI_EXIT_OK;
    }
    if (file != NULL) {
        if (fclose(sink.f) != 0 && code == CLI_EXIT_OK) {
            cli_errf(err, M_WRITE_FILE, file, strerror(errno));
            code = CLI_EXIT_FAIL;
        }
        if (code != CLI_EXIT_OK)
            unlink(file); /* half an export is no export */
        else
            cli_errf(err, M_EXPORT_DONE, file);
    }
out:
    json_decref(resp);
    cli_client_free(c);
    return code;
}

static const struct cli_command audit_commands[] = {
    {"export", "download a signed export of the audit log", cmd_audit_export},
    {"verify", "check a signed audit export offline", cmd_audit_verify},
};

int cli_cmd_audit(int argc, char **argv, FILE *out, FILE *err)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        audit_usage(argc < 2 ? err : out);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(audit_commands) / sizeof(audit_commands[0]); i++)
        if (strcmp(argv[1], audit_commands[i].name) == 0)
            return audit_commands[i].run(argc - 1, argv + 1, out, err);
    cli_errf(err, M_UNKNOWN_SUB, argv[1]);
    audit_usage(err);
    return CLI_EXIT_USAGE;
}
