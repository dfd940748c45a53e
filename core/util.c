/*
 * util.c -- clocks, sleeping, randomness, name checks and durations.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * The clock of every local deadline (DESIGN L6): one that counts the time
 * the system was suspended. CLOCK_MONOTONIC stops while the host sleeps
 * (a laptop's lid, a suspended VM), so a holder that resumed after its
 * lease expired on the server would still trust it for as long as the
 * host slept; CLOCK_BOOTTIME (Linux) goes on counting. Where there is no
 * such clock, CLOCK_MONOTONIC.
 *
 * Every timed wait of the library ends at a deadline of this clock
 * (DESIGN T1), but none can sleep on it: a condition variable's clock
 * can only be CLOCK_REALTIME or CLOCK_MONOTONIC, and poll(), pselect()
 * and nanosleep() count CLOCK_MONOTONIC time. A wait of that clock does
 * not count the time the host was suspended, so a wait begun before a
 * suspend would run on after the resume for as long as it had left, past
 * its deadline by the length of the suspend. So no wait blocks for
 * longer than SQLLOCK__WAIT_SLICE_MS in one piece: after each piece it
 * reads this clock again, and a deadline that passed during a suspend
 * ends the wait at most one slice after the resume. clock_nanosleep()
 * or a timerfd on CLOCK_BOOTTIME would wake exactly at the deadline, but
 * only for a sleep: a condition variable, or a poll() on a connection,
 * would each need its own way, and one rule for all of them is simpler.
 * A waiter wakes once a second at most for nothing, which costs nothing
 * measurable. sqllock__wait_slice_ms(), sqllock__sleep_until() and
 * sqllock__cond_wait_until() below are the pieces every wait uses.
 */
#if defined(CLOCK_BOOTTIME)
#define SQLLOCK__DEADLINE_CLOCK CLOCK_BOOTTIME
#else
#define SQLLOCK__DEADLINE_CLOCK CLOCK_MONOTONIC
#endif

int64_t sqllock__now_us(void)
{
    struct timespec ts;

    if (clock_gettime(SQLLOCK__DEADLINE_CLOCK, &ts) != 0)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t sqllock__wait_slice_ms(int64_t until_us)
{
    int64_t left = until_us - sqllock__now_us();

    if (left <= 0)
        return 0;
    /* Rounded up, so that a wait never spins through its last
     * millisecond in pieces of 0 ms. */
    if (left >= (int64_t)SQLLOCK__WAIT_SLICE_MS * 1000)
        return SQLLOCK__WAIT_SLICE_MS;
    return (left + 999) / 1000;
}

void sqllock__sleep_until(int64_t until_us)
{
    struct timespec ts;
    int64_t ms;

    while ((ms = sqllock__wait_slice_ms(until_us)) > 0) {
        ts.tv_sec = (time_t)(ms / 1000);
        ts.tv_nsec = (long)(ms % 1000) * 1000000L;
        /* A signal ends the piece early; the loop reads the clock. */
        nanosleep(&ts, NULL);
    }
}

int sqllock__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    int err;

    err = pthread_condattr_init(&attr);
    if (err != 0)
        return err;
    err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (err == 0)
        err = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return err;
}

int sqllock__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                             int64_t until_us)
{
    struct timespec ts;
    int64_t left = until_us - sqllock__now_us(), ns;

    if (left <= 0)
        return ETIMEDOUT;
    if (left > (int64_t)SQLLOCK__WAIT_SLICE_MS * 1000)
        left = (int64_t)SQLLOCK__WAIT_SLICE_MS * 1000;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns = ts.tv_nsec + (left % 1000000) * 1000;
    ts.tv_sec += (time_t)(left / 1000000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(cv, mu, &ts);
    /* A signal, a spurious wake-up and the end of a slice all look the
     * same to the caller, who checks its condition again; only the
     * deadline, on the deadline clock, is ETIMEDOUT. */
    return sqllock__now_us() >= until_us ? ETIMEDOUT : 0;
}

int64_t sqllock__now_ms(void)
{
    return sqllock__now_us() / 1000;
}

int64_t sqllock_driver_now_ms(void)
{
    return sqllock__now_ms();
}

int64_t sqllock_driver_wait_slice_ms(int64_t deadline_ms)
{
    if (deadline_ms > INT64_MAX / 1000)
        deadline_ms = INT64_MAX / 1000;
    return sqllock__wait_slice_ms(deadline_ms * 1000);
}

void sqllock__sleep_ms(int64_t ms)
{
    if (ms > INT64_MAX / 2000)
        ms = INT64_MAX / 2000;
    if (ms > 0)
        sqllock__sleep_until(sqllock__now_us() + ms * 1000);
}

int sqllock__random(void *buf, size_t n)
{
    unsigned char *p = buf;

    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return SQLLOCK_ESYS;
        }
        p += got;
        n -= (size_t)got;
    }
    return SQLLOCK_OK;
}

