/*
 * tu_suspend.h -- a suspend of the host, simulated inside one process
 * (DESIGN T1; tests/test_suspend.c).
 *
 * The shim (tu_suspend.c, the shared library sqllock_test_suspend) puts
 * its own clock_gettime() before the C library's and adds an offset to
 * CLOCK_BOOTTIME, which the library's deadline clock reads
 * (sqllock__now_us()), while CLOCK_MONOTONIC -- the clock of every
 * blocking call: pthread_cond_timedwait() on the library's condition
 * variables, poll(), pselect(), nanosleep() -- runs on unchanged. That is
 * what a real suspend does: BOOTTIME counts the time the host slept,
 * MONOTONIC does not. An offset set before a call is a host that was
 * suspended some time before it; an offset raised while a call waits is
 * a suspend in the middle of the wait, as seen after the resume.
 *
 * A program linked with the library gets the shim's clock_gettime()
 * (test_suspend links it, so that the plain, sanitizer and valgrind runs
 * need nothing in their environment); any other program can take it with
 * LD_PRELOAD, SQLLOCK_TEST_BOOTTIME_AHEAD_MS giving its offset at start.
 * A forked child starts with its parent's offset and keeps its own.
 */
#ifndef SQLLOCK_TU_SUSPEND_H
#define SQLLOCK_TU_SUSPEND_H

#include <stdint.h>

/* How far CLOCK_BOOTTIME reads ahead of the real one, in ms. */
int64_t tu_suspend_ahead_ms(void);

/* Sets that offset (thread-safe: a wait on another thread sees the next
 * reading move). */
void tu_suspend_set_ahead_ms(int64_t ms);

#endif /* SQLLOCK_TU_SUSPEND_H */
