/*
 * err.h - the one result code enum of trainyard, and the user-facing error.
 *
 * Every fallible function returns enum rc. The enum is append-only: values are
 * never renumbered or reused, because they appear in logs and tests. Texts live
 * only in rc_str(). When a reason must reach the user (validation, conflicts),
 * the callee also fills a caller-owned struct err.
 *
 * Thread-safety: everything here is reentrant.
 */
#ifndef TY_COMMON_ERR_H
#define TY_COMMON_ERR_H

#include <stdarg.h>

enum rc {
    RC_OK = 0,
    RC_EINVAL = 1,      /* the input is malformed or out of range */
    RC_ENOMEM = 2,      /* an allocation failed */
    RC_ENOTFOUND = 3,   /* the named thing does not exist (or is not visible) */
    RC_ECONFLICT = 4,   /* the thing exists already or is in the wrong state */
    RC_EUNAVAIL = 5,    /* a dependency (database, peer) cannot be reached */
    RC_EINTERNAL = 6,   /* a bug or an unexpected condition */
    RC_EAUTH = 7,       /* no valid credentials were given */
    RC_EPERM = 8,       /* credentials are valid but not allowed to do this */
    RC_ETOOBIG = 9,     /* a body, field or request exceeds a limit */
    RC_ERATE = 10,      /* too many attempts; try later */
    RC_ERETRY = 11,     /* a serialization failure: the caller should retry */
    RC_EPOLICY = 12,    /* refused by a compliance policy */
    RC_EMETHOD = 13,    /* the route exists but not with this method */
    RC_EMEDIATYPE = 14, /* the body has the wrong content type */
    RC_EGONE = 15       /* the thing existed but is used up or expired (one-time links) */
};

#if defined(__GNUC__)
#define TY_WUR __attribute__((warn_unused_result))
#define TY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TY_WUR
#define TY_PRINTF(f, a)
#endif

/* Short stable text for a code ("invalid_argument", ...); never NULL. */
const char *rc_str(enum rc rc);

/* The machine-readable API code for rc ("invalid_argument", "not_found", ...). */
const char *rc_api_code(enum rc rc);

/*
 * A user-facing error. Fixed-size buffers so it can live on the stack and be
 * filled without allocation on out-of-memory paths. Messages are lower case,
 * without a final period, and name the bad value; never SQL, paths or function
 * names (see CONVENTIONS.md "Errors").
 */
struct err {
    enum rc rc;        /* RC_OK while nothing went wrong */
    char code[48];     /* API code; empty means rc_api_code(rc) */
    char message[256]; /* what failed and why */
    char detail[256];  /* optional: the bad value */
    char field[96];    /* optional: the offending field path, "resources.gpus" */
};

/* Reset e to "no error". */
void err_init(struct err *e);

/*
 * Fill e (if not NULL) and return rc, so callers can `return err_set(...)`.
 * field may be NULL. The message is printf-formatted and truncated to fit.
 */
enum rc err_set(struct err *e, enum rc rc, const char *field, const char *fmt, ...) TY_PRINTF(4, 5);

/* Set the optional detail text of e (printf-formatted); e may be NULL. */
void err_detail(struct err *e, const char *fmt, ...) TY_PRINTF(2, 3);

/* Set a custom API code (for example "policy_violation"); e may be NULL. */
void err_code(struct err *e, const char *code);

/*
 * NEVER(x): a condition that cannot happen but must still be handled.
 * Asserts in debug builds, evaluates to x in release builds.
 */
#ifdef NDEBUG
#define NEVER(x) (x)
#else
#include <assert.h>
#define NEVER(x) ((x) ? (assert(!"NEVER: " #x), 1) : 0)
#endif

#endif
