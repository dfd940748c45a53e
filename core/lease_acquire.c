/*
 * lease_acquire.c -- the public acquire of a lease: a try, and a wait.
 *
 * The calls an application makes on its lease handle, which decide what
 * kind of acquire the handle gets: a handle over a primitive's row is
 * refused (its primitive takes it, kind.c); a fair lease looks at its
 * queue first (lease_fair.c, M3); any other tries the row (lease.c) and,
 * while the name is held, waits with backoff and wake-ups (lease_wait.c,
 * L9). A try that finds the name held reads its row, to tell a kind
 * marker (SQLLOCK_EKIND) from a holder (N1).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/*
 * The public try: a handle over a primitive's row is refused (its
 * primitive takes it), and a try that finds the name held reads its row
 * to tell a kind marker from a holder (N1, core/kind.c). A fair lease's
 * try first looks at its queue (lease_fair.c, M3).
 */
static int try_acquire_body(sqllock_lease *l)
{
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = sqllock__lease_refuse_in_txn(l, "acquiring")) != SQLLOCK_OK ||
        (rc = sqllock__lease_acquirable(l)) != SQLLOCK_OK)
        return rc;
    return sqllock__kind_busy(l, sqllock__lease_try(l), NULL);
}

int sqllock_lease_try_acquire(sqllock_lease *l)
{
    sqllock__mcall c;
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, l->db, SQLLOCK__OP_ACQUIRE);
    rc = try_acquire_body(l);
    return sqllock__m_acquired(&c, sqllock__lease_mkind(l), rc, l->name,
                               l->token);
}

int sqllock__lease_try(sqllock_lease *l)
{
    if (l != NULL && (l->flags & SQLLOCK_LEASE_FAIR))
        return sqllock__fair_try(l);
    return sqllock__lease_try_plain(l);
}

int sqllock_lease_cancel(sqllock_lease *l, int cancel)
{
    if (l == NULL)
        return SQLLOCK_EINVAL;
    /* Only this atomic: the waiting thread owns everything else. */
    atomic_store(&l->cancel, cancel != 0);
    return SQLLOCK_OK;
}

int sqllock__lease_canceled(sqllock_lease *l)
{
    if (!atomic_exchange(&l->cancel, 0))
        return SQLLOCK_OK;
    return sqllock__fail(l->db, SQLLOCK_ECANCELED, "the wait for lock '%s' "
                         "was canceled (sqllock_lease_cancel())", l->name);
}

static int acquire_body(sqllock_lease *l, int64_t wait_ms)
{
    sqllock__wait w;
    uint64_t seen;
    int64_t kind_next = 0, checked;
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    if (wait_ms < 0)
        return sqllock__fail(l->db, SQLLOCK_EINVAL, "the wait time must not "
                             "be negative (got %lld ms)", (long long)wait_ms);
    if ((rc = sqllock__lease_refuse_in_txn(l, "acquiring")) != SQLLOCK_OK ||
        (rc = sqllock__lease_acquirable(l)) != SQLLOCK_OK)
        return rc;
    if (l->flags & SQLLOCK_LEASE_FAIR)
        return sqllock__fair_acquire(l, wait_ms);       /* lease_fair.c */
    sqllock__wait_start(&w, l->db, 1, wait_ms);
    for (;;) {
        /* A cancel from another thread: before each try, so that a
         * request made before the wait began ends it before any. */
        if (wait_ms != 0 && (rc = sqllock__lease_canceled(l)) != SQLLOCK_OK)
            break;
        /* The in-process generation before the try, so that a release in
         * this process between the try and the pause is not missed. */
        seen = sqllock__wake_gen(l->wake_key);
        rc = sqllock__lease_try(l);
        /* N1: a name found held is read at the first busy try, and again
         * once a second while the wait goes on, to tell a kind marker
         * (which never goes: SQLLOCK_EKIND now) from a holder. */
        checked = kind_next;
        rc = sqllock__kind_busy(l, rc, &kind_next);
        checked = checked != kind_next;
        /* Contention, and a database too busy to answer in time, are
         * both worth another try; anything else ends the wait. */
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        if (sqllock__now_ms() >= w.deadline) {
            /* A last look at the row (unless the try just had one):
             * a marker made during the wait is EKIND, not a timeout. */
            if (rc == SQLLOCK_BUSY && !checked) {
                rc = sqllock__kind_busy(l, rc, NULL);
                if (rc != SQLLOCK_BUSY)
                    break;
            }
            rc = sqllock__fail(l->db, SQLLOCK_TIMEOUT, "lock '%s' was still "
                               "%s after waiting %lld ms", l->name,
                               rc == SQLLOCK_BUSY ? "held by another owner"
                               : "out of reach (the database stayed busy)",
                               (long long)wait_ms);
            break;
        }
        sqllock__wait_pause(&w, l, 0, seen);
    }
    sqllock__wait_end(&w, &l);
    return rc;
}

int sqllock_lease_acquire(sqllock_lease *l, int64_t wait_ms)
{
    sqllock__mcall c;
    int rc;

    if (l == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, l->db, SQLLOCK__OP_ACQUIRE);
    rc = acquire_body(l, wait_ms);
    return sqllock__m_acquired(&c, sqllock__lease_mkind(l), rc, l->name,
                               l->token);
}

/* The kind of acquire a lease handle's calls count as (metrics.c). */
int sqllock__lease_mkind(const sqllock_lease *l)
{
    if (l->kind == SQLLOCK__KIND_LEADER)
        return SQLLOCK__MK_LEADER;
    if (l->flags & SQLLOCK_LEASE_FAIR)
        return SQLLOCK__MK_FAIR;
    return SQLLOCK__MK_LEASE;
}
