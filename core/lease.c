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

int sqllock__derived_name(sqllock_db *db, char *out, const char *base,
                          const char *tag, const char *what)
{
    size_t blen, tlen, i;
    int rc;

    if ((rc = sqllock__check_name(db, base, what)) != SQLLOCK_OK)
        return rc;
    blen = strlen(base);
    if (blen > SQLLOCK_PRIMITIVE_NAME_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is %zu bytes long; "
                             "the limit is %d bytes (SQLLOCK_PRIMITIVE_NAME_MAX)",
                             what, blen, SQLLOCK_PRIMITIVE_NAME_MAX);
    tlen = tag != NULL ? strlen(tag) : 0;
    if (tlen > SQLLOCK__TAG_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "derived name tag too "
                             "long");
    for (i = 0; i < tlen; i++)
        if (tag[i] < 0x21 || tag[i] > 0x7e)
            return sqllock__fail(db, SQLLOCK_EINVAL, "derived name tag "
                                 "not printable");
    memcpy(out, base, blen);
    out[blen] = SQLLOCK__SEP;
    if (tlen > 0)
        memcpy(out + blen + 1, tag, tlen);
    out[blen + 1 + tlen] = '\0';
    return SQLLOCK_OK;
}

void sqllock__derived_range(const char *base, char *lo, char *hi)
{
    size_t blen = strlen(base);

    memcpy(lo, base, blen);
    lo[blen] = SQLLOCK__SEP;
    lo[blen + 1] = '\0';
    memcpy(hi, base, blen);
    hi[blen] = ' ';             /* the byte after the separator */
    hi[blen + 1] = '\0';
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
    if (l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST |
                     SQLLOCK_LEASE_FAIR))
        return sqllock__fail(db, SQLLOCK_EINVAL, "unknown lease flags 0x%x",
                             l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP |
                                          SQLLOCK_LEASE_FAST |
                                          SQLLOCK_LEASE_FAIR));
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
    l->release_timeout_ms = opts->struct_version >= 3 ?
                            opts->release_timeout_ms : 0;
    if (l->release_timeout_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the release timeout must "
                             "not be negative (got %lld ms)",
                             (long long)l->release_timeout_ms);
    if (l->release_timeout_ms == 0)
        l->release_timeout_ms = SQLLOCK__RELEASE_TIMEOUT_MS;
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

