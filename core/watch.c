/*
 * watch.c -- the watchdog: automatic renewal of held leases (DESIGN L6, L7).
 *
 * One renewer per database handle: a thread with its own connection to the
 * handle's URL (never the caller's, which belongs to the caller's thread,
 * E3), started by the first sqllock_lease_watch() and stopped by
 * sqllock_close(). It keeps a list of watched leases, each with the time
 * its next renewal is due, and sleeps on a condition variable until the
 * earliest one (or until it is told of a new lease or asked to stop).
 *
 * The renewer works on copies of a lease's name, owner, token and ttl, and
 * writes back into the caller's handle only its two atomics: the local
 * deadline (moved forward after each successful renewal, measured from the
 * time the renewal was SENT, L6) and the state word (held, uncertain,
 * lost). Everything else in the handle stays the caller's.
 *
 * A renewal that finds the row no longer ours is LOST at once. Any other
 * failure (lost connection, busy database) is transient: the lease is
 * UNCERTAIN and the renewal is retried every retry interval until the
 * local deadline passes, when it is LOST. The callback runs on this thread
 * with the mutex released but the lease marked busy, so that
 * sqllock_lease_unwatch() -- which release and free call first -- waits
 * for a callback in progress. It does not wait for a renewal in progress
 * (which may hang as long as the database lets it): it marks the entry
 * removed, and the renewer drops it when the statement returns, without
 * touching the lease. Either way the renewer never touches a lease the
 * caller has released or freed, and a renewal racing a release cannot
 * resurrect it: the renewal names the owner and token, which the release
 * deleted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

typedef struct watch_entry {
    struct watch_entry *next;
    sqllock_lease *lease;
    char name[SQLLOCK_NAME_MAX + 1];
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    int64_t ttl_ms;
    int64_t margin_ms;
    int fast;                   /* SQLLOCK_LEASE_FAST */
    int64_t interval_us;
    int64_t retry_us;
    int64_t due_us;            /* when the next renewal is due */
    int state;                 /* last state reported to the callback */
    int removed;               /* unwatched while its renewal or its
                                  callback ran: dropped after */
    sqllock_watch_fn callback;
    void *ctx;
} watch_entry;

struct sqllock__renewer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;       /* a new lease, or stop */
    pthread_cond_t idle;       /* `busy` went back to NULL */
    sqllock_db *db;            /* the renewer's own connection */
    watch_entry *head;
    sqllock_lease *busy;       /* being called back right now */
    watch_entry *renewing;     /* whose renewal is in flight */
    int stop;
};

/* The CLOCK_MONOTONIC time of the condition variable's wait at which the
 * renewer's deadline clock reads `us`. */
static void abs_time(int64_t us, struct timespec *ts)
{
    sqllock__mono_after(us, ts);
}

static void unlink_entry(struct sqllock__renewer *r, watch_entry *e)
{
    watch_entry **p;

    for (p = &r->head; *p != NULL; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            return;
        }
}

/* Calls the callback with the mutex released and the lease marked busy. */
static void report(struct sqllock__renewer *r, watch_entry *e, int state,
                   int status, const char *msg)
{
    e->state = state;
    if (e->callback == NULL)
        return;
    pthread_mutex_unlock(&r->mu);
    e->callback(e->ctx, e->lease, state, status, msg);
    pthread_mutex_lock(&r->mu);
}

/* The watched lease that most needs attention: its renewal is due first,
 * or (while uncertain) its local deadline comes first. */
static watch_entry *next_entry(struct sqllock__renewer *r, int64_t *when)
{
    watch_entry *e, *best = NULL;
    int64_t t, best_t = 0;

    for (e = r->head; e != NULL; e = e->next) {
        t = e->due_us;
        if (e->state == SQLLOCK_STATE_UNCERTAIN &&
            sqllock__lease_deadline(e->lease) < t)
            t = sqllock__lease_deadline(e->lease);
        if (best == NULL || t < best_t) {
            best = e;
            best_t = t;
        }
    }
    *when = best_t;
    return best;
}

