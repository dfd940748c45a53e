/*
 * sem.c -- semaphores with N permits (DESIGN M1).
 *
 * A permit is a slot lease: permit i of semaphore NAME is the ordinary
 * lease row NAME 0x1f "p<i>" (a derived name, core/internal.h), i in
 * [0, N). The lease table's unique key then keeps the server from ever
 * holding more than N live permits of an acquirer's N, and each permit has
 * all that a lease has: an owner of its own, expiry and takeover by the
 * server's clock (L1, L2), owner-checked release (L3), LOST (L4), a
 * fencing token (L5), the watchdog (L7) and the reaper (P1).
 *
 * A try takes one random slot directly -- one round trip, which succeeds
 * at once while the semaphore has room -- and, when that slot is held,
 * reads the semaphore's rows (LEASE_RANGE, one index range scan) and tries
 * the slots below N that are free or expired, in random order, until one
 * is granted; a slot taken meanwhile by someone else only sends it on to
 * the next. When every slot below N is live, the semaphore is busy.
 *
 * Waiting (L9). A waiting acquire pauses on the slot its direct try found
 * held -- a fresh random one each round -- with the lease waiter of
 * lease_wait.c: that slot's PostgreSQL channel (the LISTEN stays on for
 * the rest of the wait, so a waiter hears the slots it has waited on, at
 * most SEM_WAIT_SLOTS of them), that slot's MySQL companion lock, or its
 * in-process wake-up key. A permit's release wakes the waiters of its own
 * slot, not every waiter of the semaphore: with W waiters spread over N
 * slots about W/N wake (on MySQL and in a process; on PostgreSQL those
 * that have listened on the slot), and a release of a slot no one waits
 * on is found at the next backoff, which stays underneath as for locks.
 *
 * N is the acquirer's: nothing stores it. An acquirer with N takes only
 * slots below N; holders of higher slots (granted under a larger N) keep
 * them until they release or lose them (docs/contract.md, M1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The distinct slots a waiting acquire pauses on (and, on PostgreSQL,
 * LISTENs to); after that it pauses on one of them again. */
#define SEM_WAIT_SLOTS 8

