/*
 * lease_row.c -- a lease's try, renew and release on its row (DESIGN
 * L3-L8, L10). The algorithm is written once here; each dialect supplies
 * the SQL text, and the grant itself is lease_grant.c's. A statement the
 * database rolled back is run again a few times; one whose connection was
 * lost is retried once on a new connection where that is safe (C3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* A status that says the database rolled the statement back (a deadlock,
 * a serialization failure -- Galera reports a lost certification as a
 * deadlock -- or a row-lock wait that timed out): its effect is known,
 * nothing, so running it again is safe. */
int sqllock__rolled_back(int rc)
{
    return rc == SQLLOCK_EDEADLOCK || rc == SQLLOCK_ESERIALIZATION ||
           rc == SQLLOCK_ELOCKED;
}

/* Runs RELEASE; *affected says whether the row was still ours. */
static int release_once(sqllock_lease *l, int64_t *affected);

/* RELEASE, run again (a few times, after a short random pause) while the
 * database rolls it back; *sent_us is when the attempt that counts was
 * sent. */
static int release_row(sqllock_lease *l, int64_t *sent_us,
                       int64_t *affected)
{
    int rc, attempt;

    for (attempt = 0;; attempt++) {
        *sent_us = sqllock__now_us();
        rc = release_once(l, affected);
        if (!sqllock__rolled_back(rc) || attempt == SQLLOCK__ROLLBACK_RETRIES)
            return rc;
        sqllock__sleep_ms(sqllock__rand_upto(l->backoff_min_ms));
    }
}

static int release_once(sqllock_lease *l, int64_t *affected)
{
    sqllock_db *db = l->db;
    char channel[SQLLOCK__CHANNEL_MAX];
    sqllock_value args[4];
    int rc;

    args[0] = sqllock__text(l->name);
    args[1] = sqllock__text(l->owner);
    args[2] = sqllock__int(l->token);
    /* The companion lives on the connection that took it with the
     * grant: after a reconnect it is gone, and so is the reason to pay
     * for the routine (a retry after a lost connection, C3, is a plain
     * release). */
    if (l->companion && db->conn != NULL && db->conn_gen == l->companion_gen &&
        !db->no_wake_routine) {
        /* The delete and the companion lock's release in one round
         * trip. */
        sqllock_sql_id id = SQLLOCK_SQL_LEASE_RELEASE_WAKE;
        int has_row = 0;

        *affected = 0;
        rc = sqllock__run(db, id, args, 3, "releasing the lease");
        if (rc == SQLLOCK_OK)
            rc = sqllock__first_int(db, id, &has_row, affected,
                                      "releasing the lease");
        if (rc == SQLLOCK_OK && !has_row)
            rc = sqllock__fail(db, SQLLOCK_EDB, "releasing the lease: the "
                               "release routine returned no row");
        if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
            return rc;
        /* Dropped since the grant: the plain release; the companion goes
         * with the connection. */
        sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_RELEASE_WAKE);
    }
    /* No channel, no notification: a lease that does not take part in
     * wake-ups does not pay for them either. */
    sqllock__wake_channel(l->wake_name != NULL ? l->wake_name : l->name,
                          channel);
    args[3] = sqllock__text(l->flags & SQLLOCK_LEASE_NO_WAKEUP ? NULL
                                                               : channel);
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_RELEASE, args, 4,
                      "releasing the lease");
    if (rc != SQLLOCK_OK)
        return rc;
    *affected = db->drv->affected_rows(db->stmts[SQLLOCK_SQL_LEASE_RELEASE]);
    sqllock__end(db, SQLLOCK_SQL_LEASE_RELEASE);
    return SQLLOCK_OK;
}

/* The status of a call whose retry after a lost connection (DESIGN C3)
 * failed too: the retry's, with both reasons in the message. */
static int retry_failed(sqllock_db *db, int rc, const char *first)
{
    char again[SQLLOCK__ERRMSG_MAX];

    memcpy(again, db->errmsg, sizeof again);
    return sqllock__fail(db, rc, "%s (sent again on a fresh connection, "
                         "after: %s)", again, first);
}

