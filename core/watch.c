/*
 * watch.c -- the watchdog: automatic renewal of held leases (DESIGN L6, L7).
 *
 * One renewer per database handle: a thread with its own connection to the
 * handle's URL (never the caller's, which belongs to the caller's thread,
 * E3), started by the first sqllock_lease_watch() and stopped by
 * sqllock_close(). It keeps its watched leases in a binary heap ordered
 * by the time each one next needs attention (its renewal due, or while
 * uncertain its local deadline if that comes first), and sleeps on a
 * condition variable until the earliest (or until it is told of a new
 * lease or asked to stop). Watch, unwatch and finding the next lease cost
 * O(log n), so a handle can watch 100 000 leases.
 *
 * Batches (LEASE_RENEW_MANY). When the earliest lease
 * is due, the renewer takes with it every lease whose renewal falls due
 * within that lease's own safety margin from now (a renewal early by less
 * than the margin changes nothing the holder relies on), up to
 * SQLLOCK_RENEW_BATCH_MAX, and renews them in one statement per
 * durability (durable, fast), which the server judges by its own clock
 * and which matches every lease by name, owner and token. The statement
 * says which leases it renewed (RETURNING, or LEASE_RENEWED_MANY on the
 * same connection); each lease is then handled alone, exactly as a single
 * renewal would have been: renewed -> deadline moved from the time the
 * batch's statement was SENT; not renewed -> LOST; the statement failed
 * (lost connection, busy database) -> every lease of that statement
 * UNCERTAIN, retried. A driver without the batch statements gets one
 * LEASE_RENEW per lease of the batch, each timed from its own send.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "renewer.h"

/* ---- the heap ---- */

static void heap_set(struct sqllock__renewer *r, size_t i, watch_entry *e)
{
    r->heap[i] = e;
    e->pos = i;
}

static void sift_up(struct sqllock__renewer *r, size_t i)
{
    watch_entry *e = r->heap[i];

    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (r->heap[up]->key_us <= e->key_us)
            break;
        heap_set(r, i, r->heap[up]);
        i = up;
    }
    heap_set(r, i, e);
}

static void sift_down(struct sqllock__renewer *r, size_t i)
{
    watch_entry *e = r->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= r->n)
            break;
        if (c + 1 < r->n && r->heap[c + 1]->key_us < r->heap[c]->key_us)
            c++;
        if (e->key_us <= r->heap[c]->key_us)
            break;
        heap_set(r, i, r->heap[c]);
        i = c;
    }
    heap_set(r, i, e);
}

/* Queues `e` at its key; the heap's room was made when it was watched. */
static void heap_push(struct sqllock__renewer *r, watch_entry *e)
{
    heap_set(r, r->n++, e);
    sift_up(r, r->n - 1);
}

static void heap_remove(struct sqllock__renewer *r, watch_entry *e)
{
    size_t i = e->pos;

    if (i == NOT_QUEUED)
        return;
    e->pos = NOT_QUEUED;
    r->n--;
    if (i == r->n)
        return;
    heap_set(r, i, r->heap[r->n]);
    if (i > 0 && r->heap[i]->key_us < r->heap[(i - 1) / 2]->key_us)
        sift_up(r, i);
    else
        sift_down(r, i);
}

/* The time `e` next needs the renewer: its renewal due or, while it is
 * uncertain, its local deadline if that comes first (to report LOST on
 * time). */
static void set_key(watch_entry *e)
{
    int64_t deadline = sqllock__lease_deadline(e->lease);

    e->key_us = e->due_us;
    if (e->state == SQLLOCK_STATE_UNCERTAIN && deadline != 0 &&
        deadline < e->key_us)
        e->key_us = deadline;
}

/* ---- reporting ---- */

