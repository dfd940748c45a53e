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

#define LEADER_TAG "leader"
/* The longest pause between two tries of a campaign: bounds the extra
 * time after a crashed leader's expiry, and the time stop() waits. */
#define LEADER_BACKOFF_MAX_MS 250
/* How many times a new leader reads and writes the election's term
 * record before it gives up on a conflict (a write of another leader's
 * came between: rare, since one leader is granted at a time). */
#define LEADER_NOTE_TRIES 4

struct sqllock_leader {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* CLOCK_MONOTONIC: notes, resign, stop */
    sqllock_db *db;                /* the campaign thread's */
    sqllock_lease *lease;          /* the leadership lease, on db */
    sqllock_leader_options opts;   /* callbacks and times */
    int64_t interval_ms;
    int64_t resign_hold_ms;
    _Atomic int acting;            /* leader, as far as others may see */
    _Atomic int64_t term;          /* its token while acting */
    /* Under mu. */
    int stop;
    int leading;                   /* in lead() */
    int resign_req;
    uint64_t resign_done;          /* counts resigns carried out */
    int resign_rc;
    int note;                      /* the watch callback reported */
    int note_status;
    char note_msg[256];
    char error[SQLLOCK__ERRMSG_MAX];
    /* The campaign thread's own. */
    int64_t seen_token;            /* last leader seen */
    int64_t hold_until_us;         /* after a resign: stay out till then */
    int64_t hold_token;            /* ... or until a term after this one
                                      is seen or noted */
    char name[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    char row[SQLLOCK__DERIVED_MAX + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
};

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

/* ---- small pieces of the campaign thread ---- */

static void set_error(sqllock_leader *L, const char *msg)
{
    size_t n = strnlen(msg, sizeof L->error - 1);

    pthread_mutex_lock(&L->mu);
    memcpy(L->error, msg, n);
    L->error[n] = '\0';
    pthread_mutex_unlock(&L->mu);
}

static int stopping(sqllock_leader *L)
{
    int s;

    pthread_mutex_lock(&L->mu);
    s = L->stop;
    pthread_mutex_unlock(&L->mu);
    return s;
}

/* Sleeps up to `ms`, or until stop; returns L->stop. */
static int nap(sqllock_leader *L, int64_t ms)
{
    int64_t until = sqllock__now_us() + ms * 1000;
    int s;

    pthread_mutex_lock(&L->mu);
    while (!L->stop && sqllock__cond_wait_until(&L->cv, &L->mu, until) == 0)
        ;
    s = L->stop;
    pthread_mutex_unlock(&L->mu);
    return s;
}

/* Reads the row and reports a leader whose term is new to this candidate.
 * Returns the live leader's token, 0 when there is none, -1 on error;
 * *row_token (may be NULL) is the row's token, live or expired, 0 when
 * there is no row or it could not be read. */
static int64_t observe(sqllock_leader *L, int64_t *row_token)
{
    char buf[SQLLOCK__LEASE_GET_BUF];
    sqllock_lease_info info;
    int found = 0, rc;

    if (row_token != NULL)
        *row_token = 0;
    rc = sqllock__lease_get(L->db, L->row, &info, buf, &found,
                            "reading the election's leader");
    if (rc != SQLLOCK_OK) {
        set_error(L, sqllock_errmsg(L->db));
        return -1;
    }
    if (found && row_token != NULL)
        *row_token = info.token;
    if (!found || info.remaining_ms <= 0)
        return 0;
    if (info.token != L->seen_token) {
        L->seen_token = info.token;
        if (L->opts.on_observed != NULL)
            L->opts.on_observed(L->opts.ctx, L, info.holder, info.token);
    }
    return info.token;
}

/*
 * The election's term record: the latest term that has been led and
 * released, kept in the library's record table (sqllock_record) under
 * the election's row name, as decimal text. Each leader notes its term
 * there just before it releases the leadership, so a term that came and
 * went between two looks of a resigned candidate at the row leaves its
 * trace, where the row, deleted by the release, does not (and the
 * fencing-token counter, shared by every name, cannot say which name a
 * grant was for). A term that ends otherwise leaves the row: taken over
 * (a later term on it), or expired after a crash (its token stays there
 * until the row is reaped or taken over). Noting at the release, not at
 * the election, keeps the statements out of a leader's term: a note
 * that waited for a stalled database would hold up the report of the
 * loss at the local deadline.
 *
 * term_read() reads it: *term 0 (and *version 0) when there is none yet.
 */
static int term_read(sqllock_leader *L, int64_t *term, int64_t *version)
{
    char text[32];
    void *value = NULL;
    size_t len = 0;
    int rc;

    *term = 0;
    *version = 0;
    rc = sqllock__record_get(L->db, L->row, &value, &len, version);
    if (rc == SQLLOCK_NOTFOUND)
        return SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        return rc;
    if (len > 0 && len < sizeof text) {
        memcpy(text, value, len);
        text[len] = '\0';
        *term = strtoll(text, NULL, 10);
    }
    sqllock_free(value);
    return SQLLOCK_OK;
}

/* Notes term `token` in the election's term record, unless a later one
 * is there already (a new leader's note overtook a stalled old one's). */
static int term_note(sqllock_leader *L, int64_t token)
{
    char text[32];
    int64_t term, version;
    int i, n, rc = SQLLOCK_CONFLICT;

    n = snprintf(text, sizeof text, "%lld", (long long)token);
    for (i = 0; i < LEADER_NOTE_TRIES && rc == SQLLOCK_CONFLICT; i++) {
        rc = term_read(L, &term, &version);
        if (rc != SQLLOCK_OK || term >= token)
            break;
        if (version == 0)
            rc = sqllock__record_create(L->db, L->row, text, (size_t)n);
        else
            rc = sqllock__record_cas(L->db, L->row, version, text, (size_t)n,
                                     NULL);
    }
    return rc;
}

/*
 * After a resign: 1 while the candidate stays out of the campaign. The
 * hold ends when a later term than the resigned one has been granted --
 * seen on the row (live, or expired after a crash), or, while the row
 * is free, noted in the term record, however short it was -- or at
 * resign_hold_ms.
 */
static int holding_off(sqllock_leader *L)
{
    int64_t seen, row_token, term, version;

    if (L->hold_until_us == 0)
        return 0;
    if (sqllock__now_us() >= L->hold_until_us) {
        L->hold_until_us = 0;
        return 0;
    }
    seen = observe(L, &row_token);
    if (row_token > L->hold_token) {
        L->hold_until_us = 0;      /* another leader: back in the race */
        return 0;
    }
    /* Otherwise the row is free, or still our own term's (a release
     * that failed), or could not be read. */
    if (seen == 0) {
        if (term_read(L, &term, &version) != SQLLOCK_OK) {
            set_error(L, sqllock_errmsg(L->db));
        } else if (term > L->hold_token) {
            L->hold_until_us = 0;  /* another leader came and went */
            return 0;
        }
    }
    return 1;
}

/*
 * Waits for the leadership, as sqllock_lease_acquire() waits for a lease
 * (the same pauses and wake-ups), reading the row after each busy try.
 * SQLLOCK_OK: elected; SQLLOCK_ECANCELED: stopped; or an error.
 */
static int campaign(sqllock_leader *L)
{
    sqllock__wait w;
    uint64_t seen;
    int rc;

    sqllock__wait_start(&w, L->db, 1, SQLLOCK_WAIT_FOREVER);
    for (;;) {
        if (stopping(L)) {
            rc = SQLLOCK_ECANCELED;
            break;
        }
        seen = sqllock__wake_gen(L->lease->wake_key);
        if (holding_off(L)) {
            /* A resigned candidate pauses as a waiting one does, so that
             * the next leader's release -- the end of a term it may not
             * have seen -- wakes it at once where a release's wake-up
             * reaches every waiter (NOTIFY, in-process); elsewhere its
             * next look comes within the waiters' backoff. Never on a
             * companion lock: a later term on the row has ended the
             * hold, so the row is free (an idle companion returns at
             * once) or still its own. */
            L->lease->busy_companion = 0;
            w.plain_next = 1;
            sqllock__wait_pause(&w, L->lease, 0, seen);
            continue;
        }
        rc = sqllock__lease_try(L->lease);
        if (rc == SQLLOCK_OK)
            break;
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY) {
            set_error(L, sqllock_errmsg(L->db));
            break;
        }
        observe(L, NULL);
        sqllock__wait_pause(&w, L->lease, 0, seen);
    }
    sqllock__wait_end(&w, &L->lease);
    return rc;
}

/* term_note() for the leader of term `token`; a failure is kept as the
 * campaign's last error (a resigned candidate that misses the term then
 * waits for its resign hold at the most). */
static void note(sqllock_leader *L, int64_t token)
{
    char msg[SQLLOCK__ERRMSG_MAX + 64];

    if (term_note(L, token) == SQLLOCK_OK)
        return;
    snprintf(msg, sizeof msg, "cannot note term %lld in the election's "
             "record: %s", (long long)token, sqllock_errmsg(L->db));
    set_error(L, msg);
}

/* The watch callback, on the renewer thread: leaves the news and wakes
 * the campaign thread. */
static void on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                     const char *msg)
{
    sqllock_leader *L = ctx;

    (void)lease;
    if (state != SQLLOCK_STATE_LOST)
        return;
    pthread_mutex_lock(&L->mu);
    L->note = 1;
    L->note_status = status;
    snprintf(L->note_msg, sizeof L->note_msg, "%s", msg ? msg : "");
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
}

