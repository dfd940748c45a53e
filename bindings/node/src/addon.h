/*
 * addon.h -- the types shared by the files of the Node.js addon.
 *
 * The addon runs every call of libsqllock on threads of its own, never on
 * the event loop's thread and never on libuv's thread pool:
 *
 *   conn      one sqllock_db and the one thread that uses it (contract E3
 *             for free), with a queue of jobs. JavaScript makes a job
 *             (conn.c: Call), the thread runs it (ops.c: op_run), and the
 *             result goes back through the conn's threadsafe function,
 *             which resolves or rejects the job's promise on the loop.
 *   obj       a C handle that lives on a conn (a lease, a semaphore
 *             permit, a shared/exclusive hold, a row-lock transaction),
 *             named in JavaScript by a small integer id. Only the conn's
 *             thread makes, uses and frees it; the loop's thread reads its
 *             lease's state (atomics in the library) under the conn's
 *             mutex, so that it is never read while being freed.
 *   leader    a candidate of sqllock_leader_start(): its own threads in the
 *             library, its callbacks carried to the loop by a threadsafe
 *             function of its own, which keeps the process alive while
 *             the candidate campaigns.
 *   reaper    a sqllock_reaper (inspect.c): a thread of the library with
 *             its own connection. Started and stopped by jobs on a conn
 *             of their own (both block: a connect, one statement); it
 *             never keeps the process alive, and an environment cleanup
 *             hook stops one still running when the environment goes.
 *
 * A conn's threadsafe function is referenced (keeps the process alive)
 * only while a job is pending; lost events of watched leases travel on it
 * too, and never keep the process alive by themselves.
 */
#ifndef SQLLOCK_NODE_ADDON_H
#define SQLLOCK_NODE_ADDON_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>

#include "sqllock.h"

/* The longest single C wait of a cancellable acquire (ms): how long an
 * aborted wait may take to notice (the Python binding's SLICE). */
#define SLICE_MS 200

/* Statuses of the addon's own, beside the library's (all negative). */
#define ST_ABORTED (-1)   /* the wait was aborted; nothing is held */

/* What travels on a conn's threadsafe function. */
enum { MSG_JOB = 1, MSG_WATCH = 2, MSG_LEADER = 3 };

/* A watched lease's change of state (sqllock_watch_fn), on its way to
 * the loop. */
typedef struct watch_msg {
    int msg;                 /* MSG_WATCH */
    int state;
    int status;
    int64_t id;              /* the obj's */
    char text[512];
} watch_msg;

/* The kinds of obj. */
enum { OBJ_LEASE = 1, OBJ_SEM, OBJ_RW_SHARED, OBJ_RW_EXCL, OBJ_LEADER_LEASE,
       OBJ_TXN };

typedef struct conn conn;
typedef struct job job;

typedef struct obj {
    int kind;
    int64_t id;              /* (sequence << 20) | (index in conn->objs + 1):
                                never reused, so that a late event of a
                                freed obj finds nobody */
    void *h;                 /* sqllock_lease, _sem, _rw or _txn */
    sqllock_lease *lease;    /* the lease of the hold (NULL for a txn) */
    int watched;
    conn *c;
} obj;

/* A job's arguments, filled on the loop's thread in the order JavaScript
 * passes them: strings into s[], numbers into n[], one array of strings
 * or of cells (strings, numbers, bigints) into v[], one buffer into buf,
 * one Int32Array on a SharedArrayBuffer into cancel (the abort flag). */
#define JOB_S 4
#define JOB_N 8
#define JOB_V 64

struct job {
    int msg;                 /* MSG_JOB */
    int op;
    napi_deferred deferred;  /* NULL for a job nobody awaits (a close
                                from a finalizer) */
    napi_ref cancel_ref;     /* keeps the abort flag's memory alive */
    volatile int32_t *cancel;
    char *s[JOB_S];
    int ns;
    int64_t n[JOB_N];
    int nn;
    sqllock_cell v[JOB_V];
    char *vtext[JOB_V];      /* the strings of v, owned */
    int nv;
    void *buf;
    size_t buflen;

    /* Results, read on the loop's thread by op_result(). */
    int status;
    char *errmsg;            /* malloc'd, or NULL */
    int64_t r[8];
    char *rs, *rs2;          /* malloc'd string results */
    void *rbuf;              /* a sqllock_free()'d buffer result */
    size_t rbuflen;
    int got[JOB_V];
    int64_t *rv;             /* a lockMany's ids and tokens (2 per name) */
    char **rsv;              /* and its owners; both malloc'd, nv long */
    void *ptr;               /* an external argument (a leader, a reaper) */
    napi_ref ptr_ref;        /* keeps it alive until the job is answered */
    struct rows *rows;       /* lease rows read (inspect.c), or NULL */
    job *next;
};

