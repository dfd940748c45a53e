/*
 * run_watch.c -- `sqllock run`: the lease while the command runs. The
 * watch callback's news for the supervisor (run_on_watch(),
 * run_take_note()), the runner's own renewer on its one connection behind
 * a session pooler (run_share_renew()), and how a loss is noticed and
 * acted on (run_check_lease(), run_lose(); DESIGN L6, L7, X2, X3). run.c
 * says how the parts fit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "run_watch.h"

/* The watch callback, on the renewer thread: leaves the news for the main
 * thread and wakes it. Calls nothing of the library. */
void run_on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                  const char *msg)
{
    run_state *st = ctx;

    pthread_mutex_lock(&st->mu);
    st->note_pending = 1;
    st->note_lease = lease;
    st->note_state = state;
    st->note_status = status;
    snprintf(st->note_msg, sizeof st->note_msg, "%s", msg ? msg : "");
    pthread_mutex_unlock(&st->mu);
    run_wake_write(st->wake[1], RUN_WAKE_WATCH);
}

/*
 * One server connection per run (issue 27): behind a pooler that gives
 * each client connection a server connection for the client's whole
 * session (pooler=session, pooler=pgpool; cli_db_session_pooler()), the
 * library's watchdog would renew on a connection of its own, a second
 * slot of the pool, and a pool with fewer than two free slots per
 * concurrent run left every run holding one slot while its renewer
 * waited for another. There the run renews on its own connection, from
 * this thread: the main thread does not use the handle from the start of
 * this thread until it has joined it (the handle passes between them
 * there), and stays the supervisor that never waits on the database.
 *
 * The renewals are the watchdog's (DESIGN L7): every interval after the
 * grant; after a failure again every quarter of it, the lease UNCERTAIN,
 * until its local deadline; LOST when one finds another owner. A lease
 * whose deadline has passed is never renewed again (a renewal would make
 * it held again; the supervisor has acted on the loss). The news reaches
 * the supervisor as the watchdog's does, through run_on_watch(). A renewal in
 * flight when the job ends is waited for before the release uses the
 * connection: it is bounded by the statement timeout.
 */
