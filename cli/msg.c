/*
 * msg.c - the message catalogue (msg.h): two static tables built from
 * CLI_MESSAGES, looked up by id. The formats are not literals at the call
 * site, so -Wformat cannot check them there: tests/unit/test_cli_msg.c
 * checks instead that both languages of each id take the same conversions.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

static const char *const texts_en[CLI_MSG_COUNT] = {
#define CLI_MSG_EN(id, en, zh) [id] = en,
    CLI_MESSAGES(CLI_MSG_EN)
#undef CLI_MSG_EN
};

static const char *const texts_zh[CLI_MSG_COUNT] = {
#define CLI_MSG_ZH(id, en, zh) [id] = zh,
    CLI_MESSAGES(CLI_MSG_ZH)
#undef CLI_MSG_ZH
};

enum cli_lang cli_lang_of(const char *lc_all, const char *lc_messages, const char *lang)
{
    const char *v = NULL;

    if (lc_all != NULL && lc_all[0] != '\0')
        v = lc_all;
    else if (lc_messages != NULL && lc_messages[0] != '\0')
        v = lc_messages;
    else if (lang != NULL && lang[0] != '\0')
        v = lang;
    return v != NULL && strncmp(v, "zh", 2) == 0 ? CLI_LANG_ZH : CLI_LANG_EN;
}

enum cli_lang cli_lang_env(void)
{
    return cli_lang_of(getenv("LC_ALL"), getenv("LC_MESSAGES"), getenv("LANG"));
}

const char *cli_msg_in(enum cli_msg id, enum cli_lang lang)
{
    if ((unsigned)id >= CLI_MSG_COUNT)
        return "";
    return lang == CLI_LANG_ZH ? texts_zh[id] : texts_en[id];
}

const char *cli_msg(enum cli_msg id)
{
    return cli_msg_in(id, cli_lang_env());
}

/* The catalogue's formats are checked by the unit test, not at each call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void cli_errf(FILE *f, enum cli_msg id, ...)
{
    va_list ap;

    va_start(ap, id);
    fputs("trainyard: ", f);
    vfprintf(f, cli_msg(id), ap);
    fputc('\n', f);
    va_end(ap);
}

void cli_msgf(char *buf, size_t n, enum cli_msg id, ...)
{
    va_list ap;

    va_start(ap, id);
    vsnprintf(buf, n, cli_msg(id), ap);
    va_end(ap);
}
#pragma GCC diagnostic pop