/* The log hook's event of a state the callback is told of. */
static void log_state(watch_entry *e, int state, int status,
                      const char *msg)
{
    int64_t left = sqllock__lease_deadline(e->lease) - sqllock__now_us();

    if (left < 0)
        left = 0;
    if (state == SQLLOCK_STATE_HELD)
        sqllock__log(SQLLOCK_EVENT_RENEWED_LATE, SQLLOCK_LOG_WARNING,
                     e->lease->db, e->name, e->token, status, left / 1000,
                     "'%s' renewed late, with %lld ms of it left: renewing "
                     "works again", e->name, (long long)(left / 1000));
    else if (state == SQLLOCK_STATE_UNCERTAIN)
        sqllock__log(SQLLOCK_EVENT_UNCERTAIN, SQLLOCK_LOG_WARNING,
                     e->lease->db, e->name, e->token, status, left / 1000,
                     "renewing '%s' failed (%s; retried while %lld ms of it "
                     "last): %s", e->name, sqllock_errname(status),
                     (long long)(left / 1000), msg);
    else if (state == SQLLOCK_STATE_LOST)
        sqllock__log(SQLLOCK_EVENT_LOST, SQLLOCK_LOG_ERROR, e->lease->db,
                     e->name, e->token, status, 0, "'%s' (token %lld) is "
                     "lost: %s", e->name, (long long)e->token, msg);
}

/* Calls the callback, and the log hook, with the mutex released and the
 * lease marked busy. */
static void report(struct sqllock__renewer *r, watch_entry *e, int state,
                   int status, const char *msg)
{
    int level = state == SQLLOCK_STATE_LOST ? SQLLOCK_LOG_ERROR
                                            : SQLLOCK_LOG_WARNING;

    e->state = state;
    if (e->callback == NULL && !sqllock__log_on(level))
        return;
    pthread_mutex_unlock(&r->mu);
    log_state(e, state, status, msg);
    if (e->callback != NULL)
        e->callback(e->ctx, e->lease, state, status, msg);
    pthread_mutex_lock(&r->mu);
}

/* `e` is LOST: it leaves the watch, the caller is told, the entry goes.
 * The loss's cause, for the metrics: a row found not ours, or a local
 * deadline that passed while renewals failed (the connection) or with
 * none failed (a paused or starved process). */
static void lose(struct sqllock__renewer *r, watch_entry *e, int status,
                 const char *msg)
{
    sqllock__m_hold_end(e->lease, status == SQLLOCK_LOST
                        ? SQLLOCK__ML_TAKEN_OVER
                        : e->state == SQLLOCK_STATE_UNCERTAIN
                        ? SQLLOCK__ML_CONNECTION : SQLLOCK__ML_EXPIRED, NULL);
    sqllock__lease_set_state(e->lease, SQLLOCK_STATE_LOST);
    if (e->lease->watch == e)
        e->lease->watch = NULL;
    report(r, e, SQLLOCK_STATE_LOST, status, msg);
    free(e);
}

/* The outcome of `e`'s renewal in the batch, entered and left with the
 * mutex held, as a single renewal's used to be. */
static void settle(struct sqllock__renewer *r, watch_entry *e,
                   const char *msg)
{
    int64_t now;

    e->inflight = 0;
    r->ninflight--;
    if (e->removed) {
        /* Unwatched (released, freed) while the statement ran: the
         * lease is no longer ours to touch. */
        free(e);
        return;
    }
    r->busy = e->lease;
    now = sqllock__now_us();
    sqllock__m_renewal(e->lease->db, e->rc == SQLLOCK_OK && e->renewed &&
                       (sqllock__lease_deadline(e->lease) == 0 ||
                        now < sqllock__lease_deadline(e->lease))
                       ? (e->state == SQLLOCK_STATE_HELD
                          ? SQLLOCK__MR_ON_TIME : SQLLOCK__MR_LATE)
                       : SQLLOCK__MR_FAILED);
    if (e->rc == SQLLOCK_OK && !e->renewed) {
        lose(r, e, SQLLOCK_LOST, "the lease was taken over by another "
             "owner, or removed after it expired");
    } else if (now >= sqllock__lease_deadline(e->lease)) {
        /* An answer after the local deadline, even a success, comes too
         * late: the holder has already had to stop trusting the lease
         * (L6), and must be told so rather than find it held again. */
        lose(r, e, SQLLOCK_TIMEOUT, e->rc == SQLLOCK_OK
             ? "the renewal answered only after the lease's local "
               "deadline had passed" : msg);
    } else {
        if (e->rc == SQLLOCK_OK) {
            sqllock__lease_extend(e->lease, e->sent_us +
                                  (e->ttl_ms - e->margin_ms) * 1000);
            sqllock__lease_set_state(e->lease, SQLLOCK_STATE_HELD);
            e->due_us = now + e->interval_us;
            if (e->state != SQLLOCK_STATE_HELD)
                report(r, e, SQLLOCK_STATE_HELD, SQLLOCK_OK, "renewed");
        } else {
            sqllock__lease_set_state(e->lease, SQLLOCK_STATE_UNCERTAIN);
            e->due_us = now + e->retry_us;
            if (e->state != SQLLOCK_STATE_UNCERTAIN)
                report(r, e, SQLLOCK_STATE_UNCERTAIN, e->rc, msg);
        }
        if (e->removed) {
            free(e);            /* its callback unwatched it */
        } else {
            set_key(e);
            heap_push(r, e);
        }
    }
    r->busy = NULL;
    pthread_cond_broadcast(&r->idle);
}