/* Leads until the leadership is lost, resigned or stopped; then releases
 * it (handing over) and reports the end. */
static void lead(sqllock_leader *L)
{
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    char msg[SQLLOCK__ERRMSG_MAX + 64];
    int64_t token = L->lease->token, deadline;
    int status = SQLLOCK_OK, rc, resigned = 0, elected = 0;

    pthread_mutex_lock(&L->mu);
    L->leading = 1;
    L->note = 0;
    pthread_mutex_unlock(&L->mu);
    wo.interval_ms = L->interval_ms;
    wo.callback = on_watch;
    wo.ctx = L;
    rc = sqllock_lease_watch(L->lease, &wo);
    if (rc != SQLLOCK_OK) {
        status = rc;
        snprintf(msg, sizeof msg, "cannot renew the leadership: %s",
                 sqllock_errmsg(L->db));
        set_error(L, msg);
        goto end;
    }
    atomic_store(&L->term, token);
    pthread_mutex_lock(&L->mu);
    /* Not after a resign or stop that came meanwhile. */
    if (!L->resign_req && !L->stop)
        atomic_store(&L->acting, 1);
    pthread_mutex_unlock(&L->mu);
    elected = 1;
    if (L->opts.on_elected != NULL)
        L->opts.on_elected(L->opts.ctx, L, token);
    if (token != L->seen_token) {
        L->seen_token = token;
        if (L->opts.on_observed != NULL)
            L->opts.on_observed(L->opts.ctx, L, L->holder, token);
    }
    snprintf(msg, sizeof msg, "handed over");
    pthread_mutex_lock(&L->mu);
    for (;;) {
        if (L->stop || L->resign_req) {
            resigned = 1;
            break;
        }
        if (L->note) {
            status = L->note_status;
            snprintf(msg, sizeof msg, "%s", L->note_msg);
            break;
        }
        /* L6: the lease's own view, which turns LOST at the deadline
         * even while the renewer is stuck in a renewal. */
        if (sqllock_lease_state(L->lease) == SQLLOCK_STATE_LOST) {
            status = SQLLOCK_TIMEOUT;
            snprintf(msg, sizeof msg, "the leadership's local deadline "
                     "passed before a renewal succeeded");
            break;
        }
        /* Just past the deadline, a slice at a time (T1): a deadline
         * that passed while the host was suspended is seen soon after
         * the resume. */
        deadline = sqllock__lease_deadline(L->lease);
        sqllock__cond_wait_until(&L->cv, &L->mu, deadline + 1000);
    }
    pthread_mutex_unlock(&L->mu);
end:
    atomic_store(&L->acting, 0);
    atomic_store(&L->term, 0);
    /* A loss is reported before the release, which may wait as long as
     * the stalled database that caused it; a hand-over after it, with
     * the release's outcome. */
    if (elected && !resigned && L->opts.on_lost != NULL)
        L->opts.on_lost(L->opts.ctx, L, token, status, msg);
    /* The term's trace for the resigned candidates (term_read()),
     * before its row goes: one that never saw the row finds it there. */
    if (elected)
        note(L, token);
    /* Given back even after a deadline that passed: the row may still be
     * ours, and a release wakes the next candidate now rather than at
     * the expiry. LOST here only confirms the loss. */
    rc = sqllock_lease_release(L->lease);
    if (resigned && rc != SQLLOCK_OK) {
        status = rc;
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(L->db));
        if (rc != SQLLOCK_LOST)
            set_error(L, msg);
    }
    /* A release that failed keeps the hold: drop it, the row expires at
     * its ttl (the handle stays, other threads read its atomics). */
    if (rc != SQLLOCK_OK && sqllock_lease_count(L->lease) > 0)
        sqllock__lease_forget(L->lease);
    if (elected && resigned && L->opts.on_lost != NULL)
        L->opts.on_lost(L->opts.ctx, L, token, status, msg);
    pthread_mutex_lock(&L->mu);
    L->leading = 0;
    if (L->resign_req) {
        L->resign_req = 0;
        L->resign_rc = status == SQLLOCK_TIMEOUT ? SQLLOCK_LOST : status;
        L->resign_done++;
        if (!L->stop) {
            L->hold_until_us = sqllock__now_us() + L->resign_hold_ms * 1000;
            L->hold_token = token;
        }
        pthread_cond_broadcast(&L->cv);
    }
    pthread_mutex_unlock(&L->mu);
}

static void *campaign_main(void *arg)
{
    sqllock_leader *L = arg;
    int rc;

    while (!stopping(L)) {
        rc = campaign(L);
        if (rc == SQLLOCK_OK)
            lead(L);
        else if (rc != SQLLOCK_ECANCELED)
            nap(L, LEADER_BACKOFF_MAX_MS);    /* an error: try again */
    }
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
    err = pthread_create(&L->thread, NULL, campaign_main, L);
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
