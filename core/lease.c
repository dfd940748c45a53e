/*
 * lease.c -- lease locks (DESIGN L1-L8).
 *
 * The algorithm is written once here; each dialect supplies the SQL text.
 * Acquire is one atomic statement (L1) that inserts the row or takes over
 * an expired one, with expiry judged by the server's clock (L2) and a token
 * from a counter that outlives the row (L5). Where the dialect cannot
 * return the token from that statement (no RETURNING), the core reads it
 * back by owner id, which only this acquire knows: that read decides
 * nothing, the atomic statement already has.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


int sqllock__check_name(sqllock_db *db, const char *name, const char *what)
{
    size_t len;

    if (name == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is NULL", what);
    len = strlen(name);
    if (len == 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is empty", what);
    if (len > SQLLOCK_NAME_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is %zu bytes "
                             "long; the limit is %d bytes", what, len,
                             SQLLOCK_NAME_MAX);
    if (!sqllock__name_ok(name, len))
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is not valid "
                             "UTF-8 or has control characters", what);
    return SQLLOCK_OK;
}

static int apply_options(sqllock_db *db, sqllock_lease *l,
                         const sqllock_lease_options *opts)
{
    if (opts == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease options are "
                             "required: ttl_ms must be set");
    if (opts->ttl_ms <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lease ttl must be "
                             "positive (got %lld ms)", (long long)opts->ttl_ms);
    /* The server adds the ttl to its clock in microseconds on some
     * databases; keep far from overflow (about 292 years). */
    if (opts->ttl_ms > INT64_C(9000000000000))
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lease ttl of %lld ms is "
                             "too large", (long long)opts->ttl_ms);
    if (opts->safety_margin_ms < 0 || opts->backoff_min_ms < 0 ||
        opts->backoff_max_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease margins and backoff "
                             "times must not be negative");
    l->ttl_ms = opts->ttl_ms;
    l->margin_ms = opts->safety_margin_ms ? opts->safety_margin_ms
                                          : opts->ttl_ms / 10;
    if (l->margin_ms >= l->ttl_ms)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the safety margin (%lld ms) "
                             "must be smaller than the ttl (%lld ms)",
                             (long long)l->margin_ms, (long long)l->ttl_ms);
    l->flags = opts->struct_version >= 2 ? opts->flags : 0;
    if (l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST))
        return sqllock__fail(db, SQLLOCK_EINVAL, "unknown lease flags 0x%x",
                             l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP |
                                          SQLLOCK_LEASE_FAST));
    if ((l->flags & SQLLOCK_LEASE_FAST) && db->drv != NULL) {
        const sqllock_sql *a, *r;
        a = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_ACQUIRE_FAST);
        r = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_RENEW_FAST);
        if (a == NULL || a->text == NULL || r == NULL || r->text == NULL ||
            !(db->drv->caps & SQLLOCK_CAP_RETURNING))
            return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "fast mode "
                                 "(SQLLOCK_LEASE_FAST) needs a commit that "
                                 "is asynchronous for one transaction; the "
                                 "%s driver has none (MySQL's "
                                 "innodb_flush_log_at_trx_commit is global), "
                                 "so its leases are always durable",
                                 db->drv->name);
    }
    l->backoff_min_ms = opts->backoff_min_ms ? opts->backoff_min_ms : 5;
    l->backoff_max_ms = opts->backoff_max_ms ? opts->backoff_max_ms : 500;
    if (l->backoff_max_ms < l->backoff_min_ms)
        l->backoff_max_ms = l->backoff_min_ms;
    if (opts->holder != NULL) {
        size_t len = strlen(opts->holder);
        if (len > SQLLOCK_HOLDER_MAX)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the holder text is %zu "
                                 "bytes long; the limit is %d", len,
                                 SQLLOCK_HOLDER_MAX);
        if (!sqllock__name_ok(opts->holder, len))
            return sqllock__fail(db, SQLLOCK_EINVAL, "the holder text is not "
                                 "valid UTF-8 or has control characters");
        memcpy(l->holder, opts->holder, len + 1);
    } else {
        char host[128];
        if (gethostname(host, sizeof host) != 0)
            strcpy(host, "?");
        host[sizeof host - 1] = '\0';
        if (!sqllock__name_ok(host, strlen(host)))
            strcpy(host, "?");
        snprintf(l->holder, sizeof l->holder, "%s:%ld", host, (long)getpid());
    }
    return SQLLOCK_OK;
}

static int lease_make(sqllock_db *db, const char *name,
                      const sqllock_lease_options *opts, sqllock_lease **out)
{
    sqllock_lease *l;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    rc = sqllock__refuse_borrowed(db, "a lease");
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__check_name(db, name, "lock name");
    if (rc != SQLLOCK_OK)
        return rc;
    l = calloc(1, sizeof *l);
    if (l == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    rc = apply_options(db, l, opts);
    if (rc != SQLLOCK_OK) {
        free(l);
        return rc;
    }
    l->db = db;
    strcpy(l->name, name);
    l->wake_key = sqllock__wake_key(db->url, name);
    atomic_init(&l->state, SQLLOCK_STATE_NOT_HELD);
    atomic_init(&l->deadline_us, 0);
    *out = l;
    return SQLLOCK_OK;
}

int sqllock_lease_new(sqllock_db *db, const char *name,
                      const sqllock_lease_options *opts, sqllock_lease **out)
{
    int rc = lease_make(db, name, opts, out);

    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

int sqllock_lease_attach(sqllock_db *db, const char *name, const char *owner,
                         int64_t token, const sqllock_lease_options *opts,
                         sqllock_lease **out)
{
    size_t i;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db != NULL && owner == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id is NULL");
    if (db != NULL) {
        if (strlen(owner) != SQLLOCK_OWNER_LEN)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id must be "
                                 "%d hexadecimal digits", SQLLOCK_OWNER_LEN);
        for (i = 0; i < SQLLOCK_OWNER_LEN; i++)
            if (!((owner[i] >= '0' && owner[i] <= '9') ||
                  (owner[i] >= 'a' && owner[i] <= 'f')))
                return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id must "
                                     "be %d lower-case hexadecimal digits",
                                     SQLLOCK_OWNER_LEN);
        if (token <= 0)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the fencing token must "
                                 "be positive (got %lld)", (long long)token);
    }
    rc = lease_make(db, name, opts, out);
    if (rc != SQLLOCK_OK)
        return rc;
    memcpy((*out)->owner, owner, SQLLOCK_OWNER_LEN + 1);
    (*out)->token = token;
    (*out)->count = 1;
    /* The deadline stays 0, unknown until a renew: the lease is not
     * trusted (held() is 0) until then. */
    atomic_store(&(*out)->state, SQLLOCK_STATE_HELD);
    return sqllock__ok(db);
}