/* Renews the batch taken from the heap, entered and left with the mutex
 * held. */
static void renew_batch(struct sqllock__renewer *r)
{
    char msg[2][SQLLOCK__ERRMSG_MAX];
    watch_entry *send[SQLLOCK_RENEW_BATCH_MAX];
    watch_entry *e;
    size_t i, n = 0, nfast = 0;
    int64_t deadline, now = sqllock__now_us();

    for (i = 0; i < r->nbatch; i++) {
        e = r->batch[i];
        if (e->removed) {
            r->ninflight--;
            free(e);
            continue;
        }
        deadline = sqllock__lease_deadline(e->lease);
        if (deadline != 0 && now >= deadline) {
            e->inflight = 0;
            r->ninflight--;
            /* The local deadline passed without a successful renewal
             * (a renewal that hung, or failures until now): L6/L7. */
            r->busy = e->lease;
            lose(r, e, SQLLOCK_TIMEOUT, "the lease's local deadline passed "
                 "before a renewal succeeded");
            r->busy = NULL;
            pthread_cond_broadcast(&r->idle);
            continue;
        }
        /* Durable leases first, fast ones from the end. */
        if (e->fast)
            send[SQLLOCK_RENEW_BATCH_MAX - ++nfast] = e;
        else
            send[n++] = e;
    }
    r->nbatch = 0;
    pthread_mutex_unlock(&r->mu);
    msg[0][0] = msg[1][0] = '\0';
    sqllock__watch_renew_group(r, send, n, 0, msg[0]);
    sqllock__watch_renew_group(r, send + SQLLOCK_RENEW_BATCH_MAX - nfast, nfast, 1, msg[1]);
    pthread_mutex_lock(&r->mu);
    for (i = 0; i < n; i++)
        settle(r, send[i], msg[0]);
    for (i = SQLLOCK_RENEW_BATCH_MAX - nfast; i < SQLLOCK_RENEW_BATCH_MAX; i++)
        settle(r, send[i], msg[1]);
}

/* Takes from the heap every lease whose renewal may be sent now: due, or
 * due within its own safety margin (renewed that much early so that
 * leases due close together share a statement), at most
 * SQLLOCK_RENEW_BATCH_MAX. */
static void take_batch(struct sqllock__renewer *r, int64_t now)
{
    watch_entry *e;

    while (r->n > 0 && r->nbatch < SQLLOCK_RENEW_BATCH_MAX) {
        e = r->heap[0];
        if (e->key_us - e->margin_ms * 1000 > now)
            break;
        heap_remove(r, e);
        e->inflight = 1;
        r->ninflight++;
        r->batch[r->nbatch++] = e;
    }
}

