/*
 * common.c -- test_reaper: the helpers (lock names, leases,
 * snapshots of the lease table, starting and stopping a reaper) and the
 * group fixture (reaper.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "reaper.h"

/* The URL the current group runs on. */
const char *g_url;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A lock name unique to this process, test and tag. */
void rp_name_of(char *buf, size_t size, const char *test, const char *tag,
                int i)
{
    snprintf(buf, size, "reap-%ld-%s-%s-%d", (long)getpid(), test, tag, i);
}

sqllock_lease *rp_new_lease(sqllock_db *db, const char *name,
                            int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 20;
    ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
    assert_non_null(l);
    return l;
}

/* Takes the lease on a fresh name with a 1 ms ttl and forgets it, so the
 * row is left to expire; returns its token. */
int64_t rp_leave_expiring(sqllock_db *db, const char *name)
{
    sqllock_lease *l = rp_new_lease(db, name, 1);
    int64_t token;

    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
    token = sqllock_lease_token(l);
    sqllock_lease_free(l);          /* the row stays */
    return token;
}


static int snap_cb(void *ctx, const sqllock_lease_info *info)
{
    snap *s = ctx;

    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        snap_row *grown = realloc(s->rows, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return 1;
        s->rows = grown;
        s->cap = cap;
    }
    snprintf(s->rows[s->n].name, sizeof s->rows[s->n].name, "%s", info->name);
    s->rows[s->n].token = info->token;
    s->rows[s->n].expires_at_ms = info->expires_at_ms;
    s->rows[s->n].remaining_ms = info->remaining_ms;
    s->n++;
    return 0;
}

void rp_snap_take(sqllock_db *db, snap *s)
{
    memset(s, 0, sizeof *s);
    ASSERT_RC(sqllock_list(db, snap_cb, s), SQLLOCK_OK, db);
}

void rp_snap_free(snap *s)
{
    free(s->rows);
    memset(s, 0, sizeof *s);
}

const snap_row *rp_snap_find(const snap *s, const char *name)
{
    int i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->rows[i].name, name) == 0)
            return &s->rows[i];
    return NULL;
}

/* Rows of `before` that are gone in `after` and whose names do not start
 * with `prefix`: the most rows of others a reap in between can have
 * deleted. */
int64_t rp_others_gone(const snap *before, const snap *after,
                       const char *prefix)
{
    int64_t n = 0;
    int i;

    for (i = 0; i < before->n; i++)
        if (strncmp(before->rows[i].name, prefix, strlen(prefix)) != 0 &&
            rp_snap_find(after, before->rows[i].name) == NULL)
            n++;
    return n;
}

int rp_count_prefix(const snap *s, const char *prefix)
{
    int i, n = 0;

    for (i = 0; i < s->n; i++)
        if (strncmp(s->rows[i].name, prefix, strlen(prefix)) == 0)
            n++;
    return n;
}

/* Waits until `name`'s row has been expired for at least `ms` by the
 * server's clock. */
void rp_wait_expired_for(sqllock_db *db, const char *name, int64_t ms)
{
    int64_t give_up = tu_now_ms() + 20000;
    tu_row r;

    for (;;) {
        ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
        if (r.found != 1)
            fail_msg("row %s is gone before it was reaped", name);
        if (-r.remaining_ms >= ms)
            return;
        if (tu_now_ms() > give_up)
            fail_msg("row %s has not expired for %lld ms after 20 s (its "
                     "remaining time is %lld ms)", name, (long long)ms,
                     (long long)r.remaining_ms);
        tu_sleep_ms(ms + r.remaining_ms > 5 ? ms + r.remaining_ms : 5);
    }
}

int64_t rp_row_count_sql(sqllock_db *db, const char *sql, const char *arg)
{
    sqllock_value v = sqllock__text(arg);
    int64_t n = -1;
    int has_row = 0;

    ASSERT_RC(sqllock__exec_sql(db, sql, arg != NULL ? &v : NULL,
                                arg != NULL ? 1 : 0, &has_row, &n, NULL),
              SQLLOCK_OK, db);
    assert_true(has_row);
    return n;
}

void rp_stats_get(sqllock_reaper *r, sqllock_reaper_stats *st)
{
    assert_int_equal(sqllock_reaper_stats_get(r, st), SQLLOCK_OK);
}

/* Waits up to `ms` for the reaper to complete `passes` passes. */
void rp_wait_passes(sqllock_reaper *r, int64_t passes, int64_t ms,
                    sqllock_reaper_stats *st)
{
    int64_t give_up = tu_now_ms() + ms;

    for (;;) {
        rp_stats_get(r, st);
        if (st->passes >= passes)
            return;
        if (tu_now_ms() > give_up)
            fail_msg("the reaper completed %lld passes in %lld ms, want %lld "
                     "(last status %s: %s)", (long long)st->passes,
                     (long long)ms, (long long)passes,
                     sqllock_errname(st->last_status), st->last_error);
        tu_sleep_ms(2);
    }
}

/* The reaper a test started and has not stopped yet. A failing check
 * leaves the test by longjmp; the teardown then stops the thread, so
 * that no later test forks while it runs (a child could inherit a lock
 * the thread held, e.g. SQLite's allocator mutex, and hang). */
static sqllock_reaper *g_running;

void rp_stop_reaper(sqllock_reaper *r)
{
    if (r == g_running)
        g_running = NULL;
    sqllock_reaper_stop(r);
}

int rp_stop_leftover(void **state)
{
    (void)state;
    rp_stop_reaper(g_running);
    return 0;
}

sqllock_reaper *rp_start_reaper(const char *url, int64_t interval_ms,
                                int64_t grace_ms, int batch)
{
    sqllock_reaper_options o = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_reaper *r = NULL;
    char why[300];
    int rc;

    o.interval_ms = interval_ms;
    o.grace_ms = grace_ms;
    o.batch = batch;
    rc = sqllock_reaper_start(url, &o, &r, why, sizeof why);
    if (rc != SQLLOCK_OK)
        fail_msg("sqllock_reaper_start = %s: %s", sqllock_errname(rc), why);
    assert_non_null(r);
    assert_null(g_running);        /* one at a time in these tests */
    g_running = r;
    return r;
}

/* ------------------------------------------------------------------ */
/* Group setup                                                         */
/* ------------------------------------------------------------------ */

int rp_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "reaper: %s: %s: %s\n", g_url, sqllock_errname(rc),
                sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    f->driver = sqllock_db_driver(f->db);
    f->sql = tu_sql_for(f->driver);
    if (f->sql == NULL) {
        fprintf(stderr, "reaper: no test SQL for driver %s\n", f->driver);
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int rp_group_teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        sqllock_close(f->db);
        free(f);
    }
    return 0;
}
