/*
 * leader_campaign.c -- the campaign thread of a candidate (DESIGN M4): it
 * campaigns (tries, and pauses with a waiting acquire's wake-ups while it
 * reads the row to report a new leader), then leads (watches the lease
 * and sleeps until the watch reports a change, the local deadline passes,
 * or a resign or stop comes), then notes the term and releases, which
 * hands over. leader.c starts and stops it and answers the public calls.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"

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
    sqllock__m_acquire(L->db, SQLLOCK__MK_LEADER, SQLLOCK_OK, 0,
                       sqllock_leader_name(L), token);
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

void *sqllock__leader_main(void *arg)
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