static void *renewer_main(void *arg)
{
    struct sqllock__renewer *r = arg;
    int64_t now;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        if (r->n == 0) {
            pthread_cond_wait(&r->wake, &r->mu);
            continue;
        }
        now = sqllock__now_us();
        if (r->heap[0]->key_us > now) {
            /* A slice at most (T1): a local deadline that passed while
             * the host was suspended is seen soon after the resume. */
            sqllock__cond_wait_until(&r->wake, &r->mu, r->heap[0]->key_us);
            continue;
        }
        take_batch(r, now);
        renew_batch(r);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void renewer_free(struct sqllock__renewer *r);
static void renewer_forget(struct sqllock__renewer *r, sqllock_lease *lease);
static int renewer_retune(struct sqllock__renewer *r, sqllock_lease *lease,
                          int64_t ttl_ms, int64_t margin_ms);

/* What the handle and its leases call (sqllock_close(), the free of a
 * lease, sqllock_lease_renew_ttl()): set on the handle with its renewer. */
static const sqllock__renewer_ops renewer_ops = {
    renewer_free,
    renewer_forget,
    renewer_retune
};

static int renewer_start(sqllock_db *db)
{
    struct sqllock__renewer *r;
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
    sqllock__op_set(r->db, SQLLOCK__OP_RENEW);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->idle, NULL);
    sqllock__cond_init(&r->wake);
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
    db->renewer_ops = &renewer_ops;
    return SQLLOCK_OK;
}

static void renewer_free(struct sqllock__renewer *r)
{
    size_t i;

    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    /* The renewer stops between batches: every entry left is queued, and
     * its lease (which unwatch would have taken out) still exists. */
    for (i = 0; i < r->n; i++) {
        if (r->heap[i]->lease->watch == r->heap[i])
            r->heap[i]->lease->watch = NULL;
        free(r->heap[i]);
    }
    free(r->heap);
    free(r->json);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->idle);
    pthread_mutex_destroy(&r->mu);
    sqllock_close(r->db);
    free(r);
}