static void unwatch(sqllock_lease *l)
{
    if (l->db != NULL && l->db->renewer != NULL)
        sqllock__renewer_forget(l->db->renewer, l);
}

void sqllock_lease_free(sqllock_lease *lease)
{
    if (lease == NULL)
        return;
    unwatch(lease);
    free(lease);
}

/* The handle no longer holds: renewal stops first (L7), so a renewer
 * never renews what the handle has let go. */
static void forget(sqllock_lease *l)
{
    unwatch(l);
    l->count = 0;
    l->token = 0;
    l->companion = 0;
    l->owner[0] = '\0';
    atomic_store(&l->state, SQLLOCK_STATE_NOT_HELD);
    atomic_store(&l->deadline_us, 0);
}

void sqllock__lease_set_state(sqllock_lease *l, int state)
{
    atomic_store(&l->state, state);
}

/* Moves the local deadline forward, never back: the caller's own renew and
 * the renewer's may finish in either order. */
void sqllock__lease_extend(sqllock_lease *l, int64_t deadline_us)
{
    int64_t cur = atomic_load(&l->deadline_us);

    while (cur < deadline_us &&
           !atomic_compare_exchange_weak(&l->deadline_us, &cur, deadline_us))
        ;
}

int64_t sqllock__lease_deadline(const sqllock_lease *l)
{
    return atomic_load(&l->deadline_us);
}

static int new_owner(sqllock_lease *l)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[SQLLOCK_OWNER_LEN / 2];
    int i;

    if (sqllock__random(raw, sizeof raw) != SQLLOCK_OK)
        return sqllock__fail(l->db, SQLLOCK_ESYS, "cannot read the OS's "
                             "random source for an owner id");
    for (i = 0; i < (int)sizeof raw; i++) {
        l->owner[2 * i] = hex[raw[i] >> 4];
        l->owner[2 * i + 1] = hex[raw[i] & 15];
    }
    l->owner[SQLLOCK_OWNER_LEN] = '\0';
    return SQLLOCK_OK;
}

/*
 * Reads the first column of the first row of statement `id` and then
 * drains the result, so that the statement has fully run (and, in
 * autocommit, committed) before the caller relies on its effect.
 */
static int first_int_then_drain(sqllock_db *db, sqllock_sql_id id,
                                int *has_row, int64_t *value, const char *what)
{
    int rc, more = 0;

    rc = sqllock__fetch(db, id, has_row, what);
    if (rc == SQLLOCK_OK && *has_row) {
        *value = db->drv->column_int64(db->stmts[id], 0);
        do
            rc = sqllock__fetch(db, id, &more, what);
        while (rc == SQLLOCK_OK && more);
    }
    sqllock__end(db, id);
    return rc;
}

/*
 * The declared branch for dialects without RETURNING (MySQL): the insert
 * or takeover runs first and locks the name's row; only then, in the same
 * transaction, is the token allocated and stored. A token allocated before
 * the row is locked could be older than the token of a holder that got in
 * meanwhile (a client paused between the two statements), so the order of
 * tokens would no longer be the order of grants (L5).
 */
static int acquire_statements(sqllock_db *db, const sqllock_value *args,
                              int *got, int64_t *token)
{
    const char *what = "acquiring the lease";
    sqllock_value set[3];
    int rc;

    *got = 0;
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE, args, 4, what);
    if (rc == SQLLOCK_OK) {
        *got = db->drv->affected_rows(db->stmts[SQLLOCK_SQL_LEASE_ACQUIRE]) > 0;
        sqllock__end(db, SQLLOCK_SQL_LEASE_ACQUIRE);
    }
    if (rc == SQLLOCK_OK && *got) {
        rc = sqllock__run(db, SQLLOCK_SQL_TOKEN_NEXT, args, 1,
                          "allocating a fencing token");
        if (rc == SQLLOCK_OK) {
            *token = db->drv->insert_id(db->stmts[SQLLOCK_SQL_TOKEN_NEXT]);
            sqllock__end(db, SQLLOCK_SQL_TOKEN_NEXT);
            set[0] = args[0];
            set[1] = args[1];
            set[2] = sqllock__int(*token);
            rc = sqllock__run(db, SQLLOCK_SQL_LEASE_SET_TOKEN, set, 3,
                              "storing the fencing token");
            if (rc == SQLLOCK_OK)
                sqllock__end(db, SQLLOCK_SQL_LEASE_SET_TOKEN);
        }
    }
    return rc;
}

static int acquire_in_transaction(sqllock_db *db, const sqllock_value *args,
                                  int *got, int64_t *token)
{
    const char *what = "acquiring the lease";
    int rc;

    *got = 0;
    rc = sqllock__begin(db, what);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = acquire_statements(db, args, got, token);
    if (rc == SQLLOCK_OK && *got)
        return sqllock__commit(db, what);
    /* Nothing to keep: a busy attempt, or a failure whose status is the
     * one to report. */
    sqllock__rollback(db);
    if (rc != SQLLOCK_OK)
        *got = 0;
    return rc;
}

