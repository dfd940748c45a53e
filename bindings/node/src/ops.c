/*
 * ops.c -- what each job does on its conn's thread (op_run), and how its
 * result becomes a JavaScript value on the loop's thread (op_result).
 *
 * The arguments of each op, in the order JavaScript passes them (s: the
 * strings, n: the numbers, v: the array, buf: the bytes):
 *
 *   OPEN        s0 url; n0 connect, n1 statement, n2 busy timeout (ms,
 *               0 default), n3 init
 *   CLOSE       -
 *   ACQUIRE     s0 name, s1 holder|null; n0 kind, n1 ttl, n2 margin,
 *               n3 wait (-1 forever), n4 watch, n5 permits, n6 flags
 *               (SQLLOCK_LEASE_FAIR); cancel flag
 *   ACQUIRE_MANY  s0 holder|null; n0 ttl, n1 margin, n2 wait, n3 watch;
 *               v names; cancel flag      RELEASE_MANY  v ids
 *   RELEASE     n0 id            RENEW  n0 id, n1 ttl (0: the lease's)
 *   EXEC        s0 sql; v args
 *   TXN_BEGIN   n0 lock timeout  TXN_LOCK  n0 id, n1 mode; v names
 *   TXN_LOCK_ROWS  n0 id, n1 mode; s0 table, s1 key column, s2 version
 *               column|null; v keys (strings or numbers)
 *   TXN_COMMIT  n0 id            TXN_ROLLBACK  n0 id
 *   REC_GET     s0 key           REC_CREATE  s0 key; buf
 *   REC_CAS     s0 key; n0 expected; buf   REC_DELETE  s0 key; n0 expected
 *   GUARD       s0 name; n0 token, n1 style, n2 first
 *   LOOKUP      s0 name          SEM_COUNT  s0 name   LEADER_GET  s0 name
 *   LEADER_*    leader.c         BENCH_C  s0 url, s1 name; n0 pairs
 *   LIST, FORCE, REAP, REAPER_*     inspect.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

void job_fail(job *j, int status, const char *msg)
{
    j->status = status;
    free(j->errmsg);
    j->errmsg = dupstr(msg ? msg : sqllock_strerror(status));
}

void job_fail_db(conn *c, job *j, int status)
{
    job_fail(j, status, sqllock_errmsg(c->db));
}

/* ---- leases, permits, shared/exclusive holds ------------------------- */

static void on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                     const char *msg)
{
    /* On the renewer thread: a message to the loop, nothing more. */
    obj *o = ctx;
    (void)lease;
    watch_msg *m = calloc(1, sizeof *m);
    if (m == NULL)
        return;
    m->msg = MSG_WATCH;
    m->state = state;
    m->status = status;
    m->id = o->id;
    snprintf(m->text, sizeof m->text, "%s", msg ? msg : "");
    post_msg(o->c, m);
}

static int obj_acquire(obj *o, int64_t wait_ms)
{
    switch (o->kind) {
    case OBJ_SEM:
        return sqllock_sem_acquire(o->h, wait_ms);
    case OBJ_RW_SHARED:
    case OBJ_RW_EXCL:
        return sqllock_rw_acquire(o->h, wait_ms);
    default:
        return sqllock_lease_acquire(o->h, wait_ms);
    }
}

static int obj_release(obj *o)
{
    switch (o->kind) {
    case OBJ_SEM:
        return sqllock_sem_release(o->h);
    case OBJ_RW_SHARED:
    case OBJ_RW_EXCL:
        return sqllock_rw_release(o->h);
    default:
        return sqllock_lease_release(o->h);
    }
}

static sqllock_lease *obj_lease(obj *o)
{
    switch (o->kind) {
    case OBJ_SEM:
        return sqllock_sem_lease(o->h);
    case OBJ_RW_SHARED:
    case OBJ_RW_EXCL:
        return sqllock_rw_lease(o->h);
    default:
        return o->h;
    }
}

/* What a sliced wait tries and, if it was aborted meanwhile, lets go:
 * one hold, or the leases of a lockMany. */
typedef struct waiter {
    obj *o;                         /* one hold, or NULL */
    conn *c;
    sqllock_lease **many;           /* a lockMany's leases */
    int n;
} waiter;