static void renewer_forget(struct sqllock__renewer *r, sqllock_lease *lease)
{
    watch_entry *e;

    pthread_mutex_lock(&r->mu);
    /* A callback that unwatches its own lease must not wait for itself:
     * the renewer drops the entry when the callback returns. */
    if (pthread_equal(pthread_self(), r->thread) && r->busy == lease) {
        e = lease->watch;
        if (e != NULL) {
            e->removed = 1;
            lease->watch = NULL;
        }
        pthread_mutex_unlock(&r->mu);
        return;
    }
    while (r->busy == lease)
        pthread_cond_wait(&r->idle, &r->mu);
    e = lease->watch;
    if (e != NULL) {
        lease->watch = NULL;
        if (e->inflight) {
            e->removed = 1;     /* in the batch in flight: the renewer
                                   drops it when the batch returns */
        } else {
            heap_remove(r, e);
            free(e);
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* The renewal interval and retry of a watch, in ms, for a lease of
 * ttl - margin = valid: the given ones, else ttl / 3 and interval / 4
 * (the retry within 10 ms .. interval). 0 when the interval is not
 * shorter than `valid` (the lease would lapse between renewals). */
static int64_t watch_interval(int64_t given, int64_t ttl_ms, int64_t valid)
{
    int64_t interval = given ? given : ttl_ms / 3;

    if (interval < 1)
        interval = 1;
    return interval < valid ? interval : 0;
}

static int64_t watch_retry(int64_t given, int64_t interval)
{
    int64_t retry = given ? given : interval / 4;

    if (retry < 10)
        retry = 10;
    return retry > interval ? interval : retry;
}

static int renewer_retune(struct sqllock__renewer *r, sqllock_lease *lease,
                          int64_t ttl_ms, int64_t margin_ms)
{
    watch_entry *e;
    int64_t interval, due;

    pthread_mutex_lock(&r->mu);
    if (pthread_equal(pthread_self(), r->thread)) {
        pthread_mutex_unlock(&r->mu);
        return sqllock__fail(lease->db, SQLLOCK_EMISUSE, "lock '%s': a new "
                             "ttl cannot be set from a watch callback",
                             lease->name);
    }
    while ((e = lease->watch) != NULL && (e->inflight || r->busy == lease))
        pthread_cond_wait(&r->idle, &r->mu);
    if (e == NULL) {
        pthread_mutex_unlock(&r->mu);
        return SQLLOCK_OK;
    }
    interval = watch_interval(e->interval_given_ms, ttl_ms, ttl_ms - margin_ms);
    if (interval == 0) {
        pthread_mutex_unlock(&r->mu);
        return sqllock__fail(lease->db, SQLLOCK_EINVAL, "lock '%s': the "
                             "renewal interval (%lld ms) must be shorter "
                             "than the new ttl minus the safety margin (%lld "
                             "ms); nothing was changed", lease->name,
                             (long long)e->interval_given_ms,
                             (long long)(ttl_ms - margin_ms));
    }
    e->ttl_ms = ttl_ms;
    e->margin_ms = margin_ms;
    e->interval_us = interval * 1000;
    e->retry_us = watch_retry(e->retry_given_ms, interval) * 1000;
    /* The caller renews now; the renewer's next is an interval later at
     * most. */
    due = sqllock__now_us() + e->interval_us;
    if (due < e->due_us) {
        heap_remove(r, e);
        e->due_us = due;
        set_key(e);
        heap_push(r, e);
    }
    pthread_mutex_unlock(&r->mu);
    return SQLLOCK_OK;
}

int sqllock_lease_watch(sqllock_lease *l, const sqllock_watch_options *opts)
{
    static const sqllock_watch_options defaults = SQLLOCK_WATCH_OPTIONS_INIT;
    struct sqllock__renewer *r;
    sqllock_db *db;
    watch_entry *e;
    int64_t interval, retry, valid;
    size_t len;
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
    interval = watch_interval(opts->interval_ms, l->ttl_ms, valid);
    if (interval == 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the renewal interval (%lld "
                             "ms) must be shorter than the ttl minus the "
                             "safety margin (%lld ms), or the lease would "
                             "lapse between renewals",
                             (long long)(opts->interval_ms ? opts->interval_ms
                                                           : l->ttl_ms / 3),
                             (long long)valid);
    retry = watch_retry(opts->retry_ms, interval);
    if (db->renewer == NULL) {
        rc = renewer_start(db);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    r = db->renewer;
    len = strlen(l->name);
    e = calloc(1, sizeof *e + len + 1);
    if (e == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    e->lease = l;
    memcpy(e->name, l->name, len + 1);
    e->name_len = len;
    memcpy(e->owner, l->owner, sizeof e->owner);
    e->token = l->token;
    e->ttl_ms = l->ttl_ms;
    e->margin_ms = l->margin_ms;
    e->fast = (l->flags & SQLLOCK_LEASE_FAST) != 0;
    e->interval_us = interval * 1000;
    e->retry_us = retry * 1000;
    e->interval_given_ms = opts->interval_ms;
    e->retry_given_ms = opts->retry_ms;
    e->state = SQLLOCK_STATE_HELD;
    e->pos = NOT_QUEUED;
    e->callback = opts->callback;
    e->ctx = opts->ctx;
    /* The first renewal is due one interval after the lease's last
     * known renewal; an attached lease, whose deadline is unknown, is
     * renewed at once. */
    if (sqllock__lease_deadline(l) == 0)
        e->due_us = sqllock__now_us();
    else
        e->due_us = sqllock__lease_deadline(l) - (valid - interval) * 1000;
    set_key(e);
    pthread_mutex_lock(&r->mu);
    /* An entry already removed (its last renewal still in flight) is no
     * longer the lease's: it may be released and watched again meanwhile. */
    if (l->watch != NULL) {
        pthread_mutex_unlock(&r->mu);
        free(e);
        return sqllock__fail(db, SQLLOCK_EINVAL, "lock '%s' is already "
                             "watched", l->name);
    }
    if (r->n + r->ninflight >= r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        watch_entry **h = realloc(r->heap, cap * sizeof *h);
        if (h == NULL) {
            pthread_mutex_unlock(&r->mu);
            free(e);
            return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
        }
        r->heap = h;
        r->cap = cap;
    }
    l->watch = e;
    heap_push(r, e);
    /* Wake the renewer only when this lease is now the first due. */
    if (e->pos == 0)
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
        renewer_forget(l->db->renewer, l);
    return sqllock__ok(l->db);
}
