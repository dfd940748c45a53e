/*
 * leader.c -- a candidate of an election (sqllock_leader_start(), contract
 * M4) and the threadsafe function that carries its callbacks to the loop.
 *
 * The library runs the campaign on threads of its own; their callbacks
 * (elected, lost, observed) become messages to the loop. The blocking
 * calls (start: a connect; resign: a release; stop: a hand-over and a
 * join) run as jobs on a conn's thread, never on the loop. The
 * threadsafe function is referenced from leaderNew() until the stop job
 * has ended the campaign: a campaign keeps the process alive, as a
 * listening server does. If the environment goes away first, its
 * finalizer stops the candidate (unless a job is using it: then that job
 * stops it when it ends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

typedef struct leader {
    pthread_mutex_t mu;
    sqllock_leader *L;       /* under mu */
    int busy;                /* a job is using L (under mu) */
    int dead;                /* the environment went away (under mu) */
    int released;            /* the tsfn was released (stop job) */
    napi_threadsafe_function tsfn;
    napi_ref on_event;       /* JS function(ev, token, status, text) */
    int refs;                /* the external and the tsfn */
} leader;

typedef struct leader_msg {
    int msg;                 /* MSG_LEADER */
    int ev;                  /* 1 elected, 2 lost, 3 observed */
    int status;
    int64_t token;
    char text[512];
} leader_msg;

static void leader_unref(leader *ld)
{
    pthread_mutex_lock(&ld->mu);
    int left = --ld->refs;
    pthread_mutex_unlock(&ld->mu);
    if (left == 0) {
        pthread_mutex_destroy(&ld->mu);
        free(ld);
    }
}

static void post(leader *ld, int ev, int64_t token, int status,
                 const char *text)
{
    leader_msg *m = calloc(1, sizeof *m);
    if (m == NULL)
        return;
    m->msg = MSG_LEADER;
    m->ev = ev;
    m->token = token;
    m->status = status;
    snprintf(m->text, sizeof m->text, "%s", text ? text : "");
    if (napi_call_threadsafe_function(ld->tsfn, m, napi_tsfn_nonblocking)
        != napi_ok)
        free(m);
}

/* The callbacks, on the campaign thread. */
static void on_elected(void *ctx, sqllock_leader *L, int64_t token)
{
    (void)L;
    post(ctx, 1, token, SQLLOCK_OK, NULL);
}

static void on_lost(void *ctx, sqllock_leader *L, int64_t token, int status,
                    const char *msg)
{
    (void)L;
    post(ctx, 2, token, status, msg);
}

static void on_observed(void *ctx, sqllock_leader *L, const char *holder,
                        int64_t token)
{
    (void)L;
    post(ctx, 3, token, SQLLOCK_OK, holder);
}

static void call_js(napi_env env, napi_value js_cb, void *context, void *data)
{
    leader *ld = context;
    leader_msg *m = data;
    (void)js_cb;
    napi_value fn, argv[4], undef;
    if (env != NULL && ld->on_event != NULL &&
        napi_get_reference_value(env, ld->on_event, &fn) == napi_ok &&
        fn != NULL) {
        napi_create_int32(env, m->ev, &argv[0]);
        napi_create_bigint_int64(env, m->token, &argv[1]);
        napi_create_int32(env, m->status, &argv[2]);
        napi_create_string_utf8(env, m->text, NAPI_AUTO_LENGTH, &argv[3]);
        napi_get_undefined(env, &undef);
        napi_call_function(env, undef, fn, 4, argv, NULL);
    }
    free(m);
}

static void tsfn_finalize(napi_env env, void *data, void *hint)
{
    leader *ld = data;
    (void)hint;
    pthread_mutex_lock(&ld->mu);
    sqllock_leader *L = ld->busy ? NULL : ld->L;
    if (L != NULL)
        ld->L = NULL;
    ld->dead = 1;
    pthread_mutex_unlock(&ld->mu);
    sqllock_leader_stop(L);          /* only when the environment goes */
    if (ld->on_event != NULL)
        napi_delete_reference(env, ld->on_event);
    ld->on_event = NULL;
    leader_unref(ld);
}

static void external_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    leader_unref(data);
}

/* leaderNew(onEvent) -> external */
static napi_value LeaderNew(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], name, ext;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    leader *ld = calloc(1, sizeof *ld);
    if (ld == NULL)
        return throw_status(env, SQLLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&ld->mu, NULL);
    ld->refs = 2;
    if (argc >= 1)
        napi_create_reference(env, argv[0], 1, &ld->on_event);
    napi_create_string_utf8(env, "sqllock-leader", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, ld,
                                        tsfn_finalize, ld, call_js,
                                        &ld->tsfn) != napi_ok) {
        free(ld);
        return throw_status(env, SQLLOCK_ESYS,
                            "cannot make a threadsafe function");
    }
    NAPI_CALL(env, napi_create_external(env, ld, external_finalize, NULL,
                                        &ext));
    return ext;
}