static int waiter_try(waiter *w, int64_t ms)
{
    if (w->o != NULL)
        return obj_acquire(w->o, ms);
    return sqllock_lease_acquire_many(w->c->db, w->many, w->n, ms);
}

static void waiter_let_go(waiter *w)
{
    if (w->o != NULL)
        obj_release(w->o);
    else
        sqllock_lease_release_many(w->c->db, w->many, w->n);
}

/* Waits as C waits of at most SLICE_MS each, so that an abort is seen
 * between them (wake-ups still work within each). A hold granted while
 * the wait was being aborted is released before ST_ABORTED is returned:
 * an aborted wait never leaves the lock held.
 *
 * `whole`: ONE C wait for the whole of wait_ms instead -- a fair wait
 * (M3), whose queue row the library deletes when a wait times out, so
 * that slices would put the waiter at the back of the queue every
 * 200 ms. An abort (cancelWait(), a close, an exit) ends that wait with
 * sqllock_lease_cancel() within a pause of its backoff, its queue row
 * deleted (conn_wait_cancellable()). Only a plain lease waits fair
 * (JavaScript refuses `fair` for the other kinds). */
static int acquire_slices(conn *c, job *j, waiter *w, int64_t wait_ms,
                          int whole)
{
    if (wait_ms == 0)
        return waiter_try(w, 0);
    int forever = wait_ms < 0;
    int64_t deadline = sqllock_now_us() + (forever ? 0 : wait_ms * 1000);
    for (;;) {
        if (job_cancelled(c, j))
            return ST_ABORTED;
        int64_t step = SLICE_MS;
        if (whole) {
            step = forever ? SQLLOCK_WAIT_FOREVER : wait_ms;
        } else if (!forever) {
            int64_t left = (deadline - sqllock_now_us()) / 1000;
            step = left < step ? (left > 0 ? left : 0) : step;
        }
        int rc = whole && w->o != NULL && (w->o->kind == OBJ_LEASE ||
                                           w->o->kind == OBJ_LEADER_LEASE)
                 ? conn_wait_cancellable(c, j, w->o->h, step)
                 : waiter_try(w, step);
        if (rc == SQLLOCK_ECANCELED && job_cancelled(c, j))
            return ST_ABORTED;      /* our cancel: nothing is held */
        if (rc == SQLLOCK_OK) {
            if (job_cancelled(c, j)) {
                waiter_let_go(w);
                return ST_ABORTED;
            }
            return rc;
        }
        if (rc != SQLLOCK_TIMEOUT && rc != SQLLOCK_BUSY)
            return rc;
        if (whole || (!forever && sqllock_now_us() >= deadline))
            return SQLLOCK_TIMEOUT;
    }
}