static void *run_share_renew(void *arg)
{
    run_state *st = arg;
    sqllock_lease *all[SQLLOCK_LEASE_MANY_MAX];
    int bad[SQLLOCK_LEASE_MANY_MAX], gone[SQLLOCK_LEASE_MANY_MAX];
    int64_t retry = st->every_ms / 4 > 10 ? st->every_ms / 4 : 10;
    int64_t next = st->granted_us + st->every_ms * 1000;
    int n = 0, left, i;

    all[n++] = st->lease;
    for (i = 0; i < st->nalso; i++)
        all[n++] = st->also[i];
    memset(bad, 0, sizeof bad);
    memset(gone, 0, sizeof gone);
    left = n;
    pthread_mutex_lock(&st->mu);
    while (!st->share_stop && left > 0) {
        int64_t now = sqllock_now_us(), nap;
        int failed = 0;

        if (now < next) {
            struct timespec ts;

            /* In pieces: the condition variable counts CLOCK_MONOTONIC,
             * which stops while the host is suspended (DESIGN T1). */
            nap = (next - now) / 1000 + 1;
            if (nap > RUN_MAX_NAP_MS)
                nap = RUN_MAX_NAP_MS;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += (time_t)(nap / 1000);
            ts.tv_nsec += (long)(nap % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&st->share_cv, &st->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&st->mu);
        for (i = 0; i < n; i++) {
            int rc;

            if (gone[i])
                continue;
            if (sqllock_lease_state(all[i]) == SQLLOCK_STATE_LOST) {
                gone[i] = 1;
                left--;
                run_on_watch(st, all[i], SQLLOCK_STATE_LOST, SQLLOCK_TIMEOUT,
                             "its local deadline passed before a renewal "
                             "succeeded");
                continue;
            }
            rc = sqllock_lease_renew(all[i]);
            if (rc == SQLLOCK_OK) {
                if (bad[i])
                    run_on_watch(st, all[i], SQLLOCK_STATE_HELD, rc, NULL);
                bad[i] = 0;
            } else if (rc == SQLLOCK_LOST || rc == SQLLOCK_ENOTHELD) {
                gone[i] = 1;
                left--;
                run_on_watch(st, all[i], SQLLOCK_STATE_LOST, SQLLOCK_LOST,
                             sqllock_errmsg(st->db));
            } else {
                if (!bad[i])
                    run_on_watch(st, all[i], SQLLOCK_STATE_UNCERTAIN, rc,
                                 sqllock_errmsg(st->db));
                bad[i] = 1;
                failed = 1;
            }
        }
        next = sqllock_now_us() + (failed ? retry : st->every_ms) * 1000;
        pthread_mutex_lock(&st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Starts run_share_renew(). The thread inherits the main thread's mask, with
 * the four signals blocked (run_take_signals()). 0, or -1 with errno. */
int run_share_start(run_state *st)
{
    pthread_condattr_t ca;
    int err;

    if (pthread_condattr_init(&ca) != 0)
        return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    err = pthread_cond_init(&st->share_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (err != 0) {
        errno = err;
        return -1;
    }
    st->share_stop = 0;
    err = pthread_create(&st->sharer, NULL, run_share_renew, st);
    if (err != 0) {
        pthread_cond_destroy(&st->share_cv);
        errno = err;
        return -1;
    }
    st->share_on = 1;
    return 0;
}

/* Stops run_share_renew() and joins it: the handle is the main thread's
 * again. Harmless when it does not run. */
void run_share_stop(run_state *st)
{
    if (!st->share_on)
        return;
    pthread_mutex_lock(&st->mu);
    st->share_stop = 1;
    pthread_cond_signal(&st->share_cv);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->sharer, NULL);
    pthread_cond_destroy(&st->share_cv);
    st->share_on = 0;
}

/* Marks the lease lost, says when and why, and has the guard stop the
 * command. */
void run_lose(run_state *st, const char *why)
{
    char when[64], since[32], sig[32];
    char also[300];
    const char *name = st->what;

    if (st->lost_name != NULL && st->lost_name != st->name) {
        snprintf(also, sizeof also, "lock '%s'", st->lost_name);
        name = also;
    }

    st->lost = 1;
    st->lost_us = cli_guard_now_us();
    run_wall_time(when, sizeof when, st->lost_us);
    run_span(since, sizeof since, (st->lost_us - st->granted_us) / 1000);
    if (st->ended && !st->leftover)
        run_say(st, "%s lost (noticed at %s, %s after the grant): %s; "
                "the command had already ended", name, when, since, why);
    else if (st->ended)
        run_say(st, "%s lost (noticed at %s, %s after the grant): %s; "
                "killing what the command left running", name, when, since,
                why);
    else
        run_say(st, "%s lost (noticed at %s, %s after the grant): %s; "
                "stopping the command (%s)", name, when, since, why,
                cli_signame(st->lost_signal, sig, sizeof sig));
    run_to_guard(st, CLI_GUARD_LOST, 0, 0);
}

/* Acts on what the watch callback reported. */
void run_take_note(run_state *st)
{
    int pending, state, status;
    char msg[sizeof st->note_msg];

    pthread_mutex_lock(&st->mu);
    pending = st->note_pending;
    state = st->note_state;
    status = st->note_status;
    if (st->note_lease != NULL && state == SQLLOCK_STATE_LOST &&
        st->lost_name == NULL)
        st->lost_name = st->note_lease == st->lease
                            ? st->name : sqllock_lease_name(st->note_lease);
    memcpy(msg, st->note_msg, sizeof msg);
    st->note_pending = 0;
    pthread_mutex_unlock(&st->mu);
    if (!pending || st->lost)
        return;
    if (state == SQLLOCK_STATE_LOST)
        run_lose(st, msg);
    else if (state == SQLLOCK_STATE_UNCERTAIN)
        run_say(st, "renewing %s failed (%s; will retry while its time "
                "lasts): %s", st->what, sqllock_errname(status), msg);
    else if (state == SQLLOCK_STATE_HELD)
        run_say(st, "%s renewed late: renewing it works again",
                st->what);
}

/* The earliest local deadline of the leases (NAME's and --also's): the
 * job is covered only while every one is held. 0 when one is unknown. */
int64_t run_deadline_us(const run_state *st)
{
    int64_t d = sqllock_lease_deadline_us(st->lease), e;
    int i;

    for (i = 0; i < st->nalso && d != 0; i++) {
        e = sqllock_lease_deadline_us(st->also[i]);
        if (e == 0 || e < d)
            d = e;
    }
    return d;
}

/* 1 when any of the leases is LOST; notes its name for the message. */
static int any_lost(run_state *st)
{
    int i;

    if (sqllock_lease_state(st->lease) == SQLLOCK_STATE_LOST)
        return 1;
    for (i = 0; i < st->nalso; i++)
        if (sqllock_lease_state(st->also[i]) == SQLLOCK_STATE_LOST) {
            if (st->lost_name == NULL)
                st->lost_name = st->also_names[i];
            return 1;
        }
    return 0;
}

/* DESIGN X3: the lease's own state, before anything else, each time the
 * supervisor wakes. A renewal that hangs never calls back, but its
 * deadline passes all the same; and a runner that was stopped past its
 * deadline finds out here, whatever happened meanwhile. */
void run_check_lease(run_state *st)
{
    char why[300], late[32];
    int64_t now, deadline;

    if (st->lost || !any_lost(st))
        return;
    now = cli_guard_now_us();
    deadline = run_deadline_us(st);
    if (deadline == 0 || now < deadline) {
        /* The renewer found the lease taken; its note says more. */
        run_take_note(st);
        if (st->lost)
            return;
        snprintf(why, sizeof why, "a renewal found it taken over by "
                 "another owner, or removed");
    } else if (now - deadline > RUN_LATE_US) {
        snprintf(why, sizeof why, "its local deadline passed %s before "
                 "sqllock could act (it was stopped, paused or starved)",
                 run_span(late, sizeof late, (now - deadline) / 1000));
    } else {
        snprintf(why, sizeof why, "its local deadline passed before a "
                 "renewal succeeded");
    }
    run_lose(st, why);
}