/* RENEW, run again (a few times, after a short random pause) while the
 * database rolls it back; *sent_us is when the attempt that counts was
 * sent. */
static int renew_row(sqllock_lease *l, int64_t *sent_us, int64_t *affected)
{
    int rc, attempt;

    for (attempt = 0;; attempt++) {
        *sent_us = sqllock__now_us();
        rc = sqllock__lease_renew_raw(l->db, l->name, l->owner, l->token,
                                      l->ttl_ms,
                                      l->flags & SQLLOCK_LEASE_FAST,
                                      affected);
        if (!sqllock__rolled_back(rc) || attempt == SQLLOCK__ROLLBACK_RETRIES)
            return rc;
        sqllock__sleep_ms(sqllock__rand_upto(l->backoff_min_ms));
    }
}

/*
 * A lease's statements need their own transactions, committed before the
 * call returns (a grant reported OK is durable, DESIGN C2). Inside a
 * row-lock transaction on the same handle they cannot have that: on
 * MySQL the grant's START TRANSACTION would commit the row-lock
 * transaction under its locks, on PostgreSQL the grant would stay
 * uncommitted inside it and vanish with its rollback. So a call that
 * would send a lease statement is refused, nothing sent.
 */
int sqllock__lease_refuse_in_txn(sqllock_lease *l, const char *what)
{
    if (!l->db->in_txn)
        return SQLLOCK_OK;
    return sqllock__fail(l->db, SQLLOCK_EMISUSE, "%s lock '%s': a row-lock "
                         "transaction is open on this handle; use a handle "
                         "of its own for leases, or end the transaction "
                         "first", what, l->name);
}

static int renew_body(sqllock_lease *l)
{
    char first[SQLLOCK__ERRMSG_MAX];
    int64_t sent_us, affected = 0;
    int rc, had_conn;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->count == 0)
        return sqllock__fail(l->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (renew)", l->name);
    if ((rc = sqllock__lease_refuse_in_txn(l, "renewing")) != SQLLOCK_OK)
        return rc;
    had_conn = l->db->conn != NULL;
    rc = renew_row(l, &sent_us, &affected);
    if (rc == SQLLOCK_ECONNECT && had_conn) {
        /* DESIGN C3: the connection was lost, and with it the answer. A
         * renewal names owner and token, so running it again changes
         * nothing that the first one may have done: once, on a fresh
         * connection (the core connects again at this call). Not after
         * a connect that failed: then nothing was sent. */
        memcpy(first, l->db->errmsg, sizeof first);
        rc = renew_row(l, &sent_us, &affected);
        if (rc != SQLLOCK_OK)
            return retry_failed(l->db, rc, first);
    }
    if (rc != SQLLOCK_OK)
        return rc;
    if (affected == 0) {
        sqllock__m_hold_end(l, SQLLOCK__ML_TAKEN_OVER, NULL);
        sqllock__lease_forget(l);
        return sqllock__fail(l->db, SQLLOCK_LOST, "lock '%s' was lost: taken "
                             "over by another owner, or removed after it "
                             "expired", l->name);
    }
    sqllock__lease_extend(l, sent_us + (l->ttl_ms - l->margin_ms) * 1000);
    /* A renewal that finds the row still ours proves no one else held it
     * since: whatever the renewer concluded, the lease is held again. */
    atomic_store(&l->state, SQLLOCK_STATE_HELD);
    return sqllock__ok(l->db);
}

int sqllock_lease_renew(sqllock_lease *l)
{
    int64_t token;
    int rc, op;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    token = l->token;
    op = sqllock__op_set(l->db, SQLLOCK__OP_RENEW);
    rc = renew_body(l);
    sqllock__op_set(l->db, op);
    if (rc == SQLLOCK_ENOTHELD || rc == SQLLOCK_EMISUSE)
        return rc;
    sqllock__m_renewal(l->db, rc == SQLLOCK_OK ? SQLLOCK__MR_ON_TIME
                       : SQLLOCK__MR_FAILED);
    if (rc == SQLLOCK_LOST)
        sqllock__log(SQLLOCK_EVENT_LOST, SQLLOCK_LOG_ERROR, l->db, l->name,
                     token, rc, 0, "%s", sqllock_errmsg(l->db));
    return rc;
}

