/*
 * reaper.c -- deleting expired lease rows (DESIGN P1-P4).
 *
 * A lease row whose holder never released it stays in the table until an
 * acquire of the same name takes it over. Names that are never locked
 * again would keep their rows for ever; the reaper deletes them. Each
 * dialect's LEASE_REAP is one DELETE that judges expiry by the server's
 * clock inside the statement itself (P1), so a lease renewed a moment
 * earlier no longer matches; it deletes at most `batch` rows, and runs
 * again until a statement deletes fewer than that. Where the dialect
 * keeps per-name rows of its token counter (MySQL), TOKEN_TRIM removes
 * them the same way, all but the newest.
 *
 * The reaper thread is libzdb's loop: a timed wait on a condition variable
 * (CLOCK_MONOTONIC, in slices until a deadline of the deadline clock:
 * DESIGN T1), a pass, and again; stop sets a flag under the mutex,
 * signals and joins (P3). It owns its own handle, so it never shares a
 * connection with the application (E3).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define REAP_DEFAULT_INTERVAL_MS 60000
#define REAP_DEFAULT_BATCH 1000
/* A statement that deletes a million rows holds a million row locks;
 * more than that per statement is a mistake, not a tuning. */
#define REAP_BATCH_MAX 1000000
/* The same bound as a lease's ttl: the databases compute
 * now - grace in microseconds, far from overflow (about 285 years). */
#define REAP_GRACE_MAX INT64_C(9000000000000)
#define REAP_INTERVAL_MAX INT64_C(9000000000000)
/* How often a statement that the database rolled back (a deadlock with
 * another reaper, a lock-wait timeout) is run again. */
#define REAP_RETRIES 4

struct sqllock_reaper {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* signalled by stop; CLOCK_MONOTONIC */
    int stop;                   /* under mu */
    sqllock_db *db;             /* used by the thread only */
    int64_t interval_ms;
    int64_t grace_ms;
    int batch;
    sqllock_reaper_stats stats; /* under mu */
};

/* 1 when the thread was asked to stop. */
static int stop_requested(sqllock_reaper *r)
{
    int stop;

    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->mu);
    stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* Statuses after which the database rolled the statement back, so that
 * running it again is safe. */
static int rolled_back(int rc)
{
    return rc == SQLLOCK_EDEADLOCK || rc == SQLLOCK_ESERIALIZATION ||
           rc == SQLLOCK_ELOCKED;
}

/*
 * Runs the delete statement `id` again and again while each one deletes
 * `batch` rows (a full batch means there may be more), adding the rows
 * deleted to *total. A statement the database rolled back is retried a
 * few times after a short random pause -- or, with `give_way`, ends the
 * loop quietly: another reaper doing the same work is in the way and
 * will finish it. A stop request ends the loop between statements.
 */
static int run_batches(sqllock_db *db, sqllock_sql_id id,
                       const sqllock_value *args, int nargs, int batch,
                       int64_t *total, const char *what, int give_way,
                       sqllock_reaper *r)
{
    for (;;) {
        int64_t n;
        int rc, attempt;

        for (attempt = 0;; attempt++) {
            rc = sqllock__run(db, id, args, nargs, what);
            if (rc == SQLLOCK_OK)
                break;
            if (give_way && rolled_back(rc))
                return SQLLOCK_OK;
            if (!rolled_back(rc) || attempt == REAP_RETRIES ||
                stop_requested(r))
                return rc;
            sqllock__sleep_ms(1 + sqllock__rand_upto((int64_t)5 << attempt));
        }
        n = db->drv->affected_rows(db->stmts[id]);
        sqllock__end(db, id);
        if (n > 0)
            *total += n;
        if (n < batch || stop_requested(r))
            return SQLLOCK_OK;
    }
}

static int check_grace_batch(sqllock_db *db, int64_t grace_ms, int batch,
                             const char *fn)
{
    if (grace_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the grace time must not "
                             "be negative (got %lld ms)", fn,
                             (long long)grace_ms);
    if (grace_ms > REAP_GRACE_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the grace time of %lld "
                             "ms is too large", fn, (long long)grace_ms);
    if (batch <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the batch size must be "
                             "positive (got %d)", fn, batch);
    if (batch > REAP_BATCH_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the batch size of %d "
                             "rows is too large; the limit is %d", fn, batch,
                             REAP_BATCH_MAX);
    return SQLLOCK_OK;
}

