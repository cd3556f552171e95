/*
 * test_cli_config.c - the login file (cli/config.c) in a temporary HOME:
 * the parser's refusals (unknown key, a key twice, too long, not text),
 * a round trip through the writer, the modes it writes (directory 0700,
 * file 0600), a file others can read refused, and which server and token
 * a command uses (flag, TRAINYARD_URL, TRAINYARD_SERVER, the file; the
 * stored token only for its own server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "client.h"
#include "config.h"

static char g_home[256];
static char g_err[4096];

static enum rc parse(const char *text, struct cli_config *c, int *line, enum cli_msg *why)
{
    return cli_config_parse(text, strlen(text), c, line, why);
}

static void test_parse(void **state)
{
    (void)state;
    struct cli_config c;
    int line;
    enum cli_msg why;

    assert_int_equal(parse("# comment\n\n  url = http://h:1/ \r\ntoken=tyt_abc\ntoken_id=7\n"
                           "user=管理员",
                           &c, &line, &why),
                     RC_OK);
    assert_string_equal(c.url, "http://h:1/");
    assert_string_equal(c.token, "tyt_abc");
    assert_string_equal(c.token_id, "7");
    assert_string_equal(c.user, "管理员");
    assert_int_equal(parse("", &c, &line, &why), RC_OK);
    assert_string_equal(c.url, "");

    assert_int_equal(parse("url=http://h\nlogin=x\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(line, 2);
    assert_int_equal(why, M_CFG_KEY);
    assert_int_equal(parse("url=a\nurl=b\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_DUP);
    assert_int_equal(parse("just words\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_SYNTAX);
    assert_int_equal(parse("=value\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_SYNTAX);
    assert_int_equal(parse("token=\xff\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_TEXT);
    assert_int_equal(parse("token=a\x01z\n", &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_TEXT);
    assert_int_equal(cli_config_parse("url=a\0b\n", 8, &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_TEXT);

    char *long_id = malloc(100);
    assert_non_null(long_id);
    memset(long_id, '9', 99);
    long_id[99] = '\0';
    char text[200];
    snprintf(text, sizeof(text), "token_id=%s\n", long_id);
    assert_int_equal(parse(text, &c, &line, &why), RC_EINVAL);
    assert_int_equal(why, M_CFG_LONG);
    free(long_id);
    char *big = calloc(1, CLI_CONFIG_MAX_BYTES + 2);
    assert_non_null(big);
    memset(big, '#', CLI_CONFIG_MAX_BYTES + 1);
    assert_int_equal(cli_config_parse(big, CLI_CONFIG_MAX_BYTES + 1, &c, &line, &why), RC_ETOOBIG);
    free(big);
}

static void test_format_round_trip(void **state)
{
    (void)state;
    struct cli_config a, b;
    char text[4096];
    int line;
    enum cli_msg why;

    memset(&a, 0, sizeof(a));
    snprintf(a.url, sizeof(a.url), "https://ty.example:8443");
    snprintf(a.token, sizeof(a.token), "tyt_secret");
    snprintf(a.token_id, sizeof(a.token_id), "12");
    assert_int_equal(cli_config_format(&a, text, sizeof(text)), RC_OK);
    assert_null(strstr(text, "user="));
    assert_int_equal(parse(text, &b, &line, &why), RC_OK);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_int_equal(cli_config_format(&a, text, 20), RC_ETOOBIG);
    snprintf(a.user, sizeof(a.user), "x\ny=1");
    assert_int_equal(cli_config_format(&a, text, sizeof(text)), RC_EINVAL);
}

static FILE *err_stream(void)
{
    FILE *f = fmemopen(g_err, sizeof(g_err), "w");
    assert_non_null(f);
    return f;
}

static void test_save_load_modes(void **state)
{
    (void)state;
    struct cli_config a, b;
    char path[4200], want[512], dir[512];
    struct stat st;
    FILE *f;

    memset(&a, 0, sizeof(a));
    snprintf(a.url, sizeof(a.url), "http://127.0.0.1:9");
    snprintf(a.token, sizeof(a.token), "tyt_x");
    f = err_stream();
    assert_int_equal(cli_config_load(&b, f), RC_ENOTFOUND);
    assert_int_equal(cli_config_save(&a, path, sizeof(path), f), RC_OK);
    fclose(f);
    snprintf(want, sizeof(want), "%s/.config/trainyard/config", g_home);
    assert_string_equal(path, want);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(dir, sizeof(dir), "%s/.config/trainyard", g_home);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    f = err_stream();
    assert_int_equal(cli_config_load(&b, f), RC_OK);
    fclose(f);
    assert_string_equal(b.token, "tyt_x");

    /* Readable by the group: refused, and the message says how to fix it. */
    assert_int_equal(chmod(path, 0640), 0);
    f = err_stream();
    assert_int_equal(cli_config_load(&b, f), RC_EPERM);
    fclose(f);
    assert_non_null(strstr(g_err, "can be read by others (mode 640): run chmod 600"));
    assert_string_equal(b.token, "");
    /* A save puts it right. */
    f = err_stream();
    assert_int_equal(cli_config_save(&a, NULL, 0, f), RC_OK);
    assert_int_equal(cli_config_load(&b, f), RC_OK);
    assert_int_equal(cli_config_remove(f), RC_OK);
    assert_int_equal(cli_config_remove(f), RC_ENOTFOUND);
    fclose(f);
}

