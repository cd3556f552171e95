/*
 * unixname.h - the account names trainyard accepts for the Unix account a
 * job's ranks run as: the server when an admin maps a user or team to one,
 * the worker for its --job-user/--job-users and an assignment's
 * "unix_account". One rule in both places.
 *
 * Thread-safety: pure, reentrant.
 */
#ifndef TY_COMMON_UNIXNAME_H
#define TY_COMMON_UNIXNAME_H

#define UNIXNAME_MAX 32 /* longest name, as useradd's default */

/*
 * Whether s is 1..32 characters of [a-z_][a-z0-9_-]* (Debian's default
 * NAME_REGEX, without a trailing '$'): no upper case, dots, slashes,
 * colons, spaces or non-ASCII. s may be NULL (not valid).
 */
int unixname_valid(const char *s);

#endif