/*
 * Without RETURNING: the whole acquire in one round trip where the
 * dialect has a routine for it (LEASE_ACQUIRE_ONE: the statements of
 * acquire_in_transaction(), in the same order, run by the server), else,
 * or when the routine is not installed or not allowed on this
 * connection, the transaction.
 */
/*
 * LEASE_ACQUIRE_ONE that also takes the companion session lock with the
 * grant (L9, sqllock_driver.h version 7), for a lease with wake-ups on a
 * connection that can carry them. *companion says whether the connection
 * holds it now. SQLLOCK_ENOSCHEMA or SQLLOCK_EPERM: not installed or not
 * allowed, nothing changed; the caller uses LEASE_ACQUIRE_ONE.
 */
static int acquire_wake(sqllock_db *db, const sqllock_value *args, int *got,
                        int64_t *token, int *companion)
{
    sqllock_sql_id id = SQLLOCK_SQL_LEASE_ACQUIRE_WAKE;
    const char *what = "acquiring the lease";
    int rc, has_row = 0, more = 0;

    *got = 0;
    *companion = 0;
    rc = sqllock__run(db, id, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = sqllock__fetch(db, id, &has_row, what);
    if (rc == SQLLOCK_OK && has_row) {
        *token = db->drv->column_int64(db->stmts[id], 0);
        *companion = db->drv->column_int64(db->stmts[id], 1) > 0;
        do
            rc = sqllock__fetch(db, id, &more, what);
        while (rc == SQLLOCK_OK && more);
    }
    sqllock__end(db, id);
    if (rc == SQLLOCK_OK && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "returned no row", what);
    if (rc != SQLLOCK_OK)
        *companion = 0;
    *got = rc == SQLLOCK_OK && *token > 0;
    return rc;
}

static int acquire_one_trip(sqllock_db *db, const sqllock_value *args,
                            int *got, int64_t *token, int wake,
                            int *companion)
{
    const sqllock_sql *one = sqllock__sql_of(db->drv,
                                             SQLLOCK_SQL_LEASE_ACQUIRE_ONE);
    const char *what = "acquiring the lease";
    int rc, has_row = 0;

    *got = 0;
    *companion = 0;
    if (wake && !db->no_routine) {
        int usable = 0;

        rc = sqllock__session_wake(db, &usable);
        if (rc != SQLLOCK_OK)
            return rc;
        if (usable) {
            rc = acquire_wake(db, args, got, token, companion);
            if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
                return rc;
            /* The routine of an older sqllock_init(), or one this user
             * may not run: no wake-ups from this connection's grants. */
            db->no_wake_routine = 1;
        }
    }
    if (one == NULL || one->text == NULL || db->no_routine)
        return acquire_in_transaction(db, args, got, token);
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = first_int_then_drain(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, &has_row,
                                  token, what);
    if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EPERM) {
        /* Not installed (sqllock_init() of an older version made the
         * schema), or the user may not run it: the statements, from now
         * on for this connection. Neither failure changed anything. */
        db->no_routine = 1;
        return acquire_in_transaction(db, args, got, token);
    }
    if (rc == SQLLOCK_OK && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "returned no row", what);
    *got = rc == SQLLOCK_OK && *token > 0;
    return rc;
}

static int lease_insert(sqllock_lease *l)
{
    sqllock_db *db = l->db;
    sqllock_value args[4];
    int64_t sent_us, token = 0;
    int rc, got = 0, companion = 0;
    const char *what = "acquiring the lease";

    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    l->busy_companion = 0;
    rc = new_owner(l);
    if (rc != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(l->name);
    args[1] = sqllock__text(l->owner);
    args[2] = sqllock__text(l->holder);
    args[3] = sqllock__int(l->ttl_ms);
    sent_us = sqllock__now_us();
    if (db->drv->caps & SQLLOCK_CAP_RETURNING) {
        sqllock_sql_id id = l->flags & SQLLOCK_LEASE_FAST
                                ? SQLLOCK_SQL_LEASE_ACQUIRE_FAST
                                : SQLLOCK_SQL_LEASE_ACQUIRE;
        rc = sqllock__run(db, id, args, 4, what);
        if (rc == SQLLOCK_OK)
            rc = first_int_then_drain(db, id, &got, &token, what);
    } else {
        rc = acquire_one_trip(db, args, &got, &token,
                              !(l->flags & SQLLOCK_LEASE_NO_WAKEUP),
                              &companion);
    }
    if (rc != SQLLOCK_OK) {
        forget(l);
        return rc;
    }
    if (!got) {
        forget(l);
        l->busy_companion = companion;
        return sqllock__fail(db, SQLLOCK_BUSY, "lock '%s' is held by another "
                             "owner", l->name);
    }
    l->count = 1;
    l->token = token;
    l->companion = companion;
    l->companion_gen = db->conn_gen;
    atomic_store(&l->deadline_us, sent_us + (l->ttl_ms - l->margin_ms) * 1000);
    atomic_store(&l->state, SQLLOCK_STATE_HELD);
    return sqllock__ok(db);
}

/* How often a statement that the database rolled back is run again. */
#define ROLLBACK_RETRIES 3

/* A status that says the database rolled the statement back (a deadlock,
 * a serialization failure -- Galera reports a lost certification as a
 * deadlock -- or a row-lock wait that timed out): its effect is known,
 * nothing, so running it again is safe. */
static int rolled_back(int rc)
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
        if (!rolled_back(rc) || attempt == ROLLBACK_RETRIES)
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
            rc = first_int_then_drain(db, id, &has_row, affected,
                                      "releasing the lease");
        if (rc == SQLLOCK_OK && !has_row)
            rc = sqllock__fail(db, SQLLOCK_EDB, "releasing the lease: the "
                               "release routine returned no row");
        if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
            return rc;
        /* Dropped since the grant: the plain release; the companion goes
         * with the connection. */
        db->no_wake_routine = 1;
    }
    /* No channel, no notification: a lease that does not take part in
     * wake-ups does not pay for them either. */
    sqllock__wake_channel(l->name, channel);
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
        if (!rolled_back(rc) || attempt == ROLLBACK_RETRIES)
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
static int refuse_in_txn(sqllock_lease *l, const char *what)
{
    if (!l->db->in_txn)
        return SQLLOCK_OK;
    return sqllock__fail(l->db, SQLLOCK_EMISUSE, "%s lock '%s': a row-lock "
                         "transaction is open on this handle; use a handle "
                         "of its own for leases, or end the transaction "
                         "first", what, l->name);
}

