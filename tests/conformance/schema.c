/*
 * schema.c -- test_conformance: init and the schema (S1, S2).
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

/* ------------------------------------------------------------------ */
/* S1, S2: init and the schema                                        */
/* ------------------------------------------------------------------ */

/* S1: init is idempotent, from the same and from another handle. */
void test_conformance_S1_init_idempotent(void **state)
{
    fixture *f = *state;
    sqllock_db *db2;
    sqllock_lease *l;

    /* S2: as a user with only the run-time grants too (group_setup has
     * called init already): the schema is current, nothing to create. */
    db2 = cf_open_db();
    ASSERT_RC(sqllock_init(f->db), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_init(f->db), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_init(db2), SQLLOCK_OK, db2);
    assert_int_equal(sqllock_errcode(db2), SQLLOCK_OK);
    /* The tables still work after it. */
    l = cf_new_lease(db2, cf_lock_name(f, "init", "a"), 10000);
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_init(f->db), SQLLOCK_OK, f->db);
    cf_expect_row(f->db, sqllock_lease_name(l), sqllock_lease_owner(l),
                  sqllock_lease_token(l));
    ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, db2);
    sqllock_lease_free(l);
    sqllock_close(db2);
}

/* S2: the row-lock and record tables work with the run-time grants
 * alone (scripts/test.sh runs this suite as such a user): a row lock on
 * two names creates their rows and locks them, another transaction is
 * refused them with NOWAIT, and a record goes through create, compare-
 * and-set, a stale compare-and-set and delete. */
void test_conformance_S2_row_and_record_tables(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    sqllock_txn *t1 = NULL, *t2 = NULL;
    char a[300], b[300], key[300];
    const char *names[2];
    int got[2] = { 0, 0 };
    void *val = NULL;
    size_t len = 0;
    int64_t ver = 0;

    snprintf(a, sizeof a, "%s", cf_lock_name(f, "s2row", "a"));
    snprintf(b, sizeof b, "%s", cf_lock_name(f, "s2row", "b"));
    snprintf(key, sizeof key, "%s", cf_lock_name(f, "s2rec", "k"));
    names[0] = b;
    names[1] = a;
    ASSERT_RC(sqllock_txn_begin(f->db, NULL, &t1), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_txn_lock(t1, names, 2, SQLLOCK_LOCK_WAIT, got),
              SQLLOCK_OK, f->db);
    assert_true(got[0] == 1 && got[1] == 1);
    if (strcmp(sqllock_db_driver(f->db), "sqlite") != 0) {
        /* (SQLite's one writer at a time would wait on the file lock.) */
        ASSERT_RC(sqllock_txn_begin(db2, NULL, &t2), SQLLOCK_OK, db2);
        ASSERT_RC(sqllock_txn_lock(t2, names + 1, 1, SQLLOCK_LOCK_NOWAIT,
                                   NULL), SQLLOCK_ELOCKED, db2);
        sqllock_txn_free(t2);
    }
    ASSERT_RC(sqllock_txn_commit(t1), SQLLOCK_OK, f->db);
    sqllock_txn_free(t1);

    ASSERT_RC(sqllock_record_create(f->db, key, "10", 2), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_record_get(db2, key, &val, &len, &ver), SQLLOCK_OK,
              db2);
    assert_true(len == 2 && memcmp(val, "10", 2) == 0 && ver == 1);
    sqllock_free(val);
    ASSERT_RC(sqllock_record_cas(db2, key, 1, "9", 1, &ver), SQLLOCK_OK,
              db2);
    assert_int_equal(ver, 2);
    ASSERT_RC(sqllock_record_cas(f->db, key, 1, "8", 1, NULL),
              SQLLOCK_CONFLICT, f->db);
    ASSERT_RC(sqllock_record_delete(f->db, key, 2), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_record_get(f->db, key, NULL, NULL, NULL),
              SQLLOCK_NOTFOUND, f->db);
    sqllock_close(db2);
}

/* S1/E1: before sqllock_init() lock calls say SQLLOCK_ENOSCHEMA, naming
 * the remedy, and sqllock_init() fixes it. Runs on every driver: SQLite
 * gets a fresh file; PostgreSQL the schema sqllock_empty (through
 * search_path); MySQL the database sqllock_empty. Skipped, saying why, only
 * on a developer's server that has no empty target. */
void test_conformance_S1_enoschema_before_init(void **state)
{
    fixture *f = *state;
    char *dir, url[4400], why[1000];
    sqllock_db *db = NULL;
    sqllock_lease *l;
    tu_row r;

    dir = tu_mkdtemp();
    assert_non_null(dir);
    if (!tu_empty_target(f->db, g_url, dir, url, sizeof url, why,
                         sizeof why)) {
        tu_rmdir(dir);
        free(dir);
        tu_cannot_run("S1_enoschema_before_init on %s: %s",
                      sqllock_db_driver(f->db), why);
    }
    ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    l = cf_new_lease(db, "fresh", 10000);
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_ENOSCHEMA, db);
    if (!tu_contains_ci(sqllock_errmsg(db), "init"))
        fail_msg("ENOSCHEMA message does not name the remedy (init): %s",
                 sqllock_errmsg(db));
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(sqllock_lease_count(l), 0);
    ASSERT_RC(sqllock_lease_acquire(l, 100), SQLLOCK_ENOSCHEMA, db);
    ASSERT_RC(tu_find(db, "fresh", &r), SQLLOCK_ENOSCHEMA, db);
    ASSERT_RC(sqllock_init(db), SQLLOCK_OK, db);
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
    cf_expect_row(db, "fresh", sqllock_lease_owner(l), sqllock_lease_token(l));
    /* The test database's own table did not get this row. */
    cf_expect_no_row(f->db, "fresh");
    ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, db);
    sqllock_lease_free(l);
    sqllock_close(db);
    ASSERT_RC(tu_empty_target_reset(f->db), SQLLOCK_OK, f->db);
    tu_rmdir(dir);
    free(dir);
}