/* Takes L for a job; NULL when there is none (not started, stopped). */
static sqllock_leader *take(leader *ld)
{
    pthread_mutex_lock(&ld->mu);
    sqllock_leader *L = ld->dead ? NULL : ld->L;
    if (L != NULL)
        ld->busy++;
    pthread_mutex_unlock(&ld->mu);
    return L;
}

/* Gives L back; stops it if the environment went away meanwhile. */
static void give(leader *ld)
{
    pthread_mutex_lock(&ld->mu);
    ld->busy--;
    sqllock_leader *L = NULL;
    if (ld->dead && ld->busy == 0 && ld->L != NULL) {
        L = ld->L;
        ld->L = NULL;
    }
    pthread_mutex_unlock(&ld->mu);
    sqllock_leader_stop(L);
}

/* LEADER_START: leader; s0 url, s1 name, s2 holder|null; n0 ttl, n1
 * margin, n2 renew interval, n3 resign hold, n4 connect timeout, n5
 * statement timeout (ms, 0 default). */
void leader_start_run(conn *c, job *j)
{
    leader *ld = j->ptr;
    (void)c;
    if (ld == NULL || ld->L != NULL) {
        job_fail(j, SQLLOCK_EMISUSE, "the candidate was started already");
        return;
    }
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    dbo.connect_timeout_ms = j->n[4];
    dbo.statement_timeout_ms = j->n[5];
    sqllock_leader_options lo = SQLLOCK_LEADER_OPTIONS_INIT;
    lo.ttl_ms = j->n[0];
    lo.safety_margin_ms = j->n[1];
    lo.renew_interval_ms = j->n[2];
    lo.resign_hold_ms = j->n[3];
    lo.holder = j->s[2];
    lo.db_options = &dbo;
    lo.on_elected = on_elected;
    lo.on_lost = on_lost;
    lo.on_observed = on_observed;
    lo.ctx = ld;
    char why[512] = "";
    sqllock_leader *L = NULL;
    int rc = sqllock_leader_start(j->s[0], j->s[1], &lo, &L, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        job_fail(j, rc, why[0] ? why : NULL);
        return;
    }
    pthread_mutex_lock(&ld->mu);
    int dead = ld->dead;
    if (!dead)
        ld->L = L;
    pthread_mutex_unlock(&ld->mu);
    if (dead)
        sqllock_leader_stop(L);
}

void leader_resign_run(job *j)
{
    leader *ld = j->ptr;
    sqllock_leader *L = ld ? take(ld) : NULL;
    if (L == NULL) {
        job_fail(j, SQLLOCK_ENOTHELD, "the candidate is not running");
        return;
    }
    int rc = sqllock_leader_resign(L);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_ENOTHELD) {   /* LOST, errors */
        char buf[512];
        sqllock_leader_error(L, buf, sizeof buf);
        job_fail(j, rc, buf[0] ? buf : NULL);
    }
    j->r[0] = rc;
    give(ld);
}

void leader_stop_run(job *j)
{
    leader *ld = j->ptr;
    if (ld == NULL)
        return;
    pthread_mutex_lock(&ld->mu);
    sqllock_leader *L = ld->L;
    ld->L = NULL;
    int released = ld->released;
    ld->released = 1;
    pthread_mutex_unlock(&ld->mu);
    sqllock_leader_stop(L);          /* the hand-over; joins its thread */
    if (!released)                   /* the process may exit from now on */
        napi_release_threadsafe_function(ld->tsfn, napi_tsfn_release);
}

napi_value leader_result(napi_env env, job *j)
{
    napi_value v;
    (void)j;
    napi_get_undefined(env, &v);
    return v;
}

/* leaderState(leader) -> [isLeader, token (bigint), remaining ms, health] */
static napi_value LeaderState(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1], out, v;
    void *p = NULL;
    NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
    if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok) {
        napi_throw_type_error(env, NULL, "sqllock: not a candidate");
        return NULL;
    }
    leader *ld = p;
    int is = 0, health = SQLLOCK_BUSY;
    int64_t token = 0, remaining = 0;
    pthread_mutex_lock(&ld->mu);
    if (ld->L != NULL) {            /* thread-safe getters (atomics) */
        is = sqllock_leader_is_leader(ld->L);
        token = sqllock_leader_token(ld->L);
        remaining = sqllock_leader_remaining_ms(ld->L);
        health = sqllock_leader_health(ld->L, NULL);
    }
    pthread_mutex_unlock(&ld->mu);
    napi_create_array_with_length(env, 4, &out);
    napi_get_boolean(env, is, &v);
    napi_set_element(env, out, 0, v);
    napi_create_bigint_int64(env, token, &v);
    napi_set_element(env, out, 1, v);
    napi_create_double(env, (double)remaining, &v);
    napi_set_element(env, out, 2, v);
    napi_create_int32(env, health, &v);
    napi_set_element(env, out, 3, v);
    return out;
}

napi_value leader_init(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        { "leaderNew", NULL, LeaderNew, NULL, NULL, NULL, napi_default, NULL },
        { "leaderState", NULL, LeaderState, NULL, NULL, NULL, napi_default,
          NULL },
    };
    NAPI_CALL(env, napi_define_properties(env, exports,
                                          sizeof props / sizeof props[0],
                                          props));
    return exports;
}
