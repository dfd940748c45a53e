/*
 * helpers.c -- see helpers.h. Every callback here runs on a thread of the
 * library (the renewer, a campaign) or inside a C call of a goroutine
 * (record update); each only hands its arguments to Go.
 */
#include <string.h>
#include "helpers.h"
#include "_cgo_export.h"

int sqllock_go_open(const char *url, int64_t busy_ms, int64_t connect_ms,
                    int64_t statement_ms, sqllock_db **out)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    o.busy_timeout_ms = busy_ms;
    o.connect_timeout_ms = connect_ms;
    o.statement_timeout_ms = statement_ms;
    return sqllock_open(url, &o, out);
}

void sqllock_go_lease_opts(sqllock_lease_options *o, int64_t ttl_ms,
                           int64_t margin_ms, const char *holder,
                           unsigned flags)
{
    sqllock_lease_options init = SQLLOCK_LEASE_OPTIONS_INIT;
    *o = init;
    o->ttl_ms = ttl_ms;
    o->safety_margin_ms = margin_ms;
    o->holder = holder;
    o->flags = flags;
}

static void watch_cb(void *ctx, sqllock_lease *lease, int state, int status,
                     const char *msg)
{
    (void)lease;
    goWatchEvent((uintptr_t)ctx, state, status, (char *)msg);
}

int sqllock_go_watch(sqllock_lease *lease, int64_t interval_ms,
                     uintptr_t handle)
{
    sqllock_watch_options o = SQLLOCK_WATCH_OPTIONS_INIT;
    o.interval_ms = interval_ms;
    o.callback = watch_cb;
    o.ctx = (void *)handle;
    return sqllock_lease_watch(lease, &o);
}

static void elected_cb(void *ctx, sqllock_leader *l, int64_t token)
{
    (void)l;
    goLeaderElected((uintptr_t)ctx, token);
}

static void lost_cb(void *ctx, sqllock_leader *l, int64_t token, int status,
                    const char *msg)
{
    (void)l;
    goLeaderLost((uintptr_t)ctx, token, status, (char *)msg);
}

int sqllock_go_leader_start(const char *url, const char *name,
                            int64_t ttl_ms, int64_t resign_hold_ms,
                            const char *holder, uintptr_t handle,
                            sqllock_leader **out, char *why, size_t size)
{
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    o.ttl_ms = ttl_ms;
    o.resign_hold_ms = resign_hold_ms;
    o.holder = holder;
    o.on_elected = elected_cb;
    o.on_lost = lost_cb;
    o.ctx = (void *)handle;
    return sqllock_leader_start(url, name, &o, out, why, size);
}

/* The value the update function returned last: sqllock_record_update()
 * reads it after the function returns, so it lives until the next call
 * or the end of the update. */
typedef struct update_ctx {
    uintptr_t handle;
    void *buf;
} update_ctx;

static int update_cb(void *ctx, const void *old, size_t old_len,
                     const void **out, size_t *out_len)
{
    update_ctx *u = ctx;
    void *buf = NULL;
    size_t len = 0;
    int rc = goRecordUpdate(u->handle, (void *)old, old_len, &buf, &len);
    free(u->buf);
    u->buf = buf;
    *out = buf != NULL ? buf : "";
    *out_len = len;
    return rc;
}

int sqllock_go_record_update(sqllock_db *db, const char *key,
                             uintptr_t handle, int max_attempts,
                             int *attempts)
{
    update_ctx u = { handle, NULL };
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;
    o.max_attempts = max_attempts;
    int rc = sqllock_record_update(db, key, update_cb, &u, &o, attempts);
    free(u.buf);
    return rc;
}

int sqllock_go_force_release(sqllock_db *db, const char *name, int live,
                             int64_t token)
{
    sqllock_force_options o = SQLLOCK_FORCE_OPTIONS_INIT;
    o.live = live;
    o.token = token;
    return sqllock_force_release(db, name, &o, NULL, NULL);
}

int sqllock_go_txn_begin(sqllock_db *db, int64_t lock_timeout_ms,
                         sqllock_txn **out)
{
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    o.lock_timeout_ms = lock_timeout_ms;
    return sqllock_txn_begin(db, &o, out);
}

typedef struct lookup_ctx {
    char *holder;
    size_t size;
    int64_t *token;
    int64_t *remaining_ms;
    int found;
} lookup_ctx;

static int lookup_cb(void *ctx, const sqllock_lease_info *i)
{
    lookup_ctx *l = ctx;
    snprintf(l->holder, l->size, "%s", i->holder ? i->holder : "");
    *l->token = i->token;
    *l->remaining_ms = i->remaining_ms;
    l->found = 1;
    return 0;
}

/* SQLLOCK_OK with the row's holder, token and time left, SQLLOCK_NOTFOUND
 * when NAME has no row, or the database's status. */
int sqllock_go_lookup(sqllock_db *db, const char *name, char *holder,
                      size_t size, int64_t *token, int64_t *remaining_ms)
{
    lookup_ctx l = { holder, size, token, remaining_ms, 0 };
    int rc = sqllock_lease_lookup(db, name, lookup_cb, &l);
    if (rc == SQLLOCK_OK && !l.found)
        return SQLLOCK_NOTFOUND;
    return rc;
}

/* The rows of sqllock_list() in a growing C array: Go copies them once
 * after the walk rather than being called from C for every row. */
typedef struct list_ctx {
    sqllock_go_row *rows;
    size_t n, cap;
} list_ctx;

static char *dup_text(const char *s)
{
    return strdup(s != NULL ? s : "");
}

static int list_cb(void *ctx, const sqllock_lease_info *i)
{
    list_ctx *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sqllock_go_row *rows = realloc(l->rows, cap * sizeof *rows);
        if (rows == NULL)
            return SQLLOCK_ENOMEM;
        l->rows = rows;
        l->cap = cap;
    }
    sqllock_go_row *r = &l->rows[l->n];
    r->name = dup_text(i->name);
    r->owner = dup_text(i->owner);
    r->holder = dup_text(i->holder);
    /* Counted before the check, so that the free below frees them all. */
    l->n++;
    if (r->name == NULL || r->owner == NULL || r->holder == NULL)
        return SQLLOCK_ENOMEM;
    r->token = i->token;
    r->acquired_at_ms = i->acquired_at_ms;
    r->expires_at_ms = i->expires_at_ms;
    r->remaining_ms = i->remaining_ms;
    return 0;
}

/* On SQLLOCK_OK, *rows (free with sqllock_go_rows_free) and *n are every
 * lease row in name order; on failure nothing is left to free. */
int sqllock_go_list(sqllock_db *db, sqllock_go_row **rows, size_t *n)
{
    list_ctx l = { NULL, 0, 0 };
    int rc = sqllock_list(db, list_cb, &l);
    if (rc != SQLLOCK_OK) {
        sqllock_go_rows_free(l.rows, l.n);
        l.rows = NULL;
        l.n = 0;
    }
    *rows = l.rows;
    *n = l.n;
    return rc;
}

void sqllock_go_rows_free(sqllock_go_row *rows, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        free(rows[k].name);
        free(rows[k].owner);
        free(rows[k].holder);
    }
    free(rows);
}

int sqllock_go_reaper_start(const char *url, int64_t interval_ms,
                            int64_t grace_ms, int batch,
                            sqllock_reaper **out, char *why, size_t size)
{
    sqllock_reaper_options o = SQLLOCK_REAPER_OPTIONS_INIT;
    o.interval_ms = interval_ms;
    o.grace_ms = grace_ms;
    o.batch = batch;
    return sqllock_reaper_start(url, &o, out, why, size);
}
