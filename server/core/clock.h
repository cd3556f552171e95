/*
 * clock.h - the server's monotonic clock, for deadlines, timeouts and
 * durations; never for a time shown to a person or stored (use the wall
 * clock or PostgreSQL's now() there).
 *
 * Thread-safety: any thread.
 */
#ifndef TY_SERVER_CLOCK_H
#define TY_SERVER_CLOCK_H

#include <stdint.h>

/* The monotonic clock in ms and in us. */
int64_t srv_now_ms(void);
int64_t srv_mono_us(void);

#endif