struct sqllock_sem {
    sqllock_db *db;
    int permits;
    int held;                      /* the slot whose permit the handle
                                      took, or -1 */
    int kind_checked;              /* NAME's row is the semaphores'
                                      marker (N1) */
    sqllock_lease_options opts;    /* holder -> holder[] below */
    sqllock_lease **slot;          /* [permits], each made on first use */
    char holder[SQLLOCK_HOLDER_MAX + 1];
    char name[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
};

/* The lease handle of slot i, made on first use. */
static int slot_lease(sqllock_sem *s, int i, sqllock_lease **out)
{
    char derived[SQLLOCK__DERIVED_MAX + 1], tag[16];
    int rc;

    if (s->slot[i] == NULL) {
        snprintf(tag, sizeof tag, "p%d", i);
        rc = sqllock__derived_name(s->db, derived, s->name, tag,
                                   "semaphore name");
        if (rc == SQLLOCK_OK)
            rc = sqllock__lease_new_derived(s->db, derived, &s->opts,
                                            &s->slot[i]);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    *out = s->slot[i];
    return SQLLOCK_OK;
}

/* The slot of a permit row's name (base SEP "p<i>"), or -1. */
static int slot_of(const char *name, size_t prefix)
{
    const char *p = name + prefix;
    long v = 0;

    if (strlen(name) <= prefix || *p++ != 'p' || *p == '\0' ||
        (*p == '0' && p[1] != '\0'))
        return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > SQLLOCK_SEM_PERMITS_MAX)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < SQLLOCK_SEM_PERMITS_MAX ? (int)v : -1;
}

typedef struct range_ctx {
    size_t prefix;          /* strlen(base) + 1 */
    int permits;            /* slots of interest: [0, permits) */
    char *live;             /* [permits]: 1 for a live row, or NULL */
    int nlive;              /* live rows of any slot */
} range_ctx;

static int range_row(void *ctx, const sqllock_lease_info *info)
{
    range_ctx *r = ctx;
    int i = slot_of(info->name, r->prefix);

    if (i < 0 || info->remaining_ms <= 0)
        return 0;
    r->nlive++;
    if (r->live != NULL && i < r->permits)
        r->live[i] = 1;
    return 0;
}

/* The live permit rows of `base` (checked): r->live and r->nlive. */
static int read_permits(sqllock_db *db, const char *base, range_ctx *r)
{
    char lo[SQLLOCK__DERIVED_MAX + 1], hi[SQLLOCK__DERIVED_MAX + 1];
    int rc;

    sqllock__derived_range(base, lo, hi);
    r->prefix = strlen(base) + 1;
    r->nlive = 0;
    rc = sqllock__lease_range(db, lo, hi, range_row, r,
                              "reading the semaphore's permits");
    return rc < 0 ? rc : SQLLOCK_OK;
}

/* For bench/bench_sem.c, which measures the other order: when set, a try
 * reads the rows first and tries only slots it saw free (two round trips
 * at least, never a try of a held slot). */
extern int sqllock__sem_range_first;
int sqllock__sem_range_first;

/* One try: slot `first` directly, then the free and expired slots below
 * N that the range read shows, in random order. */
static int try_round(sqllock_sem *s, int first)
{
    char live[SQLLOCK_SEM_PERMITS_MAX];
    int freev[SQLLOCK_SEM_PERMITS_MAX];
    sqllock_lease *l;
    range_ctx r;
    int rc = SQLLOCK_BUSY, i, k, nfree = 0, direct;

    direct = !sqllock__sem_range_first || s->permits == 1;
    if (direct) {
        if ((rc = slot_lease(s, first, &l)) != SQLLOCK_OK)
            return rc;
        rc = sqllock__lease_try(l);
        if (rc == SQLLOCK_OK)
            s->held = first;
        if (rc != SQLLOCK_BUSY || s->permits == 1)
            goto done;
    }
    memset(live, 0, (size_t)s->permits);
    r.permits = s->permits;
    r.live = live;
    if ((rc = read_permits(s->db, s->name, &r)) != SQLLOCK_OK)
        return rc;
    for (i = 0; i < s->permits; i++)
        if (!live[i] && !(direct && i == first))
            freev[nfree++] = i;
    rc = SQLLOCK_BUSY;
    while (nfree > 0) {
        k = (int)sqllock__rand_upto(nfree - 1);
        i = freev[k];
        freev[k] = freev[--nfree];
        if ((rc = slot_lease(s, i, &l)) != SQLLOCK_OK)
            return rc;
        rc = sqllock__lease_try(l);
        if (rc == SQLLOCK_OK) {
            s->held = i;
            goto done;
        }
        if (rc != SQLLOCK_BUSY)
            goto done;
    }
    rc = SQLLOCK_BUSY;
done:
    if (rc == SQLLOCK_BUSY)
        return sqllock__fail(s->db, SQLLOCK_BUSY, "semaphore '%s' has all "
                             "its %d permits held", s->name, s->permits);
    return rc;
}

int sqllock_sem_new(sqllock_db *db, const char *name, int permits,
                    const sqllock_lease_options *opts, sqllock_sem **out)
{
    char prefix[SQLLOCK__DERIVED_MAX + 1];
    sqllock_sem *s;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    rc = sqllock__derived_name(db, prefix, name, NULL, "semaphore name");
    if (rc != SQLLOCK_OK)
        return rc;
    if (permits < 1 || permits > SQLLOCK_SEM_PERMITS_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "a semaphore has 1 to %d "
                             "permits (got %d)", SQLLOCK_SEM_PERMITS_MAX,
                             permits);
    if (opts == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease options are "
                             "required: ttl_ms must be set");
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    s->slot = calloc((size_t)permits, sizeof *s->slot);
    if (s->slot == NULL) {
        free(s);
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    }
    s->db = db;
    s->permits = permits;
    s->held = -1;
    /* Field by field: a caller's struct of an older version is shorter
     * (flags came with version 2, release_timeout_ms with 3). */
    s->opts.struct_version = SQLLOCK_LEASE_OPTIONS_VERSION;
    s->opts.ttl_ms = opts->ttl_ms;
    s->opts.safety_margin_ms = opts->safety_margin_ms;
    s->opts.backoff_min_ms = opts->backoff_min_ms;
    s->opts.backoff_max_ms = opts->backoff_max_ms;
    s->opts.holder = opts->holder;
    s->opts.flags = opts->struct_version >= 2 ? opts->flags : 0;
    s->opts.release_timeout_ms = opts->struct_version >= 3
                                 ? opts->release_timeout_ms : 0;
    if (opts->holder != NULL) {
        snprintf(s->holder, sizeof s->holder, "%s", opts->holder);
        s->opts.holder = s->holder;
    }
    strcpy(s->name, name);
    /* Slot 0's handle now: it checks the options (ttl, margin, flags,
     * holder) with the lease's own messages. */
    {
        sqllock_lease *l;

        rc = slot_lease(s, 0, &l);
    }
    if (rc != SQLLOCK_OK) {
        sqllock_sem_free(s);
        return rc;
    }
    /* The holder text checked: the other slots take it as it is. */
    if (opts->holder == NULL) {
        snprintf(s->holder, sizeof s->holder, "%s", s->slot[0]->holder);
        s->opts.holder = s->holder;
    }
    *out = s;
    return sqllock__ok(db);
}

void sqllock_sem_free(sqllock_sem *sem)
{
    int i;

    if (sem == NULL)
        return;
    for (i = 0; i < sem->permits; i++)
        sqllock_lease_free(sem->slot[i]);
    free(sem->slot);
    free(sem);
}

/* 1 while the handle's permit lease still counts a hold (a LOST one
 * included: release tells). */
static int holding(const sqllock_sem *s)
{
    return s->held >= 0 && sqllock_lease_count(s->slot[s->held]) > 0;
}

/* Before an acquire: NAME must be a semaphore (N1), which the handle
 * checks once: the marker stays. */
static int check_kind(sqllock_sem *s)
{
    int rc;

    if (s->held >= 0 && !holding(s))
        s->held = -1;           /* released through its lease, or lost */
    if (!s->kind_checked) {
        if ((rc = sqllock__lease_refuse_in_txn(s->slot[0], "acquiring")) !=
                SQLLOCK_OK ||
            (rc = sqllock__kind_mark(s->db, s->name, SQLLOCK__KIND_SEM)) !=
                SQLLOCK_OK)
            return rc;
        s->kind_checked = 1;
    }
    return SQLLOCK_OK;
}

static int sem_try_body(sqllock_sem *sem)
{
    int rc;

    if (sem == NULL)
        return SQLLOCK_EINVAL;
    if (holding(sem))           /* L8: the same permit, counted up */
        return sqllock__lease_try_plain(sem->slot[sem->held]);
    if ((rc = check_kind(sem)) != SQLLOCK_OK)
        return rc;
    return try_round(sem, (int)sqllock__rand_upto(sem->permits - 1));
}

int sqllock_sem_try_acquire(sqllock_sem *sem)
{
    sqllock__mcall c;
    int rc;

    if (sem == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, sem->db, SQLLOCK__OP_ACQUIRE);
    rc = sem_try_body(sem);
    return sqllock__m_acquired(&c, SQLLOCK__MK_SEM, rc, sem->name,
                               rc == SQLLOCK_OK
                               ? sqllock_lease_token(sqllock_sem_lease(sem))
                               : 0);
}

static int sem_acquire_body(sqllock_sem *sem, int64_t wait_ms)
{
    sqllock_lease *waited[SEM_WAIT_SLOTS], *l;
    int slots[SEM_WAIT_SLOTS];
    sqllock__wait w;
    uint64_t seen;
    int rc, nwaited = 0, target, k;

    if (sem == NULL)
        return SQLLOCK_EINVAL;
    if (wait_ms < 0)
        return sqllock__fail(sem->db, SQLLOCK_EINVAL, "the wait time must "
                             "not be negative (got %lld ms)",
                             (long long)wait_ms);
    if (holding(sem))           /* L8: the same permit, counted up */
        return sqllock__lease_try_plain(sem->slot[sem->held]);
    if ((rc = check_kind(sem)) != SQLLOCK_OK)
        return rc;
    sqllock__wait_start(&w, sem->db, 0, wait_ms);
    for (;;) {
        /* A fresh random slot to try first and to pause on, until the
         * waiter has paused on SEM_WAIT_SLOTS of them. */
        if (nwaited < SEM_WAIT_SLOTS)
            target = (int)sqllock__rand_upto(sem->permits - 1);
        else
            target = slots[sqllock__rand_upto(nwaited - 1)];
        if ((rc = slot_lease(sem, target, &l)) != SQLLOCK_OK)
            break;
        /* Before the try, so that a release in this process between the
         * try and the pause is not missed. */
        seen = sqllock__wake_gen(l->wake_key);
        rc = try_round(sem, target);
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        if (sqllock__now_ms() >= w.deadline) {
            rc = sqllock__fail(sem->db, SQLLOCK_TIMEOUT, "semaphore '%s' "
                               "still had all its %d permits %s after "
                               "waiting %lld ms", sem->name, sem->permits,
                               rc == SQLLOCK_BUSY ? "held" : "out of reach "
                               "(the database stayed busy)",
                               (long long)wait_ms);
            break;
        }
        for (k = 0; k < nwaited && slots[k] != target; k++)
            ;
        if (k == nwaited) {
            slots[k] = target;
            waited[k] = l;
            w.n = ++nwaited;
        }
        sqllock__wait_pause(&w, l, k, seen);
    }
    sqllock__wait_end(&w, waited);
    return rc;
}

int sqllock_sem_acquire(sqllock_sem *sem, int64_t wait_ms)
{
    sqllock__mcall c;
    int rc;

    if (sem == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, sem->db, SQLLOCK__OP_ACQUIRE);
    rc = sem_acquire_body(sem, wait_ms);
    return sqllock__m_acquired(&c, SQLLOCK__MK_SEM, rc, sem->name,
                               rc == SQLLOCK_OK
                               ? sqllock_lease_token(sqllock_sem_lease(sem))
                               : 0);
}

int sqllock_sem_release(sqllock_sem *sem)
{
    sqllock_lease *l;
    int rc, slot;

    if (sem == NULL)
        return SQLLOCK_EINVAL;
    if (sem->held >= 0 && !holding(sem))
        sem->held = -1;
    if (sem->held < 0)
        return sqllock__fail(sem->db, SQLLOCK_ENOTHELD, "this handle holds "
                             "no permit of semaphore '%s' (release)",
                             sem->name);
    slot = sem->held;
    l = sem->slot[slot];
    rc = sqllock_lease_release(l);
    /* A release that could not reach the database keeps the hold: it can
     * be called again (as sqllock_lease_release()). */
    if (sqllock_lease_count(l) == 0)
        sem->held = -1;
    if (rc == SQLLOCK_LOST)
        return sqllock__fail(sem->db, SQLLOCK_LOST, "permit %d of semaphore "
                             "'%s' had already been lost: taken over by "
                             "another owner, or removed after it expired",
                             slot, sem->name);
    return rc;
}

sqllock_lease *sqllock_sem_lease(const sqllock_sem *sem)
{
    return sem != NULL && holding(sem) ? sem->slot[sem->held] : NULL;
}

int sqllock_sem_permit(const sqllock_sem *sem)
{
    return sem != NULL && holding(sem) ? sem->held : -1;
}

int sqllock_sem_permits(const sqllock_sem *sem)
{
    return sem != NULL ? sem->permits : 0;
}

const char *sqllock_sem_name(const sqllock_sem *sem)
{
    return sem != NULL ? sem->name : "";
}

int sqllock_sem_count(sqllock_db *db, const char *name, int *live)
{
    char prefix[SQLLOCK__DERIVED_MAX + 1];
    range_ctx r;
    int rc;

    if (live != NULL)
        *live = 0;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    rc = sqllock__derived_name(db, prefix, name, NULL, "semaphore name");
    if (rc != SQLLOCK_OK)
        return rc;
    if (live == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    memset(&r, 0, sizeof r);
    if ((rc = read_permits(db, name, &r)) != SQLLOCK_OK)
        return rc;
    *live = r.nlive;
    return sqllock__ok(db);
}