static void op_acquire(conn *c, job *j)
{
    static const int kinds[] = { 0, OBJ_LEASE, OBJ_SEM, OBJ_RW_SHARED,
                                 OBJ_RW_EXCL, OBJ_LEADER_LEASE };
    int64_t k = j->n[0];
    if (k < 1 || k > 5) {
        job_fail(j, SQLLOCK_EINVAL, "unknown kind of lock");
        return;
    }
    obj *o = obj_new(c, kinds[k]);
    if (o == NULL) {
        job_fail(j, SQLLOCK_ENOMEM, "out of memory");
        return;
    }
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    lo.ttl_ms = j->n[1];
    lo.safety_margin_ms = j->n[2];
    lo.holder = j->s[1];
    lo.flags = (unsigned)j->n[6] & SQLLOCK_LEASE_FAIR;   /* only for a lease */
    const char *name = j->s[0];
    int rc;
    switch (o->kind) {
    case OBJ_SEM:
        rc = sqllock_sem_new(c->db, name, (int)j->n[5], &lo,
                             (sqllock_sem **)&o->h);
        break;
    case OBJ_RW_SHARED:
    case OBJ_RW_EXCL:
        rc = sqllock_rw_new(c->db, name, o->kind == OBJ_RW_SHARED, &lo,
                            (sqllock_rw **)&o->h);
        break;
    case OBJ_LEADER_LEASE:
        rc = sqllock_leader_lease_new(c->db, name, &lo,
                                      (sqllock_lease **)&o->h);
        break;
    default:
        rc = sqllock_lease_new(c->db, name, &lo, (sqllock_lease **)&o->h);
    }
    if (rc == SQLLOCK_OK && j->n[4])
        rc = sqllock_watch_prepare(c->db);
    if (rc != SQLLOCK_OK) {
        job_fail_db(c, j, rc);
        obj_free(o);
        return;
    }
    waiter w = { o, c, NULL, 0 };
    rc = acquire_slices(c, j, &w, j->n[3], lo.flags != 0);
    if (rc == ST_ABORTED) {
        job_fail(j, rc, "the wait was aborted");
        obj_free(o);
        return;
    }
    if (rc == SQLLOCK_TIMEOUT && j->n[3] > 0) {
        char msg[600];
        snprintf(msg, sizeof msg, "'%s' was still held after waiting %lld "
                 "ms (the last try: %s)", name, (long long)j->n[3],
                 sqllock_errmsg(c->db));
        job_fail(j, rc, msg);
        obj_free(o);
        return;
    }
    if (rc != SQLLOCK_OK) {
        job_fail_db(c, j, rc);
        obj_free(o);
        return;
    }
    sqllock_lease *l = obj_lease(o);
    if (j->n[4]) {
        sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
        wo.callback = on_watch;
        wo.ctx = o;
        rc = sqllock_lease_watch(l, &wo);
        if (rc != SQLLOCK_OK) {
            job_fail_db(c, j, rc);
            obj_release(o);
            obj_free(o);
            return;
        }
        o->watched = 1;
    }
    pthread_mutex_lock(&c->mu);
    o->lease = l;                   /* from now on State() reads it */
    pthread_mutex_unlock(&c->mu);
    j->r[0] = o->id;
    j->r[1] = sqllock_lease_token(l);
    j->r[2] = o->kind == OBJ_SEM ? sqllock_sem_permit(o->h) : -1;
    j->rs = dupstr(sqllock_lease_owner(l));
    j->rs2 = dupstr(sqllock_lease_name(l));
}

/* Several leases at once, all or none (L12): one obj (a lease) per name,
 * all on this conn, each watched by itself (a loss is reported for that
 * lease alone, L11). */
static void op_acquire_many(conn *c, job *j)
{
    obj *objs[JOB_V] = { NULL };
    sqllock_lease *ls[JOB_V];
    int n = j->nv, rc = SQLLOCK_OK, i;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    lo.ttl_ms = j->n[0];
    lo.safety_margin_ms = j->n[1];
    lo.holder = j->s[0];
    if (n < 1) {
        job_fail(j, SQLLOCK_EINVAL, "lockMany: no names given");
        return;
    }
    for (i = 0; i < n && rc == SQLLOCK_OK; i++) {
        if (j->v[i].text == NULL) {
            job_fail(j, SQLLOCK_EINVAL, "lockMany: every name is a string");
            rc = SQLLOCK_EINVAL;
            break;
        }
        objs[i] = obj_new(c, OBJ_LEASE);
        if (objs[i] == NULL) {
            job_fail(j, SQLLOCK_ENOMEM, "out of memory");
            rc = SQLLOCK_ENOMEM;
            break;
        }
        rc = sqllock_lease_new(c->db, j->v[i].text, &lo, &ls[i]);
        if (rc != SQLLOCK_OK)
            job_fail_db(c, j, rc);
        else
            objs[i]->h = ls[i];
    }
    if (rc == SQLLOCK_OK && j->n[3]) {
        rc = sqllock_watch_prepare(c->db);
        if (rc != SQLLOCK_OK)
            job_fail_db(c, j, rc);
    }
    if (rc == SQLLOCK_OK) {
        waiter w = { NULL, c, ls, n };
        rc = acquire_slices(c, j, &w, j->n[2], 0);
        if (rc == ST_ABORTED) {
            job_fail(j, rc, "the wait was aborted");
        } else if (rc == SQLLOCK_TIMEOUT && j->n[2] > 0) {
            char msg[600];
            snprintf(msg, sizeof msg, "lockMany was refused for %lld ms "
                     "(the last try: %s)", (long long)j->n[2],
                     sqllock_errmsg(c->db));
            job_fail(j, rc, msg);
        } else if (rc != SQLLOCK_OK) {
            job_fail_db(c, j, rc);
        }
    }
    for (i = 0; i < n && rc == SQLLOCK_OK && j->n[3]; i++) {
        sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
        wo.callback = on_watch;
        wo.ctx = objs[i];
        rc = sqllock_lease_watch(ls[i], &wo);
        if (rc != SQLLOCK_OK) {
            job_fail_db(c, j, rc);
            sqllock_lease_release_many(c->db, ls, n);
        }
        objs[i]->watched = rc == SQLLOCK_OK;
    }
    if (rc == SQLLOCK_OK) {
        j->rv = calloc((size_t)n * 2, sizeof *j->rv);
        j->rsv = calloc((size_t)n, sizeof *j->rsv);
        if (j->rv == NULL || j->rsv == NULL) {
            job_fail(j, SQLLOCK_ENOMEM, "out of memory");
            sqllock_lease_release_many(c->db, ls, n);
            rc = SQLLOCK_ENOMEM;
        }
    }
    if (rc != SQLLOCK_OK) {
        for (i = 0; i < n; i++)
            if (objs[i] != NULL)
                obj_free(objs[i]);
        return;
    }
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < n; i++)
        objs[i]->lease = ls[i];     /* from now on State() reads them */
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < n; i++) {
        j->rv[2 * i] = objs[i]->id;
        j->rv[2 * i + 1] = sqllock_lease_token(ls[i]);
        j->rsv[i] = dupstr(sqllock_lease_owner(ls[i]));
    }
}

