/*
 * rw.c -- shared and exclusive holds on one name (DESIGN M2).
 *
 * The rows, all in the lease table under NAME (sqllock__derived_name()):
 *   W = NAME 0x1f "w"                 the writer's row, an ordinary lease
 *   R = NAME 0x1f "r" + 16 hex digits one row per reader's hold
 * A writer takes W as any lease (L1, L5: its token grows with every
 * exclusive grant), then waits until no reader row is left; only then
 * is it granted. A reader goes in only while no W row exists
 * (RW_READ_ACQUIRE), in a transaction that every grant of W is ordered
 * against (sqllock_driver.h, RW_READ_ACQUIRE), so that a reader either
 * committed its row before a writer's grant of W (and the writer's
 * check finds it) or sees W and waits.
 *
 * Writer preference: once W is taken no reader gets in, so a writer waits
 * only for the readers that were inside when it took W -- their hold, or
 * their ttl if they died -- however many readers keep arriving.
 *
 * Expiry: nobody relies on another's row having expired without
 * deleting it first, under the row's lock, by the server's clock (RW_EXPIRE
 * for readers' rows; a reader deletes an expired W in RW_READ_ACQUIRE).
 * A renewal in flight then either commits first (the row stays, live) or
 * finds no row and reports LOST. So renewals and releases are the
 * ordinary lease statements: a late renewal of a row nobody deleted
 * harms no one, since nobody went in on its expiry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct sqllock_rw {
    sqllock_db *db;
    int shared;
    int kind_checked;           /* NAME's row is this kind's marker (N1) */
    sqllock_lease *w;           /* W: the writer's hold; readers wait on it */
    sqllock_lease *r;           /* a reader's row (shared handles) */
    char base[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    char wname[SQLLOCK__DERIVED_MAX + 1];
    char wname_hi[SQLLOCK__DERIVED_MAX + 2];     /* W "\x01" */
    char lo[SQLLOCK__DERIVED_MAX + 2];           /* NAME 0x1f "r" */
    char hi[SQLLOCK__DERIVED_MAX + 2];           /* NAME 0x1f "s" */
};

static const char *what_of(const sqllock_rw *rw)
{
    return rw->shared ? "shared lock" : "exclusive lock";
}

