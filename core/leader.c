/*
 * leader.c -- leader election (DESIGN M4): at most one leader acts at a
 * time, its actions fenced by its token; a leader stops acting at its
 * local deadline; a hand-over wakes the next candidate at once.
 *
 * The leadership is an ordinary lease on the derived row NAME 0x1f
 * "leader" (sqllock__derived_name()), so every rule of leases holds for
 * it (L1-L9) and nothing new is asked of the drivers: the term is the
 * lease's fencing token, the leader's identity its holder text.
 *
 * A candidate is a campaign thread that owns one database handle (and,
 * through the watchdog, the renewer's connection of that handle). Its
 * loop: campaign -- try, and between tries pause with the wake-ups of a
 * waiting acquire (lease_wait.c: LISTEN/NOTIFY, the companion session
 * lock, in-process) while reading the row to report a new leader --
 * then lead -- watch the lease, and sleep on the candidate's condition
 * variable until the watch callback reports a state change, the local
 * deadline passes (the thread wakes at it by itself, so a renewal that
 * hangs cannot keep a leader acting past it), or a resign or stop comes
 * -- then note the term in the election's term record (see term_read())
 * and release, which hands over. After a resign the candidate stays out
 * of the campaign until a later term has been granted (seen on the row,
 * or found in the term record when the row is free: a term shorter than
 * its pauses leaves no other trace) or resign_hold_ms has passed.
 *
 * `acting` is the one word other threads read: set after the grant,
 * cleared before anything else when the leadership ends (and at once by
 * a resign), and is_leader() also checks the lease's deadline itself.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "candidate.h"

static int fail_why(char *why, size_t size, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int fail_why(char *why, size_t size, int status, const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && size > 0) {
        va_start(ap, fmt);
        sqllock__vformat(why, size, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* The checks of an election's name, without a handle: NULL, empty, too
 * long, not UTF-8 or with control characters. NULL when fine, else the
 * reason. */
static const char *bad_name(const char *name)
{
    size_t len;

    if (name == NULL)
        return "the election name is NULL";
    len = strlen(name);
    if (len == 0)
        return "the election name is empty";
    if (len > SQLLOCK_PRIMITIVE_NAME_MAX)
        return "the election name is longer than SQLLOCK_PRIMITIVE_NAME_MAX "
               "(200) bytes";
    if (!sqllock__name_ok(name, len))
        return "the election name is not valid UTF-8 or has control "
               "characters";
    return NULL;
}

/* ---- the public calls ---- */