/* Releases the leases of a lockMany (v: their ids) with
 * sqllock_lease_release_many(): every one, whatever the others find.
 * got[i] says whether lease i's hold is over (released, or lost); one
 * that could not reach the database stays held, to be released again. */
static void op_release_many(conn *c, job *j)
{
    obj *objs[JOB_V];
    sqllock_lease *ls[JOB_V] = { NULL };
    int n = j->nv;
    for (int i = 0; i < n; i++) {
        objs[i] = obj_get(c, j->v[i].number);
        if (objs[i] == NULL || objs[i]->lease == NULL ||
            objs[i]->kind != OBJ_LEASE) {
            job_fail(j, SQLLOCK_ENOTHELD, "a lease of the set is not held");
            return;
        }
        ls[i] = objs[i]->lease;
    }
    int rc = sqllock_lease_release_many(c->db, ls, n);
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
    for (int i = 0; i < n; i++) {
        j->got[i] = sqllock_lease_count(ls[i]) == 0;
        if (j->got[i])
            obj_free(objs[i]);
    }
}

static void op_release(conn *c, job *j)
{
    obj *o = obj_get(c, j->n[0]);
    if (o == NULL || o->lease == NULL) {
        job_fail(j, SQLLOCK_ENOTHELD, "the lease is not held");
        return;
    }
    int rc = obj_release(o);
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
    /* A release that could not reach the database keeps the hold, so
     * that it can be released again (sqllock_lease_release()). */
    if (sqllock_lease_count(o->lease) > 0 && rc != SQLLOCK_OK &&
        rc != SQLLOCK_LOST)
        return;
    obj_free(o);
}

static void op_renew(conn *c, job *j)
{
    obj *o = obj_get(c, j->n[0]);
    if (o == NULL || o->lease == NULL) {
        job_fail(j, SQLLOCK_ENOTHELD, "the lease is not held");
        return;
    }
    int rc = j->n[1] > 0 ? sqllock_lease_renew_ttl(o->lease, j->n[1])
                         : sqllock_lease_renew(o->lease);
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
}

/* ---- transactions, statements, records --------------------------------- */

