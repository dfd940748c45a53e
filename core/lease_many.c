/*
 * lease_many.c -- several leases at once, all or none (DESIGN L12):
 * sqllock_lease_acquire_many() and sqllock_lease_release_many().
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
 * for it (LEASE_ACQUIRE_MANY, sqllock_driver.h) and the
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

    if (sql == NULL || db->no_many_routine)
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
        if ((rc = sqllock__lease_new_owner(s[i])) != SQLLOCK_OK)
            return rc;
    }
    sent_us = sqllock__now_us();
    if (many_routine_fits(db, s, n)) {
        rc = many_one_trip(db, s, n, blocker, tokens);
        if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
            goto done;
        /* Not installed (an older sqllock_init()), or not allowed: the
         * transaction, from now on for this connection. */
        sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_ACQUIRE_MANY);
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
                rc = sqllock__first_int(db, SQLLOCK_SQL_LEASE_ACQUIRE, &got,
                                          &tokens[i], what);
        } else {
            rc = sqllock__lease_acquire_statements(db, args, &got, &tokens[i]);
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
            sqllock__lease_forget(s[i]);
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
        sqllock__m_grant(s[i]);
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
        if (!sqllock__rolled_back(rc))
            return rc;
        if (attempt == SQLLOCK__ROLLBACK_RETRIES)
            break;
        sqllock__sleep_ms(sqllock__rand_upto(s[0]->backoff_min_ms));
    }
    memcpy(why, db->errmsg, sizeof why);
    *blocker = 0;
    return sqllock__fail(db, SQLLOCK_BUSY, "the locks are being taken by "
                         "other owners (%s); none was taken", why);
}

/*
 * Waiting for several names (L9, L12): after a busy try, the waiter
 * waits for the name that was found held (the blocker: nothing can be
 * taken before it is free), through the same wake-ups as a waiter on that
 * name alone -- in-process, LISTEN on PostgreSQL (each blocker met stays
 * listened to for the rest of the wait, so a release of any of them ends
 * the sleep), the blocker's companion session lock on MySQL/MariaDB --
 * with the backoff of the blocker's lease underneath.
 */
static int acquire_many_body(sqllock_db *db, sqllock_lease *const *leases,
                             int n, int64_t wait_ms)
{
    sqllock_lease *s[SQLLOCK_LEASE_MANY_MAX], *b;
    uint64_t seen[SQLLOCK_LEASE_MANY_MAX];
    sqllock__wait w;
    int64_t kind_next = 0, checked;
    int i, rc, blocker;

    rc = many_check(db, leases, n, s, "acquiring");
    if (rc != SQLLOCK_OK)
        return rc;
    if (wait_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the wait time must not "
                             "be negative (got %lld ms)", (long long)wait_ms);
    if ((rc = sqllock__refuse_borrowed(db, "a lease")) != SQLLOCK_OK)
        return rc;
    for (i = 0; i < n; i++) {
        if ((rc = sqllock__lease_refuse_in_txn(s[i], "acquiring")) !=
            SQLLOCK_OK)
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
        if (s[i]->flags & SQLLOCK_LEASE_FAIR)
            return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "acquiring "
                                 "several leases: lock '%s' waits fairly "
                                 "(SQLLOCK_LEASE_FAIR), which a multi-name "
                                 "acquire does not do", s[i]->name);
    }
    /* A handle over a primitive's row is refused; a leadership lease's
     * election is marked first (N1, issue 26 item 8b). */
    for (i = 0; i < n; i++)
        if ((rc = sqllock__lease_acquirable(s[i])) != SQLLOCK_OK)
            return rc;
    sqllock__wait_start(&w, db, n, wait_ms);
    for (;;) {
        for (i = 0; i < n; i++)
            seen[i] = sqllock__wake_gen(s[i]->wake_key);
        rc = many_try(db, s, n, &blocker);
        if (blocker < 0)
            blocker = 0;
        b = s[blocker];
        /* N1: the name found held is read at the first busy try and
         * once a second while the wait goes on: a kind marker there is
         * SQLLOCK_EKIND, not contention. */
        checked = kind_next;
        rc = sqllock__kind_busy(b, rc, &kind_next);
        checked = checked != kind_next;
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        if (sqllock__now_ms() >= w.deadline) {
            if (rc == SQLLOCK_BUSY && !checked &&
                (rc = sqllock__kind_busy(b, rc, NULL)) != SQLLOCK_BUSY)
                break;
            rc = sqllock__fail(db, SQLLOCK_TIMEOUT, "lock '%s' was still %s "
                               "after waiting %lld ms; none of the %d locks "
                               "was taken", b->name,
                               rc == SQLLOCK_BUSY ? "held by another owner"
                               : "out of reach (the database stayed busy)",
                               (long long)wait_ms, n);
            break;
        }
        sqllock__wait_pause(&w, b, blocker, seen[blocker]);
    }
    sqllock__wait_end(&w, s);
    return rc;
}

int sqllock_lease_acquire_many(sqllock_db *db, sqllock_lease *const *leases,
                               int n, int64_t wait_ms)
{
    sqllock__mcall c;
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, db, SQLLOCK__OP_ACQUIRE);
    rc = acquire_many_body(db, leases, n, wait_ms);
    /* Named by its first lease (the event's name; counted once). */
    return sqllock__m_acquired(&c, SQLLOCK__MK_MANY, rc,
                               leases != NULL && n > 0 && leases[0] != NULL
                               ? leases[0]->name : "",
                               rc == SQLLOCK_OK ? leases[0]->token : 0);
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