int sqllock_rw_new(sqllock_db *db, const char *name, int shared,
                   const sqllock_lease_options *opts, sqllock_rw **out)
{
    char rname[SQLLOCK__DERIVED_MAX + 1];
    sqllock_rw *rw;
    size_t n;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    rw = calloc(1, sizeof *rw);
    if (rw == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    rw->db = db;
    rw->shared = shared != 0;
    rc = sqllock__derived_name(db, rw->wname, name, "w",
                               "shared/exclusive lock name");
    if (rc == SQLLOCK_OK)
        rc = sqllock__derived_name(db, rname, name, "r0000000000000000",
                                   "shared/exclusive lock name");
    if (rc != SQLLOCK_OK) {
        free(rw);
        return rc;
    }
    strcpy(rw->base, name);
    n = strlen(rw->wname);
    memcpy(rw->wname_hi, rw->wname, n);
    rw->wname_hi[n] = '\x01';
    rw->wname_hi[n + 1] = '\0';
    n = strlen(name);
    memcpy(rw->lo, rw->wname, n + 1);
    rw->lo[n + 1] = 'r';
    rw->lo[n + 2] = '\0';
    memcpy(rw->hi, rw->lo, n + 3);
    rw->hi[n + 1] = 's';
    rc = sqllock__lease_new_derived(db, rw->wname, opts, &rw->w);
    if (rc == SQLLOCK_OK && rw->shared) {
        rc = sqllock__lease_new_derived(db, rname, opts, &rw->r);
        if (rc == SQLLOCK_OK) {
            /* A reader's release wakes who waits on W: a writer waiting
             * for the readers to leave. */
            rw->r->wake_name = rw->wname;
            rw->r->wake_key = rw->w->wake_key;
        }
    }
    if (rc != SQLLOCK_OK) {
        sqllock_lease_free(rw->w);
        free(rw);
        return rc;
    }
    *out = rw;
    return sqllock__ok(db);
}

void sqllock_rw_free(sqllock_rw *rw)
{
    if (rw == NULL)
        return;
    sqllock_lease_free(rw->r);
    sqllock_lease_free(rw->w);
    free(rw);
}

sqllock_lease *sqllock_rw_lease(sqllock_rw *rw)
{
    if (rw == NULL)
        return NULL;
    return rw->shared ? rw->r : rw->w;
}

int sqllock_rw_shared(const sqllock_rw *rw)
{
    return rw != NULL && rw->shared;
}

/* SQLLOCK_EUNSUPPORTED for a dialect without RW_EXPIRE. */
static int check_driver(sqllock_rw *rw)
{
    const sqllock_sql *e;
    int rc, scope = 0;

    if (rw->db->drv == NULL)
        return sqllock__fail(rw->db, SQLLOCK_EMISUSE, "acquiring the %s "
                             "'%s': the handle has no driver (its open "
                             "failed)", what_of(rw), rw->base);
    e = sqllock__sql_of(rw->db->drv, SQLLOCK_SQL_RW_EXPIRE);
    if (e == NULL)
        return sqllock__fail(rw->db, SQLLOCK_EUNSUPPORTED, "the %s driver "
                             "has no shared/exclusive locks (its dialect "
                             "has no RW_EXPIRE)", rw->db->drv->name);
    /* A reader's share lock orders it against a writer's grant only on
     * the node that holds it: on a Galera cluster a reader and a writer
     * on two nodes could both get in. Refused, as the connect found it
     * (no round trip). */
    rc = sqllock_row_lock_scope(rw->db, &scope);
    if (rc != SQLLOCK_OK)
        return rc;
    if (scope == SQLLOCK_ROW_LOCKS_NODE)
        return sqllock__fail(rw->db, SQLLOCK_EUNSUPPORTED, "shared/exclusive "
                             "locks are not available on a Galera cluster "
                             "(a reader's lock is one node's)");
    return SQLLOCK_OK;
}

/* Runs RW_EXPIRE on [lo, hi), again while the database rolls it back. */
static int expire_rows(sqllock_rw *rw, const char *lo, const char *hi)
{
    sqllock_db *db = rw->db;
    sqllock_value args[2];
    int rc, attempt;

    args[0] = sqllock__text(lo);
    args[1] = sqllock__text(hi);
    for (attempt = 0;; attempt++) {
        rc = sqllock__run(db, SQLLOCK_SQL_RW_EXPIRE, args, 2,
                          "deleting the expired rows of a shared lock");
        if (rc == SQLLOCK_OK) {
            sqllock__end(db, SQLLOCK_SQL_RW_EXPIRE);
            return rc;
        }
        if (!sqllock__rolled_back(rc) || attempt == SQLLOCK__ROLLBACK_RETRIES)
            return rc;
        sqllock__sleep_ms(sqllock__rand_upto(rw->w->backoff_min_ms));
    }
}

/* ---- readers ------------------------------------------------------------ */

/* A fresh row name for the reader's next hold: 16 random hex digits. */
static int reader_name(sqllock_rw *rw)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[8];
    char tag[18];
    int i;

    if (sqllock__random(raw, sizeof raw) != SQLLOCK_OK)
        return sqllock__fail(rw->db, SQLLOCK_ESYS, "cannot read the OS's "
                             "random source for a reader's row");
    tag[0] = 'r';
    for (i = 0; i < 8; i++) {
        tag[1 + 2 * i] = hex[raw[i] >> 4];
        tag[2 + 2 * i] = hex[raw[i] & 15];
    }
    tag[17] = '\0';
    return sqllock__derived_name(rw->db, rw->r->name, rw->base, tag,
                                 "shared lock name");
}

/* Without a routine (SQLite): RW_EXPIRE on W and RW_READ_INSERT in one
 * transaction, which begin() makes the database's only writer. */
