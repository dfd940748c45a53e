/*
 * inspect.c -- the lease table seen from outside: list, an operator's
 * forced release, one pass of the reaper, and the reaper thread
 * (sqllock_list, sqllock_force_release, sqllock_reap,
 * sqllock_reaper_start/stats_get/stop; contract P1-P4, C5).
 *
 * The arguments of each op (as in ops.c):
 *
 *   LIST           -
 *   FORCE          s0 name, s1 who|null; n0 token (0: the hold there
 *                  now), n1 live
 *   REAP           n0 grace, n1 batch
 *   REAPER_START   the reaper (external); s0 url; n0 every, n1 grace,
 *                  n2 batch, n3 connect timeout, n4 statement timeout
 *                  (ms; 0: the library's default)
 *   REAPER_STOP    the reaper (external)
 *
 * A row goes to JavaScript as [name, owner, holder, token (bigint),
 * acquired ms, expires ms, remaining ms]; lib/db.js makes the object.
 *
 * The reaper. Starting (a connect) and stopping (up to one statement)
 * block, so both run as jobs on a conn of their own, never on the loop.
 * The library's thread is not Node's: it keeps no handle open, so a
 * reaper never keeps the process alive. An environment cleanup hook
 * stops one still running when the environment goes (process exit, a
 * worker's end): the library's thread must not outlive the code that
 * started it. The struct is freed when both the JavaScript external and
 * the hook are done with it. Env teardown runs the hooks of the conns'
 * threadsafe functions (made after the reaper's, so run before it: they
 * join a start or stop job still running) before this one, and the
 * finalizers of externals after every hook.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

/* ---- rows ---------------------------------------------------------------- */

typedef struct row {
    char *name, *owner, *holder;
    int64_t token, acquired, expires, remaining;
} row;

struct rows {
    row *v;
    int n, cap;
};

void rows_free(rows *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->n; i++) {
        free(r->v[i].name);
        free(r->v[i].owner);
        free(r->v[i].holder);
    }
    free(r->v);
    free(r);
}

/* The callback of sqllock_list() and sqllock_force_release(): copies the
 * row (its strings live only during the call). Non-zero stops a walk. */
static int rows_add(void *ctx, const sqllock_lease_info *i)
{
    job *j = ctx;
    if (j->rows == NULL && (j->rows = calloc(1, sizeof *j->rows)) == NULL)
        return SQLLOCK_ENOMEM;
    rows *r = j->rows;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        row *grown = realloc(r->v, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return SQLLOCK_ENOMEM;
        r->v = grown;
        r->cap = cap;
    }
    row *w = &r->v[r->n];
    w->name = dupstr(i->name ? i->name : "");
    w->owner = dupstr(i->owner ? i->owner : "");
    w->holder = dupstr(i->holder ? i->holder : "");
    if (w->name == NULL || w->owner == NULL || w->holder == NULL) {
        free(w->name);
        free(w->owner);
        free(w->holder);
        return SQLLOCK_ENOMEM;
    }
    w->token = i->token;
    w->acquired = i->acquired_at_ms;
    w->expires = i->expires_at_ms;
    w->remaining = i->remaining_ms;
    r->n++;
    return 0;
}

/* An int argument from JavaScript's int64: out of range stays out of
 * range (the library then says what is wrong), never wraps. */
