/*
 * conn.c -- a connection's thread, its job queue, and the threadsafe
 * function that carries results and events back to the event loop.
 *
 * Life of a conn. connNew() starts the thread and makes the threadsafe
 * function (counting the thread as its one user). JavaScript queues jobs
 * with call(); each returns a promise that the loop's thread settles when
 * the job's result arrives. The close job frees the conn's objs, closes
 * the sqllock_db and ends the thread, which then releases the threadsafe
 * function; its finalizer joins the thread. At process exit (or when a
 * worker_threads environment goes away) Node finalizes the threadsafe
 * function while the thread may still run: the finalizer then tells the
 * thread to stop (every wait ends within one slice), joins it, and the
 * thread closes its own sqllock_db on its way out. The struct is freed
 * when both its JavaScript external and its threadsafe function are gone.
 */
#include <stdlib.h>
#include <string.h>

#include "addon.h"

char *dupstr(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* ---- the struct's life ----------------------------------------------- */

void conn_unref_struct(conn *c)
{
    pthread_mutex_lock(&c->mu);
    int left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left > 0)
        return;
    free(c->objs);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static void job_free(job *j)
{
    for (int i = 0; i < j->ns; i++)
        free(j->s[i]);
    for (int i = 0; i < j->nv; i++)
        free(j->vtext[i]);
    free(j->buf);
    free(j->errmsg);
    free(j->rs);
    free(j->rs2);
    sqllock_free(j->rbuf);
    if (j->rsv != NULL)
        for (int i = 0; i < j->nv; i++)
            free(j->rsv[i]);
    free(j->rsv);
    free(j->rv);
    rows_free(j->rows);
    free(j);
}

int job_cancelled(const conn *c, const job *j)
{
    if (c->exiting)
        return 1;
    return j->cancel != NULL && __atomic_load_n(j->cancel, __ATOMIC_ACQUIRE);
}

/* One C wait of sqllock_lease_acquire() (a fair wait, M3) that the loop's
 * thread can end at once: cancelWait() (an abort, a close) and an exit
 * call sqllock_lease_cancel() on the lease published in c->waiting. The
 * lease is published and unpublished under c->mu, and they cancel it
 * only under c->mu, so no cancel runs on it once this returns -- the
 * caller may free it then (op_acquire does, when the wait failed). The
 * flag is read after publishing and set before the mutex is taken on the
 * other side: an abort is either seen here or reaches the C wait.
 * Returns the wait's status (SQLLOCK_ECANCELED when it was cancelled). */
int conn_wait_cancellable(conn *c, job *j, sqllock_lease *l, int64_t ms)
{
    pthread_mutex_lock(&c->mu);
    c->waiting = l;
    c->waiting_flag = j->cancel;
    pthread_mutex_unlock(&c->mu);
    int rc = job_cancelled(c, j) ? SQLLOCK_ECANCELED
                                 : sqllock_lease_acquire(l, ms);
    pthread_mutex_lock(&c->mu);
    c->waiting = NULL;
    c->waiting_flag = NULL;
    pthread_mutex_unlock(&c->mu);
    /* No cancel can reach the lease now: withdraw one that came after
     * the wait had ended with its own outcome (sqllock_lease_cancel()). */
    sqllock_lease_cancel(l, 0);
    return rc;
}

/* ---- objs -------------------------------------------------------------- */

obj *obj_new(conn *c, int kind)
{
    obj *o = calloc(1, sizeof *o);
    if (o == NULL)
        return NULL;
    pthread_mutex_lock(&c->mu);
    int slot = -1;
    for (int i = 0; i < c->capobjs; i++)
        if (c->objs[i] == NULL) {
            slot = i;
            break;
        }
    if (slot < 0 && c->capobjs < (1 << 20) - 1) {
        int cap = c->capobjs ? c->capobjs * 2 : 16;
        if (cap > (1 << 20) - 1)
            cap = (1 << 20) - 1;
        obj **grown = realloc(c->objs, (size_t)cap * sizeof *grown);
        if (grown != NULL) {
            memset(grown + c->capobjs, 0,
                   (size_t)(cap - c->capobjs) * sizeof *grown);
            slot = c->capobjs;
            c->objs = grown;
            c->capobjs = cap;
        }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&c->mu);
        free(o);
        return NULL;
    }
    o->kind = kind;
    o->c = c;
    o->id = (++c->seq << 20) | (int64_t)(slot + 1);
    c->objs[slot] = o;
    pthread_mutex_unlock(&c->mu);
    return o;
}

