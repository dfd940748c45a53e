/*
 * tu_env.h -- where a test runs: under CI or not, how much slower than
 * a quiet machine, and what a test does when it cannot run here.
 *
 *   tu_ci()           1 under CI: CI is set and is not empty, "0" or
 *                     "false" (any case). Every check of CI in the tests
 *                     goes through it (and scripts/lib.sh's is_ci for the
 *                     scripts), so that CI=1 and CI=yes count as CI too.
 *   tu_cannot_run()   inside a cmocka test: this case cannot run here (no
 *                     server to restart, no empty schema, no tmpfs...).
 *                     It says why and skips, or under CI fails: in CI a
 *                     skip is a failure, because cmocka counts a skip as a
 *                     pass and a green run must mean every test ran.
 *   tu_unit_cannot_run()
 *                     the same for a whole unit, in main(): returns the
 *                     exit status (TU_SKIPPED, which ctest shows as
 *                     skipped, or 1 under CI).
 *   tu_slowdown()     the one slowdown factor of every timing test (see
 *                     below); tu_scaled_ms() multiplies a bound by it.
 *   tu_too_slow()     a timing check whose precondition failed (the
 *                     machine was too slow for the result to mean
 *                     anything): the caller retries; the Nth time in a
 *                     row it becomes tu_cannot_run().
 *
 * Include after cmocka.h.
 */
#ifndef SQLLOCK_TU_ENV_H
#define SQLLOCK_TU_ENV_H

#include <stdint.h>

/* 1 when CI is set and not empty, "0" or "false" (ignoring case). */
int tu_ci(void);

/* The cases of this process that called tu_cannot_run() so far. */
extern int tu_skips;

/* Says why this case cannot run here (printf-style), then skips it, or
 * under CI fails it. Does not return. */
#define tu_cannot_run(...) tu_cannot_run_(__FILE__, __LINE__, __VA_ARGS__)
void tu_cannot_run_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* main(): the whole unit cannot run here. Prints "UNIT: SKIPPED: why"
 * and returns the exit status: TU_SKIPPED (77), or 1 under CI. */
int tu_unit_cannot_run(const char *unit, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The slowdown factor, an integer >= 1, computed once per process:
 *
 *   tool   8 under valgrind (it also simulates libpq's SCRAM: a dozen
 *          reconnects take seconds), 4 under AddressSanitizer or
 *          ThreadSanitizer, else 1;
 *   load   the 1-minute load average per core, rounded down, between 1
 *          and 4 (2 cores with a load of 5 make 2);
 *   SQLLOCK_TEST_SLOWDOWN  a factor of your own (default 1), e.g. for a
 *          slow virtual machine.
 *
 * The factor is their product. A timing test multiplies its bounds by it
 * (tu_scaled_ms) -- the waits, ttls and deadlines that a slow machine
 * needs longer -- never the property it proves: a lease that must be
 * BUSY is still checked while it is live, a lease that must expire is
 * still checked after its ttl, and a check whose timing precondition
 * failed anyway is inconclusive (tu_too_slow), not passed.
 */
int tu_slowdown(void);
int tu_slowdown_tool(void);
int64_t tu_scaled_ms(int64_t ms);
/* A bound on what a connect and a statement or two take -- a client
 * whose time is mostly the server's and the network's: the sanitizers
 * slow it far less than their factor 4, valgrind a lot (libpq's start,
 * SCRAM). `ms` times the load and your own factor, and 4 under
 * valgrind. */
int64_t tu_scaled_connect_ms(int64_t ms);

/* A timing precondition failed (printf-style reason): prints
 * "inconclusive", counts it in *tries, and returns for the caller to try
 * again; the max-th time in a row it is tu_cannot_run() (a failure under
 * CI), since a machine too slow every time cannot show the property. */
void tu_too_slow(int *tries, int max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SQLLOCK_TU_ENV_H */
