/*
 * util.c -- clocks, sleeping, randomness, name checks and durations.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int64_t sqllock__now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t sqllock__now_ms(void)
{
    return sqllock__now_us() / 1000;
}

void sqllock__sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
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

int sqllock_parse_duration(const char *text, int64_t *ms)
{
    const char *p = text;
    int64_t value = 0, scale;

    if (text == NULL || ms == NULL || *p < '0' || *p > '9')
        return SQLLOCK_EINVAL;
    while (*p >= '0' && *p <= '9') {
        int d = *p - '0';
        if (value > (INT64_MAX - d) / 10)
            return SQLLOCK_EINVAL;
        value = value * 10 + d;
        p++;
    }
    if (*p == '\0' || strcmp(p, "s") == 0)
        scale = 1000;
    else if (strcmp(p, "ms") == 0)
        scale = 1;
    else if (strcmp(p, "m") == 0)
        scale = 60 * 1000;
    else if (strcmp(p, "h") == 0)
        scale = 3600 * 1000;
    else if (strcmp(p, "d") == 0)
        scale = 86400 * 1000;
    else
        return SQLLOCK_EINVAL;
    if (value > INT64_MAX / scale)
        return SQLLOCK_EINVAL;
    *ms = value * scale;
    return SQLLOCK_OK;
}