/* One renewal of `e`, entered and left with the mutex held. */
static void renew_one(struct sqllock__renewer *r, watch_entry *e)
{
    char msg[SQLLOCK__ERRMSG_MAX];
    int64_t sent_us, now, deadline, affected = 0;
    int rc;

    deadline = sqllock__lease_deadline(e->lease);
    r->busy = e->lease;
    if (deadline != 0 && sqllock__now_us() >= deadline) {
        /* The local deadline passed without a successful renewal (a
         * renewal that hung, or failures until now): L6/L7. */
        sqllock__lease_set_state(e->lease, SQLLOCK_STATE_LOST);
        unlink_entry(r, e);
        report(r, e, SQLLOCK_STATE_LOST, SQLLOCK_TIMEOUT, "the lease's local "
               "deadline passed before a renewal succeeded");
        free(e);
        goto done;
    }
    r->busy = NULL;
    r->renewing = e;
    pthread_mutex_unlock(&r->mu);
    sent_us = sqllock__now_us();
    rc = sqllock__lease_renew_raw(r->db, e->name, e->owner, e->token,
                                  e->ttl_ms, e->fast, &affected);
    if (rc != SQLLOCK_OK)
        memcpy(msg, sqllock_errmsg(r->db), sizeof msg);
    pthread_mutex_lock(&r->mu);
    r->renewing = NULL;
    if (e->removed) {
        /* Unwatched (released, freed) while the statement ran: the
         * lease is no longer ours to touch. */
        unlink_entry(r, e);
        free(e);
        goto done;
    }
    r->busy = e->lease;
    now = sqllock__now_us();
    if (rc == SQLLOCK_OK && affected == 0) {
        sqllock__lease_set_state(e->lease, SQLLOCK_STATE_LOST);
        unlink_entry(r, e);
        report(r, e, SQLLOCK_STATE_LOST, SQLLOCK_LOST, "the lease was taken "
               "over by another owner, or removed after it expired");
        free(e);
    } else if (now >= sqllock__lease_deadline(e->lease)) {
        /* An answer after the local deadline, even a success, comes too
         * late: the holder has already had to stop trusting the lease
         * (L6), and must be told so rather than find it held again. */
        sqllock__lease_set_state(e->lease, SQLLOCK_STATE_LOST);
        unlink_entry(r, e);
        report(r, e, SQLLOCK_STATE_LOST, SQLLOCK_TIMEOUT,
               rc == SQLLOCK_OK ? "the renewal answered only after the "
               "lease's local deadline had passed" : msg);
        free(e);
    } else if (rc == SQLLOCK_OK) {
        sqllock__lease_extend(e->lease,
                              sent_us + (e->ttl_ms - e->margin_ms) * 1000);
        sqllock__lease_set_state(e->lease, SQLLOCK_STATE_HELD);
        e->due_us = now + e->interval_us;
        if (e->state != SQLLOCK_STATE_HELD)
            report(r, e, SQLLOCK_STATE_HELD, SQLLOCK_OK, "renewed");
        if (e->removed) {
            unlink_entry(r, e);
            free(e);
        }
    } else {
        sqllock__lease_set_state(e->lease, SQLLOCK_STATE_UNCERTAIN);
        e->due_us = now + e->retry_us;
        if (e->state != SQLLOCK_STATE_UNCERTAIN)
            report(r, e, SQLLOCK_STATE_UNCERTAIN, rc, msg);
        if (e->removed) {
            unlink_entry(r, e);
            free(e);
        }
    }
done:
    r->busy = NULL;
    pthread_cond_broadcast(&r->idle);
}