int sqllock_lease_renew(sqllock_lease *l)
{
    char first[SQLLOCK__ERRMSG_MAX];
    int64_t sent_us, affected = 0;
    int rc, had_conn;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->count == 0)
        return sqllock__fail(l->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (renew)", l->name);
    if ((rc = refuse_in_txn(l, "renewing")) != SQLLOCK_OK)
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
        forget(l);
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

int sqllock_lease_release(sqllock_lease *l)
{
    char first[SQLLOCK__ERRMSG_MAX];
    int64_t affected = 0, sent_us, deadline_us;
    int rc, retried = 0, had_conn;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (l->count == 0)
        return sqllock__fail(l->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold lock '%s' (release)", l->name);
    if (l->count > 1) {
        l->count--;
        return sqllock__ok(l->db);
    }
    if ((rc = refuse_in_txn(l, "releasing")) != SQLLOCK_OK)
        return rc;
    unwatch(l);
    had_conn = l->db->conn != NULL;
    deadline_us = atomic_load(&l->deadline_us);
    rc = release_row(l, &sent_us, &affected);
    if (rc == SQLLOCK_ECONNECT && had_conn) {
        /* DESIGN C3: the answer was lost with the connection; the
         * release may or may not have run. It names owner and token, so
         * it is run once more, on a fresh connection. */
        int64_t again_us;

        memcpy(first, l->db->errmsg, sizeof first);
        retried = 1;
        rc = release_row(l, &again_us, &affected);
        if (rc != SQLLOCK_OK)
            return retry_failed(l->db, rc, first);
    }
    if (rc != SQLLOCK_OK)
        return rc;
    forget(l);
    /*
     * A retried release that finds the row gone: if the first attempt
     * was sent before the lease's local deadline (L6), no one else could
     * have taken or reaped the lease before it ran, so it was the first
     * attempt that deleted the row -- released, not lost. After the
     * deadline, or with no deadline known (an attached lease never
     * renewed), the lease may have been lost before: LOST, as always.
     */
    if (affected == 0 && retried && deadline_us != 0 && sent_us < deadline_us)
        affected = 1;
    if (affected > 0 && !(l->flags & SQLLOCK_LEASE_NO_WAKEUP))
        sqllock__wake_post(l->wake_key);
    if (affected == 0)
        return sqllock__fail(l->db, SQLLOCK_LOST, "lock '%s' had already "
                             "been lost: taken over by another owner, or "
                             "removed after it expired%s%s%s", l->name,
                             retried ? " (the release was sent again after "
                             "its answer was lost -- " : "",
                             retried ? first : "", retried ? " -- and the "
                             "first one was sent after the lease's local "
                             "deadline)" : "");
    return sqllock__ok(l->db);
}


int sqllock_lease_try_acquire(sqllock_lease *l)
{
    char why[SQLLOCK__ERRMSG_MAX];
    int rc, attempt;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = refuse_in_txn(l, "acquiring")) != SQLLOCK_OK)
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
        rc = lease_insert(l);
        if (rc != SQLLOCK_EDEADLOCK && rc != SQLLOCK_ESERIALIZATION &&
            rc != SQLLOCK_ELOCKED)
            return rc;
        if (attempt == ROLLBACK_RETRIES)
            break;
        sqllock__sleep_ms(sqllock__rand_upto(l->backoff_min_ms));
    }
    memcpy(why, l->db->errmsg, sizeof why);     /* the buffer is rewritten */
    return sqllock__fail(l->db, SQLLOCK_BUSY, "lock '%s' is being taken by "
                         "another owner (%s)", l->name, why);
}

/* The backoff before attempt `attempt` (from 0): exponential from min to
 * max, with full jitter (L9). */
sqllock__backoff_hook *_Atomic sqllock__on_backoff;

static int64_t backoff_ms(const sqllock_lease *l, int attempt)
{
    int64_t cap = l->backoff_min_ms;
    int i;

    for (i = 0; i < attempt && cap < l->backoff_max_ms &&
                cap <= INT64_MAX / 2; i++)
        cap *= 2;
    if (cap > l->backoff_max_ms)
        cap = l->backoff_max_ms;
    return sqllock__rand_upto(cap);
}

/* The cap of the backoff before attempt `attempt`: what a waiter that
 * can be woken waits at most. */
static int64_t backoff_cap_ms(const sqllock_lease *l, int attempt)
{
    int64_t cap = l->backoff_min_ms;
    int i;

    for (i = 0; i < attempt && cap < l->backoff_max_ms &&
                cap <= INT64_MAX / 2; i++)
        cap *= 2;
    return cap > l->backoff_max_ms ? l->backoff_max_ms : cap;
}