obj *obj_get(conn *c, int64_t id)
{
    int slot = (int)(id & ((1 << 20) - 1)) - 1;
    if (slot < 0 || slot >= c->capobjs || c->objs[slot] == NULL ||
        c->objs[slot]->id != id)
        return NULL;
    return c->objs[slot];
}

/* On the thread that owns c->db: takes the obj out of the table (so the
 * loop's thread no longer reads it), then frees its handle, which stops
 * the lease's watch first and waits for a callback that is running. */
void obj_free(obj *o)
{
    conn *c = o->c;
    pthread_mutex_lock(&c->mu);
    c->objs[(o->id & ((1 << 20) - 1)) - 1] = NULL;
    pthread_mutex_unlock(&c->mu);
    switch (o->kind) {
    case OBJ_LEASE:
    case OBJ_LEADER_LEASE:
        sqllock_lease_free(o->h);
        break;
    case OBJ_SEM:
        sqllock_sem_free(o->h);
        break;
    case OBJ_RW_SHARED:
    case OBJ_RW_EXCL:
        sqllock_rw_free(o->h);
        break;
    case OBJ_TXN:
        sqllock_txn_free(o->h);
        break;
    }
    free(o);
}

void conn_free_objs(conn *c)
{
    for (int i = 0; i < c->capobjs; i++) {
        pthread_mutex_lock(&c->mu);
        obj *o = c->objs[i];
        pthread_mutex_unlock(&c->mu);
        if (o != NULL)
            obj_free(o);
    }
}

/* ---- the thread -------------------------------------------------------- */

void post_msg(conn *c, void *msg)
{
    if (napi_call_threadsafe_function(c->tsfn, msg, napi_tsfn_nonblocking)
        != napi_ok) {
        /* The environment is going away: nobody awaits it any more. */
        if (*(int *)msg == MSG_JOB)
            job_free(msg);
        else
            free(msg);
    }
}

static void *conn_main(void *arg)
{
    conn *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (c->head == NULL && !c->exiting)
            pthread_cond_wait(&c->cv, &c->mu);
        job *j = c->head;
        if (c->exiting) {
            /* Drop what is queued: the loop that awaited it is gone. */
            c->head = c->tail = NULL;
            pthread_mutex_unlock(&c->mu);
            while (j != NULL) {
                job *next = j->next;
                job_free(j);
                j = next;
            }
            break;
        }
        c->head = j->next;
        if (c->head == NULL)
            c->tail = NULL;
        pthread_mutex_unlock(&c->mu);
        int op = j->op;
        op_run(c, j);
        post_msg(c, j);
        if (op == OP_CLOSE)
            break;
    }
    /* At exit the handle may still be open: close it here, on the one
     * thread that ever used it (contract E3). */
    if (c->db != NULL) {
        conn_free_objs(c);
        sqllock_close(c->db);
        c->db = NULL;
    }
    napi_release_threadsafe_function(c->tsfn, napi_tsfn_release);
    return NULL;
}

/* ---- the loop's side ------------------------------------------------- */

