/*
 * lease_wait.c -- a blocking acquire's wait between two tries (DESIGN L9),
 * for one name (sqllock_lease_acquire()) and for several
 * (sqllock_lease_acquire_many(), lease_many.c).
 *
 * Waiting with wake-ups (L9). A waiter notes its key's in-process
 * generation before each try, so a release in this process between the
 * try and the sleep is not missed. On PostgreSQL it also LISTENs on the
 * name's channel after the first busy try, and tries once more at once
 * (a release before the LISTEN took effect sent a notification no one
 * heard); after that a notification ends its sleep. Where the connection
 * carries session-lock wake-ups instead (MySQL, MariaDB; not Galera), it
 * pauses inside the server, blocked on the companion lock that the holder
 * took with its grant, for up to the backoff's cap: the holder's release
 * or death ends the pause. After a wake-up whose try found the lease
 * held, it waits on the companion again when the try saw it taken (the
 * waiter woken first got the lease and its companion); when not (a
 * holder that reconnected and lost its companion, a grant that could not
 * take it), one plain backoff comes before the next wait, so a missing
 * companion costs at most one extra try per backoff, never a spin.
 * Polling with backoff stays underneath all of them: notifications go
 * with a lost connection, and a lease that merely expires announces
 * nothing. A waiter on several names pauses on the first one its try
 * found held -- its channel, its companion, its in-process generation --
 * and keeps LISTENing on every name it has waited on.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"

sqllock__backoff_hook *_Atomic sqllock__on_backoff;

/* The cap of the backoff before attempt `attempt` (from 0): exponential
 * from min to max. A waiter that can be woken waits that long at most. */
static int64_t backoff_cap_ms(const sqllock_lease *l, int attempt)
{
    int64_t cap = l->backoff_min_ms;
    int i;

    for (i = 0; i < attempt && cap < l->backoff_max_ms &&
                cap <= INT64_MAX / 2; i++)
        cap *= 2;
    return cap > l->backoff_max_ms ? l->backoff_max_ms : cap;
}

/* The backoff of a waiter that polls: the cap, with full jitter. */
static int64_t backoff_ms(const sqllock_lease *l, int attempt)
{
    return sqllock__rand_upto(backoff_cap_ms(l, attempt));
}

/*
 * One pause of a waiter with session-lock wake-ups (WAKE_WAIT): blocks
 * in the server on the name's companion lock until `until_us` (a
 * sqllock__now_us() time), so that the holder's release, or the end of
 * its session, ends the pause at once. Each wait stays within half the
 * statement timeout, so that the client's bound on a round trip
 * (statement timeout plus lock wait, fixed at the connect) never cuts
 * it, and within SQLLOCK__WAIT_SLICE_MS, so that the deadline clock is
 * read again after each (DESIGN T1: the server times the wait, and this
 * host's suspend does not stop it, but a deadline that passed during a
 * suspend must still end the pause, however the server's clock ran); a
 * longer pause is several waits. A wait that ends early without a
 * wake-up (a server that counts whole seconds: MySQL 8.0 turns 0.3 s
 * into 0) sleeps the rest of its time here. *woke says whether the lock
 * was free or freed. Any failure is returned, for the caller to poll for
 * the rest of its wait (on MySQL 8.0 a wait that would close a cycle of
 * session locks fails as a deadlock); a lost connection is dropped and
 * the next try reconnects.
 */
static int pause_on_companion(sqllock_lease *l, int64_t until_us,
                              uint64_t seen, int *woke)
{
    sqllock_db *db = l->db;
    sqllock_sql_id id = SQLLOCK_SQL_WAKE_WAIT;
    sqllock_value args[2];
    int64_t bound, chunk, start, got;
    int rc, has_row;

    *woke = 0;
    bound = db->params.statement_timeout_ms / 2;
    for (;;) {
        start = sqllock__now_us();
        chunk = sqllock__wait_slice_ms(until_us);
        if (chunk <= 0)
            return SQLLOCK_OK;
        if (bound > 0 && chunk > bound)
            chunk = bound;
        args[0] = sqllock__text(l->name);
        args[1] = sqllock__int(chunk);
        has_row = 0;
        got = 0;
        rc = sqllock__run(db, id, args, 2, "waiting for the lock's holder");
        if (rc == SQLLOCK_OK)
            rc = sqllock__first_int(db, id, &has_row, &got,
                                      "waiting for the lock's holder");
        if (rc != SQLLOCK_OK)
            return rc;
        if (has_row && got == 1) {
            *woke = 1;
            return SQLLOCK_OK;
        }
        if (sqllock__wake_wait(l->wake_key, seen, start + chunk * 1000)) {
            *woke = 1;              /* a release in this process */
            return SQLLOCK_OK;
        }
    }
}