int sqllock_leader_start(const char *url, const char *name,
                         const sqllock_leader_options *opts,
                         sqllock_leader **out, char *why, size_t why_size)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_leader *L;
    const char *bad;
    int64_t valid;
    int rc, err;

    if (why != NULL && why_size > 0)
        why[0] = '\0';
    if (out == NULL)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the output pointer is NULL");
    *out = NULL;
    if (url == NULL)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the database URL is NULL");
    if ((bad = bad_name(name)) != NULL)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: %s", bad);
    if (opts == NULL)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: options are required: ttl_ms must be set");
    if (opts->ttl_ms <= 0)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the ttl must be positive (got %lld ms)",
                        (long long)opts->ttl_ms);
    if (opts->safety_margin_ms < 0 || opts->renew_interval_ms < 0 ||
        opts->resign_hold_ms < 0)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the margin, renewal interval and resign "
                        "hold must not be negative");
    if (opts->safety_margin_ms >= opts->ttl_ms)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the safety margin (%lld ms) must be smaller "
                        "than the ttl (%lld ms)",
                        (long long)opts->safety_margin_ms,
                        (long long)opts->ttl_ms);
    valid = opts->ttl_ms - (opts->safety_margin_ms ? opts->safety_margin_ms
                                                   : opts->ttl_ms / 10);
    if (opts->renew_interval_ms > 0 && opts->renew_interval_ms >= valid)
        return fail_why(why, why_size, SQLLOCK_EINVAL, "sqllock_leader_"
                        "start: the renewal interval (%lld ms) must be "
                        "shorter than the ttl minus the safety margin "
                        "(%lld ms)", (long long)opts->renew_interval_ms,
                        (long long)valid);
    L = calloc(1, sizeof *L);
    if (L == NULL)
        return fail_why(why, why_size, SQLLOCK_ENOMEM, "out of memory");
    L->opts = *opts;
    L->opts.holder = NULL;
    L->opts.db_options = NULL;
    L->interval_ms = opts->renew_interval_ms;
    L->resign_hold_ms = opts->resign_hold_ms ? opts->resign_hold_ms
                                             : opts->ttl_ms;
    snprintf(L->name, sizeof L->name, "%s", name);
    atomic_init(&L->acting, 0);
    atomic_init(&L->term, 0);
    rc = sqllock_open(url, opts->db_options, &L->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock__derived_name(L->db, L->row, name, LEADER_TAG,
                                   "election name");
    lo.ttl_ms = opts->ttl_ms;
    lo.safety_margin_ms = opts->safety_margin_ms;
    lo.holder = opts->holder;
    lo.backoff_max_ms = opts->ttl_ms / 8;
    if (lo.backoff_max_ms > LEADER_BACKOFF_MAX_MS)
        lo.backoff_max_ms = LEADER_BACKOFF_MAX_MS;
    if (lo.backoff_max_ms < 5)
        lo.backoff_max_ms = 5;
    if (rc == SQLLOCK_OK)
        rc = sqllock__lease_new_derived(L->db, L->row, &lo, &L->lease);
    /* N1: NAME is an election, not a plain lease or another primitive
     * (the marker stays: checked once, here, so that a name in use
     * otherwise is reported by the start). */
    if (rc == SQLLOCK_OK)
        rc = sqllock__kind_mark(L->db, name, SQLLOCK__KIND_LEADER);
    /* The renewer's connection now, so that a grant does not spend its
     * ttl on a connect. */
    if (rc == SQLLOCK_OK)
        rc = sqllock_watch_prepare(L->db);
    if (rc != SQLLOCK_OK) {
        fail_why(why, why_size, rc, "sqllock_leader_start: %s",
                 L->db != NULL ? sqllock_errmsg(L->db) : sqllock_strerror(rc));
        sqllock_lease_free(L->lease);
        sqllock_close(L->db);
        free(L);
        return rc;
    }
    memcpy(L->holder, L->lease->holder, sizeof L->holder);
    pthread_mutex_init(&L->mu, NULL);
    sqllock__cond_init(&L->cv);
    err = pthread_create(&L->thread, NULL, sqllock__leader_main, L);
    if (err != 0) {
        pthread_cond_destroy(&L->cv);
        pthread_mutex_destroy(&L->mu);
        sqllock_lease_free(L->lease);
        sqllock_close(L->db);
        free(L);
        return fail_why(why, why_size, SQLLOCK_ESYS, "sqllock_leader_start: "
                        "cannot start the campaign thread: %s",
                        strerror(err));
    }
    sqllock__m_leader_add(L);       /* the sqllock_leader gauge */
    *out = L;
    return SQLLOCK_OK;
}

int sqllock_leader_is_leader(const sqllock_leader *L)
{
    if (L == NULL || !atomic_load(&L->acting))
        return 0;
    /* The deadline itself, not only what the campaign thread has seen. */
    return sqllock_lease_remaining_ms(L->lease) > 0;
}

int64_t sqllock_leader_token(const sqllock_leader *L)
{
    return sqllock_leader_is_leader(L) ? atomic_load(&L->term) : 0;
}

int64_t sqllock_leader_remaining_ms(const sqllock_leader *L)
{
    if (L == NULL || !atomic_load(&L->acting))
        return 0;
    return sqllock_lease_remaining_ms(L->lease);
}

/*
 * Health, for a readiness probe. OK exactly when is_leader() is 1; else
 * "stalled" while the campaign thread is still inside lead() -- it has
 * neither handed the term over (resign, stop) nor given the row up --
 * though the lease may no longer be acted on (remaining_ms() is 0, as
 * is_leader() reads it: its local deadline is less than a millisecond
 * away or past, or a renewal found it taken): a database that stopped
 * answering keeps it there until the loss is reported and the release's
 * statements end. The deadline is read under the mutex, after
 * `leading`: lead() clears `leading` under it only after the release,
 * which zeroes the deadline, so a zero deadline there means the term is
 * over. The age is rounded down while healthy and up when stalled, so
 * that it is below ttl - margin exactly when the status is OK.
 */
