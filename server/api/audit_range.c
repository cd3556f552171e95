/*
 * audit_range.c - the bounds of an audit export range (see audit_range.h).
 */
#include "audit_range.h"

#include <string.h>

/* Days in month m (1..12) of year y. */
static int month_days(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

static int digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        *v = *v * 10 + (s[i] - '0');
    }
    return 1;
}

int audit_time_ok(char *s)
{
    int y, mo, d, h, mi, se, oh, om;
    char *p;
    size_t n = strlen(s);

    if (n < 20 || n > 40 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &se))
        return 0;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59 ||
        se > 59)
        return 0;
    p = s + 19;
    if (*p == '.') {
        int k = 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            k++;
        if (k < 1 || k > 9)
            return 0;
    }
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        return 1;
    if (*p == ' ')
        *p = '+';
    if ((*p != '+' && *p != '-') || strlen(p) != 6 || !digits(p + 1, 2, &oh) || p[3] != ':' ||
        !digits(p + 4, 2, &om))
        return 0;
    return oh <= 14 && om <= 59;
}

int audit_id_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 18 && strspn(s, "0123456789") == n;
}