/*
 * Jitter needs no cryptographic strength, only independence between
 * processes and threads: a per-thread xorshift64* generator seeded from the
 * OS. Each thread has its own state, so there is nothing to lock. The
 * state remembers the process it was seeded in: a child forked after its
 * parent drew jitter would otherwise replay the parent's sequence, and
 * children forked together would back off in lockstep.
 */
static __thread uint64_t rng_state;
static __thread pid_t rng_pid;

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    pid_t pid = getpid();

    if (x == 0 || rng_pid != pid) {
        rng_pid = pid;
        if (sqllock__random(&x, sizeof x) != SQLLOCK_OK || x == 0)
            x = (uint64_t)sqllock__now_us() ^ ((uint64_t)getpid() << 32) ^
                (uint64_t)(uintptr_t)&rng_state;
        if (x == 0)
            x = 0x9E3779B97F4A7C15ull;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int64_t sqllock__rand_upto(int64_t bound)
{
    if (bound <= 0)
        return 0;
    return (int64_t)(rng_next() % ((uint64_t)bound + 1));
}

int sqllock__name_ok(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        unsigned char c = p[i];
        uint32_t cp;
        size_t need, k;

        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                return 0;
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i - 1 < need)
            return 0;
        for (k = 1; k <= need; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        /* Overlong forms, surrogates and values past U+10FFFF. */
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return 0;
        /* C1 control characters. */
        if (cp >= 0x80 && cp <= 0x9F)
            return 0;
        i += need + 1;
    }
    return 1;
}

/*
 * Durations (the grammar is in sqllock.h, at sqllock_parse_duration()).
 * The text is read once from left to right, one component (a number and
 * its unit) at a time. Every step that could overflow checks first, so
 * nothing wraps; *ms is written only when the whole text is good.
 */

/* The units, largest first: a component's unit must come later in this
 * table than the one before it. "ms" must be tried before "m". */
static const struct duration_unit {
    const char *name;
    int64_t ms;
} duration_units[] = {
    { "d", INT64_C(86400000) }, { "h", INT64_C(3600000) },
    { "m", INT64_C(60000) }, { "s", INT64_C(1000) }, { "ms", INT64_C(1) },
};
#define DURATION_UNITS (sizeof duration_units / sizeof duration_units[0])

/* A fraction of more significant digits than this is never a whole number
 * of milliseconds: every unit divides 86400000 = 2^10 * 3^3 * 5^5, so
 * f / 10^k of a unit, with f's last digit not 0, is a whole number of
 * milliseconds only if 2^k or 5^k divides 2^10 * 5^5 -- k <= 10. */