/* One pass; `r` (may be NULL) is the thread whose stop request ends it
 * early. */
static int reap_pass_body(sqllock_db *db, int64_t grace_ms, int batch,
                          int64_t *deleted, sqllock_reaper *r)
{
    const sqllock_sql *trim;
    sqllock_value args[2];
    int64_t trimmed = 0;
    int rc;

    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "reaping expired leases: "
                             "the handle has no driver (its open failed)");
    if (db->in_txn)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "reaping expired leases: a "
                             "transaction is open on this handle; reap "
                             "outside it (or on a handle of its own)");
    args[0] = sqllock__int(grace_ms);
    args[1] = sqllock__int(batch);
    rc = run_batches(db, SQLLOCK_SQL_LEASE_REAP, args, 2, batch, deleted,
                     "reaping expired leases", 0, r);
    if (rc != SQLLOCK_OK || stop_requested(r))
        return rc;
    /* Housekeeping of the token counter's rows (MySQL). Two reapers
     * trimming at once may deadlock each other; the one rolled back
     * leaves the rest to the other. */
    trim = sqllock__sql_of(db->drv, SQLLOCK_SQL_TOKEN_TRIM);
    if (trim != NULL) {
        args[0] = sqllock__int(batch);
        rc = run_batches(db, SQLLOCK_SQL_TOKEN_TRIM, args, 1, batch, &trimmed,
                         "trimming the token counter's rows", 1, r);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    return sqllock__ok(db);
}

/* The same, its statements and rows counted (metrics.c). */
static int reap_pass(sqllock_db *db, int64_t grace_ms, int batch,
                     int64_t *deleted, sqllock_reaper *r)
{
    int op = sqllock__op_set(db, SQLLOCK__OP_REAP), rc;

    rc = reap_pass_body(db, grace_ms, batch, deleted, r);
    sqllock__op_set(db, op);
    sqllock__m_reaped(db, *deleted);
    return rc;
}