static int clamp_int(int64_t v)
{
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

void inspect_run(conn *c, job *j)
{
    int rc;
    switch (j->op) {
    case OP_LIST:
        rc = sqllock_list(c->db, rows_add, j);
        if (rc == SQLLOCK_ENOMEM) {
            job_fail(j, rc, "out of memory while listing the lease table");
            return;
        }
        break;
    case OP_FORCE: {
        sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;
        fo.token = j->n[0];
        fo.live = j->n[1] != 0;
        fo.who = j->s[1];
        rc = sqllock_force_release(c->db, j->s[0], &fo, rows_add, j);
        break;
    }
    default: {                      /* OP_REAP */
        int64_t deleted = 0;
        rc = sqllock_reap(c->db, j->n[0], clamp_int(j->n[1]), &deleted);
        j->r[0] = deleted;
    }
    }
    if (rc != SQLLOCK_OK)
        job_fail_db(c, j, rc);
}

static napi_value row_value(napi_env env, const row *w)
{
    napi_value a, v;
    napi_create_array_with_length(env, 7, &a);
    napi_create_string_utf8(env, w->name, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, a, 0, v);
    napi_create_string_utf8(env, w->owner, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, a, 1, v);
    napi_create_string_utf8(env, w->holder, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, a, 2, v);
    napi_create_bigint_int64(env, w->token, &v);
    napi_set_element(env, a, 3, v);
    napi_create_double(env, (double)w->acquired, &v);
    napi_set_element(env, a, 4, v);
    napi_create_double(env, (double)w->expires, &v);
    napi_set_element(env, a, 5, v);
    napi_create_double(env, (double)w->remaining, &v);
    napi_set_element(env, a, 6, v);
    return a;
}

/* The result of a job of this file, on the loop's thread. With `err`
 * (a failed job): err, with the row a forced release found (BUSY,
 * CONFLICT: who holds it) as err.row. */
napi_value inspect_result(napi_env env, job *j, napi_value err)
{
    napi_value v;
    const rows *r = j->rows;
    if (err != NULL) {
        if (j->op == OP_FORCE && r != NULL && r->n > 0)
            napi_set_named_property(env, err, "row", row_value(env, &r->v[0]));
        return err;
    }
    switch (j->op) {
    case OP_LIST: {
        int n = r ? r->n : 0;
        napi_create_array_with_length(env, (size_t)n, &v);
        for (int i = 0; i < n; i++)
            napi_set_element(env, v, (uint32_t)i, row_value(env, &r->v[i]));
        return v;
    }
    case OP_FORCE:
        if (r != NULL && r->n > 0)
            return row_value(env, &r->v[0]);
        napi_get_null(env, &v);
        return v;
    case OP_REAP:
        napi_create_double(env, (double)j->r[0], &v);
        return v;
    default:                        /* REAPER_START, REAPER_STOP */
        napi_get_undefined(env, &v);
        return v;
    }
}

/* ---- the reaper thread -------------------------------------------------- */

typedef struct nreaper {
    pthread_mutex_t mu;
    sqllock_reaper *R;       /* under mu; NULL before the start, after stop */
    int dead;                /* the environment went away (under mu) */
    int hooked;              /* the cleanup hook is registered (under mu) */
    int refs;                /* the external and the hook; freed at 0 */
} nreaper;

static void reaper_unref(nreaper *nr)
{
    pthread_mutex_lock(&nr->mu);
    int left = --nr->refs;
    pthread_mutex_unlock(&nr->mu);
    if (left == 0) {
        pthread_mutex_destroy(&nr->mu);
        free(nr);
    }
}

/* The environment is going away: stop the reaper if it still runs. */
static void reaper_cleanup(void *arg)
{
    nreaper *nr = arg;
    pthread_mutex_lock(&nr->mu);
    sqllock_reaper *R = nr->R;
    nr->R = NULL;
    nr->dead = 1;
    nr->hooked = 0;
    pthread_mutex_unlock(&nr->mu);
    sqllock_reaper_stop(R);
    reaper_unref(nr);
}

/* The JavaScript side is gone. A reaper that was stopped (or never
 * started) needs the hook no more; one still running keeps it, and the
 * hook stops it at exit (dropping a Reaper does not stop it). */
static void reaper_external_finalize(napi_env env, void *data, void *hint)
{
    nreaper *nr = data;
    (void)hint;
    pthread_mutex_lock(&nr->mu);
    int unhook = nr->hooked && nr->R == NULL;
    if (unhook)
        nr->hooked = 0;
    pthread_mutex_unlock(&nr->mu);
    if (unhook) {
        napi_remove_env_cleanup_hook(env, reaper_cleanup, nr);
        reaper_unref(nr);
    }
    reaper_unref(nr);
}

/* reaperNew() -> external (not started: a REAPER_START job starts it) */
static napi_value ReaperNew(napi_env env, napi_callback_info info)
{
    napi_value ext;
    (void)info;
    nreaper *nr = calloc(1, sizeof *nr);
    if (nr == NULL)
        return throw_status(env, SQLLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&nr->mu, NULL);
    nr->refs = 2;
    nr->hooked = 1;
    if (napi_add_env_cleanup_hook(env, reaper_cleanup, nr) != napi_ok) {
        pthread_mutex_destroy(&nr->mu);
        free(nr);
        return throw_status(env, SQLLOCK_ESYS, "cannot add a cleanup hook");
    }
    if (napi_create_external(env, nr, reaper_external_finalize, NULL, &ext)
        != napi_ok) {
        napi_remove_env_cleanup_hook(env, reaper_cleanup, nr);
        pthread_mutex_destroy(&nr->mu);
        free(nr);
        return throw_status(env, SQLLOCK_ENOMEM, "out of memory");
    }
    return ext;
}

static void reaper_start_run(nreaper *nr, job *j)
{
    pthread_mutex_lock(&nr->mu);
    int again = nr->R != NULL;
    pthread_mutex_unlock(&nr->mu);
    if (again) {
        job_fail(j, SQLLOCK_EMISUSE, "the reaper was started already");
        return;
    }
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    dbo.connect_timeout_ms = j->n[3];
    dbo.statement_timeout_ms = j->n[4];
    sqllock_reaper_options ro = SQLLOCK_REAPER_OPTIONS_INIT;
    ro.interval_ms = j->n[0];
    ro.grace_ms = j->n[1];
    ro.batch = clamp_int(j->n[2]);
    ro.db_options = &dbo;
    char why[512] = "";
    sqllock_reaper *R = NULL;
    int rc = sqllock_reaper_start(j->s[0], &ro, &R, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        job_fail(j, rc, why[0] ? why : NULL);
        return;
    }
    pthread_mutex_lock(&nr->mu);
    int dead = nr->dead;
    if (!dead)
        nr->R = R;
    pthread_mutex_unlock(&nr->mu);
    if (dead)                       /* the environment went meanwhile */
        sqllock_reaper_stop(R);
}

void reaper_job_run(job *j)
{
    nreaper *nr = j->ptr;
    if (nr == NULL) {
        job_fail(j, SQLLOCK_EINVAL, "not a reaper");
        return;
    }
    if (j->op == OP_REAPER_START) {
        if (j->ns < 1 || j->s[0] == NULL || j->nn < 5)
            job_fail(j, SQLLOCK_EINVAL, "reaper start: url and options");
        else
            reaper_start_run(nr, j);
        return;
    }
    pthread_mutex_lock(&nr->mu);    /* OP_REAPER_STOP */
    sqllock_reaper *R = nr->R;
    nr->R = NULL;
    pthread_mutex_unlock(&nr->mu);
    sqllock_reaper_stop(R);         /* wakes it, joins it: one statement */
}

static void set_num(napi_env env, napi_value o, const char *k, int64_t n)
{
    napi_value v;
    napi_create_double(env, (double)n, &v);
    napi_set_named_property(env, o, k, v);
}

/* reaperStats(reaper) -> { reaped, passes, errors, lastStatus, lastError }
 * or null when it is not running. sqllock_reaper_stats_get() is
 * thread-safe and quick; the mutex keeps a stop from freeing the reaper
 * meanwhile. */
static napi_value ReaperStats(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out, v;
    void *p = NULL;
    napi_valuetype t;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok ||
        t != napi_external ||
        napi_get_value_external(env, argv[0], &p) != napi_ok || p == NULL) {
        napi_throw_type_error(env, NULL, "sqllock: not a reaper");
        return NULL;
    }
    nreaper *nr = p;
    sqllock_reaper_stats st;
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&nr->mu);
    int running = nr->R != NULL;
    int rc = running ? sqllock_reaper_stats_get(nr->R, &st) : SQLLOCK_OK;
    pthread_mutex_unlock(&nr->mu);
    if (!running) {
        napi_get_null(env, &out);
        return out;
    }
    if (rc != SQLLOCK_OK)
        return throw_status(env, rc, NULL);
    st.last_error[sizeof st.last_error - 1] = '\0';
    NAPI_CALL(env, napi_create_object(env, &out));
    set_num(env, out, "reaped", st.reaped);
    set_num(env, out, "passes", st.passes);
    set_num(env, out, "errors", st.errors);
    set_num(env, out, "lastStatus", st.last_status);
    napi_create_string_utf8(env, st.last_error, NAPI_AUTO_LENGTH, &v);
    napi_set_named_property(env, out, "lastError", v);
    return out;
}

napi_value inspect_init(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        { "reaperNew", NULL, ReaperNew, NULL, NULL, NULL, napi_default,
          NULL },
        { "reaperStats", NULL, ReaperStats, NULL, NULL, NULL, napi_default,
          NULL },
    };
    NAPI_CALL(env, napi_define_properties(env, exports,
                                          sizeof props / sizeof props[0],
                                          props));
    return exports;
}