/*
 * One pause of a waiter with session-lock wake-ups (WAKE_WAIT): blocks
 * in the server on the name's companion lock for up to `ms`, so that the
 * holder's release, or the end of its session, ends the pause at once.
 * Each wait stays within half the statement timeout, so that the
 * client's bound on a round trip (statement timeout plus lock wait,
 * fixed at the connect) never cuts it; a longer pause is several waits.
 * A wait that ends early without a wake-up (a server that counts whole
 * seconds: MySQL 8.0 turns 0.3 s into 0) sleeps the rest of its time
 * here. *woke says whether the lock was free or freed. Any failure is
 * returned, for the caller to poll for the rest of its wait (on MySQL
 * 8.0 a wait that would close a cycle of session locks fails as a
 * deadlock); a lost connection is dropped and the next try reconnects.
 */
static int pause_on_companion(sqllock_lease *l, int64_t ms, uint64_t seen,
                              int *woke)
{
    sqllock_db *db = l->db;
    sqllock_sql_id id = SQLLOCK_SQL_WAKE_WAIT;
    sqllock_value args[2];
    int64_t end = sqllock__now_ms() + ms, bound, chunk, start, got, left;
    int rc, has_row;

    *woke = 0;
    bound = db->params.statement_timeout_ms / 2;
    for (;;) {
        start = sqllock__now_ms();
        chunk = end - start;
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
            rc = first_int_then_drain(db, id, &has_row, &got,
                                      "waiting for the lock's holder");
        if (rc != SQLLOCK_OK)
            return rc;
        if (has_row && got == 1) {
            *woke = 1;
            return SQLLOCK_OK;
        }
        left = chunk - (sqllock__now_ms() - start);
        if (left > 0 &&
            sqllock__wake_wait(l->wake_key, seen, left)) {
            *woke = 1;              /* a release in this process */
            return SQLLOCK_OK;
        }
    }
}

/*
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
 * companion costs at most one extra try per backoff, never a spin. Polling with backoff stays
 * underneath all of them: notifications go with a lost connection, and
 * a lease that merely expires announces nothing.
 */
int sqllock_lease_acquire(sqllock_lease *l, int64_t wait_ms)
{
    char channel[SQLLOCK__CHANNEL_MAX];
    int64_t deadline, now, sleep_ms;
    uint64_t seen = 0;
    int attempt = 0, rc, woke, wakeups, notify, listening = 0;
    int session = -1, plain_next = 0;
    sqllock__backoff_hook *hook;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (wait_ms < 0)
        return sqllock__fail(l->db, SQLLOCK_EINVAL, "the wait time must not "
                             "be negative (got %lld ms)", (long long)wait_ms);
    if ((rc = refuse_in_txn(l, "acquiring")) != SQLLOCK_OK)
        return rc;
    wakeups = !(l->flags & SQLLOCK_LEASE_NO_WAKEUP);
    notify = wakeups && l->db->drv != NULL && sqllock__can_notify(l->db);
    now = sqllock__now_ms();
    deadline = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    for (;;) {
        if (wakeups)
            seen = sqllock__wake_gen(l->wake_key);
        rc = sqllock_lease_try_acquire(l);
        /* Contention, and a database too busy to answer in time, are
         * both worth another try; anything else ends the wait. */
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        now = sqllock__now_ms();
        if (now >= deadline) {
            rc = sqllock__fail(l->db, SQLLOCK_TIMEOUT, "lock '%s' was still "
                               "%s after waiting %lld ms", l->name,
                               rc == SQLLOCK_BUSY ? "held by another owner"
                               : "out of reach (the database stayed busy)",
                               (long long)wait_ms);
            break;
        }
        if (notify && !listening) {
            sqllock__wake_channel(l->name, channel);
            if (sqllock__listen(l->db, channel, 1) == SQLLOCK_OK) {
                listening = 1;
                continue;
            }
            notify = 0;                 /* fall back to polling */
        }
        /* A wake-up whose try found the lease held by a holder with a
         * companion (the waiter that got in first): wait on it again. */
        if (plain_next && l->busy_companion)
            plain_next = 0;
        if (session < 0) {
            int usable = 0;

            /* Asked again after a failed connect, which the next try
             * reports. */
            if (!wakeups || notify)
                session = 0;
            else if (sqllock__session_wake(l->db, &usable) == SQLLOCK_OK)
                session = usable;
        }
        if (session > 0 && !plain_next) {
            sleep_ms = backoff_cap_ms(l, attempt);
            if (sleep_ms > deadline - now)
                sleep_ms = deadline - now;
            hook = atomic_load(&sqllock__on_backoff);
            if (hook != NULL)
                hook(l->name, sleep_ms, 1);
            if (pause_on_companion(l, sleep_ms, seen, &woke) != SQLLOCK_OK) {
                woke = 0;
                session = 0;            /* poll for the rest of this wait */
            }
            plain_next = woke;
            if (attempt < 62)
                attempt++;
            continue;
        }
        plain_next = 0;
        sleep_ms = backoff_ms(l, attempt);
        if (sleep_ms > deadline - now)
            sleep_ms = deadline - now;
        hook = atomic_load(&sqllock__on_backoff);
        if (hook != NULL)
            hook(l->name, sleep_ms, listening);
        if (listening) {
            if (sqllock__wait_notify(l->db, sleep_ms, &woke) != SQLLOCK_OK)
                listening = 0;          /* LISTEN again on the next round */
        } else if (wakeups) {
            sqllock__wake_wait(l->wake_key, seen, sleep_ms);
        } else {
            sqllock__sleep_ms(sleep_ms);
        }
        if (attempt < 62)
            attempt++;
    }
    /* UNLISTEN leaves the handle's status and message as they are. */
    if (listening)
        sqllock__listen(l->db, channel, 0);
    return rc;
}

const char *sqllock_lease_name(const sqllock_lease *l)
{
    return l != NULL ? l->name : "";
}

