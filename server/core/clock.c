/*
 * clock.c - the monotonic clock (see clock.h).
 */
#include "clock.h"

#include <time.h>

int64_t srv_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t srv_now_ms(void)
{
    return srv_mono_us() / 1000;
}
