/*
 * common.c -- test_conformance: the helpers (handles, lock
 * names, leases, rows read and deleted behind the library's back) and the
 * group fixture (conformance.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "conformance.h"

/* The URL the current group runs on. */
const char *g_url;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

sqllock_db *cf_open_db(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("open(%s) = %s: %s", g_url, sqllock_errname(rc), msg);
    }
    return db;
}

/* A lock name unique to this process, test and `tag`. */
const char *cf_lock_name(fixture *f, const char *test, const char *tag)
{
    snprintf(f->name, sizeof f->name, "conf-%ld-%s-%s", (long)getpid(), test,
             tag);
    return f->name;
}

sqllock_lease *cf_new_lease(sqllock_db *db, const char *name,
                            int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    rc = sqllock_lease_new(db, name, &o, &l);
    if (rc != SQLLOCK_OK)
        fail_msg("lease_new(%s) = %s: %s", name, sqllock_errname(rc),
                 sqllock_errmsg(db));
    assert_non_null(l);
    return l;
}

/* Deletes a lease row behind the library's back (as a reaper or an
 * operator would), with the driver's own placeholders. */
void cf_delete_row(fixture *f, sqllock_db *db, const char *name)
{
    sqllock_value v = sqllock__text(name);
    int64_t affected = -1;

    assert_non_null(f->sql);
    ASSERT_RC(sqllock__exec_sql(db, f->sql->delete_lease, &v, 1, NULL, NULL,
                                &affected),
              SQLLOCK_OK, db);
    assert_int_equal(affected, 1);
}

void cf_expect_row(sqllock_db *db, const char *name, const char *owner,
                   int64_t token)
{
    tu_row r;

    ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
    if (r.found != 1)
        fail_msg("sqllock_list: %d rows named %s, want 1", r.found, name);
    assert_string_equal(r.owner, owner);
    assert_int_equal(r.token, token);
}

void cf_expect_no_row(sqllock_db *db, const char *name)
{
    tu_row r;

    ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
    if (r.found != 0)
        fail_msg("sqllock_list: row %s still there (owner %s, token %lld)",
                 name, r.owner, (long long)r.token);
}

/* ------------------------------------------------------------------ */
/* Group setup                                                         */
/* ------------------------------------------------------------------ */

int cf_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "conformance: %s: %s: %s\n", g_url,
                sqllock_errname(rc), sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    f->sql = tu_sql_for(sqllock_db_driver(f->db));
    if (f->sql == NULL) {
        fprintf(stderr, "conformance: no test SQL for driver %s\n",
                sqllock_db_driver(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int cf_group_teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        sqllock_close(f->db);
        free(f);
    }
    return 0;
}