static void call_js(napi_env env, napi_value js_cb, void *context, void *data)
{
    conn *c = context;
    (void)js_cb;
    if (env == NULL) {              /* torn down: free what came */
        if (*(int *)data == MSG_JOB)
            job_free(data);
        else
            free(data);
        return;
    }
    if (*(int *)data == MSG_WATCH) {
        watch_msg *m = data;
        napi_value fn, argv[4], undef;
        if (c->on_event != NULL &&
            napi_get_reference_value(env, c->on_event, &fn) == napi_ok &&
            fn != NULL) {
            napi_create_double(env, (double)m->id, &argv[0]);
            napi_create_int32(env, m->state, &argv[1]);
            napi_create_int32(env, m->status, &argv[2]);
            napi_create_string_utf8(env, m->text, NAPI_AUTO_LENGTH, &argv[3]);
            napi_get_undefined(env, &undef);
            napi_call_function(env, undef, fn, 4, argv, NULL);
        }
        free(m);
        return;
    }
    job *j = data;
    if (j->deferred != NULL) {
        int ok = 0;
        napi_value v = op_result(env, c, j, &ok);
        if (v == NULL) {            /* an exception while converting */
            napi_value exc;
            napi_get_and_clear_last_exception(env, &exc);
            napi_reject_deferred(env, j->deferred, exc);
        } else if (ok) {
            napi_resolve_deferred(env, j->deferred, v);
        } else {
            napi_reject_deferred(env, j->deferred, v);
        }
    }
    if (j->cancel_ref != NULL)
        napi_delete_reference(env, j->cancel_ref);
    if (j->ptr_ref != NULL)
        napi_delete_reference(env, j->ptr_ref);
    if (j->deferred != NULL && --c->pending == 0)
        napi_unref_threadsafe_function(env, c->tsfn);
    job_free(j);
}

static void tsfn_finalize(napi_env env, void *data, void *hint)
{
    conn *c = data;
    (void)hint;
    pthread_mutex_lock(&c->mu);
    c->exiting = 1;                 /* no-op after a close: it has ended */
    if (c->waiting != NULL)         /* a fair wait: end it, to join */
        sqllock_lease_cancel(c->waiting, 1);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->thread_started)
        pthread_join(c->thread, NULL);
    if (c->on_event != NULL)
        napi_delete_reference(env, c->on_event);
    c->on_event = NULL;
    conn_unref_struct(c);
}

static void enqueue(conn *c, job *j)
{
    pthread_mutex_lock(&c->mu);
    if (c->tail != NULL)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void external_finalize(napi_env env, void *data, void *hint)
{
    conn *c = data;
    (void)env;
    (void)hint;
    /* A Database dropped without close(): close it on its thread. */
    if (!c->closed) {
        c->closed = 1;
        job *j = calloc(1, sizeof *j);
        if (j != NULL) {
            j->msg = MSG_JOB;
            j->op = OP_CLOSE;
            enqueue(c, j);
        }
    }
    conn_unref_struct(c);
}

static conn *get_conn(napi_env env, napi_value v)
{
    void *p = NULL;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, v, &p) != napi_ok || p == NULL) {
        napi_throw_type_error(env, NULL, "sqllock: not a connection");
        return NULL;
    }
    return p;
}

/* connNew(onEvent) -> external */
static napi_value ConnNew(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], name, ext;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return throw_status(env, SQLLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->env = env;
    c->refs = 2;
    if (argc >= 1)
        napi_create_reference(env, argv[0], 1, &c->on_event);
    napi_create_string_utf8(env, "sqllock", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, c,
                                        tsfn_finalize, c, call_js,
                                        &c->tsfn) != napi_ok) {
        free(c);
        return throw_status(env, SQLLOCK_ESYS,
                            "cannot make a threadsafe function");
    }
    napi_unref_threadsafe_function(env, c->tsfn);
    if (pthread_create(&c->thread, NULL, conn_main, c) != 0) {
        c->closed = 1;
        napi_release_threadsafe_function(c->tsfn, napi_tsfn_abort);
        conn_unref_struct(c);       /* the external's share */
        return throw_status(env, SQLLOCK_ESYS, "cannot start a thread");
    }
    c->thread_started = 1;
    NAPI_CALL(env, napi_create_external(env, c, external_finalize, NULL, &ext));
    return ext;
}

/* Copies a JS string into a malloc'd UTF-8 string. A string with a NUL
 * inside would reach C cut short (a lock on "a" for "a\0b"): it sets
 * *nul, and the job fails with EINVAL before it is queued. */
static char *get_string(napi_env env, napi_value v, int *nul)
{
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok)
        return NULL;
    char *s = malloc(len + 1);
    if (s != NULL) {
        napi_get_value_string_utf8(env, v, s, len + 1, &len);
        if (memchr(s, 0, len) != NULL)
            *nul = 1;
    }
    return s;
}