struct conn {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int thread_started;
    job *head, *tail;        /* the queue */
    int stopping;            /* set under mu: the thread ends after the
                                queue's close job, or at once at exit */
    volatile int exiting;    /* the environment is going away: every wait
                                stops at its next slice */
    sqllock_db *db;          /* used by the thread only */
    sqllock_lease *waiting;  /* under mu: the lease of the fair wait that
                                runs now (one C wait, not slices), which
                                cancelWait() and an exit may cancel from
                                the loop's thread; NULL once the wait
                                returned, before the lease can be freed */
    const volatile int32_t *waiting_flag; /* under mu: that wait's abort
                                flag, which names it to cancelWait() */
    obj **objs;              /* under mu */
    int capobjs;
    int64_t seq;             /* the sequence part of the next obj id */
    napi_threadsafe_function tsfn;
    napi_ref on_event;       /* JS function(kind, id, state, status, msg) */
    int pending;             /* jobs not yet answered (loop's thread) */
    int refs;                /* the external and the tsfn; freed at 0 */
    int closed;              /* a close job was queued (loop's thread) */
    napi_env env;
};

/* conn.c */
void conn_unref_struct(conn *c);
int conn_wait_cancellable(conn *c, job *j, sqllock_lease *l, int64_t ms);
obj *obj_new(conn *c, int kind);
void obj_free(obj *o);          /* on the conn's thread: frees h and slot */
obj *obj_get(conn *c, int64_t id);
void conn_free_objs(conn *c);   /* on the thread that owns c->db */
int job_cancelled(const conn *c, const job *j);
void post_msg(conn *c, void *msg);
char *dupstr(const char *s);
napi_value conn_init(napi_env env, napi_value exports);

/* ops.c */
enum {
    OP_OPEN = 1, OP_CLOSE, OP_ACQUIRE, OP_RELEASE, OP_RENEW, OP_EXEC,
    OP_TXN_BEGIN, OP_TXN_LOCK, OP_TXN_COMMIT, OP_TXN_ROLLBACK,
    OP_REC_GET, OP_REC_CREATE, OP_REC_CAS, OP_REC_DELETE,
    OP_GUARD, OP_LOOKUP, OP_SEM_COUNT, OP_LEADER_GET,
    OP_LEADER_START, OP_LEADER_RESIGN, OP_LEADER_STOP, OP_BENCH_C,
    OP_ACQUIRE_MANY, OP_RELEASE_MANY, OP_TXN_LOCK_ROWS,
    OP_LIST, OP_FORCE, OP_REAP, OP_REAPER_START, OP_REAPER_STOP,
    OP_MAX_
};
void op_run(conn *c, job *j);
napi_value op_result(napi_env env, conn *c, job *j, int *ok);
void job_fail(job *j, int status, const char *msg);
void job_fail_db(conn *c, job *j, int status);

/* leader.c */
napi_value leader_init(napi_env env, napi_value exports);
void leader_start_run(conn *c, job *j);
void leader_resign_run(job *j);
void leader_stop_run(job *j);
napi_value leader_result(napi_env env, job *j);

/* inspect.c: list, forced release, reaping, the reaper thread */
typedef struct rows rows;
void rows_free(rows *r);
void inspect_run(conn *c, job *j);       /* OP_LIST, OP_FORCE, OP_REAP */
void reaper_job_run(job *j);             /* OP_REAPER_START, _STOP */
napi_value inspect_result(napi_env env, job *j, napi_value err);
napi_value inspect_init(napi_env env, napi_value exports);

/* addon.c */
napi_value throw_status(napi_env env, int status, const char *msg);
napi_value make_error(napi_env env, int status, const char *msg);

#define NAPI_CALL(env, call)                                               \
    do {                                                                   \
        if ((call) != napi_ok) {                                           \
            const napi_extended_error_info *info_;                         \
            napi_get_last_error_info((env), &info_);                       \
            bool pending_;                                                 \
            napi_is_exception_pending((env), &pending_);                   \
            if (!pending_)                                                 \
                napi_throw_error((env), NULL,                              \
                                 info_->error_message ?                    \
                                 info_->error_message : "napi call failed"); \
            return NULL;                                                   \
        }                                                                  \
    } while (0)

#endif
