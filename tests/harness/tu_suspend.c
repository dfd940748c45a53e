/*
 * tu_suspend.c -- the shim of tu_suspend.h: CLOCK_BOOTTIME moved ahead of
 * CLOCK_MONOTONIC by an offset a test sets, as a suspend of the host
 * moves it.
 *
 * Its clock_gettime() asks the kernel directly (the system call, not the
 * C library's function, which this one replaces), then adds the offset
 * to the boot-time clocks. Every other clock reads as it is. The C
 * library's own calls inside itself do not come here, only calls from
 * other objects: the sqllock library's, the test's. (A program built
 * with a sanitizer may reach it through the sanitizer's interceptor of
 * clock_gettime(), which calls the next definition: this one.)
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tu_suspend.h"

/* The build hides every symbol by default; these must be seen. */
#define TU_SUSPEND_EXPORT __attribute__((visibility("default")))

static _Atomic int64_t ahead_ns;

__attribute__((constructor)) static void tu_suspend_init(void)
{
    const char *v = getenv("SQLLOCK_TEST_BOOTTIME_AHEAD_MS");

    if (v != NULL && *v != '\0')
        atomic_store(&ahead_ns, strtoll(v, NULL, 10) * 1000000);
}

TU_SUSPEND_EXPORT int64_t tu_suspend_ahead_ms(void)
{
    return atomic_load(&ahead_ns) / 1000000;
}

TU_SUSPEND_EXPORT void tu_suspend_set_ahead_ms(int64_t ms)
{
    atomic_store(&ahead_ns, ms * 1000000);
}

TU_SUSPEND_EXPORT int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int64_t ns, add;

    if (syscall(SYS_clock_gettime, clk, ts) != 0)
        return -1;                      /* errno set by syscall() */
    if (clk != CLOCK_BOOTTIME
#ifdef CLOCK_BOOTTIME_ALARM
        && clk != CLOCK_BOOTTIME_ALARM
#endif
        )
        return 0;
    add = atomic_load(&ahead_ns);
    if (add == 0)
        return 0;
    ns = (int64_t)ts->tv_nsec + add % 1000000000;
    ts->tv_sec += (time_t)(add / 1000000000 + ns / 1000000000);
    ns %= 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        ts->tv_sec--;
    }
    ts->tv_nsec = (long)ns;
    return 0;
}