static int read_in_transaction(sqllock_rw *rw, const sqllock_value *args,
                               int64_t *token)
{
    const char *what = "acquiring the shared lock";
    sqllock_db *db = rw->db;
    sqllock_value ex[2];
    int rc, has_row = 0;

    rc = sqllock__begin(db, what);
    if (rc != SQLLOCK_OK)
        return rc;
    ex[0] = sqllock__text(rw->wname);
    ex[1] = sqllock__text(rw->wname_hi);
    rc = sqllock__run(db, SQLLOCK_SQL_RW_EXPIRE, ex, 2, what);
    if (rc == SQLLOCK_OK) {
        sqllock__end(db, SQLLOCK_SQL_RW_EXPIRE);
        rc = sqllock__run(db, SQLLOCK_SQL_RW_READ_INSERT, args, 5, what);
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock__first_int(db, SQLLOCK_SQL_RW_READ_INSERT, &has_row,
                                token, what);
    if (rc == SQLLOCK_OK && has_row)
        return sqllock__commit(db, what);
    sqllock__rollback(db);
    *token = 0;
    return rc;
}

static int read_once(sqllock_rw *rw)
{
    const char *what = "acquiring the shared lock";
    sqllock_db *db = rw->db;
    sqllock_lease *l = rw->r;
    const sqllock_sql *one;
    sqllock_value args[5];
    int64_t sent_us, token = 0;
    int rc, has_row = 0;

    if ((rc = reader_name(rw)) != SQLLOCK_OK ||
        (rc = sqllock__lease_new_owner(l)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(rw->wname);
    args[1] = sqllock__text(l->name);
    args[2] = sqllock__text(l->owner);
    args[3] = sqllock__text(l->holder);
    args[4] = sqllock__int(l->ttl_ms);
    sent_us = sqllock__now_us();
    one = sqllock__sql_of(db->drv, SQLLOCK_SQL_RW_READ_ACQUIRE);
    if (one != NULL) {
        rc = sqllock__run(db, SQLLOCK_SQL_RW_READ_ACQUIRE, args, 5, what);
        if (rc == SQLLOCK_OK)
            rc = sqllock__first_int(db, SQLLOCK_SQL_RW_READ_ACQUIRE,
                                    &has_row, &token, what);
        if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EPERM) {
            char why[SQLLOCK__ERRMSG_MAX];

            memcpy(why, db->errmsg, sizeof why);
            rc = sqllock__fail(db, rc, "%s '%s' needs the routine that "
                               "sqllock_init() (`sqllock init`) of this "
                               "version installs (%s)", what, rw->base, why);
        }
        if (rc == SQLLOCK_OK && !has_row)
            rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the routine returned "
                               "no row", what);
    } else {
        rc = read_in_transaction(rw, args, &token);
    }
    if (rc != SQLLOCK_OK) {
        sqllock__lease_forget(l);
        return rc;
    }
    if (token <= 0) {
        sqllock__lease_forget(l);
        return sqllock__fail(db, SQLLOCK_BUSY, "shared lock '%s': a writer "
                             "holds it or waits for it", rw->base);
    }
    l->count = 1;
    l->token = token;
    atomic_store(&l->deadline_us, sent_us + (l->ttl_ms - l->margin_ms) * 1000);
    atomic_store(&l->state, SQLLOCK_STATE_HELD);
    sqllock__m_grant(l);
    return sqllock__ok(db);
}

static int read_try(sqllock_rw *rw)
{
    char why[SQLLOCK__ERRMSG_MAX];
    int rc, attempt;

    /* A deadlock (MySQL: a reader deleting an expired W while a writer
     * takes it over) rolled everything back: try again, then say busy. */
    for (attempt = 0;; attempt++) {
        rc = read_once(rw);
        if (!sqllock__rolled_back(rc))
            return rc;
        if (attempt == SQLLOCK__ROLLBACK_RETRIES)
            break;
        sqllock__sleep_ms(sqllock__rand_upto(rw->r->backoff_min_ms));
    }
    memcpy(why, rw->db->errmsg, sizeof why);
    return sqllock__fail(rw->db, SQLLOCK_BUSY, "shared lock '%s' is being "
                         "taken by a writer (%s)", rw->base, why);
}

/* ---- writers ------------------------------------------------------------ */

typedef struct count_ctx {
    int rows;
    int expired;
} count_ctx;

static int count_row(void *ctx, const sqllock_lease_info *info)
{
    count_ctx *c = ctx;

    c->rows++;
    if (info->remaining_ms <= 0)
        c->expired++;
    return 0;
}

/* *gone = 1 when no reader row is left. Rows that have expired are
 * deleted (RW_EXPIRE) before they are counted out; any row still there
 * after that counts, expired or not. */
static int readers_gone(sqllock_rw *rw, int *gone)
{
    const char *what = "reading the readers of a shared lock";
    count_ctx c = { 0, 0 };
    int rc;

    *gone = 0;
    rc = sqllock__lease_range(rw->db, rw->lo, rw->hi, count_row, &c, what);
    if (rc != SQLLOCK_OK || c.rows == 0) {
        *gone = rc == SQLLOCK_OK;
        return rc;
    }
    if (c.expired == 0)
        return SQLLOCK_OK;
    rc = expire_rows(rw, rw->lo, rw->hi);
    if (rc != SQLLOCK_OK)
        return rc;
    c.rows = c.expired = 0;
    rc = sqllock__lease_range(rw->db, rw->lo, rw->hi, count_row, &c, what);
    *gone = rc == SQLLOCK_OK && c.rows == 0;
    return rc;
}

/* Lets W go after a failed or abandoned exclusive acquire, keeping the
 * status and message of `rc`. */
static int drop_w(sqllock_rw *rw, int rc)
{
    char why[SQLLOCK__ERRMSG_MAX];
    int status = rw->db->errcode;

    memcpy(why, rw->db->errmsg, sizeof why);
    if (rw->w->count > 0)
        sqllock_lease_release(rw->w);
    rw->w->count = 0;
    sqllock__lease_forget(rw->w);
    rw->db->errcode = status;
    memcpy(rw->db->errmsg, why, sizeof why);
    return rc;
}

/* Keeps W renewed while the writer waits for the readers: renewed when
 * less than half its ttl is left. */
static int keep_w(sqllock_rw *rw)
{
    if (sqllock_lease_remaining_ms(rw->w) * 2 > rw->w->ttl_ms)
        return SQLLOCK_OK;
    return sqllock_lease_renew(rw->w);
}

/* A status of a statement of the writer's wait for the readers that
 * says only "not now": the database rolled the statement back (a
 * deadlock, a serialization failure, a lock wait that timed out) or
 * stayed busy past its busy timeout, so nothing was done. */
static int not_now(int rc)
{
    return rc == SQLLOCK_EDBBUSY || sqllock__rolled_back(rc);
}

/* The exclusive acquire: W, then the readers gone, within the wait. */
static int write_acquire(sqllock_rw *rw, int64_t wait_ms)
{
    char later[SQLLOCK__ERRMSG_MAX + 16];
    sqllock_db *db = rw->db;
    sqllock__wait w;
    uint64_t seen;
    int rc, gone;

    sqllock__wait_start(&w, db, 1, wait_ms);
    for (;;) {
        /* Phase 1: W, as any lease (its waits and wake-ups). */
        seen = sqllock__wake_gen(rw->w->wake_key);
        rc = sqllock__lease_try(rw->w);
        if (rc == SQLLOCK_BUSY || rc == SQLLOCK_EDBBUSY) {
            if (wait_ms == 0)
                break;
            if (sqllock__now_ms() >= w.deadline) {
                rc = sqllock__fail(db, SQLLOCK_TIMEOUT, "exclusive lock '%s' "
                                   "was still held by another writer after "
                                   "waiting %lld ms", rw->base,
                                   (long long)wait_ms);
                break;
            }
            sqllock__wait_pause(&w, rw->w, 0, seen);
            continue;
        }
        if (rc != SQLLOCK_OK)
            break;
        /* Phase 2: no new reader gets in; wait for those inside. The
         * pauses poll (and listen on W's channel, where readers' releases
         * notify): never on W's companion session lock, which is ours.
         * Granted once no reader is left and W has just been kept
         * (renewed when half its ttl had gone). */
        w.session = 0;
        w.plain_next = 0;
        w.attempt = 0;
        later[0] = '\0';
        for (;;) {
            seen = sqllock__wake_gen(rw->w->wake_key);
            gone = 0;
            rc = keep_w(rw);
            if (rc == SQLLOCK_OK)
                rc = readers_gone(rw, &gone);
            if (rc == SQLLOCK_OK && gone && (rc = keep_w(rw)) == SQLLOCK_OK)
                break;
            if (rc != SQLLOCK_OK) {
                if (wait_ms == 0 || !not_now(rc))
                    break;
                /* Issue 26 item 8d: the database gave up on a statement
                 * (a deadlock, a lock wait that timed out, a busy
                 * database) and did nothing; W is still ours until a
                 * renewal says otherwise. Another look later, within the
                 * wait. */
                snprintf(later, sizeof later, "; last: %s", db->errmsg);
                rc = SQLLOCK_OK;
            }
            if (wait_ms == 0) {
                rc = sqllock__fail(db, SQLLOCK_BUSY, "exclusive lock '%s': "
                                   "readers hold it", rw->base);
                break;
            }
            if (sqllock__now_ms() >= w.deadline) {
                rc = sqllock__fail(db, SQLLOCK_TIMEOUT, "exclusive lock '%s' "
                                   "still had readers inside after waiting "
                                   "%lld ms%s", rw->base, (long long)wait_ms,
                                   later);
                break;
            }
            sqllock__wait_pause(&w, rw->w, 0, seen);
        }
        if (rc == SQLLOCK_LOST && wait_ms != 0 &&
            sqllock__now_ms() < w.deadline) {
            /* W was lost while waiting (paused past its ttl): take it
             * again. */
            sqllock__lease_forget(rw->w);
            continue;
        }
        if (rc != SQLLOCK_OK)
            drop_w(rw, rc);
        break;
    }
    sqllock__wait_end(&w, &rw->w);
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

/* ---- the calls ---------------------------------------------------------- */

static int acquire(sqllock_rw *rw, int64_t wait_ms)
{
    sqllock_lease *l;
    sqllock__wait w;
    uint64_t seen;
    int rc;

    l = sqllock_rw_lease(rw);
    if ((rc = sqllock__lease_refuse_in_txn(l, "acquiring")) != SQLLOCK_OK)
        return rc;
    /* L8 for this kind too: the holding handle counts up and renews its
     * row (the reader's, or the writer's). */
    if (l->count > 0)
        return sqllock__lease_try_plain(l);
    if ((rc = check_driver(rw)) != SQLLOCK_OK)
        return rc;
    /* N1: NAME is a shared/exclusive lock, not a plain lease or another
     * primitive; the marker stays, so once per handle. */
    if (!rw->kind_checked) {
        if ((rc = sqllock__kind_mark(rw->db, rw->base, SQLLOCK__KIND_RW)) !=
            SQLLOCK_OK)
            return rc;
        rw->kind_checked = 1;
    }
    if (!rw->shared)
        return write_acquire(rw, wait_ms);
    sqllock__wait_start(&w, rw->db, 1, wait_ms);
    for (;;) {
        seen = sqllock__wake_gen(rw->w->wake_key);
        rc = read_try(rw);
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            break;
        if (wait_ms == 0)
            break;
        if (sqllock__now_ms() >= w.deadline) {
            rc = sqllock__fail(rw->db, SQLLOCK_TIMEOUT, "shared lock '%s' "
                               "was still held or awaited by a writer after "
                               "waiting %lld ms", rw->base,
                               (long long)wait_ms);
            break;
        }
        /* Paused on W: its release (and, on MySQL, its holder's
         * companion lock) ends the pause. */
        sqllock__wait_pause(&w, rw->w, 0, seen);
    }
    sqllock__wait_end(&w, &rw->w);
    return rc;
}

static int rw_acquire_body(sqllock_rw *rw, int64_t wait_ms)
{
    if (rw == NULL)
        return SQLLOCK_EINVAL;
    if (wait_ms < 0)
        return sqllock__fail(rw->db, SQLLOCK_EINVAL, "the wait time must not "
                             "be negative (got %lld ms)", (long long)wait_ms);
    return acquire(rw, wait_ms);
}

int sqllock_rw_acquire(sqllock_rw *rw, int64_t wait_ms)
{
    sqllock__mcall c;
    int rc;

    if (rw == NULL)
        return SQLLOCK_EINVAL;
    sqllock__m_enter(&c, rw->db, SQLLOCK__OP_ACQUIRE);
    rc = rw_acquire_body(rw, wait_ms);
    return sqllock__m_acquired(&c, rw->shared ? SQLLOCK__MK_SHARED
                                              : SQLLOCK__MK_EXCLUSIVE,
                               rc, rw->base, rc == SQLLOCK_OK
                               ? sqllock_lease_token(sqllock_rw_lease(rw))
                               : 0);
}

int sqllock_rw_try_acquire(sqllock_rw *rw)
{
    return sqllock_rw_acquire(rw, 0);
}

int sqllock_rw_release(sqllock_rw *rw)
{
    sqllock_lease *l;

    if (rw == NULL)
        return SQLLOCK_EINVAL;
    l = sqllock_rw_lease(rw);
    if (l->count == 0)
        return sqllock__fail(rw->db, SQLLOCK_ENOTHELD, "this handle does not "
                             "hold the %s '%s' (release)", what_of(rw),
                             rw->base);
    return sqllock_lease_release(l);
}