void sqllock__wait_start(sqllock__wait *w, sqllock_db *db, int n,
                         int64_t wait_ms)
{
    int64_t now = sqllock__now_ms();

    memset(w, 0, sizeof *w);
    w->db = db;
    w->n = n;
    w->deadline = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    w->notify = db->drv != NULL && sqllock__can_notify(db);
    w->session = -1;
}

void sqllock__wait_pause(sqllock__wait *w, sqllock_lease *b, int i,
                         uint64_t seen)
{
    char channel[SQLLOCK__CHANNEL_MAX];
    sqllock__backoff_hook *hook = atomic_load(&sqllock__on_backoff);
    int64_t left = w->deadline - sqllock__now_ms(), sleep_ms, until;
    int wake = !(b->flags & SQLLOCK_LEASE_NO_WAKEUP), woke = 0;

    if (w->notify && wake && !w->listened[i]) {
        sqllock__wake_channel(b->name, channel);
        if (sqllock__listen(w->db, channel, 1) == SQLLOCK_OK) {
            w->listened[i] = 1;
            w->listening = 1;
            return;     /* a release before the LISTEN: try again at once */
        }
        w->notify = 0;                  /* fall back to polling */
    }
    /* A wake-up whose try found the lease held by a holder with a
     * companion (the waiter that got in first): wait on it again. */
    if (w->plain_next && b->busy_companion)
        w->plain_next = 0;
    if (w->session < 0 && wake) {
        int usable = 0;

        /* Asked again after a failed connect, which the next try
         * reports. */
        if (w->notify)
            w->session = 0;
        else if (sqllock__session_wake(w->db, &usable) == SQLLOCK_OK)
            w->session = usable;
    }
    if (w->session > 0 && wake && !w->plain_next) {
        sleep_ms = backoff_cap_ms(b, w->attempt);
        if (sleep_ms > left)
            sleep_ms = left;
        /* The pause's end, on the deadline clock before the hook runs:
         * a suspend from here on cannot move it (T1). */
        until = sqllock__now_us() + sleep_ms * 1000;
        if (hook != NULL)
            hook(b->name, sleep_ms, 1);
        if (pause_on_companion(b, until, seen, &woke) != SQLLOCK_OK) {
            woke = 0;
            w->session = 0;             /* poll for the rest of this wait */
        }
        w->plain_next = woke;
    } else {
        w->plain_next = 0;
        sleep_ms = backoff_ms(b, w->attempt);
        if (sleep_ms > left)
            sleep_ms = left;
        until = sqllock__now_us() + sleep_ms * 1000;
        if (hook != NULL)
            hook(b->name, sleep_ms, w->listening);
        if (w->listening) {
            if (sqllock__wait_notify(w->db, until, &woke) != SQLLOCK_OK) {
                /* The connection went, and its LISTENs with it: LISTEN
                 * again on the next round. */
                w->listening = 0;
                memset(w->listened, 0, sizeof w->listened);
            }
        } else if (wake) {
            woke = sqllock__wake_wait(b->wake_key, seen, until) != 0;
        } else {
            sqllock__sleep_until(until);
        }
    }
    sqllock__m_pause(w->db, woke);
    if (w->attempt < 62)
        w->attempt++;
}

void sqllock__wait_end(sqllock__wait *w, sqllock_lease *const *leases)
{
    char channel[SQLLOCK__CHANNEL_MAX];
    int i;

    /* UNLISTEN leaves the handle's status and message as they are. */
    for (i = 0; i < w->n; i++)
        if (w->listened[i]) {
            sqllock__wake_channel(leases[i]->name, channel);
            sqllock__listen(w->db, channel, 0);
        }
}