static int get_int64(napi_env env, napi_value v, int64_t *out)
{
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_bigint) {
        bool lossless;
        return napi_get_value_bigint_int64(env, v, out, &lossless) == napi_ok
               && lossless;
    }
    if (t == napi_boolean) {
        bool b;
        napi_get_value_bool(env, v, &b);
        *out = b;
        return 1;
    }
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok || d != d ||
        d > 9.2e18 || d < -9.2e18)
        return 0;
    *out = (int64_t)d;
    return 1;
}

/* Fills the job's arguments from argv (see struct job). 0 and a thrown
 * exception on bad input. */
static int parse_args(napi_env env, job *j, napi_value *argv, size_t argc)
{
    int nul = 0;
    for (size_t i = 0; i < argc; i++) {
        napi_valuetype t;
        bool is;
        napi_typeof(env, argv[i], &t);
        if (t == napi_string || t == napi_null) {
            if (j->ns >= JOB_S)
                goto bad;
            j->s[j->ns++] = t == napi_null ? NULL : get_string(env, argv[i], &nul);
        } else if (t == napi_number || t == napi_bigint || t == napi_boolean) {
            if (j->nn >= JOB_N || !get_int64(env, argv[i], &j->n[j->nn++]))
                goto bad;
        } else if (t == napi_external) {
            if (j->ptr != NULL)
                goto bad;
            napi_get_value_external(env, argv[i], &j->ptr);
            napi_create_reference(env, argv[i], 1, &j->ptr_ref);
        } else if (napi_is_typedarray(env, argv[i], &is) == napi_ok && is) {
            napi_typedarray_type tt;
            size_t len, off;
            void *data;
            napi_value ab;
            napi_get_typedarray_info(env, argv[i], &tt, &len, &data, &ab,
                                     &off);
            if (tt == napi_int32_array) {   /* the abort flag */
                j->cancel = data;
                napi_create_reference(env, argv[i], 1, &j->cancel_ref);
            } else {                         /* bytes */
                free(j->buf);
                size_t size = tt == napi_uint8_array ? len : 0;
                j->buf = malloc(size ? size : 1);
                if (j->buf == NULL)
                    goto bad;
                memcpy(j->buf, data, size);
                j->buflen = size;
            }
        } else if (napi_is_array(env, argv[i], &is) == napi_ok && is) {
            uint32_t n;
            napi_get_array_length(env, argv[i], &n);
            if (n > JOB_V)
                goto toolong;
            for (uint32_t k = 0; k < n; k++) {
                napi_value e;
                napi_valuetype et;
                napi_get_element(env, argv[i], k, &e);
                napi_typeof(env, e, &et);
                sqllock_cell *cell = &j->v[j->nv];
                memset(cell, 0, sizeof *cell);
                cell->op = SQLLOCK_OP_SET;
                if (et == napi_string) {
                    j->vtext[j->nv] = get_string(env, e, &nul);
                    cell->text = j->vtext[j->nv];
                } else if (!get_int64(env, e, &cell->number)) {
                    goto bad;
                }
                j->nv++;
            }
        } else {
            goto bad;
        }
    }
    if (nul) {
        throw_status(env, SQLLOCK_EINVAL, "a string argument holds a NUL "
                     "character");
        return 0;
    }
    return 1;
toolong:
    throw_status(env, SQLLOCK_EINVAL, "too many values (at most 64)");
    return 0;
bad:
    napi_throw_type_error(env, NULL, "sqllock: bad argument to a native call");
    return 0;
}

