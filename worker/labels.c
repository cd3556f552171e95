/*
 * labels.c - --labels parsing (see labels.h).
 */
#include "labels.h"

#include <ctype.h>
#include <string.h>

enum rc wrk_labels_parse(const char *s, json_t **out, struct err *e)
{
    json_t *o = json_object();
    const char *p = s;

    *out = NULL;
    if (o == NULL)
        return RC_ENOMEM;
    while (p != NULL && *p != '\0') {
        const char *comma = strchr(p, ','), *eq, *end = comma ? comma : p + strlen(p);
        char key[64], val[256];
        size_t kl, vl;
        eq = memchr(p, '=', (size_t)(end - p));
        if (eq == NULL)
            goto bad;
        kl = (size_t)(eq - p);
        vl = (size_t)(end - eq - 1);
        if (kl == 0 || kl >= sizeof(key) || vl >= sizeof(val) || json_object_size(o) >= 32)
            goto bad;
        memcpy(key, p, kl);
        key[kl] = '\0';
        memcpy(val, eq + 1, vl);
        val[vl] = '\0';
        for (size_t i = 0; i < kl; i++)
            if (!isalnum((unsigned char)key[i]) && key[i] != '_' && key[i] != '-' && key[i] != '.')
                goto bad;
        for (size_t i = 0; i < vl; i++)
            if (!isprint((unsigned char)val[i]) || val[i] == '=')
                goto bad;
        if (json_object_set_new(o, key, json_string(val)) != 0) {
            json_decref(o);
            return RC_ENOMEM;
        }
        p = comma ? comma + 1 : end;
    }
    *out = o;
    return RC_OK;
bad:
    json_decref(o);
    return err_set(e, RC_EINVAL, "labels", "labels must look like rack=r1,switch=s1");
}
