/*
 * utf8cut.c - see utf8cut.h.
 */
#include "utf8cut.h"

#include <string.h>

/* How many bytes a character whose first byte is b has: 1 for ASCII and for
 * a byte that cannot start one (left as it is), else 2 to 4. */
static size_t seq_len(unsigned char b)
{
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF)
        return 3;
    if (b >= 0xF0 && b <= 0xF4)
        return 4;
    return 1;
}

size_t utf8_cut_len(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = len, back = 0;

    /* Walk back over at most three continuation bytes to the lead byte. */
    while (i > 0 && back < 3 && (u[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return len; /* only continuation bytes: no lead byte to judge by */
    if ((u[i - 1] & 0xC0) == 0xC0 && seq_len(u[i - 1]) > back + 1)
        return i - 1; /* the lead byte's character is not all there */
    return len;
}

size_t utf8_copy(char *dst, size_t size, const char *src)
{
    size_t n;

    if (size == 0)
        return 0;
    n = strnlen(src, size - 1);
    n = utf8_cut_len(src, n);
    memmove(dst, src, n);
    dst[n] = '\0';
    return n;
}

void utf8_cut_tail(char *s)
{
    s[utf8_cut_len(s, strlen(s))] = '\0';
}
