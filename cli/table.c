/*
 * table.c - width-aware tables (table.h). The width table is ours, not
 * wcwidth(3): that answers only under a UTF-8 locale set with setlocale(),
 * and the CLI must align Chinese in a pipeline run with LANG=C too. The
 * ranges are Unicode's East Asian Width W and F blocks that Chinese text
 * uses (CJK, Hangul, kana, fullwidth forms, common emoji).
 */
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct cli_table {
    size_t ncols;
    int right[CLI_TABLE_MAX_COLS];
    char **cells; /* owned: nrows * ncols strings */
    size_t nrows, cap;
};

struct range {
    unsigned lo, hi;
};

static const struct range wide[] = {
    {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
    {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
    {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

static const struct range zero[] = {
    {0x0300, 0x036F}, {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
};

static int in(const struct range *r, size_t n, unsigned cp)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return 1;
    return 0;
}

/* Decodes one UTF-8 sequence at s; returns its length (0 when invalid). */
static size_t utf8_next(const unsigned char *s, unsigned *cp)
{
    size_t n, i;
    unsigned c = s[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        c &= 0x07;
    } else {
        return 0;
    }
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not text. */
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

int cli_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char tmp[4];
    size_t i = 0, k;
    unsigned cp;

    while (i < n) {
        /* utf8_next() reads up to 4 bytes: give it a terminated copy at the end. */
        size_t m = n - i < 4 ? n - i : 4;
        memset(tmp, 0, sizeof(tmp));
        memcpy(tmp, p + i, m);
        if (tmp[0] == 0 || (k = utf8_next(tmp, &cp)) == 0 || k > m)
            return 0;
        i += k;
    }
    return 1;
}

size_t cli_text_width(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t w = 0, n;
    unsigned cp;

    while (*p != '\0') {
        if ((n = utf8_next(p, &cp)) == 0) {
            w++;
            p++;
            continue;
        }
        p += n;
        if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || in(zero, sizeof(zero) / sizeof(zero[0]), cp))
            continue;
        w += in(wide, sizeof(wide) / sizeof(wide[0]), cp) ? 2 : 1;
    }
    return w;
}

struct cli_table *cli_table_new(size_t ncols, const int *right_align)
{
    struct cli_table *t;

    if (ncols == 0 || ncols > CLI_TABLE_MAX_COLS || (t = calloc(1, sizeof(*t))) == NULL)
        return NULL;
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++)
        t->right[i] = right_align != NULL && right_align[i];
    return t;
}

void cli_table_free(struct cli_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

enum rc cli_table_add(struct cli_table *t, const char *const *cells)
{
    size_t base = t->nrows * t->ncols;

    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **p = realloc(t->cells, cap * t->ncols * sizeof(*p));
        if (p == NULL)
            return RC_ENOMEM;
        t->cells = p;
        t->cap = cap;
    }
    for (size_t i = 0; i < t->ncols; i++) {
        char *c = strdup(cells[i] ? cells[i] : "");
        if (c == NULL) {
            while (i-- > 0)
                free(t->cells[base + i]);
            return RC_ENOMEM;
        }
        for (char *q = c; *q != '\0'; q++)
            if (*q == '\t' || *q == '\n' || *q == '\r')
                *q = ' ';
        t->cells[base + i] = c;
    }
    t->nrows++;
    return RC_OK;
}

static void pad(FILE *out, size_t n)
{
    while (n-- > 0)
        fputc(' ', out);
}

void cli_table_print(const struct cli_table *t, FILE *out)
{
    size_t w[CLI_TABLE_MAX_COLS] = {0};

    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t n = cli_text_width(t->cells[r * t->ncols + c]);
            if (n > w[c])
                w[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        char *const *row = t->cells + r * t->ncols;
        size_t last = 0; /* the last cell with text: nothing is printed after it */
        for (size_t c = 0; c < t->ncols; c++)
            if (row[c][0] != '\0')
                last = c;
        for (size_t c = 0; c <= last; c++) {
            size_t gap = w[c] - cli_text_width(row[c]);
            if (c > 0)
                fputs("  ", out);
            if (t->right[c])
                pad(out, gap);
            fputs(row[c], out);
            if (!t->right[c] && c < last)
                pad(out, gap);
        }
        fputc('\n', out);
    }
}

const char *cli_cell(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        snprintf(buf, n, "-");
    return buf;
}

const char *cli_cell_time(const json_t *v, char *buf, size_t n)
{
    const char *s = json_string_value(v);

    if (s == NULL || strlen(s) < 19 || s[10] != 'T')
        return cli_cell(v, buf, n);
    snprintf(buf, n, "%.10s %.8s", s, s + 11);
    return buf;
}