int sqllock_lease_state(const sqllock_lease *l)
{
    int state;

    if (l == NULL)
        return SQLLOCK_STATE_NOT_HELD;
    state = atomic_load(&l->state);
    if (state == SQLLOCK_STATE_HELD || state == SQLLOCK_STATE_UNCERTAIN) {
        int64_t deadline = atomic_load(&l->deadline_us);
        /* An attached lease's deadline is unknown until a renew. */
        if (deadline == 0)
            return SQLLOCK_STATE_UNCERTAIN;
        if (sqllock__now_us() >= deadline)
            return SQLLOCK_STATE_LOST;
    }
    return state;
}

const char *sqllock_lease_state_name(int state)
{
    switch (state) {
    case SQLLOCK_STATE_NOT_HELD: return "not-held";
    case SQLLOCK_STATE_HELD: return "held";
    case SQLLOCK_STATE_UNCERTAIN: return "uncertain";
    case SQLLOCK_STATE_LOST: return "lost";
    default: return "?";
    }
}

int sqllock_lease_held(const sqllock_lease *l)
{
    return sqllock_lease_remaining_ms(l) > 0;
}

int sqllock_lease_count(const sqllock_lease *l)
{
    return l != NULL ? l->count : 0;
}

int64_t sqllock_lease_token(const sqllock_lease *l)
{
    /* A fast lease keeps its token only to name its row: a crash can
     * make the database draw it again (see SQLLOCK_LEASE_FAST). */
    if (l == NULL || l->count == 0 || (l->flags & SQLLOCK_LEASE_FAST))
        return 0;
    return l->token;
}

const char *sqllock_lease_owner(const sqllock_lease *l)
{
    return l != NULL && l->count > 0 ? l->owner : "";
}

int64_t sqllock_lease_remaining_ms(const sqllock_lease *l)
{
    int64_t left, state;

    if (l == NULL)
        return 0;
    state = atomic_load(&l->state);
    if (state != SQLLOCK_STATE_HELD && state != SQLLOCK_STATE_UNCERTAIN)
        return 0;
    left = (atomic_load(&l->deadline_us) - sqllock__now_us()) / 1000;
    return left > 0 ? left : 0;
}

/* ------------------------------------------------------------------------
 * Several names at once (contract L11).
 * ---------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    const sqllock_lease *x = *(sqllock_lease *const *)a;
    const sqllock_lease *y = *(sqllock_lease *const *)b;

    return strcmp(x->name, y->name);    /* byte order: unsigned char */
}

/*
 * Checks the array of a call on several leases and copies it into
 * `sorted`, ordered by name (byte order), rejecting a name given twice.
 */
static int many_check(sqllock_db *db, sqllock_lease *const *leases, int n,
                      sqllock_lease **sorted, const char *op)
{
    int i;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (leases == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: the "
                             "array of leases is NULL", op);
    if (n < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: no "
                             "lease given (n = %d)", op, n);
    if (n > SQLLOCK_LEASE_MANY_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: %d "
                             "given; the limit is %d at once", op, n,
                             SQLLOCK_LEASE_MANY_MAX);
    for (i = 0; i < n; i++) {
        if (leases[i] == NULL)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: "
                                 "lease %d of %d is NULL", op, i + 1, n);
        if (leases[i]->db != db)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: "
                                 "lease '%s' was made on another database "
                                 "handle", op, leases[i]->name);
        sorted[i] = leases[i];
    }
    qsort(sorted, (size_t)n, sizeof *sorted, by_name);
    for (i = 1; i < n; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s several leases: "
                                 "lock '%s' is given twice", op,
                                 sorted[i]->name);
    return SQLLOCK_OK;
}

/*
 * One attempt at taking every name of `s` (sorted by name), all or none,
 * in one transaction: the acquire statement of each name in that order,
 * then the commit; at the first name held by another owner, a rollback.
 * Sorted, two such transactions lock their common names in the same
 * order and never wait for each other in a cycle. *blocker is the index
 * in `s` of the held name. Tokens drawn for names before it go with the
 * rollback or stay unused (a sequence, an AUTO_INCREMENT): a gap in the
 * counter, which L5 allows.
 */
/*
 * The same attempt in one round trip, where the dialect has a routine
 * for it (LEASE_ACQUIRE_MANY, sqllock_driver.h version 9) and the
 * leases share their ttl and holder text (the routine takes one of
 * each). SQLLOCK_ENOSCHEMA or SQLLOCK_EPERM: not installed or not
 * allowed, nothing changed; the caller uses the transaction.
 */
static int many_one_trip(sqllock_db *db, sqllock_lease **s, int n,
                         int *blocker, int64_t *tokens)
{
    sqllock_sql_id id = SQLLOCK_SQL_LEASE_ACQUIRE_MANY;
    const char *what = "acquiring several leases";
    sqllock_value args[4];
    size_t len = 0, at = 0, ot = 0;
    char *names, *owners, *end;
    const char *p;
    int i, rc, has_row = 0, more = 0;
    int64_t k = 0;

    for (i = 0; i < n; i++)
        len += strlen(s[i]->name) + 1;
    names = malloc(len);
    owners = malloc((size_t)n * (SQLLOCK_OWNER_LEN + 1));
    if (names == NULL || owners == NULL) {
        free(names);
        free(owners);
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        size_t nl = strlen(s[i]->name);

        if (i > 0) {
            names[at++] = '\n';
            owners[ot++] = '\n';
        }
        memcpy(names + at, s[i]->name, nl);
        at += nl;
        memcpy(owners + ot, s[i]->owner, SQLLOCK_OWNER_LEN);
        ot += SQLLOCK_OWNER_LEN;
    }
    args[0] = sqllock__text("");
    args[0].s = names;
    args[0].len = at;
    args[1] = sqllock__text("");
    args[1].s = owners;
    args[1].len = ot;
    args[2] = sqllock__text(s[0]->holder);
    args[3] = sqllock__int(s[0]->ttl_ms);
    rc = sqllock__run(db, id, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = sqllock__fetch(db, id, &has_row, what);
    if (rc == SQLLOCK_OK && has_row) {
        k = db->drv->column_int64(db->stmts[id], 0);
        p = db->drv->column_text(db->stmts[id], 1);
        for (i = 0; k == 0 && i < n; i++) {
            tokens[i] = p != NULL ? strtoll(p, &end, 10) : 0;
            if (p == NULL || end == p || tokens[i] <= 0) {
                rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire "
                                   "routine returned %d tokens, not %d",
                                   what, i, n);
                break;
            }
            p = end;
        }
        while (rc == SQLLOCK_OK &&
               (rc = sqllock__fetch(db, id, &more, what)) == SQLLOCK_OK &&
               more)
            ;
    }
    sqllock__end(db, id);
    free(names);
    free(owners);
    if (rc == SQLLOCK_OK && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "returned no row", what);
    if (rc == SQLLOCK_OK && (k < 0 || k > n))
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "named position %lld of %d", what, (long long)k,
                           n);
    if (rc == SQLLOCK_OK)
        *blocker = (int)k - 1;
    return rc;
}