int sqllock_leader_health(const sqllock_leader *L, int64_t *since_renewal_ms)
{
    sqllock_leader *M = (sqllock_leader *)L;  /* the mutex only */
    int64_t deadline, valid_us, age_us;
    int stalled;

    if (since_renewal_ms != NULL)
        *since_renewal_ms = -1;
    if (L == NULL)
        return SQLLOCK_EINVAL;
    valid_us = (L->lease->ttl_ms - L->lease->margin_ms) * 1000;
    if (sqllock_leader_is_leader(L)) {
        deadline = sqllock__lease_deadline(L->lease);
        age_us = sqllock__now_us() - (deadline - valid_us);
        if (since_renewal_ms != NULL)
            *since_renewal_ms = age_us > 0 ? age_us / 1000 : 0;
        return SQLLOCK_OK;
    }
    pthread_mutex_lock(&M->mu);
    deadline = sqllock__lease_deadline(L->lease);
    stalled = L->leading && !L->resign_req && !L->stop && deadline != 0 &&
              sqllock_lease_remaining_ms(L->lease) == 0;
    pthread_mutex_unlock(&M->mu);
    if (!stalled)
        return SQLLOCK_BUSY;
    age_us = sqllock__now_us() - (deadline - valid_us);
    if (since_renewal_ms != NULL)
        *since_renewal_ms = age_us > 0 ? (age_us + 999) / 1000 : 0;
    return SQLLOCK_TIMEOUT;
}

const char *sqllock_leader_name(const sqllock_leader *L)
{
    return L != NULL ? L->name : "";
}

int sqllock_leader_resign(sqllock_leader *L)
{
    uint64_t done;
    int rc;

    if (L == NULL)
        return SQLLOCK_EINVAL;
    pthread_mutex_lock(&L->mu);
    if (!L->leading || L->stop) {
        pthread_mutex_unlock(&L->mu);
        return SQLLOCK_ENOTHELD;
    }
    atomic_store(&L->acting, 0);       /* stop acting now */
    L->resign_req = 1;
    pthread_cond_broadcast(&L->cv);
    if (pthread_equal(pthread_self(), L->thread)) {
        pthread_mutex_unlock(&L->mu);  /* from a callback: after it */
        return SQLLOCK_OK;
    }
    done = L->resign_done;
    while (L->resign_done == done && !L->stop)
        pthread_cond_wait(&L->cv, &L->mu);
    rc = L->resign_done != done ? L->resign_rc : SQLLOCK_OK;
    pthread_mutex_unlock(&L->mu);
    return rc;
}

void sqllock_leader_stop(sqllock_leader *L)
{
    if (L == NULL || pthread_equal(pthread_self(), L->thread))
        return;
    sqllock__m_leader_remove(L);
    pthread_mutex_lock(&L->mu);
    L->stop = 1;
    atomic_store(&L->acting, 0);
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    /* A campaign asleep on an in-process wake-up ends its pause now. */
    if (L->lease != NULL)
        sqllock__wake_post(L->lease->wake_key);
    pthread_join(L->thread, NULL);
    sqllock_lease_free(L->lease);
    sqllock_close(L->db);
    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
    free(L);
}

void sqllock_leader_error(sqllock_leader *L, char *buf, size_t size)
{
    if (buf == NULL || size == 0)
        return;
    buf[0] = '\0';
    if (L == NULL)
        return;
    pthread_mutex_lock(&L->mu);
    snprintf(buf, size, "%s", L->error);
    pthread_mutex_unlock(&L->mu);
}

int sqllock_leader_get(sqllock_db *db, const char *name,
                       sqllock_leader_info *out)
{
    char row[SQLLOCK__DERIVED_MAX + 1], buf[SQLLOCK__LEASE_GET_BUF];
    sqllock_lease_info info;
    int found = 0, rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_leader_get: the "
                             "output pointer is NULL");
    memset(out, 0, sizeof *out);
    rc = sqllock__derived_name(db, row, name, LEADER_TAG, "election name");
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__lease_get(db, row, &info, buf, &found,
                            "reading the election's leader");
    if (rc != SQLLOCK_OK)
        return rc;
    if (!found || info.remaining_ms <= 0)
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "election '%s' has no "
                             "leader", name);
    snprintf(out->holder, sizeof out->holder, "%s", info.holder);
    out->token = info.token;
    out->remaining_ms = info.remaining_ms;
    return sqllock__ok(db);
}

int sqllock_leader_lease_new(sqllock_db *db, const char *name,
                             const sqllock_lease_options *opts,
                             sqllock_lease **out)
{
    char row[SQLLOCK__DERIVED_MAX + 1];
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    rc = sqllock__derived_name(db, row, name, LEADER_TAG, "election name");
    if (rc == SQLLOCK_OK)
        rc = sqllock__lease_new_derived(db, row, opts, out);
    /* Its acquire marks NAME as an election first (core/kind.c). */
    if (rc == SQLLOCK_OK)
        (*out)->kind = SQLLOCK__KIND_LEADER;
    return rc;
}
