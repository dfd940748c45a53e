/*
 * badinput.c -- test_optimistic: bad input on application tables (O3, E2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "optimistic.h"

/* ------------------------------------------------------------------ */
/* O3 and E2: bad input on application tables                         */
/* ------------------------------------------------------------------ */

#define GUARD_ID 3
#define GUARD_QTY 50
#define GUARD_VERSION 4

/* Tries the three table calls with table description `t`; each must be
 * EINVAL with a message mentioning one of `words`. */
static void bad_table_calls(fixture *f, const sqllock_table *t,
                            const char *what, const char *words)
{
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "qty" };
    int64_t vals[1] = { -1 }, ver = -1, nv = -1;
    char w[300];

    snprintf(w, sizeof w, "table_get: %s", what);
    expect_einval(f->db, sqllock_table_get(f->db, t, &key, cols, 1, vals,
                                           &ver), w, words);
    snprintf(w, sizeof w, "table_cas: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, t, &key, GUARD_VERSION,
                                           &sub, 1, &ge, 1, &nv), w, words);
    snprintf(w, sizeof w, "table_update: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, t, &key, &sub, 1, &ge,
                                              1), w, words);
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, w);
}

/* Tries a bad column name in every place a column goes. */
static void bad_column_calls(fixture *f, const char *col, const char *what)
{
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell bad_set = { col, SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell bad_cond = { col, SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { col };
    int64_t vals[1] = { -1 }, ver = -1, nv = -1;
    sqllock_table t = f->t;
    char w[300];

    snprintf(w, sizeof w, "table_get column: %s", what);
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 1, vals,
                                           &ver), w, "column");
    snprintf(w, sizeof w, "table_cas set column: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &bad_set, 1, &ge, 1, &nv), w,
                  "column");
    snprintf(w, sizeof w, "table_cas condition column: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, &bad_cond, 1, &nv), w,
                  "column");
    snprintf(w, sizeof w, "table_update set column: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &bad_set, 1,
                                              &ge, 1), w, "column");
    snprintf(w, sizeof w, "table_update condition column: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &bad_cond, 1), w, "column");
    t.key_column = col;
    snprintf(w, sizeof w, "key column: %s", what);
    bad_table_calls(f, &t, w, "column");
    t = f->t;
    t.version_column = col;
    snprintf(w, sizeof w, "version column: %s", what);
    bad_table_calls(f, &t, w, "column");
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, w);
}

void test_optimistic_O3_bad_identifiers(void **state)
{
    fixture *f = *state;
    char long_id[201], id64[65], inject[200];
    const char *bad[14];
    const char *why[14] = {
        "SQL in the name", "SQL naming this very table", "empty name",
        "200-character identifier", "64-character identifier",
        "double quote", "backquote", "space", "single quote",
        "three-part name a.b.c", "leading digit", "leading dot",
        "trailing dot", "non-ASCII letter" };
    sqllock_table t;
    int i, n = 14;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    memset(long_id, 'a', 200);
    long_id[200] = '\0';
    memset(id64, 'b', 64);
    id64[64] = '\0';
    snprintf(inject, sizeof inject, "%s; DROP TABLE %s", f->inv, f->inv);
    bad[0] = "inventory; DROP TABLE x";
    bad[1] = inject;
    bad[2] = "";
    bad[3] = long_id;
    bad[4] = id64;
    bad[5] = "inv\"entory";
    bad[6] = "inv`entory";
    bad[7] = "inv entory";
    bad[8] = "inv'entory";
    bad[9] = "a.b.c";
    bad[10] = "1inventory";
    bad[11] = ".inventory";
    bad[12] = "inventory.";
    bad[13] = "inv\xc3\xa9ntory";
    for (i = 0; i < n; i++) {
        char what[300];
        t = f->t;
        t.table = bad[i];
        snprintf(what, sizeof what, "table name (%s)", why[i]);
        bad_table_calls(f, &t, what, "table|identifier|name");
    }
    /* A NULL table name. */
    t = f->t;
    t.table = NULL;
    bad_table_calls(f, &t, "NULL table name", "table|identifier|name|null");
    /* Column names likewise: the same list, and a qualified column. */
    for (i = 2; i < n; i++) {
        char what[300];
        snprintf(what, sizeof what, "column name (%s)", why[i]);
        bad_column_calls(f, bad[i], what);
    }
    bad_column_calls(f, "qty; DROP TABLE x", "column name (SQL)");
    bad_column_calls(f, "inventory.qty", "column name (qualified)");
    {
        sqllock_table tn = f->t;
        tn.key_column = NULL;
        bad_table_calls(f, &tn, "NULL key column", "column|null");
        tn = f->t;
        tn.version_column = NULL;
        bad_table_calls(f, &tn, "NULL version column", "column|null");
    }
    /* The table is still there, unchanged, and the handle still works. */
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after every bad identifier");
    {
        sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
        const char *cols[] = { "qty" };
        int64_t q = -1, ver = -1;
        EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 1, &q,
                                           &ver), SQLLOCK_OK,
                  "table_get after bad identifiers");
        assert_int_equal(q, GUARD_QTY);
        assert_int_equal(ver, GUARD_VERSION);
    }
}