static int lease_make(sqllock_db *db, const char *name, int derived,
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
    if (derived) {
        if (name == NULL || strlen(name) > SQLLOCK__DERIVED_MAX)
            return sqllock__fail(db, SQLLOCK_EINVAL, "bad derived name");
    } else if ((rc = sqllock__check_name(db, name, "lock name")) !=
               SQLLOCK_OK) {
        return rc;
    }
    l = calloc(1, sizeof *l);
    if (l == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    rc = apply_options(db, l, opts);
    if (rc != SQLLOCK_OK) {
        free(l);
        return rc;
    }
    /* A fair lease's queue rows are derived names (lease_fair.c, M3). */
    if ((l->flags & SQLLOCK_LEASE_FAIR) &&
        strlen(name) > SQLLOCK_PRIMITIVE_NAME_MAX) {
        free(l);
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lock name of a fair "
                             "lease (SQLLOCK_LEASE_FAIR) is %zu bytes long; "
                             "the limit is %d bytes "
                             "(SQLLOCK_PRIMITIVE_NAME_MAX)", strlen(name),
                             SQLLOCK_PRIMITIVE_NAME_MAX);
    }
    l->db = db;
    l->derived = derived;
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
    int rc = lease_make(db, name, 0, opts, out);

    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

int sqllock__lease_new_derived(sqllock_db *db, const char *derived,
                               const sqllock_lease_options *opts,
                               sqllock_lease **out)
{
    int rc = lease_make(db, derived, 1, opts, out);

    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

/* 1 when `name` is a primitive's row as sqllock_list() reports it: a
 * lock name of at most SQLLOCK_PRIMITIVE_NAME_MAX bytes, the separator,
 * and a tag of printable ASCII (issue 27 item 4); else 0, and the name
 * is checked as a lock name. */
static int derived_row(sqllock_db *db, const char *name)
{
    const char *sep = name != NULL ? strchr(name, SQLLOCK__SEP) : NULL;
    char base[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    size_t blen, i;

    if (db == NULL || sep == NULL || sep == name || sep[1] == '\0' ||
        strlen(name) > SQLLOCK__DERIVED_MAX)
        return 0;
    blen = (size_t)(sep - name);
    if (blen > SQLLOCK_PRIMITIVE_NAME_MAX)
        return 0;
    for (i = 1; sep[i] != '\0'; i++)
        if (sep[i] < 0x21 || sep[i] > 0x7e)
            return 0;
    memcpy(base, name, blen);
    base[blen] = '\0';
    if (sqllock__check_name(db, base, "lock name") != SQLLOCK_OK) {
        sqllock__ok(db);
        return 0;
    }
    return 1;
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
    rc = lease_make(db, name, derived_row(db, name), opts, out);
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
void sqllock__lease_forget(sqllock_lease *l)
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

int sqllock__lease_new_owner(sqllock_lease *l)
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
int sqllock__first_int(sqllock_db *db, sqllock_sql_id id, int *has_row,
                       int64_t *value, const char *what)
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
int sqllock__lease_acquire_statements(sqllock_db *db,
                                      const sqllock_value *args, int *got,
                                      int64_t *token)
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
    rc = sqllock__lease_acquire_statements(db, args, got, token);
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
 * A routine of the dialect was refused on this connection (`id` is the
 * statement that calls it; SQLLOCK_EPERM, no EXECUTE on it, or
 * SQLLOCK_ENOSCHEMA, not installed): the connection takes the
 * statements instead from now on, and does not ask again. The acquire
 * routine (LEASE_ACQUIRE_ONE, sqllock_acquire_v1 on MySQL) is the oldest
 * routine and the one docs/databases.md tells a least-privilege user to be
 * granted: where it is refused, so are the later ones (the wake-up and
 * the multi-name routines were not installed either, or the user has no
 * EXECUTE at all), which are then not tried, each a failed round trip
 * saved. The converse does not hold: a user granted EXECUTE on
 * sqllock_acquire_v1 alone, or a schema made by a version with that
 * routine only, refuses the later routines and still runs the acquire
 * routine, so a refusal of a later one marks that one only.
 */
void sqllock__routine_refused(sqllock_db *db, sqllock_sql_id id)
{
    switch (id) {
    case SQLLOCK_SQL_LEASE_ACQUIRE_ONE:
        db->no_routine = 1;
        db->no_wake_routine = 1;
        db->no_many_routine = 1;
        break;
    case SQLLOCK_SQL_LEASE_ACQUIRE_WAKE:
    case SQLLOCK_SQL_LEASE_RELEASE_WAKE:
        db->no_wake_routine = 1;
        break;
    case SQLLOCK_SQL_LEASE_ACQUIRE_MANY:
        db->no_many_routine = 1;
        break;
    default:
        break;
    }
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
            sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_ACQUIRE_WAKE);
        }
    }
    if (one == NULL || one->text == NULL || db->no_routine)
        return acquire_in_transaction(db, args, got, token);
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = sqllock__first_int(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, &has_row,
                                  token, what);
    if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EPERM) {
        /* Not installed (sqllock_init() of an older version made the
         * schema), or the user may not run it: the statements, from now
         * on for this connection. Neither failure changed anything. */
        sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE);
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
    if (l->fixed_owner != NULL)
        snprintf(l->owner, sizeof l->owner, "%s", l->fixed_owner);
    else if ((rc = sqllock__lease_new_owner(l)) != SQLLOCK_OK)
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
            rc = sqllock__first_int(db, id, &got, &token, what);
    } else {
        rc = acquire_one_trip(db, args, &got, &token,
                              !(l->flags & SQLLOCK_LEASE_NO_WAKEUP),
                              &companion);
    }
    if (rc != SQLLOCK_OK) {
        sqllock__lease_forget(l);
        return rc;
    }
    if (!got) {
        sqllock__lease_forget(l);
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

int sqllock_lease_release(sqllock_lease *l)
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
    unwatch(l);
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
    sqllock__lease_forget(l);
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


/*
 * The public try: a handle over a primitive's row is refused (its
 * primitive takes it), and a try that finds the name held reads its row
 * to tell a kind marker from a holder (N1, core/kind.c). A fair lease's
 * try first looks at its queue (lease_fair.c, M3).
 */
int sqllock_lease_try_acquire(sqllock_lease *l)
{
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = sqllock__lease_refuse_in_txn(l, "acquiring")) != SQLLOCK_OK ||
        (rc = sqllock__lease_acquirable(l)) != SQLLOCK_OK)
        return rc;
    return sqllock__kind_busy(l, sqllock__lease_try(l), NULL);
}

int sqllock__lease_try(sqllock_lease *l)
{
    if (l != NULL && (l->flags & SQLLOCK_LEASE_FAIR))
        return sqllock__fair_try(l);
    return sqllock__lease_try_plain(l);
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
        rc = lease_insert(l);
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
    return insert_retried(&l);
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