static void op_txn(conn *c, job *j)
{
    if (j->op == OP_TXN_BEGIN) {
        obj *o = obj_new(c, OBJ_TXN);
        if (o == NULL) {
            job_fail(j, SQLLOCK_ENOMEM, "out of memory");
            return;
        }
        sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
        to.lock_timeout_ms = j->n[0];
        int rc = sqllock_txn_begin(c->db, &to, (sqllock_txn **)&o->h);
        if (rc != SQLLOCK_OK) {
            job_fail_db(c, j, rc);
            obj_free(o);
            return;
        }
        j->r[0] = o->id;
        return;
    }
    obj *o = obj_get(c, j->n[0]);
    if (o == NULL || o->kind != OBJ_TXN) {
        job_fail(j, SQLLOCK_EMISUSE, "the transaction is over");
        return;
    }
    int rc;
    switch (j->op) {
    case OP_TXN_LOCK: {
        const char *names[JOB_V];
        for (int i = 0; i < j->nv; i++)
            names[i] = j->v[i].text;
        rc = sqllock_txn_lock(o->h, names, j->nv, (sqllock_lock_mode)j->n[1],
                              j->got);
        break;
    }
    case OP_TXN_LOCK_ROWS: {
        /* The application's rows: s0 table, s1 key column, s2 version
         * column (unused, may be null); v the keys. */
        sqllock_table t = { j->s[0], j->s[1], j->ns > 2 ? j->s[2] : NULL };
        rc = sqllock_txn_lock_rows(o->h, &t, j->v, j->nv,
                                   (sqllock_lock_mode)j->n[1], j->got);
        break;
    }
    case OP_TXN_COMMIT:
        rc = sqllock_txn_commit(o->h);
        if (rc != SQLLOCK_OK)
            job_fail_db(c, j, rc);
        obj_free(o);                /* rolls back what the commit did not */
        return;
    default:                        /* OP_TXN_ROLLBACK */
        rc = sqllock_txn_rollback(o->h);
        obj_free(o);
        return;
    }
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
}

static void op_exec(conn *c, job *j)
{
    int has_row = 0;
    int64_t first = 0, affected = 0;
    int rc = sqllock_db_exec(c->db, j->s[0], j->v, j->nv, &has_row, &first,
                             &affected);
    if (rc != SQLLOCK_OK) {
        job_fail_db(c, j, rc);
        return;
    }
    j->r[0] = has_row;
    j->r[1] = first;
    j->r[2] = affected;
}

static void op_record(conn *c, job *j)
{
    int rc;
    switch (j->op) {
    case OP_REC_GET:
        rc = sqllock_record_get(c->db, j->s[0], &j->rbuf, &j->rbuflen,
                                &j->r[0]);
        break;
    case OP_REC_CREATE:
        rc = sqllock_record_create(c->db, j->s[0], j->buf, j->buflen);
        break;
    case OP_REC_CAS:
        rc = sqllock_record_cas(c->db, j->s[0], j->n[0], j->buf, j->buflen,
                                &j->r[0]);
        break;
    default:
        rc = sqllock_record_delete(c->db, j->s[0], j->n[0]);
    }
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
}

static int lookup_cb(void *ctx, const sqllock_lease_info *i)
{
    job *j = ctx;
    j->rs = dupstr(i->owner);
    j->rs2 = dupstr(i->holder);
    j->r[0] = 1;
    j->r[1] = i->token;
    j->r[2] = i->remaining_ms;
    return 0;
}

static void op_read(conn *c, job *j)
{
    int rc;
    switch (j->op) {
    case OP_GUARD: {
        char buf[SQLLOCK_GUARD_SQL_MAX];
        rc = sqllock_guard_sql(c->db, j->s[0], j->n[0], (int)j->n[1],
                               (int)j->n[2], buf, sizeof buf, NULL);
        if (rc == SQLLOCK_OK)
            j->rs = dupstr(buf);
        break;
    }
    case OP_LOOKUP:
        rc = sqllock_lease_lookup(c->db, j->s[0], lookup_cb, j);
        if (rc == SQLLOCK_NOTFOUND)
            rc = SQLLOCK_OK;        /* r[0] stays 0: none */
        break;
    case OP_SEM_COUNT: {
        int live = 0;
        rc = sqllock_sem_count(c->db, j->s[0], &live);
        j->r[0] = live;
        break;
    }
    default: {                      /* OP_LEADER_GET */
        sqllock_leader_info li;
        rc = sqllock_leader_get(c->db, j->s[0], &li);
        if (rc == SQLLOCK_OK) {
            j->r[0] = 1;
            j->r[1] = li.token;
            j->r[2] = li.remaining_ms;
            j->rs2 = dupstr(li.holder);
        } else if (rc == SQLLOCK_NOTFOUND) {
            rc = SQLLOCK_OK;
        }
    }
    }
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
}

/* The C figure of the benchmark: pairs of try-acquire and release on a
 * handle of its own, timed here (no JavaScript in the loop). */