void test_optimistic_O3_bad_arguments(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell set_as_cond = { "qty", SQLLOCK_OP_SET, NULL, 1 };
    sqllock_cell add_as_cond = { "qty", SQLLOCK_OP_ADD, NULL, 1 };
    sqllock_cell ge_as_set = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell eq_as_set = { "qty", SQLLOCK_OP_EQ, NULL, 1 };
    sqllock_cell stray_op = { "qty", (sqllock_op)99, NULL, 1 };
    sqllock_cell null_col = { NULL, SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell null_ccol = { NULL, SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[17];
    const char *null_cols[1] = { NULL };
    int64_t vals[17], ver = -1, nv = -1;
    int i;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    for (i = 0; i < 17; i++)
        cols[i] = "qty";

    /* NULL db, table, key, sets. */
    expect_einval(NULL, sqllock_table_get(NULL, &f->t, &key, cols, 1, vals,
                                          &ver), "table_get NULL db", NULL);
    expect_einval(NULL, sqllock_table_cas(NULL, &f->t, &key, GUARD_VERSION,
                                          &sub, 1, NULL, 0, &nv),
                  "table_cas NULL db", NULL);
    expect_einval(NULL, sqllock_table_update(NULL, &f->t, &key, &sub, 1,
                                             NULL, 0),
                  "table_update NULL db", NULL);
    expect_einval(f->db, sqllock_table_get(f->db, NULL, &key, cols, 1, vals,
                                           &ver), "table_get NULL table",
                  "table");
    expect_einval(f->db, sqllock_table_cas(f->db, NULL, &key, GUARD_VERSION,
                                           &sub, 1, NULL, 0, &nv),
                  "table_cas NULL table", "table");
    expect_einval(f->db, sqllock_table_update(f->db, NULL, &key, &sub, 1,
                                              NULL, 0),
                  "table_update NULL table", "table");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, NULL, cols, 1, vals,
                                           &ver), "table_get NULL key",
                  "key");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, NULL, GUARD_VERSION,
                                           &sub, 1, NULL, 0, &nv),
                  "table_cas NULL key", "key");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, NULL, &sub, 1,
                                              NULL, 0),
                  "table_update NULL key", "key");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           NULL, 1, NULL, 0, &nv),
                  "table_cas NULL sets", "set|assign");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, NULL, 1,
                                              NULL, 0),
                  "table_update NULL sets", "set|assign");
    /* nsets 0 or negative. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 0, NULL, 0, &nv),
                  "table_cas nsets 0", "set|assign");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 0,
                                              NULL, 0),
                  "table_update nsets 0", "set|assign");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, -1, NULL, 0, &nv),
                  "table_cas nsets -1", "set|assign");
    /* NULL conds with nconds > 0, negative nconds. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, NULL, 1, &nv),
                  "table_cas NULL conds", "cond");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &ge, -1),
                  "table_update nconds -1", "cond");
    /* An assignment used as a condition, and the other way round. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, &set_as_cond, 1, &nv),
                  "table_cas SET as a condition", "condition|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &add_as_cond, 1),
                  "table_update ADD as a condition", "condition|op");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &ge_as_set, 1, NULL, 0, &nv),
                  "table_cas GE as an assignment", "assign|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &eq_as_set,
                                              1, NULL, 0),
                  "table_update EQ as an assignment", "assign|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &stray_op,
                                              1, NULL, 0),
                  "table_update op 99 as an assignment", "op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &stray_op, 1),
                  "table_update op 99 as a condition", "op|condition");
    /* NULL column names in cells and in the column list. */
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &null_col,
                                              1, NULL, 0),
                  "table_update NULL set column", "column");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &null_ccol, 1),
                  "table_update NULL condition column", "column");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, null_cols, 1,
                                           vals, &ver),
                  "table_get NULL column name", "column");
    /* Column count. */
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, NULL, 1, vals,
                                           &ver),
                  "table_get NULL columns", "column");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 17,
                                           vals, &ver),
                  "table_get 17 columns", "column|16");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, -1,
                                           vals, &ver),
                  "table_get -1 columns", "column");
    /* 16 columns are fine. */
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 16, vals,
                                       &ver), SQLLOCK_OK,
              "table_get 16 columns");
    for (i = 0; i < 16; i++)
        assert_int_equal(vals[i], GUARD_QTY);
    assert_int_equal(ver, GUARD_VERSION);
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after every bad argument");
}

