/*
 * tls.h - the server's HTTPS material: the certificate chain and private key
 * named by the configuration, read into memory once at start for
 * libmicrohttpd (which terminates TLS with GnuTLS), and the check that warns
 * about plain HTTP on an address other machines can reach.
 *
 * Contract: tls_cert and tls_key are both set (HTTPS) or both empty (plain
 * HTTP). The files are PEM; the key is unencrypted and should be mode 0600.
 * A struct srv_tls owns its buffers; srv_tls_free() wipes the key's bytes.
 *
 * Thread-safety: used by main only, before and after the HTTP threads run.
 */
#ifndef TY_SERVER_TLS_H
#define TY_SERVER_TLS_H

#include <stdbool.h>

#include "config.h"
#include "err.h"

struct srv_tls {
    char *cert_pem; /* NUL-terminated; NULL when HTTPS is off */
    char *key_pem;  /* NUL-terminated; NULL when HTTPS is off; wiped on free */
};

/* The TLS versions the server accepts: 1.2 and 1.3 (GnuTLS priority string). */
#define SRV_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/*
 * Read cfg->tls_cert and cfg->tls_key into out. Both empty: RC_OK with out
 * empty (plain HTTP). One set without the other, an unreadable or empty file,
 * or a file that is not PEM: RC_EINVAL with e naming the option. RC_ENOMEM.
 * Does not validate the pair; libmicrohttpd refuses a key that does not
 * match its certificate when the daemon starts.
 */
enum rc srv_tls_load(const struct srv_config *cfg, struct srv_tls *out, struct err *e) TY_WUR;

/* True when out holds a certificate and key. */
bool srv_tls_enabled(const struct srv_tls *t);

/* Wipe and free what t owns; t is then empty. NULL is a no-op. */
void srv_tls_free(struct srv_tls *t);

/*
 * True when host (as in the listen option: an IPv4 address or a bracketed
 * IPv6 one) is a loopback address, which only this machine can reach.
 */
bool srv_host_is_loopback(const char *host);

#endif