static void test_resolve(void **state)
{
    (void)state;
    struct cli_config a;
    char url[256], tok[256];
    FILE *f = err_stream();

    memset(&a, 0, sizeof(a));
    snprintf(a.url, sizeof(a.url), "http://stored:1");
    snprintf(a.token, sizeof(a.token), "tyt_stored");
    unsetenv("TRAINYARD_URL");
    unsetenv("TRAINYARD_SERVER");
    unsetenv("TRAINYARD_TOKEN");

    /* No file: the default server, no token. */
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, CLI_DEFAULT_SERVER);
    assert_string_equal(tok, "");

    assert_int_equal(cli_config_save(&a, NULL, 0, f), RC_OK);
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, "http://stored:1");
    assert_string_equal(tok, "tyt_stored");
    /* The same server with a trailing slash still gets the token. */
    assert_int_equal(cli_config_resolve("http://stored:1/", url, sizeof(url), tok, sizeof(tok), f),
                     RC_OK);
    assert_string_equal(tok, "tyt_stored");

    /* Another server (flag, TRAINYARD_URL, the older TRAINYARD_SERVER)
     * never receives the stored token. */
    assert_int_equal(cli_config_resolve("http://flag:2", url, sizeof(url), tok, sizeof(tok), f),
                     RC_OK);
    assert_string_equal(url, "http://flag:2");
    assert_string_equal(tok, "");
    setenv("TRAINYARD_SERVER", "http://old:3", 1);
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, "http://old:3");
    assert_string_equal(tok, "");
    setenv("TRAINYARD_URL", "http://env:4", 1);
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, "http://env:4");
    assert_string_equal(tok, "");
    assert_int_equal(cli_config_resolve("http://flag:2", url, sizeof(url), tok, sizeof(tok), f),
                     RC_OK);
    assert_string_equal(url, "http://flag:2");

    /* TRAINYARD_TOKEN wins over the stored token; the stored URL stays. */
    setenv("TRAINYARD_TOKEN", "tyt_env", 1);
    unsetenv("TRAINYARD_URL");
    unsetenv("TRAINYARD_SERVER");
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, "http://stored:1");
    assert_string_equal(tok, "tyt_env");
    /* With both from the environment a broken file is not read at all. */
    char path[4200];
    assert_int_equal(cli_config_path(path, sizeof(path), NULL, 0), RC_OK);
    assert_int_equal(chmod(path, 0644), 0);
    setenv("TRAINYARD_URL", "http://env:4", 1);
    setenv("TRAINYARD_TOKEN", "tyt_env", 1);
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_OK);
    assert_string_equal(url, "http://env:4");
    assert_string_equal(tok, "tyt_env");
    unsetenv("TRAINYARD_URL");
    unsetenv("TRAINYARD_SERVER");
    assert_int_equal(cli_config_resolve(NULL, url, sizeof(url), tok, sizeof(tok), f), RC_EPERM);
    unsetenv("TRAINYARD_TOKEN");
    assert_int_equal(cli_config_remove(f), RC_OK);
    fclose(f);
}

int main(void)
{
    int rc;
    char cmd[300];

    setenv("LC_ALL", "C", 1);
    unsetenv("XDG_CONFIG_HOME");
    snprintf(g_home, sizeof(g_home), "/tmp/ty-test-cli-config.XXXXXX");
    if (mkdtemp(g_home) == NULL)
        return 1;
    setenv("HOME", g_home, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_save_load_modes),
        cmocka_unit_test(test_resolve),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof(cmd), "%s/.config/trainyard", g_home);
    rmdir(cmd);
    snprintf(cmd, sizeof(cmd), "%s/.config", g_home);
    rmdir(cmd);
    rmdir(g_home);
    return rc;
}
