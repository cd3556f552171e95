/*
 * urlcheck.c - see urlcheck.h. libcurl's URL parser splits the URL, so
 * userinfo, ports and bracketed IPv6 hosts are read the way the transfer
 * itself will read them.
 */
#include "urlcheck.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <string.h>
#include <strings.h>

static bool host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    char h6[64];
    size_t n = strlen(host);

    if (strcasecmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (n > 2 && n - 2 < sizeof(h6) && host[0] == '[' && host[n - 1] == ']') {
        memcpy(h6, host + 1, n - 2);
        h6[n - 2] = '\0';
        return inet_pton(AF_INET6, h6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
    }
    return false;
}

bool url_is_plain_remote(const char *url)
{
    bool plain_remote = false;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;

    if (u == NULL || url == NULL)
        goto out;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
        goto out;
    plain_remote = strcasecmp(scheme, "http") == 0 && !host_is_loopback(host);
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return plain_remote;
}
