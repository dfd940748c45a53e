/*
 * common.c -- test_restart's server, its handles and lease
 * helpers, the crash and restart, and the group setup (restart.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "restart.h"

const server *g_srv;
const char *g_dir, *g_script;
int64_t g_max_token;    /* the largest token seen on g_srv */

sqllock_db *rs_open_db(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_srv->url, NULL, &db), i;

    /* Right after a restart the server may still be finishing recovery. */
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(100);
        rc = sqllock_open(g_srv->url, NULL, &db);
    }
    if (rc != SQLLOCK_OK)
        fail_msg("open(%s): %s: %s", g_srv->drv, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

sqllock_lease *rs_new_lease(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 60000;
    ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
    return l;
}

const char *rs_lock_name(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "restart-%ld-%s", (long)getpid(), tag);
    return buf;
}

void rs_saw_token(const sqllock_lease *l)
{
    if (sqllock_lease_token(l) > g_max_token)
        g_max_token = sqllock_lease_token(l);
}

/* Crashes the server and starts it again. */
void rs_crash_and_restart(void)
{
    char cmd[9000];
    int rc;

    snprintf(cmd, sizeof cmd, "bash '%s' %s '%s' %s >&2", g_script,
             g_srv->restart_cmd, g_dir, g_srv->restart_arg);
    rc = system(cmd);
    if (rc != 0)
        fail_msg("%s failed (status %d)", cmd, rc);
}

/* The holder's row is there with its owner and token. */
void rs_expect_row(sqllock_db *db, const char *name,
                       const sqllock_lease *holder)
{
    tu_row r;

    ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
    if (r.found != 1)
        fail_msg("after the restart there are %d rows named %s, want 1",
                 r.found, name);
    assert_string_equal(r.owner, sqllock_lease_owner(holder));
    assert_int_equal(r.token, sqllock_lease_token(holder));
}

int group_setup(void **state)
{
    sqllock_db *db = NULL;
    int rc;

    (void)state;
    g_max_token = 0;
    rc = sqllock_open(g_srv->url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "restart: %s: %s: %s\n", g_srv->drv,
                sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}
