/*
 * pooler/wakeup.c -- test_pooler's wake-ups (b), and handoff_ms(), which
 * pgpool.c's f uses too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "pooler/pooler.h"

/* ------------------------------------------------------------------ */
/* b: wake-ups                                                          */
/* ------------------------------------------------------------------ */

typedef struct waiter {
    char url[1024];
    char name[128];
    int64_t backoff_ms;
    _Atomic int rc;
    _Atomic int64_t got_at;
    _Atomic int done;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    sqllock_db *db = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    rc = sqllock_open(w->url, NULL, &db);
    if (rc == SQLLOCK_OK) {
        o.ttl_ms = 10000;
        o.backoff_min_ms = w->backoff_ms;
        o.backoff_max_ms = w->backoff_ms;
        rc = sqllock_lease_new(db, w->name, &o, &l);
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(l, 60000 * (int64_t)g_slow);
    atomic_store(&w->got_at, tu_now_ms());
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(l);
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* The waiter of handoff_ms() asleep between its tries, as the library
 * reports it (sqllock__on_backoff): -1 until it sleeps, then 1 when it
 * sleeps LISTENing for a notification, 0 when it sleeps to poll again. */
static char g_asleep_name[128];
static atomic_int g_asleep = -1;

static void on_backoff(const char *name, int64_t sleep_ms, int listening)
{
    (void)sleep_ms;
    if (strcmp(name, g_asleep_name) == 0)
        atomic_store(&g_asleep, listening);
}

/* Holds `name` through `url`, starts a waiter through `wurl` with a
 * backoff of `backoff_ms`, releases once it is asleep in its backoff --
 * LISTENing when `listening`, polling otherwise (a waiter asleep the
 * other way fails the test) -- and returns how long after the release
 * the waiter had the lock. */
int64_t handoff_ms(const char *url, const char *wurl, const char *name,
                   int64_t backoff_ms, int listening)
{
    sqllock_db *db = open_url(url);
    /* Longer than the wait below for the waiter to fall asleep, whatever
     * the slowdown. */
    sqllock_lease *l = new_lease(db, name, 30000 * (int64_t)g_slow, 0);
    waiter *w = calloc(1, sizeof *w);
    pthread_t th;
    int64_t released, took, deadline;
    int asleep;

    assert_non_null(w);
    snprintf(g_asleep_name, sizeof g_asleep_name, "%s", name);
    atomic_store(&g_asleep, -1);
    atomic_store(&sqllock__on_backoff, on_backoff);
    snprintf(w->url, sizeof w->url, "%s", wurl);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->backoff_ms = backoff_ms;
    EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
    assert_int_equal(pthread_create(&th, NULL, waiter_main, w), 0);
    /* The waiter's first try fails; it LISTENs (where it can), tries
     * again and sleeps for its backoff: release only then, so that only
     * a wake-up (or, polling, its next try) can give it the lock. */
    deadline = tu_now_ms() + 20000 * (int64_t)g_slow;
    while ((asleep = atomic_load(&g_asleep)) < 0 && !atomic_load(&w->done) &&
           tu_now_ms() < deadline)
        tu_sleep_ms(2);
    if (asleep != listening && atomic_load(&w->done))
        fail_msg("the waiter through %s ended with %s before it slept "
                 "between tries", wurl, sqllock_errname(atomic_load(&w->rc)));
    if (asleep != listening)
        fail_msg("the waiter through %s %s, want it asleep %s",
                 wurl, asleep < 0 ? "never went to sleep between tries"
                 : asleep ? "sleeps LISTENing" : "sleeps polling",
                 listening ? "LISTENing" : "polling");
    released = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    pthread_join(th, NULL);
    if (atomic_load(&w->rc) != SQLLOCK_OK)
        fail_msg("the waiter ended with %s", sqllock_errname(atomic_load(
                 &w->rc)));
    took = atomic_load(&w->got_at) - released;
    free(w);
    sqllock_lease_free(l);
    sqllock_close(db);
    return took;
}

/* L9 + C1 through PgBouncer: the three cases, each asserted. */
void test_pooler_b_L9_wakeups(void **state)
{
    sqllock_db *db;
    char name[128], channel[SQLLOCK__CHANNEL_MAX];
    int64_t t;
    (void)state;

    /* Transaction mode without listen_host: no LISTEN is ever sent on
     * the pooled connection (it would hear nothing); the waiter polls. */
    db = open_url(g_tx_poll);
    snprintf(name, sizeof name, "pooler-wake-poll-%ld", (long)getpid());
    sqllock__wake_channel(name, channel);
    assert_int_equal(sqllock__listen(db, channel, 1), SQLLOCK_EUNSUPPORTED);
    sqllock_close(db);
    t = handoff_ms(g_direct, g_tx_poll, name, 300, 0);
    printf("    b [transaction, polling] the waiter (backoff 300 ms) had "
           "the lock %lld ms after the release\n", (long long)t);
    if (t > 2000 * g_slow)
        fail_msg("a polling waiter took %lld ms (backoff 300 ms)",
                 (long long)t);

    /* Transaction mode with listen_host: the waiter LISTENs past the
     * pooler; with a backoff of 20 s (times the slowdown, so that it
     * stays far above the bound below) only a notification can wake it
     * in time. */
    snprintf(name, sizeof name, "pooler-wake-listen-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_tx, name, 20000 * (int64_t)g_slow, 1);
    printf("    b [transaction, listen_host] woken %lld ms after the "
           "release (backoff %d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9: through PgBouncer with listen_host a release took "
                 "%lld ms to wake the waiter (backoff %d s): no NOTIFY "
                 "reached it", (long long)t, 20 * g_slow);

    /* Session mode: LISTEN on the pooled session itself. */
    snprintf(name, sizeof name, "pooler-wake-session-%ld", (long)getpid());
    t = handoff_ms(g_direct, g_session, name, 20000 * (int64_t)g_slow,
                   1);
    printf("    b [session] woken %lld ms after the release (backoff "
           "%d s)\n", (long long)t, 20 * g_slow);
    if (t > 1500 * g_slow)
        fail_msg("L9: through PgBouncer in session mode a release took "
                 "%lld ms to wake the waiter (backoff %d s)", (long long)t,
                 20 * g_slow);
}