/* call(conn, op, ...args) -> Promise */
static napi_value Call(napi_env env, napi_callback_info info)
{
    size_t argc = 16;
    napi_value argv[16], promise;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 2) {
        napi_throw_type_error(env, NULL, "sqllock: call(conn, op, ...)");
        return NULL;
    }
    conn *c = get_conn(env, argv[0]);
    if (c == NULL)
        return NULL;
    int32_t op;
    NAPI_CALL(env, napi_get_value_int32(env, argv[1], &op));
    job *j = calloc(1, sizeof *j);
    if (j == NULL)
        return throw_status(env, SQLLOCK_ENOMEM, "out of memory");
    j->msg = MSG_JOB;
    j->op = op;
    if (op <= 0 || op >= OP_MAX_ || !parse_args(env, j, argv + 2, argc - 2)) {
        if (op <= 0 || op >= OP_MAX_)
            napi_throw_range_error(env, NULL, "sqllock: unknown operation");
        if (j->cancel_ref != NULL)
            napi_delete_reference(env, j->cancel_ref);
        if (j->ptr_ref != NULL)
            napi_delete_reference(env, j->ptr_ref);
        job_free(j);
        return NULL;
    }
    if (napi_create_promise(env, &j->deferred, &promise) != napi_ok) {
        job_free(j);
        return NULL;
    }
    if (c->closed) {
        napi_reject_deferred(env, j->deferred,
                             make_error(env, SQLLOCK_EMISUSE,
                                        "the database handle is closed"));
        if (j->cancel_ref != NULL)
            napi_delete_reference(env, j->cancel_ref);
        if (j->ptr_ref != NULL)
            napi_delete_reference(env, j->ptr_ref);
        job_free(j);
        return promise;
    }
    if (op == OP_CLOSE)
        c->closed = 1;
    if (c->pending++ == 0)
        napi_ref_threadsafe_function(env, c->tsfn);
    enqueue(c, j);
    return promise;
}

/* cancelWait(conn, flag): aborts the wait whose abort flag (an Int32Array
 * on a SharedArrayBuffer) is `flag`. Sets the flag, which a sliced wait
 * reads between its slices, and, when that wait is the conn's fair wait
 * running now, cancels its C wait (conn_wait_cancellable()). A flag of a
 * wait that has ended names no lease any more: nothing else happens. */
static napi_value CancelWait(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    bool is = false;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    conn *c = argc == 2 ? get_conn(env, argv[0]) : NULL;
    if (c == NULL) {
        if (argc != 2)
            napi_throw_type_error(env, NULL, "sqllock: cancelWait(conn, flag)");
        return NULL;
    }
    napi_typedarray_type tt;
    size_t len = 0;
    void *data = NULL;
    if (napi_is_typedarray(env, argv[1], &is) != napi_ok || !is ||
        napi_get_typedarray_info(env, argv[1], &tt, &len, &data, NULL,
                                 NULL) != napi_ok ||
        tt != napi_int32_array || len < 1) {
        napi_throw_type_error(env, NULL, "sqllock: the abort flag is an "
                              "Int32Array");
        return NULL;
    }
    __atomic_store_n((int32_t *)data, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&c->mu);
    if (c->waiting != NULL && c->waiting_flag == data)
        sqllock_lease_cancel(c->waiting, 1);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* state(conn, id) -> [state, deadline_us, count] or null: read on the
 * loop's thread, under the conn's mutex so that the obj is not freed
 * meanwhile (the library's state and deadline are atomics). */
static napi_value State(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2], out, v;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    conn *c = get_conn(env, argv[0]);
    if (c == NULL)
        return NULL;
    int64_t id = 0;
    get_int64(env, argv[1], &id);
    int state = -1;
    int64_t deadline = 0;
    pthread_mutex_lock(&c->mu);
    obj *o = obj_get(c, id);
    if (o != NULL && o->lease != NULL) {
        state = sqllock_lease_state(o->lease);
        deadline = sqllock_lease_deadline_us(o->lease);
    }
    pthread_mutex_unlock(&c->mu);
    if (state < 0) {
        napi_get_null(env, &out);
        return out;
    }
    napi_create_array_with_length(env, 2, &out);
    napi_create_int32(env, state, &v);
    napi_set_element(env, out, 0, v);
    napi_create_double(env, (double)deadline, &v);
    napi_set_element(env, out, 1, v);
    return out;
}

napi_value conn_init(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        { "connNew", NULL, ConnNew, NULL, NULL, NULL, napi_default, NULL },
        { "call", NULL, Call, NULL, NULL, NULL, napi_default, NULL },
        { "state", NULL, State, NULL, NULL, NULL, napi_default, NULL },
        { "cancelWait", NULL, CancelWait, NULL, NULL, NULL, napi_default,
          NULL },
    };
    NAPI_CALL(env, napi_define_properties(env, exports,
                                          sizeof props / sizeof props[0],
                                          props));
    return exports;
}
