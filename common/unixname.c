/*
 * unixname.c - account name check (see unixname.h).
 */
#include "unixname.h"

#include <string.h>

int unixname_valid(const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;

    if (n == 0 || n > UNIXNAME_MAX)
        return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}