static void op_bench(job *j)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    lo.ttl_ms = 30000;
    int rc = sqllock_open(j->s[0], NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_new(db, j->s[1], &lo, &l);
    int64_t t0 = sqllock_now_us();
    for (int64_t i = 0; rc == SQLLOCK_OK && i < j->n[0]; i++) {
        rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_release(l);
    }
    j->r[0] = sqllock_now_us() - t0;
    if (rc != SQLLOCK_OK)
        job_fail(j, rc, sqllock_errmsg(db));
    sqllock_lease_free(l);
    sqllock_close(db);
}

static void op_open(conn *c, job *j)
{
    sqllock_options opts = SQLLOCK_OPTIONS_INIT;
    opts.connect_timeout_ms = j->n[0];
    opts.statement_timeout_ms = j->n[1];
    opts.busy_timeout_ms = j->n[2];
    sqllock_db *db = NULL;
    int rc = sqllock_open(j->s[0], &opts, &db);
    if (rc == SQLLOCK_OK && j->n[3])
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK) {
        job_fail(j, rc, db ? sqllock_errmsg(db) : NULL);
        sqllock_close(db);
        return;
    }
    c->db = db;
    j->rs = dupstr(sqllock_db_driver(db));
}

void op_run(conn *c, job *j)
{
    j->status = SQLLOCK_OK;
    if (j->op == OP_OPEN) {
        if (c->db != NULL)
            job_fail(j, SQLLOCK_EMISUSE, "already open");
        else
            op_open(c, j);
        return;
    }
    if (j->op == OP_BENCH_C) {
        op_bench(j);
        return;
    }
    if (j->op == OP_REAPER_START || j->op == OP_REAPER_STOP) {
        reaper_job_run(j);          /* on a conn without a handle */
        return;
    }
    if (j->op == OP_LEADER_RESIGN || j->op == OP_LEADER_STOP) {
        if (j->op == OP_LEADER_RESIGN)
            leader_resign_run(j);
        else
            leader_stop_run(j);
        return;
    }
    if (c->db == NULL) {
        if (j->op != OP_CLOSE)
            job_fail(j, SQLLOCK_EMISUSE, "the database handle is closed");
        return;
    }
    switch (j->op) {
    case OP_CLOSE:
        conn_free_objs(c);
        sqllock_close(c->db);
        c->db = NULL;
        break;
    case OP_ACQUIRE:
        op_acquire(c, j);
        break;
    case OP_RELEASE:
        op_release(c, j);
        break;
    case OP_RENEW:
        op_renew(c, j);
        break;
    case OP_EXEC:
        op_exec(c, j);
        break;
    case OP_ACQUIRE_MANY:
        op_acquire_many(c, j);
        break;
    case OP_RELEASE_MANY:
        op_release_many(c, j);
        break;
    case OP_TXN_BEGIN:
    case OP_TXN_LOCK:
    case OP_TXN_LOCK_ROWS:
    case OP_TXN_COMMIT:
    case OP_TXN_ROLLBACK:
        op_txn(c, j);
        break;
    case OP_REC_GET:
    case OP_REC_CREATE:
    case OP_REC_CAS:
    case OP_REC_DELETE:
        op_record(c, j);
        break;
    case OP_LEADER_START:
        leader_start_run(c, j);
        break;
    case OP_LIST:
    case OP_FORCE:
    case OP_REAP:
        inspect_run(c, j);
        break;
    default:
        op_read(c, j);
    }
}

/* ---- results, on the loop's thread ------------------------------------ */

static void set_prop(napi_env env, napi_value o, const char *k, napi_value v)
{
    napi_set_named_property(env, o, k, v);
}

static napi_value num(napi_env env, int64_t n)
{
    napi_value v;
    napi_create_double(env, (double)n, &v);
    return v;
}

static napi_value big(napi_env env, int64_t n)
{
    napi_value v;
    napi_create_bigint_int64(env, n, &v);
    return v;
}

static napi_value str(napi_env env, const char *s)
{
    napi_value v;
    if (s == NULL)
        napi_get_null(env, &v);
    else
        napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
    return v;
}