void test_optimistic_O3_missing_table_column(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell nosuch_set = { "nosuchcol", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell nosuch_cond = { "nosuchcol", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "nosuchcol" };
    const char *qcols[] = { "qty" };
    char missing[64];
    sqllock_table t = f->t;
    int64_t vals[1], ver, nv;
    int rc, k;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    snprintf(missing, sizeof missing, "nosuch_%ld", (long)getpid());
    t.table = missing;
    for (k = 0; k < 3; k++) {
        const char *what = k == 0 ? "table_get on a missing table"
                         : k == 1 ? "table_cas on a missing table"
                                  : "table_update on a missing table";
        rc = k == 0 ? sqllock_table_get(f->db, &t, &key, qcols, 1, vals, &ver)
           : k == 1 ? sqllock_table_cas(f->db, &t, &key, 1, &sub, 1, &ge, 1,
                                        &nv)
                    : sqllock_table_update(f->db, &t, &key, &sub, 1, &ge, 1);
        if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_ENOSCHEMA)
            fail_msg("%s: got %s, want SQLLOCK_EINVAL or SQLLOCK_ENOSCHEMA "
                     "(%s)", what, sqllock_errname(rc), sqllock_errmsg(f->db));
        if (sqllock_errcode(f->db) != rc)
            fail_msg("%s: errcode %s differs from the status %s", what,
                     sqllock_errname(sqllock_errcode(f->db)),
                     sqllock_errname(rc));
        if (!tu_contains_ci(sqllock_errmsg(f->db), missing))
            fail_msg("%s: message \"%s\" does not name the table %s", what,
                     sqllock_errmsg(f->db), missing);
    }
    for (k = 0; k < 5; k++) {
        const char *what[] = { "table_get of a missing column",
                               "table_cas setting a missing column",
                               "table_cas on a missing condition column",
                               "table_update setting a missing column",
                               "table_update on a missing condition column" };
        rc = k == 0 ? sqllock_table_get(f->db, &f->t, &key, cols, 1, vals,
                                        &ver)
           : k == 1 ? sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                        &nosuch_set, 1, NULL, 0, &nv)
           : k == 2 ? sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                        &sub, 1, &nosuch_cond, 1, &nv)
           : k == 3 ? sqllock_table_update(f->db, &f->t, &key, &nosuch_set, 1,
                                           NULL, 0)
                    : sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                           &nosuch_cond, 1);
        if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT ||
            rc == SQLLOCK_NOTFOUND)
            fail_msg("%s: got %s, want an error (%s)", what[k],
                     sqllock_errname(rc), sqllock_errmsg(f->db));
        if (!tu_contains_ci(sqllock_errmsg(f->db), "nosuchcol"))
            fail_msg("%s: message \"%s\" does not name the column",
                     what[k], sqllock_errmsg(f->db));
        inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, what[k]);
    }
    /* A missing version column, on a real table. */
    t = f->t;
    t.version_column = "nosuchcol";
    rc = sqllock_table_cas(f->db, &t, &key, GUARD_VERSION, &sub, 1, NULL, 0,
                           &nv);
    if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT)
        fail_msg("table_cas with a missing version column: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    if (!tu_contains_ci(sqllock_errmsg(f->db), "nosuchcol"))
        fail_msg("missing version column: message \"%s\" does not name it",
                 sqllock_errmsg(f->db));
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after the missing table and columns");
    /* The handle still works. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                       &sub, 1, &ge, 1, &nv), SQLLOCK_OK,
              "table_cas after the errors");
    inv_expect(f, GUARD_ID, GUARD_QTY - 1, GUARD_VERSION + 1,
               "after a good cas");
}

/* Expected version INT64_MAX: refused (EINVAL) or a conflict, never OK,
 * both on a row at a small version and on a row really at INT64_MAX. */
void test_optimistic_O3_version_overflow(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_value v[2];
    int64_t nv = 0;
    int rc, pass;

    for (pass = 0; pass < 2; pass++) {
        int64_t at = pass == 0 ? GUARD_VERSION : INT64_MAX;
        inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
        if (pass == 1) {
            v[0] = sqllock__int(INT64_MAX);
            v[1] = sqllock__int(GUARD_ID);
            tu_exec_ok(f->db, f->sql->inv_set_version, f->inv, v, 2);
        }
        inv_expect(f, GUARD_ID, GUARD_QTY, at, "row before the overflow");
        rc = sqllock_table_cas(f->db, &f->t, &key, INT64_MAX, &sub, 1, NULL,
                               0, &nv);
        if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
            fail_msg("table_cas with expected INT64_MAX on a row at %lld: "
                     "%s (%s)", (long long)at, sqllock_errname(rc),
                     sqllock_errmsg(f->db));
        if (rc == SQLLOCK_EINVAL)
            expect_msg_any(f->db, "table_cas at INT64_MAX",
                           "version|overflow");
        inv_expect(f, GUARD_ID, GUARD_QTY, at,
                   "row after cas with expected INT64_MAX");
    }
    /* table_update on a row at INT64_MAX: its version + 1 cannot be
     * written either. */
    rc = sqllock_table_update(f->db, &f->t, &key, &sub, 1, NULL, 0);
    if (rc == SQLLOCK_OK)
        fail_msg("table_update on a row at version INT64_MAX succeeded");
    inv_expect(f, GUARD_ID, GUARD_QTY, INT64_MAX,
               "row after table_update at INT64_MAX");
    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
}

/* O3, wrong types: arithmetic with a text value is refused before it
 * reaches the database (SQLite would read 'abc' as 0 and "succeed"), and a
 * text key for a numeric key column never changes the row. */
void test_optimistic_O3_wrong_types(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell text_key = SQLLOCK_TEXT("not-a-number");
    sqllock_cell sub_text = { "qty", SQLLOCK_OP_SUB, "abc", 0 };
    sqllock_cell add_text = { "qty", SQLLOCK_OP_ADD, "1", 0 };
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    int rc;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    rc = sqllock_table_update(f->db, &f->t, &key, &sub_text, 1, NULL, 0);
    assert_int_equal(rc, SQLLOCK_EINVAL);
    expect_msg_any(f->db, "SUB with a text value", "number|text");
    rc = sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION, &add_text, 1,
                           NULL, 0, NULL);
    assert_int_equal(rc, SQLLOCK_EINVAL);
    rc = sqllock_table_update(f->db, &f->t, &text_key, &sub, 1, NULL, 0);
    if (rc == SQLLOCK_OK)
        fail_msg("table_update with a text key on a numeric key column "
                 "reported success");
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "row after updates with wrong types");
}