int sqllock_lease_renew_ttl(sqllock_lease *l, int64_t ttl_ms)
{
    int64_t margin;
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->count == 0)
        return sqllock__fail(l->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (renew with a ttl)", l->name);
    if (ttl_ms <= 0)
        return sqllock__fail(l->db, SQLLOCK_EINVAL, "the lease ttl must be "
                             "positive (got %lld ms)", (long long)ttl_ms);
    if (ttl_ms > INT64_C(9000000000000))
        return sqllock__fail(l->db, SQLLOCK_EINVAL, "the lease ttl of %lld ms "
                             "is too large", (long long)ttl_ms);
    margin = l->margin_default ? ttl_ms / 10 : l->margin_ms;
    if (margin >= ttl_ms)
        return sqllock__fail(l->db, SQLLOCK_EINVAL, "the safety margin (%lld "
                             "ms) must be smaller than the ttl (%lld ms)",
                             (long long)margin, (long long)ttl_ms);
    if ((rc = sqllock__lease_refuse_in_txn(l, "renewing")) != SQLLOCK_OK)
        return rc;
    if (l->db->renewer != NULL) {
        rc = l->db->renewer_ops->retune(l->db->renewer, l, ttl_ms, margin);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    l->ttl_ms = ttl_ms;
    l->margin_ms = margin;
    /* A shorter ttl is this host's reckoning at once (L6), whatever the
     * renewal below answers: the server may have applied it. */
    sqllock__lease_shorten(l, sqllock__now_us() + (ttl_ms - margin) * 1000);
    return sqllock_lease_renew(l);
}

int sqllock__lease_renew_raw(sqllock_db *db, const char *name,
                             const char *owner, int64_t token, int64_t ttl_ms,
                             int fast, int64_t *affected)
{
    sqllock_sql_id id = fast ? SQLLOCK_SQL_LEASE_RENEW_FAST
                             : SQLLOCK_SQL_LEASE_RENEW;
    sqllock_value args[4];
    int rc;

    args[0] = sqllock__text(name);
    args[1] = sqllock__text(owner);
    args[2] = sqllock__int(token);
    args[3] = sqllock__int(ttl_ms);
    rc = sqllock__run(db, id, args, 4, "renewing the lease");
    if (rc != SQLLOCK_OK)
        return rc;
    *affected = db->drv->affected_rows(db->stmts[id]);
    sqllock__end(db, id);
    return sqllock__ok(db);
}

/*
 * DESIGN C3: a release whose connection was lost, or that cannot reach
 * the database, is sent again on a fresh connection: at once, then with
 * backoff (at least 50 ms apart, up to backoff_max_ms), until it is
 * answered, release_timeout_ms has passed or the lease's local deadline
 * has -- after which the lease expires by itself. It names owner and
 * token, so sending it again changes nothing a lost one may have done.
 * A borrowed connection is never reconnected (db.c): no retry there.
 * Returns the last status; *tries counts the attempts after the first,
 * *maybe_sent says whether an attempt may have reached the database
 * (it failed after a connection was there), *first_us when the first
 * attempt was sent, and `first` the first failure's message.
 */
static int release_retrying(sqllock_lease *l, int64_t deadline_us,
                            int64_t *first_us, int64_t *affected,
                            int *tries, int *maybe_sent, char *first)
{
    int64_t start_us = sqllock__now_us(), end_us, sent_us, pause_ms = 50;
    int rc, had_conn = l->db->conn != NULL;

    *tries = 0;
    *maybe_sent = 0;
    rc = release_row(l, first_us, affected);
    if (rc != SQLLOCK_ECONNECT || l->db->borrowed)
        return rc;
    memcpy(first, l->db->errmsg, SQLLOCK__ERRMSG_MAX);
    end_us = start_us + l->release_timeout_ms * 1000;
    if (deadline_us != 0 && deadline_us < end_us)
        end_us = deadline_us;
    for (;;) {
        if (had_conn)
            *maybe_sent = 1;
        /* The first retry at once (a connection dropped by a pooler or
         * a proxy is back on the next connect); the others after a
         * pause, never past the end. */
        if (*tries > 0) {
            int64_t left_ms = (end_us - sqllock__now_us()) / 1000;
            int64_t ms = pause_ms / 2 + sqllock__rand_upto(pause_ms / 2);

            if (left_ms <= 0)
                return rc;
            sqllock__sleep_ms(ms < left_ms ? ms : left_ms);
            pause_ms *= 2;
            if (pause_ms > l->backoff_max_ms)
                pause_ms = l->backoff_max_ms > 50 ? l->backoff_max_ms : 50;
        }
        had_conn = l->db->conn != NULL;
        (*tries)++;
        rc = release_row(l, &sent_us, affected);
        if (rc != SQLLOCK_ECONNECT)
            return rc;
        if (sqllock__now_us() >= end_us)
            return rc;
    }
}

static int release_body(sqllock_lease *l, int64_t *held_us)
{
    char first[SQLLOCK__ERRMSG_MAX];
    int64_t affected = 0, sent_us, deadline_us, start_us;
    int rc, tries, maybe_sent;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->count == 0)
        return sqllock__fail(l->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (release)", l->name);
    if (l->count > 1) {
        l->count--;
        return sqllock__ok(l->db);
    }
    if ((rc = sqllock__lease_refuse_in_txn(l, "releasing")) != SQLLOCK_OK)
        return rc;
    sqllock__lease_unwatch(l);
    deadline_us = atomic_load(&l->deadline_us);
    start_us = sqllock__now_us();
    rc = release_retrying(l, deadline_us, &sent_us, &affected, &tries,
                          &maybe_sent, first);
    if (rc != SQLLOCK_OK && tries > 0) {
        char again[SQLLOCK__ERRMSG_MAX];

        memcpy(again, l->db->errmsg, sizeof again);
        return sqllock__fail(l->db, rc, "%s (sent again %d time%s on fresh "
                             "connections for %lld ms, until %s; first: "
                             "%s)", again, tries, tries == 1 ? "" : "s",
                             (long long)((sqllock__now_us() - start_us) /
                                         1000),
                             deadline_us != 0 &&
                             sqllock__now_us() >= deadline_us
                             ? "the lease's local deadline: it expires by "
                               "itself" : "the release timeout", first);
    }
    if (rc != SQLLOCK_OK)
        return rc;
    /*
     * A retried release that finds the row gone: if the first attempt
     * was sent before the lease's local deadline (L6), no one else could
     * have taken or reaped the lease before it ran, so it was the first
     * attempt that deleted the row -- released, not lost. After the
     * deadline, or with no deadline known (an attached lease never
     * renewed), the lease may have been lost before: LOST, as always.
     * (Should the first attempt not have reached the database, the
     * holder still stopped before its deadline, and no one else could
     * take the lease before the server's expiry, which is later: the
     * hold had no break either way.)
     */
    if (affected == 0 && maybe_sent && deadline_us != 0 &&
        sent_us < deadline_us)
        affected = 1;
    /* The hold ends here (metrics.c), with its cause, then the handle
     * forgets it. */
    sqllock__m_hold_end(l, affected > 0 ? SQLLOCK__END_RELEASED
                        : SQLLOCK__ML_TAKEN_OVER, held_us);
    if (*held_us == 0)
        *held_us = 1;           /* ended here: 0 would read "not released" */
    sqllock__lease_forget(l);
    if (affected > 0 && !(l->flags & SQLLOCK_LEASE_NO_WAKEUP))
        sqllock__wake_post(l->wake_key);
    if (affected == 0)
        return sqllock__fail(l->db, SQLLOCK_LOST, "lock '%s' had already "
                             "been lost: taken over by another owner, or "
                             "removed after it expired%s%s%s", l->name,
                             maybe_sent ? " (the release was sent again "
                             "after its answer was lost -- " : "",
                             maybe_sent ? first : "", maybe_sent ? " -- and "
                             "the first one was sent after the lease's "
                             "local deadline)" : "");
    return sqllock__ok(l->db);
}

int sqllock_lease_release(sqllock_lease *l)
{
    int64_t token, held_us = 0;
    int rc, op;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    token = l->token;
    op = sqllock__op_set(l->db, SQLLOCK__OP_RELEASE);
    rc = release_body(l, &held_us);
    sqllock__op_set(l->db, op);
    /* A reentrant hold counted down is no release. */
    if (held_us > 0 || rc != SQLLOCK_OK)
        sqllock__m_release(l, rc, token, held_us);
    return rc;
}

/* The retry of an acquire that the database rolled back: see
 * sqllock__lease_try_plain(). */
static int insert_retried(sqllock_lease *l)
{
    char why[SQLLOCK__ERRMSG_MAX];
    int rc, attempt;

    /*
     * A deadlock, serialization failure or row-lock timeout reported for
     * the acquire itself means the database rolled the whole attempt back,
     * so its effect is known (nothing) and running it again is safe.
     * InnoDB can deadlock two acquires whose duplicate-key checks lock
     * neighbouring names, and Galera reports a lost certification as a
     * deadlock. A few quick retries absorb that; if the race persists,
     * another acquire of this name is in the way: the lock is busy.
     */
    for (attempt = 0;; attempt++) {
        rc = sqllock__lease_insert(l);
        if (rc != SQLLOCK_EDEADLOCK && rc != SQLLOCK_ESERIALIZATION &&
            rc != SQLLOCK_ELOCKED)
            return rc;
        if (attempt == SQLLOCK__ROLLBACK_RETRIES)
            break;
        sqllock__sleep_ms(sqllock__rand_upto(l->backoff_min_ms));
    }
    memcpy(why, l->db->errmsg, sizeof why);     /* the buffer is rewritten */
    return sqllock__fail(l->db, SQLLOCK_BUSY, "lock '%s' is being taken by "
                         "another owner (%s)", l->name, why);
}

/*
 * A kind marker's grant (core/kind.c): the plain acquire of `name` by a
 * lease that lives for this call only, granted to `owner`, with no
 * wake-up companion (nothing waits for a marker's release: there is
 * none). Its ttl is past what sqllock_lease_new() accepts, so the handle
 * is made here; the local deadline it computes is never read.
 */
int sqllock__lease_grant_fixed(sqllock_db *db, const char *name,
                               const char *owner, const char *holder,
                               int64_t ttl_ms)
{
    sqllock_lease l;
    int rc;

    memset(&l, 0, sizeof l);
    l.db = db;
    l.ttl_ms = ttl_ms;
    l.backoff_min_ms = 5;
    l.backoff_max_ms = 500;
    l.flags = SQLLOCK_LEASE_NO_WAKEUP;
    l.fixed_owner = owner;
    snprintf(l.name, sizeof l.name, "%s", name);
    snprintf(l.holder, sizeof l.holder, "%s", holder);
    l.wake_key = sqllock__wake_key(db->url, name);
    atomic_init(&l.state, SQLLOCK_STATE_NOT_HELD);
    atomic_init(&l.deadline_us, 0);
    atomic_init(&l.granted_us, 0);
    rc = insert_retried(&l);
    /* A marker is no hold (metrics.c). */
    sqllock__m_hold_end(&l, SQLLOCK__END_NONE, NULL);
    return rc;
}

int sqllock__lease_try_plain(sqllock_lease *l)
{
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = sqllock__lease_refuse_in_txn(l, "acquiring")) != SQLLOCK_OK)
        return rc;
    if (l->count > 0) {
        /* Reentrant (L8): count up, and extend the lease as a renewal. */
        if (l->count == INT32_MAX)
            return sqllock__fail(l->db, SQLLOCK_EINVAL, "reentrant hold count "
                                 "overflow on lock '%s'", l->name);
        rc = sqllock_lease_renew(l);
        if (rc == SQLLOCK_OK)
            l->count++;
        return rc;
    }
    return insert_retried(l);
}
