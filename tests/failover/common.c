/*
 * common.c -- test_failover's primary and standby: the
 * pgrepl.sh calls, a fresh pair, handles, children, and the group
 * teardown (failover.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "failover.h"

/* Static, not malloc'd: forked children must inherit no heap blocks. */
char g_dir[1024], g_script[1024];
char g_url[512], g_url1[512], g_url2[512];
int g_slow = 1;


/* Runs `pgrepl.sh CMD DIR [ARG]`; returns its exit status, *ms the time. */
int fo_repl(const char *cmd, const char *arg, int64_t *ms)
{
    int64_t t = tu_now_ms();
    int rc = tu_run_script(g_script, cmd, g_dir, arg);

    if (ms != NULL)
        *ms = tu_now_ms() - t;
    return rc;
}

/* A fresh pair in `mode`, its URLs read from DIR/env, and the schema. */
void fo_fresh_pair(const char *mode)
{
    char env[8192], path[1100];
    sqllock_db *db = NULL;
    int64_t ms;
    int rc;

    fo_repl("stop", NULL, NULL);
    rc = fo_repl("start", mode, &ms);
    if (rc != 0)
        fail_msg("pgrepl.sh start %s failed (status %d)", mode, rc);
    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, env, sizeof env);
    if (!tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL", g_url, sizeof g_url) ||
        !tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL1", g_url1, sizeof g_url1) ||
        !tu_get_var(env, "SQLLOCK_TEST_PGREPL_URL2", g_url2, sizeof g_url2))
        fail_msg("%s has no SQLLOCK_TEST_PGREPL_URL*", path);
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fail_msg("init on %s: %s: %s", g_url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    sqllock_close(db);
    printf("    pair (%s) started in %lld ms\n", mode, (long long)ms);
}

sqllock_db *fo_open_url(const char *url, int64_t stmt_ms)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc, i;

    o.connect_timeout_ms = 2000 * g_slow;
    o.statement_timeout_ms = stmt_ms;
    rc = sqllock_open(url, &o, &db);
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        db = NULL;
        tu_sleep_ms(50);
        rc = sqllock_open(url, &o, &db);
    }
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open %s: %s: %s\n", url, sqllock_errname(rc),
                sqllock_errmsg(db));
        sqllock_close(db);
        return NULL;
    }
    return db;
}

void fo_reap_or_kill(pid_t pid, int64_t ms, const char *who)
{
    int code = tu_wait_for(pid, ms);

    if (code == -1) {
        tu_kill_wait(pid);
        fail_msg("%s did not finish within %lld ms: killed", who,
                 (long long)ms);
    }
    if (code != 0)
        fail_msg("%s ended with %s %d", who, code >= 1000 ? "signal"
                 : "status", code >= 1000 ? code - 1000 : code);
}


/* Ends the waits of the statements that wait for the synchronous
 * standby, as an administrator would: pg_cancel_backend() (or any cancel
 * request), or with `terminate` pg_terminate_backend(). Those whose text
 * is LIKE `like`, once `want` of them wait (the watchdog's retries wait
 * too). Returns the number signalled; 0 when not enough of them waited
 * within 10 s. */
int fo_end_syncrep_waits(sqllock_db *db, int terminate, const char *like,
                         int want)
{
    sqllock_value v[3];
    int64_t t = tu_now_ms(), n = 0;
    int has = 0, rc;

    v[0] = sqllock__text(like);
    v[1] = sqllock__int(want);
    v[2] = sqllock__int(terminate != 0);
    while (tu_now_ms() - t < 10000 * g_slow) {
        /* All those whose statement is like `like`, once `want` of
         * them are waiting. */
        rc = sqllock__exec_sql(db, "WITH w AS (SELECT pid FROM "
                               "pg_catalog.pg_stat_activity WHERE "
                               "wait_event = 'SyncRep' AND query LIKE $1 "
                               "AND pid <> pg_catalog.pg_backend_pid()) "
                               "SELECT count(CASE WHEN $3::int = 1 THEN "
                               "pg_catalog.pg_terminate_backend(pid) ELSE "
                               "pg_catalog.pg_cancel_backend(pid) END) "
                               "FROM w WHERE (SELECT count(*) FROM w) >= $2",
                               v, 3, &has, &n, NULL);
        if (rc != SQLLOCK_OK)
            fail_msg("%s: %s: %s", terminate ? "pg_terminate_backend"
                     : "pg_cancel_backend", sqllock_errname(rc),
                     sqllock_errmsg(db));
        if (n > 0)
            return (int)n;
        tu_sleep_ms(20);
    }
    return 0;
}

int group_teardown(void **state)
{
    (void)state;
    fo_repl("stop", NULL, NULL);
    return 0;
}