#define DURATION_FRAC_MAX 10

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int sqllock__parse_duration(const char *text, int64_t *ms, const char **why)
{
    const char *p = text, *ignored;
    int64_t total = 0;
    size_t last = 0;           /* the index of the previous unit, + 1 */

    if (why == NULL)
        why = &ignored;
    *why = NULL;
    if (text == NULL || ms == NULL) {
        *why = "no text";
        return SQLLOCK_EINVAL;
    }
    if (*p == '\0') {
        *why = "it is empty";
        return SQLLOCK_EINVAL;
    }
    while (*p != '\0') {
        const char *frac = NULL, *frac_end = NULL, *unit;
        int64_t whole = 0, f = 0, pow10 = 1, part;
        size_t u, ulen;
        int k;

        if (!is_digit(*p)) {
            *why = *p == '.' ? "a fraction needs digits on both sides of "
                               "its '.' (0.5s, not .5s)"
                             : "it must be numbers, each followed by a unit "
                               "(ms, s, m, h or d), with nothing else";
            return SQLLOCK_EINVAL;
        }
        for (; is_digit(*p); p++) {
            int d = *p - '0';

            if (whole > (INT64_MAX - d) / 10)
                goto too_long;
            whole = whole * 10 + d;
        }
        if (*p == '.') {
            frac = ++p;
            while (is_digit(*p))
                p++;
            frac_end = p;
            if (frac_end == frac) {
                *why = "a fraction needs digits on both sides of its '.' "
                       "(1.0s, not 1.s)";
                return SQLLOCK_EINVAL;
            }
        }
        /* The unit: every letter up to the next digit or the end. */
        unit = p;
        while (is_letter(*p))
            p++;
        ulen = (size_t)(p - unit);
        if (ulen == 0) {
            if (*p != '\0') {
                *why = *p == '.' ? "a number has at most one '.'"
                                 : "it must be numbers, each followed by a "
                                   "unit (ms, s, m, h or d), with nothing "
                                   "else";
                return SQLLOCK_EINVAL;
            }
            if (frac != NULL) {
                *why = "a fraction needs its unit (1.5s, not 1.5)";
                return SQLLOCK_EINVAL;
            }
            if (last != 0) {
                *why = "a number without a unit (seconds) must stand alone "
                       "(1m30s, not 1m30)";
                return SQLLOCK_EINVAL;
            }
            if (whole > INT64_MAX / 1000)
                goto too_long;
            *ms = whole * 1000;
            return SQLLOCK_OK;
        }
        for (u = 0; u < DURATION_UNITS; u++)
            if (strlen(duration_units[u].name) == ulen &&
                memcmp(duration_units[u].name, unit, ulen) == 0)
                break;
        if (u == DURATION_UNITS) {
            *why = "unknown unit (use ms, s, m, h or d)";
            return SQLLOCK_EINVAL;
        }
        if (u + 1 <= last) {
            *why = "the units must come largest first, each once (1h30m, "
                   "not 30m1h or 1m1m)";
            return SQLLOCK_EINVAL;
        }
        last = u + 1;
        if (frac != NULL && *p != '\0') {
            *why = is_digit(*p) ? "only the last number may have a fraction "
                                  "(1h30m or 1.5h, not 1.5h30m)"
                                : "it must be numbers, each followed by a "
                                  "unit (ms, s, m, h or d), with nothing "
                                  "else";
            return SQLLOCK_EINVAL;
        }
        /* The fraction, without the zeros that end it, in f / pow10. */
        if (frac != NULL) {
            while (frac_end > frac && frac_end[-1] == '0')
                frac_end--;
            k = (int)(frac_end - frac);
            if (k > DURATION_FRAC_MAX)
                goto too_fine;
            for (; frac < frac_end; frac++) {
                f = f * 10 + (*frac - '0');
                pow10 *= 10;
            }
            /* f < 10^10 and a unit <= 86400000: no overflow. */
            if (f * duration_units[u].ms % pow10 != 0)
                goto too_fine;
            f = f * duration_units[u].ms / pow10;
        }
        if (whole > (INT64_MAX - f) / duration_units[u].ms)
            goto too_long;
        part = whole * duration_units[u].ms + f;
        if (part > INT64_MAX - total)
            goto too_long;
        total += part;
    }
    *ms = total;
    return SQLLOCK_OK;
too_fine:
    *why = "it is not a whole number of milliseconds";
    return SQLLOCK_EINVAL;
too_long:
    *why = "it is longer than the longest duration, 106751991167d7h12m55.807s "
           "(2^63 - 1 ms)";
    return SQLLOCK_EINVAL;
}

int sqllock_parse_duration(const char *text, int64_t *ms)
{
    return sqllock__parse_duration(text, ms, NULL);
}

/* sqllock_parse_duration() with its reason, for a tool's messages. */
int sqllock_parse_duration_why(const char *text, int64_t *ms,
                               const char **why)
{
    return sqllock__parse_duration(text, ms, why);
}

/* sqllock_free(), for the memory the library hands out
 * (sqllock_record_get(), sqllock_url_redact()). */
void sqllock_free(void *p)
{
    free(p);
}

/* The clock of local deadlines, for programs that keep time beside a
 * lease (the tool's `run` tells its guard process when the lease's local
 * deadline passes). */
int64_t sqllock_now_us(void)
{
    return sqllock__now_us();
}