static void *renewer_main(void *arg)
{
    struct sqllock__renewer *r = arg;
    struct timespec ts;
    watch_entry *e;
    int64_t when;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        e = next_entry(r, &when);
        if (e == NULL) {
            pthread_cond_wait(&r->wake, &r->mu);
            continue;
        }
        if (when > sqllock__now_us()) {
            abs_time(when, &ts);
            pthread_cond_timedwait(&r->wake, &r->mu, &ts);
            continue;
        }
        renew_one(r, e);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static int renewer_start(sqllock_db *db)
{
    struct sqllock__renewer *r;
    pthread_condattr_t attr;
    sqllock_options opts = SQLLOCK_OPTIONS_INIT;
    int rc, err;

    r = calloc(1, sizeof *r);
    if (r == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    opts.busy_timeout_ms = db->params.busy_timeout_ms;
    opts.connect_timeout_ms = db->params.connect_timeout_ms;
    opts.statement_timeout_ms = db->params.statement_timeout_ms;
    rc = sqllock_open(db->url, &opts, &r->db);
    if (rc != SQLLOCK_OK) {
        rc = sqllock__fail(db, rc, "starting the renewer: %s",
                           sqllock_errmsg(r->db));
        sqllock_close(r->db);
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->idle, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &attr);
    pthread_condattr_destroy(&attr);
    err = pthread_create(&r->thread, NULL, renewer_main, r);
    if (err != 0) {
        pthread_cond_destroy(&r->wake);
        pthread_cond_destroy(&r->idle);
        pthread_mutex_destroy(&r->mu);
        sqllock_close(r->db);
        free(r);
        return sqllock__fail(db, SQLLOCK_ESYS, "cannot start the renewer "
                             "thread: %s", strerror(err));
    }
    db->renewer = r;
    return SQLLOCK_OK;
}

void sqllock__renewer_free(struct sqllock__renewer *r)
{
    watch_entry *e;

    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    while ((e = r->head) != NULL) {
        r->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->idle);
    pthread_mutex_destroy(&r->mu);
    sqllock_close(r->db);
    free(r);
}

void sqllock__renewer_forget(struct sqllock__renewer *r, sqllock_lease *lease)
{
    watch_entry *e;

    pthread_mutex_lock(&r->mu);
    /* A callback that unwatches its own lease must not wait for itself:
     * the renewer drops the entry when the callback returns. */
    if (pthread_equal(pthread_self(), r->thread) && r->busy == lease) {
        for (e = r->head; e != NULL; e = e->next)
            if (e->lease == lease)
                e->removed = 1;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    while (r->busy == lease)
        pthread_cond_wait(&r->idle, &r->mu);
    for (e = r->head; e != NULL; e = e->next)
        if (e->lease == lease && !e->removed) {
            if (e == r->renewing) {
                e->removed = 1;         /* the renewer drops it */
            } else {
                unlink_entry(r, e);
                free(e);
            }
            break;
        }
    pthread_mutex_unlock(&r->mu);
}

int sqllock_lease_watch(sqllock_lease *l, const sqllock_watch_options *opts)
{
    static const sqllock_watch_options defaults = SQLLOCK_WATCH_OPTIONS_INIT;
    struct sqllock__renewer *r;
    sqllock_db *db;
    watch_entry *e, *it;
    int64_t interval, retry, valid;
    int state, rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    db = l->db;
    if (opts == NULL)
        opts = &defaults;
    state = sqllock_lease_state(l);
    if (l->count == 0 || state == SQLLOCK_STATE_NOT_HELD)
        return sqllock__fail(db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (watch)", l->name);
    if (state == SQLLOCK_STATE_LOST)
        return sqllock__fail(db, SQLLOCK_LOST, "lock '%s' is already lost: "
                             "its local deadline passed or another owner "
                             "took it (watch)", l->name);
    valid = l->ttl_ms - l->margin_ms;
    if (opts->interval_ms < 0 || opts->retry_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "watch intervals must not be "
                             "negative");
    interval = opts->interval_ms ? opts->interval_ms : l->ttl_ms / 3;
    if (interval < 1)
        interval = 1;
    if (interval >= valid)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the renewal interval (%lld "
                             "ms) must be shorter than the ttl minus the "
                             "safety margin (%lld ms), or the lease would "
                             "lapse between renewals", (long long)interval,
                             (long long)valid);
    retry = opts->retry_ms ? opts->retry_ms : interval / 4;
    if (retry < 10)
        retry = 10;
    if (retry > interval)
        retry = interval;
    if (db->renewer == NULL) {
        rc = renewer_start(db);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    r = db->renewer;
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    e->lease = l;
    strcpy(e->name, l->name);
    memcpy(e->owner, l->owner, sizeof e->owner);
    e->token = l->token;
    e->ttl_ms = l->ttl_ms;
    e->margin_ms = l->margin_ms;
    e->fast = (l->flags & SQLLOCK_LEASE_FAST) != 0;
    e->interval_us = interval * 1000;
    e->retry_us = retry * 1000;
    e->state = SQLLOCK_STATE_HELD;
    e->callback = opts->callback;
    e->ctx = opts->ctx;
    /* The first renewal is due one interval after the lease's last
     * known renewal; an attached lease, whose deadline is unknown, is
     * renewed at once. */
    if (sqllock__lease_deadline(l) == 0)
        e->due_us = sqllock__now_us();
    else
        e->due_us = sqllock__lease_deadline(l) - (valid - interval) * 1000;
    pthread_mutex_lock(&r->mu);
    /* An entry already removed (its last renewal still in flight) does
     * not count: the lease may be released and watched again meanwhile. */
    for (it = r->head; it != NULL; it = it->next)
        if (it->lease == l && !it->removed)
            break;
    if (it != NULL) {
        pthread_mutex_unlock(&r->mu);
        free(e);
        return sqllock__fail(db, SQLLOCK_EINVAL, "lock '%s' is already "
                             "watched", l->name);
    }
    e->next = r->head;
    r->head = e;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->mu);
    return sqllock__ok(db);
}

int sqllock_watch_prepare(sqllock_db *db)
{
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = sqllock__refuse_borrowed(db, "the watchdog")) != SQLLOCK_OK)
        return rc;
    if (db->renewer != NULL)
        return sqllock__ok(db);
    rc = renewer_start(db);
    return rc != SQLLOCK_OK ? rc : sqllock__ok(db);
}

int sqllock_lease_unwatch(sqllock_lease *l)
{
    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->db->renewer != NULL)
        sqllock__renewer_forget(l->db->renewer, l);
    return sqllock__ok(l->db);
}