int sqllock_reap(sqllock_db *db, int64_t grace_ms, int batch,
                 int64_t *deleted)
{
    int64_t n = 0;
    int rc;

    if (deleted != NULL)
        *deleted = 0;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    rc = check_grace_batch(db, grace_ms, batch, "sqllock_reap");
    if (rc == SQLLOCK_OK)
        rc = sqllock__refuse_borrowed(db, "sqllock_reap");
    if (rc != SQLLOCK_OK)
        return rc;
    rc = reap_pass(db, grace_ms, batch, &n, NULL);
    if (deleted != NULL)
        *deleted = n;
    return rc;
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */
/* ------------------------------------------------------------------ */

static void *reaper_main(void *arg)
{
    sqllock_reaper *r = arg;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        int64_t n = 0, until;
        int rc;

        pthread_mutex_unlock(&r->mu);
        /* The handle is the thread's own: no lock is needed around it. */
        rc = reap_pass(r->db, r->grace_ms, r->batch, &n, r);
        pthread_mutex_lock(&r->mu);
        r->stats.reaped += n;
        r->stats.passes++;
        r->stats.last_status = rc;
        if (rc != SQLLOCK_OK) {
            r->stats.errors++;
            snprintf(r->stats.last_error, sizeof r->stats.last_error, "%s",
                     sqllock_errmsg(r->db));
        } else {
            r->stats.last_error[0] = '\0';
        }
        /* The next pass an interval from now on the deadline clock, a
         * slice at a time (T1): a host that was suspended for longer
         * reaps soon after the resume. */
        until = sqllock__now_us() + r->interval_ms * 1000;
        while (!r->stop &&
               sqllock__cond_wait_until(&r->cv, &r->mu, until) == 0)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Writes the message into why[why_size] (when given) and returns status. */
static int start_fail(char *why, size_t why_size, int status, const char *msg)
{
    if (why != NULL && why_size > 0)
        snprintf(why, why_size, "%s", msg);
    return status;
}

static void reaper_free(sqllock_reaper *r)
{
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    sqllock_close(r->db);
    free(r);
}

int sqllock_reaper_start(const char *url, const sqllock_reaper_options *opts,
                         sqllock_reaper **out, char *why, size_t why_size)
{
    sqllock_reaper *r;
    const sqllock_sql *reap;
    char msg[SQLLOCK__ERRMSG_MAX + 64];
    int rc;

    if (why != NULL && why_size > 0)
        why[0] = '\0';
    if (out == NULL)
        return start_fail(why, why_size, SQLLOCK_EINVAL, "sqllock_reaper_"
                          "start: the output pointer is NULL");
    *out = NULL;
    if (url == NULL)
        return start_fail(why, why_size, SQLLOCK_EINVAL, "sqllock_reaper_"
                          "start: the database URL is NULL");
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return start_fail(why, why_size, SQLLOCK_ENOMEM, "out of memory");
    r->interval_ms = REAP_DEFAULT_INTERVAL_MS;
    r->batch = REAP_DEFAULT_BATCH;
    if (opts != NULL) {
        const char *bad = NULL;

        if (opts->interval_ms < 0)
            bad = "the interval must not be negative";
        else if (opts->interval_ms > REAP_INTERVAL_MAX)
            bad = "the interval is too large";
        else if (opts->grace_ms < 0)
            bad = "the grace time must not be negative";
        else if (opts->grace_ms > REAP_GRACE_MAX)
            bad = "the grace time is too large";
        else if (opts->batch < 0)
            bad = "the batch size must not be negative (0 means the default)";
        else if (opts->batch > REAP_BATCH_MAX)
            bad = "the batch size is too large (at most 1000000 rows)";
        if (bad != NULL) {
            snprintf(msg, sizeof msg, "sqllock_reaper_start: %s (interval "
                     "%lld ms, grace %lld ms, batch %d)", bad,
                     (long long)opts->interval_ms, (long long)opts->grace_ms,
                     opts->batch);
            free(r);
            return start_fail(why, why_size, SQLLOCK_EINVAL, msg);
        }
        if (opts->interval_ms > 0)
            r->interval_ms = opts->interval_ms;
        r->grace_ms = opts->grace_ms;
        if (opts->batch > 0)
            r->batch = opts->batch;
    }

    /* The connection is opened here, so a bad URL or an unreachable
     * database is reported to the caller, not counted by the thread. */
    rc = sqllock_open(url, opts != NULL ? opts->db_options : NULL, &r->db);
    if (rc != SQLLOCK_OK) {
        snprintf(msg, sizeof msg, "%s", r->db != NULL ? sqllock_errmsg(r->db)
                                                      : sqllock_strerror(rc));
        sqllock_close(r->db);
        free(r);
        return start_fail(why, why_size, rc, msg);
    }
    reap = sqllock__sql_of(r->db->drv, SQLLOCK_SQL_LEASE_REAP);
    if (reap == NULL) {
        snprintf(msg, sizeof msg, "sqllock_reaper_start: the %s driver has "
                 "no statement for reaping expired leases",
                 r->db->drv->name);
        sqllock_close(r->db);
        free(r);
        return start_fail(why, why_size, SQLLOCK_EUNSUPPORTED, msg);
    }

    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        sqllock_close(r->db);
        free(r);
        return start_fail(why, why_size, SQLLOCK_ESYS, "sqllock_reaper_start: "
                          "pthread_mutex_init failed");
    }
    /* A monotonic clock for the timed wait: a wall-clock step (NTP, an
     * operator) must neither stall the reaper nor make it spin. */
    rc = sqllock__cond_init(&r->cv);
    if (rc != 0) {
        pthread_mutex_destroy(&r->mu);
        sqllock_close(r->db);
        free(r);
        return start_fail(why, why_size, SQLLOCK_ESYS, "sqllock_reaper_start: "
                          "cannot make a monotonic condition variable");
    }
    rc = pthread_create(&r->thread, NULL, reaper_main, r);
    if (rc != 0) {
        snprintf(msg, sizeof msg, "sqllock_reaper_start: pthread_create: %s",
                 strerror(rc));
        reaper_free(r);
        return start_fail(why, why_size, SQLLOCK_ESYS, msg);
    }
    *out = r;
    return SQLLOCK_OK;
}

int sqllock_reaper_stats_get(sqllock_reaper *r, sqllock_reaper_stats *out)
{
    if (r == NULL || out == NULL) {
        if (out != NULL)
            memset(out, 0, sizeof *out);
        return SQLLOCK_EINVAL;
    }
    pthread_mutex_lock(&r->mu);
    *out = r->stats;
    pthread_mutex_unlock(&r->mu);
    return SQLLOCK_OK;
}

void sqllock_reaper_stop(sqllock_reaper *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    reaper_free(r);
}