/* The routine takes one ttl and one holder text for all. */
static int many_routine_fits(sqllock_db *db, sqllock_lease **s, int n)
{
    const sqllock_sql *sql = sqllock__sql_of(db->drv,
                                             SQLLOCK_SQL_LEASE_ACQUIRE_MANY);
    int i;

    if (sql == NULL || sql->text == NULL || db->no_many_routine)
        return 0;
    for (i = 1; i < n; i++)
        if (s[i]->ttl_ms != s[0]->ttl_ms ||
            strcmp(s[i]->holder, s[0]->holder) != 0)
            return 0;
    return 1;
}

static int many_insert(sqllock_db *db, sqllock_lease **s, int n, int *blocker)
{
    const char *what = "acquiring several leases";
    int64_t tokens[SQLLOCK_LEASE_MANY_MAX], sent_us;
    sqllock_value args[4];
    int i, rc, got = 0;

    *blocker = -1;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    for (i = 0; i < n; i++) {
        s[i]->busy_companion = 0;
        if ((rc = new_owner(s[i])) != SQLLOCK_OK)
            return rc;
    }
    sent_us = sqllock__now_us();
    if (many_routine_fits(db, s, n)) {
        rc = many_one_trip(db, s, n, blocker, tokens);
        if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
            goto done;
        /* Not installed (an older sqllock_init()), or not allowed: the
         * transaction, from now on for this connection. */
        db->no_many_routine = 1;
        *blocker = -1;
    }
    rc = sqllock__begin(db, what);
    for (i = 0; rc == SQLLOCK_OK && i < n; i++) {
        args[0] = sqllock__text(s[i]->name);
        args[1] = sqllock__text(s[i]->owner);
        args[2] = sqllock__text(s[i]->holder);
        args[3] = sqllock__int(s[i]->ttl_ms);
        tokens[i] = 0;
        got = 0;
        if (db->drv->caps & SQLLOCK_CAP_RETURNING) {
            rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE, args, 4, what);
            if (rc == SQLLOCK_OK)
                rc = first_int_then_drain(db, SQLLOCK_SQL_LEASE_ACQUIRE, &got,
                                          &tokens[i], what);
        } else {
            rc = acquire_statements(db, args, &got, &tokens[i]);
        }
        if (rc == SQLLOCK_OK && !got) {
            *blocker = i;
            break;
        }
    }
    if (rc == SQLLOCK_OK && *blocker < 0)
        rc = sqllock__commit(db, what);
    else if (db->conn != NULL)
        sqllock__rollback(db);
done:
    if (rc != SQLLOCK_OK || *blocker >= 0) {
        for (i = 0; i < n; i++)
            forget(s[i]);
        if (rc != SQLLOCK_OK)
            return rc;
        return sqllock__fail(db, SQLLOCK_BUSY, "lock '%s' is held by another "
                             "owner; none of the %d locks was taken",
                             s[*blocker]->name, n);
    }
    for (i = 0; i < n; i++) {
        s[i]->count = 1;
        s[i]->token = tokens[i];
        s[i]->companion = 0;
        atomic_store(&s[i]->deadline_us,
                     sent_us + (s[i]->ttl_ms - s[i]->margin_ms) * 1000);
        atomic_store(&s[i]->state, SQLLOCK_STATE_HELD);
    }
    return sqllock__ok(db);
}

/* One attempt, run again a few times when the database rolled it back
 * (as sqllock_lease_try_acquire(): InnoDB can deadlock two transactions
 * whose duplicate-key checks lock neighbouring gaps, whatever order
 * their names come in; the rollback undid everything). */
static int many_try(sqllock_db *db, sqllock_lease **s, int n, int *blocker)
{
    char why[SQLLOCK__ERRMSG_MAX];
    int rc, attempt;

    for (attempt = 0;; attempt++) {
        rc = many_insert(db, s, n, blocker);
        if (!rolled_back(rc))
            return rc;
        if (attempt == ROLLBACK_RETRIES)
            break;
        sqllock__sleep_ms(sqllock__rand_upto(s[0]->backoff_min_ms));
    }
    memcpy(why, db->errmsg, sizeof why);
    *blocker = 0;
    return sqllock__fail(db, SQLLOCK_BUSY, "the locks are being taken by "
                         "other owners (%s); none was taken", why);
}

/*
 * Waiting for several names (L9, L11): after a busy try, the waiter
 * waits for the name that was found held (the blocker: nothing can be
 * taken before it is free), through the same wake-ups as a waiter on that
 * name alone -- in-process, LISTEN on PostgreSQL (each blocker met stays
 * listened to for the rest of the wait, so a release of any of them ends
 * the sleep), the blocker's companion session lock on MySQL/MariaDB --
 * with the backoff of the blocker's lease underneath.
 */
