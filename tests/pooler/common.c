/*
 * pooler/common.c -- test_pooler's URLs (from the poolers' env file) and
 * the helpers its groups share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "pooler/pooler.h"

char g_dir[1024], g_script[1024];
char g_tx[1024], g_tx_poll[1024], g_undeclared[1024];
char g_session[1024], g_tight[1024], g_pair[1024];
char g_pgpool_raw[1024], g_pgpool_sr[1024], g_pgpool_sr_poll[1024];
char g_direct[1024];
int g_slow = 1;           /* tu_slowdown() */

sqllock_db *open_url(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK)
        fail_msg("open %s: %s: %s", url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

sqllock_lease *new_lease(sqllock_db *db, const char *name, int64_t ttl_ms,
                         int64_t backoff_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    if (backoff_ms > 0) {
        o.backoff_min_ms = backoff_ms;
        o.backoff_max_ms = backoff_ms;
    }
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* Runs `poolers.sh CMD DIR`; fails the test when it fails. */
void poolers(const char *cmd)
{
    char buf[3000];
    int rc;

    snprintf(buf, sizeof buf, "bash '%s' %s '%s' >&2", g_script, cmd, g_dir);
    fflush(stdout);
    rc = system(buf);
    if (rc != 0)
        fail_msg("%s failed (status %d)", buf, rc);
}

int load_urls(void)
{
    static char envfile[16384];
    struct { const char *key; char *dst; } v[] = {
        { "SQLLOCK_TEST_PGBOUNCER_TX_URL", g_tx },
        { "SQLLOCK_TEST_PGBOUNCER_TX_POLL_URL", g_tx_poll },
        { "SQLLOCK_TEST_PGBOUNCER_UNDECLARED_URL", g_undeclared },
        { "SQLLOCK_TEST_PGBOUNCER_SESSION_URL", g_session },
        { "SQLLOCK_TEST_PGBOUNCER_TIGHT_URL", g_tight },
        { "SQLLOCK_TEST_PGBOUNCER_PAIR_URL", g_pair },
        { "SQLLOCK_TEST_PGPOOL_RAW_URL", g_pgpool_raw },
        { "SQLLOCK_TEST_PGPOOL_SR_URL", g_pgpool_sr },
        { "SQLLOCK_TEST_PGPOOL_SR_POLL_URL", g_pgpool_sr_poll },
    };
    char path[1200];
    const char *pg = getenv("SQLLOCK_TEST_PG_URL");
    size_t i;

    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, envfile, sizeof envfile);
    for (i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!tu_get_var(envfile, v[i].key, v[i].dst, 1024)) {
            printf("pooler: no %s in %s\n", v[i].key, path);
            return -1;
        }
    if (pg == NULL || *pg == '\0') {
        printf("pooler: SQLLOCK_TEST_PG_URL names no PostgreSQL to compare "
               "with\n");
        return -1;
    }
    snprintf(g_direct, sizeof g_direct, "%s", pg);
    return 0;
}
