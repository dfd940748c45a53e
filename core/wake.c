/*
 * wake.c -- wake-ups for waiting acquires (DESIGN L9).
 *
 * In one process, a release wakes the waiters of the same lock at once
 * instead of at their next poll: a waiter notes its key's generation
 * before it tries, and sleeps on a condition variable only while that
 * generation is unchanged; a release increments it and broadcasts. There
 * is one mutex and one condition variable for the process: waits are rare
 * and short, and a waiter woken for another key only checks its own and
 * sleeps again. Keys are hashed into a fixed table, so two locks may share
 * a slot; the cost of that is a spurious try, never a missed wake-up.
 *
 * Across processes, PostgreSQL carries the wake-up (LISTEN/NOTIFY on a
 * channel named after the lock, see lease_wait.c), MySQL and MariaDB a
 * companion session lock that the holder keeps and waiters block on
 * (LEASE_ACQUIRE_WAKE, lease_wait.c); SQLite and Galera poll.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"

#define WAKE_SLOTS 256

static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t wake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv;
static int wake_cv_ok;
static uint64_t wake_gen_[WAKE_SLOTS];

static void wake_init(void)
{
    wake_cv_ok = sqllock__cond_init(&wake_cv) == 0;
}

/* FNV-1a, 64 bits: cheap, and spreads short names well enough here. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)

uint64_t sqllock__wake_key(const char *url, const char *name)
{
    uint64_t h = fnv1a(FNV_OFFSET, url != NULL ? url : "");

    h ^= 0xff;                     /* a separator no UTF-8 text holds */
    h *= UINT64_C(0x100000001b3);
    return fnv1a(h, name);
}

void sqllock__wake_channel(const char *name, char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = fnv1a(FNV_OFFSET, name);
    int i;

    memcpy(out, "sqllock_", 8);
    for (i = 0; i < 16; i++)
        out[8 + i] = hex[(h >> (60 - 4 * i)) & 15];
    out[24] = '\0';
}

uint64_t sqllock__wake_gen(uint64_t key)
{
    uint64_t g;

    pthread_mutex_lock(&wake_mu);
    g = wake_gen_[key % WAKE_SLOTS];
    pthread_mutex_unlock(&wake_mu);
    return g;
}

void sqllock__wake_post(uint64_t key)
{
    pthread_once(&wake_once, wake_init);
    pthread_mutex_lock(&wake_mu);
    wake_gen_[key % WAKE_SLOTS]++;
    if (wake_cv_ok)
        pthread_cond_broadcast(&wake_cv);
    pthread_mutex_unlock(&wake_mu);
}

int sqllock__wake_wait(uint64_t key, uint64_t seen, int64_t until_us)
{
    int woke;

    pthread_once(&wake_once, wake_init);
    if (!wake_cv_ok) {
        sqllock__sleep_until(until_us);
        return 0;
    }
    pthread_mutex_lock(&wake_mu);
    while (wake_gen_[key % WAKE_SLOTS] == seen &&
           sqllock__cond_wait_until(&wake_cv, &wake_mu, until_us) == 0)
        ;
    woke = wake_gen_[key % WAKE_SLOTS] != seen;
    pthread_mutex_unlock(&wake_mu);
    return woke;
}
