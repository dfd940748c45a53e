/*
 * common.c -- the fixture and helpers of test_guard (see guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/types.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "guard/guard.h"

static long g_seq;

static const char GUARD_DDL[] =
    "CREATE TABLE IF NOT EXISTS " GUARD_TABLE " ("
    "id BIGINT PRIMARY KEY, val BIGINT NOT NULL DEFAULT 0, "
    "n BIGINT NOT NULL DEFAULT 0, fence BIGINT, "
    "ver BIGINT NOT NULL DEFAULT 0)";

int guard_group_setup(void **state)
{
    (void)state;
    return tu_init_schema_ddl(g_url, GUARD_DDL);
}

/* The handles guard_open() made, for guard_teardown(); a case closes
 * its own with guard_close(). */
#define DB_OPEN_MAX 8
static sqllock_db *g_dbs[DB_OPEN_MAX];

sqllock_db *guard_open(void)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int i;

    o.busy_timeout_ms = tu_scaled_ms(5000);
    if (sqllock_open(g_url, &o, &db) != SQLLOCK_OK)
        fail_msg("open %s: %s", g_url, sqllock_errmsg(db));
    for (i = 0; i < DB_OPEN_MAX; i++)
        if (g_dbs[i] == NULL) {
            g_dbs[i] = db;
            break;
        }
    return db;
}

void guard_close(sqllock_db *db)
{
    int i;

    for (i = 0; i < DB_OPEN_MAX; i++)
        if (g_dbs[i] == db)
            g_dbs[i] = NULL;
    sqllock_close(db);
}

int guard_teardown(void **state)
{
    int i;
    (void)state;

    app_close_all();
    for (i = 0; i < DB_OPEN_MAX; i++)
        if (g_dbs[i] != NULL) {
            sqllock_close(g_dbs[i]);
            g_dbs[i] = NULL;
        }
    return 0;
}

void guard_name(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "guard-%s-%ld-%lld-%ld", what, (long)getpid(),
             (long long)tu_now_ms(), ++g_seq);
}

/*
 * A key no other row of the table has: a random 40-bit base per process
 * (drawn again in a forked child) and a count. The key it replaces, the
 * pid, the time modulo 10 s and a count modulo 100, repeats within one
 * process for two rows made a multiple of 10 s apart to the millisecond
 * whose counts differ by a multiple of 100 (and across processes when a
 * pid comes round, pid_max 32768 here): it met an earlier case's row
 * once ("duplicate key" in test_guard_G1_commit_race under ASan).
 */
int64_t guard_row(sqllock_db *db)
{
    static uint64_t base;
    static pid_t base_pid;
    int64_t id;

    if (base_pid != getpid()) {         /* a forked child: its own base */
        base_pid = getpid();
        base = 0;
    }
    while (base == 0) {
        if (getrandom(&base, sizeof base, 0) != (ssize_t)sizeof base)
            fail_msg("getrandom: %s", strerror(errno));
        base &= ((uint64_t)1 << 40) - 1;
    }
    id = (int64_t)((base << 22) | ((uint64_t)++g_seq & ((1u << 22) - 1)));
    sqllock_cell arg = SQLLOCK_NUMBER(id);
    const char *sql = strcmp(sqllock_db_driver(db), "postgres") == 0
                          ? "INSERT INTO " GUARD_TABLE " (id) VALUES ($1)"
                          : "INSERT INTO " GUARD_TABLE " (id) VALUES (?)";

    EXPECT_RC(db, sqllock_db_exec(db, sql, &arg, 1, NULL, NULL, NULL),
              SQLLOCK_OK, "insert a row");
    return id;
}

void guard_read(sqllock_db *db, int64_t id, int64_t *val, int64_t *n,
                int64_t *fence)
{
    /* sqllock_table_get() wants a version column: the key does. */
    static const sqllock_table reader = { GUARD_TABLE, "id", "id" };
    static const char *const cols[] = { "val", "n", "fence" };
    sqllock_cell key = SQLLOCK_NUMBER(id);
    int64_t v[3];

    EXPECT_RC(db, sqllock_table_get(db, &reader, &key, cols, 3, v, NULL),
              SQLLOCK_OK, "read the row");
    if (val != NULL)
        *val = v[0];
    if (n != NULL)
        *n = v[1];
    if (fence != NULL)
        *fence = v[2];
}

sqllock_lease *guard_acquire(sqllock_db *db, const char *name, int64_t ttl,
                             int64_t wait_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 10;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    EXPECT_RC(db, sqllock_lease_acquire(l, wait_ms), SQLLOCK_OK, "acquire");
    return l;
}

void guard_wait_flag(int *flag, int want, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;

    while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) < want) {
        if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) < 0)
            fail_msg("the other process failed (flag %d)",
                     __atomic_load_n(flag, __ATOMIC_SEQ_CST));
        if (tu_now_ms() > end)
            fail_msg("the other process did not reach step %d within "
                     "%lld ms", want, (long long)ms);
        tu_sleep_ms(1);
    }
}