int sqllock_lease_acquire_many(sqllock_db *db, sqllock_lease *const *leases,
                               int n, int64_t wait_ms)
{
    sqllock_lease *s[SQLLOCK_LEASE_MANY_MAX], *b;
    uint64_t seen[SQLLOCK_LEASE_MANY_MAX];
    char listened[SQLLOCK_LEASE_MANY_MAX];
    char channel[SQLLOCK__CHANNEL_MAX];
    int64_t deadline, now, sleep_ms;
    int i, rc, blocker, attempt = 0, woke, notify, listening = 0;
    int session = -1, plain_next = 0, wake;
    sqllock__backoff_hook *hook;

    rc = many_check(db, leases, n, s, "acquiring");
    if (rc != SQLLOCK_OK)
        return rc;
    if (wait_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the wait time must not "
                             "be negative (got %lld ms)", (long long)wait_ms);
    if ((rc = sqllock__refuse_borrowed(db, "a lease")) != SQLLOCK_OK)
        return rc;
    for (i = 0; i < n; i++) {
        if ((rc = refuse_in_txn(s[i], "acquiring")) != SQLLOCK_OK)
            return rc;
        if (s[i]->count > 0)
            return sqllock__fail(db, SQLLOCK_EMISUSE, "acquiring several "
                                 "leases: the handle of lock '%s' holds it "
                                 "already; a multi-name acquire takes only "
                                 "names its handles do not hold", s[i]->name);
        if (s[i]->flags & SQLLOCK_LEASE_FAST)
            return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "acquiring "
                                 "several leases: lock '%s' is in fast mode "
                                 "(SQLLOCK_LEASE_FAST), which a multi-name "
                                 "acquire does not take", s[i]->name);
    }
    memset(listened, 0, sizeof listened);
    notify = db->drv != NULL && sqllock__can_notify(db);
    now = sqllock__now_ms();
    deadline = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    for (;;) {
        for (i = 0; i < n; i++)
            seen[i] = sqllock__wake_gen(s[i]->wake_key);
        rc = many_try(db, s, n, &blocker);
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        if (blocker < 0)
            blocker = 0;
        b = s[blocker];
        now = sqllock__now_ms();
        if (now >= deadline) {
            rc = sqllock__fail(db, SQLLOCK_TIMEOUT, "lock '%s' was still %s "
                               "after waiting %lld ms; none of the %d locks "
                               "was taken", b->name,
                               rc == SQLLOCK_BUSY ? "held by another owner"
                               : "out of reach (the database stayed busy)",
                               (long long)wait_ms, n);
            break;
        }
        wake = !(b->flags & SQLLOCK_LEASE_NO_WAKEUP);
        if (notify && wake && !listened[blocker]) {
            sqllock__wake_channel(b->name, channel);
            if (sqllock__listen(db, channel, 1) == SQLLOCK_OK) {
                listened[blocker] = 1;
                listening = 1;
                continue;           /* a release before the LISTEN */
            }
            notify = 0;
        }
        if (session < 0) {
            int usable = 0;

            if (notify)
                session = 0;
            else if (sqllock__session_wake(db, &usable) == SQLLOCK_OK)
                session = usable;
        }
        if (session > 0 && wake && !plain_next) {
            sleep_ms = backoff_cap_ms(b, attempt);
            if (sleep_ms > deadline - now)
                sleep_ms = deadline - now;
            hook = atomic_load(&sqllock__on_backoff);
            if (hook != NULL)
                hook(b->name, sleep_ms, 1);
            if (pause_on_companion(b, sleep_ms, seen[blocker], &woke) !=
                SQLLOCK_OK) {
                woke = 0;
                session = 0;
            }
            plain_next = woke;
            if (attempt < 62)
                attempt++;
            continue;
        }
        plain_next = 0;
        sleep_ms = backoff_ms(b, attempt);
        if (sleep_ms > deadline - now)
            sleep_ms = deadline - now;
        hook = atomic_load(&sqllock__on_backoff);
        if (hook != NULL)
            hook(b->name, sleep_ms, listening);
        if (listening) {
            if (sqllock__wait_notify(db, sleep_ms, &woke) != SQLLOCK_OK) {
                listening = 0;
                memset(listened, 0, sizeof listened);
            }
        } else if (wake) {
            sqllock__wake_wait(b->wake_key, seen[blocker], sleep_ms);
        } else {
            sqllock__sleep_ms(sleep_ms);
        }
        if (attempt < 62)
            attempt++;
    }
    /* UNLISTEN leaves the handle's status and message as they are. */
    for (i = 0; i < n; i++)
        if (listened[i]) {
            sqllock__wake_channel(s[i]->name, channel);
            sqllock__listen(db, channel, 0);
        }
    return rc;
}

/*
 * Releases every lease of the array that its handle holds, in name
 * order, each as sqllock_lease_release() does (one statement each: a
 * release takes one row and waits for no other, so no order of releases
 * can deadlock). Every lease is released whatever happens to the
 * others; the status is the first failure's (SQLLOCK_LOST: that name
 * had been lost), with its message, else SQLLOCK_OK.
 */
int sqllock_lease_release_many(sqllock_db *db, sqllock_lease *const *leases,
                               int n)
{
    sqllock_lease *s[SQLLOCK_LEASE_MANY_MAX];
    char first[SQLLOCK__ERRMSG_MAX];
    int i, rc, worst = SQLLOCK_OK;

    rc = many_check(db, leases, n, s, "releasing");
    if (rc != SQLLOCK_OK)
        return rc;
    for (i = 0; i < n; i++) {
        rc = sqllock_lease_release(s[i]);
        if (rc != SQLLOCK_OK && worst == SQLLOCK_OK) {
            worst = rc;
            memcpy(first, db->errmsg, sizeof first);
        }
    }
    if (worst != SQLLOCK_OK)
        return sqllock__fail(db, worst, "%s", first);
    return sqllock__ok(db);
}