/* got[0..nv) as an array of booleans. */
static napi_value bools(napi_env env, const job *j)
{
    napi_value a, b;
    napi_create_array_with_length(env, (size_t)j->nv, &a);
    for (int i = 0; i < j->nv; i++) {
        napi_get_boolean(env, j->got[i] != 0, &b);
        napi_set_element(env, a, (uint32_t)i, b);
    }
    return a;
}

napi_value op_result(napi_env env, conn *c, job *j, int *ok)
{
    napi_value o;
    (void)c;
    if (j->status != SQLLOCK_OK) {
        *ok = 0;
        napi_value err = make_error(env, j->status, j->errmsg);
        if (j->op == OP_RELEASE_MANY)   /* which holds are over all the same */
            set_prop(env, err, "ended", bools(env, j));
        if (j->op >= OP_LIST && j->op <= OP_REAPER_STOP)
            return inspect_result(env, j, err);
        return err;
    }
    if (j->op >= OP_LIST && j->op <= OP_REAPER_STOP) {
        *ok = 1;
        return inspect_result(env, j, NULL);
    }
    *ok = 1;
    napi_create_object(env, &o);
    switch (j->op) {
    case OP_OPEN:
        set_prop(env, o, "driver", str(env, j->rs));
        break;
    case OP_ACQUIRE:
        set_prop(env, o, "id", num(env, j->r[0]));
        set_prop(env, o, "token", big(env, j->r[1]));
        set_prop(env, o, "permit", num(env, j->r[2]));
        set_prop(env, o, "owner", str(env, j->rs));
        set_prop(env, o, "row", str(env, j->rs2));
        break;
    case OP_EXEC: {
            napi_value r, b;
            napi_create_object(env, &r);
            napi_get_boolean(env, j->r[0] != 0, &b);
            set_prop(env, r, "hasRow", b);
            set_prop(env, r, "first", j->r[0] ? big(env, j->r[1]) : str(env, NULL));
            set_prop(env, r, "affected", num(env, j->r[2]));
        return r;
    }
    case OP_TXN_BEGIN:
        set_prop(env, o, "id", num(env, j->r[0]));
        break;
    case OP_TXN_LOCK:
    case OP_TXN_LOCK_ROWS:
    case OP_RELEASE_MANY:
        return bools(env, j);
    case OP_ACQUIRE_MANY: {         /* [[id, token, owner], ...] */
        napi_value a, e;
        napi_create_array_with_length(env, (size_t)j->nv, &a);
        for (int i = 0; i < j->nv; i++) {
            napi_create_array_with_length(env, 3, &e);
            napi_set_element(env, e, 0, num(env, j->rv[2 * i]));
            napi_set_element(env, e, 1, big(env, j->rv[2 * i + 1]));
            napi_set_element(env, e, 2, str(env, j->rsv[i]));
            napi_set_element(env, a, (uint32_t)i, e);
        }
        return a;
    }
    case OP_REC_GET: {
        napi_value b;
        void *data;
        napi_create_buffer_copy(env, j->rbuflen, j->rbuf ? j->rbuf : "",
                                &data, &b);
        set_prop(env, o, "value", b);
        set_prop(env, o, "version", big(env, j->r[0]));
        break;
    }
    case OP_REC_CAS:
        set_prop(env, o, "version", big(env, j->r[0]));
        break;
    case OP_GUARD:
        return str(env, j->rs);
    case OP_LOOKUP:
    case OP_LEADER_GET:
        if (!j->r[0]) {
            napi_get_null(env, &o);
            return o;
        }
        if (j->op == OP_LOOKUP)
            set_prop(env, o, "owner", str(env, j->rs));
        set_prop(env, o, "holder", str(env, j->rs2));
        set_prop(env, o, "token", big(env, j->r[1]));
        set_prop(env, o, "remaining", num(env, j->r[2]));
        break;
    case OP_SEM_COUNT:
        return num(env, j->r[0]);
    case OP_BENCH_C:
        set_prop(env, o, "us", num(env, j->r[0]));
        break;
    case OP_LEADER_START:
        return leader_result(env, j);
    case OP_LEADER_RESIGN: {        /* true: handed over; false: not leader */
        napi_value b;
        napi_get_boolean(env, j->r[0] == SQLLOCK_OK, &b);
        return b;
    }
    default:
        break;
    }
    return o;
}
