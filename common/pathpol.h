/*
 * pathpol.h - data-residency path policy: is this path or URI inside the
 * storage roots and networks an admin allowed?
 *
 * Two layers, used at two times:
 *   - submit time (server): pathpol_check() / pathpol_check_uri() work on the
 *     text alone. They refuse everything that could be read two ways
 *     (percent-encoding, backslashes, unicode look-alikes of '/' and '.',
 *     control and invisible characters, invalid UTF-8), normalize the path
 *     lexically ("//", ".", ".." resolved) and require the result to be a root
 *     or below one on a component boundary ("/data2" is not inside "/data").
 *     Remote URIs must name an IP literal inside an allowed CIDR; hostnames
 *     are refused because they cannot be proven to be on site without DNS.
 *   - run time (worker, on the node): pathpol_realpath_check() resolves
 *     symbolic links with realpath(3) and checks the real path against the
 *     real paths of the roots.
 *
 * Every refusal returns RC_EPOLICY with err_code "policy_violation", a lower
 * case message saying what is wrong and a detail quoting the offending value
 * (escaped and shortened). e->field is left empty: the caller knows which
 * spec field it checked and may set it.
 *
 * Thread-safety: everything here is reentrant; no globals, no allocation
 * except inside realpath(3).
 */
#ifndef TY_COMMON_PATHPOL_H
#define TY_COMMON_PATHPOL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Longest accepted path in bytes, without the terminating NUL. */
#define PATHPOL_PATH_MAX 4095
/* Longest accepted path component in bytes. */
#define PATHPOL_NAME_MAX 255
/* An output buffer of this size always suffices. */
#define PATHPOL_BUF_SIZE (PATHPOL_PATH_MAX + 1)

/* A parsed CIDR block. Fill with pathpol_parse_cidr(). */
struct pathpol_cidr {
    int family;       /* 4 or 6 */
    uint8_t addr[16]; /* network address, host bits cleared; IPv4 uses addr[0..3] */
    unsigned prefix;  /* prefix length: 0..32 (IPv4) or 0..128 (IPv6) */
};

/*
 * Lexically normalize the absolute POSIX path in[0..len) into out (NUL
 * terminated): "//" and "." are collapsed, ".." is resolved against the
 * components seen so far. No file system access.
 *
 * Refuses (RC_EPOLICY): empty, relative, len > PATHPOL_PATH_MAX, a component
 * longer than PATHPOL_NAME_MAX, NUL bytes before len, control characters
 * (C0, DEL, C1, U+2028/U+2029), invisible/bidi format characters, invalid or
 * overlong UTF-8, '%', '\\', unicode look-alikes of '/', '\\' and '.', and a
 * ".." that climbs above '/'.
 * Returns RC_ETOOBIG when out_size cannot hold the result (PATHPOL_BUF_SIZE
 * always can). in and out are borrowed; e may be NULL.
 */
enum rc pathpol_normalize(const char *in, size_t len, char *out, size_t out_size,
                          struct err *e) TY_WUR;

/*
 * Check a path (or a file: URI, "file:///abs" or "file://localhost/abs")
 * against the allowed roots. The roots are normalized first; a root that does
 * not normalize can never match. On success out holds the normalized path.
 * Any other URI scheme is refused (use pathpol_check_uri() with CIDRs).
 * Returns RC_OK, RC_EPOLICY (refused) or RC_ETOOBIG (out too small).
 * All pointers are borrowed; e may be NULL.
 */
enum rc pathpol_check(const char *path, const char *const *roots, size_t nroots, char *out,
                      size_t out_size, struct err *e) TY_WUR;

/*
 * Check a dataset/model/output location that may be a plain absolute path, a
 * file: URI or a remote URI (http, https, hdfs, webhdfs, nfs, s3, ftp).
 * Paths and file: URIs go through pathpol_check(). For a remote URI:
 *   - '%', '\\', '@' (userinfo), whitespace, control and non-ASCII characters
 *     anywhere are refused;
 *   - the host must be an IPv4 literal in strict dotted-decimal form (no
 *     leading zeros, hex or integer forms) or a bracketed IPv6 literal (no
 *     zone), inside one of cidrs; an IPv4-mapped IPv6 address is checked as
 *     IPv4; hostnames are refused;
 *   - an optional port must be 1..65535;
 *   - the path part must pass pathpol_normalize() (no escape above '/').
 * cidrs are strings like "10.0.0.0/8" or "fd00::/8"; an unparsable entry
 * never matches. Returns RC_OK or RC_EPOLICY. All pointers are borrowed; e may
 * be NULL.
 */
enum rc pathpol_check_uri(const char *uri, const char *const *roots, size_t nroots,
                          const char *const *cidrs, size_t ncidrs, struct err *e) TY_WUR;

/*
 * Parse "a.b.c.d/n", "x:y::/n" or a bare address (= /32 or /128) into out.
 * Host bits are cleared. Returns RC_OK or RC_EINVAL (e filled: "invalid
 * CIDR"). e may be NULL.
 */
enum rc pathpol_parse_cidr(const char *s, struct pathpol_cidr *out, struct err *e) TY_WUR;

/*
 * Whether the IP literal ip (strict dotted-decimal IPv4 or unbracketed IPv6,
 * no zone) lies inside cidr. Returns 1 inside, 0 outside or unparsable.
 */
int pathpol_ip_in_cidr(const char *ip, const struct pathpol_cidr *cidr);

/*
 * Run-time check on the node. The path must pass the same character rules as
 * pathpol_normalize() and must not contain ".." at all (resolving ".." after
 * symlinks differs from the lexical result). It is resolved with realpath(3);
 * if it does not exist yet, the longest existing ancestor is resolved and the
 * rest re-appended (a dangling symbolic link on the way is refused). The
 * result must be inside the realpath of one of the roots (roots that do not
 * exist never match). Symlinks that escape and symlink loops (ELOOP) are
 * refused. On success out holds the resolved path.
 *
 * This narrows but does not close the race between check and use: the worker
 * should still open with O_NOFOLLOW or openat2(RESOLVE_BENEATH) where it can.
 * Returns RC_OK, RC_EPOLICY or RC_ETOOBIG. Pointers are borrowed; e may be
 * NULL.
 */
enum rc pathpol_realpath_check(const char *path, const char *const *roots, size_t nroots, char *out,
                               size_t out_size, struct err *e) TY_WUR;

/*
 * Render s[0..len) for an error detail: printable ASCII kept, '"', '\\' and
 * everything else as \xNN, cut with "..." after 96 bytes of output. buf
 * (size >= 9) is always NUL terminated.
 */
void pathpol_quote(const char *s, size_t len, char *buf, size_t size);

#endif
