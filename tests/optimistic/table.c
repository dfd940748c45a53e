/*
 * table.c -- test_optimistic: compare-and-set and conditional updates on
 * the application's table (O3).
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
/* O3: the application's own table                                    */
/* ------------------------------------------------------------------ */

void test_optimistic_O3_table_cas_basic(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(7), nokey = SQLLOCK_NUMBER(999);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 3 };
    sqllock_cell add = { "qty", SQLLOCK_OP_ADD, NULL, 10 };
    sqllock_cell set = { "qty", SQLLOCK_OP_SET, NULL, 2 };
    sqllock_cell ge5 = { "qty", SQLLOCK_OP_GE, NULL, 5 };
    sqllock_cell ne2 = { "qty", SQLLOCK_OP_NE, NULL, 2 };
    const char *cols[] = { "qty", "id" };
    int64_t vals[2] = { -1, -1 }, ver = -1, nv = -1;

    inv_reset(f, 7, 5, 1);
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 2, vals,
                                       &ver), SQLLOCK_OK, "table_get");
    assert_int_equal(vals[0], 5);
    assert_int_equal(vals[1], 7);
    assert_int_equal(ver, 1);
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &nokey, cols, 1, vals,
                                       &ver), SQLLOCK_NOTFOUND,
              "table_get of a missing row");
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &nokey, 1, &sub, 1,
                                       NULL, 0, &nv), SQLLOCK_CONFLICT,
              "table_cas of a missing row");
    /* Right version, condition holds: 5 - 3. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 1, &sub, 1, &ge5,
                                       1, &nv), SQLLOCK_OK, "table_cas");
    assert_int_equal(nv, 2);
    inv_expect(f, 7, 2, 2, "after table_cas SUB 3");
    /* Stale version. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 1, &add, 1, NULL,
                                       0, &nv), SQLLOCK_CONFLICT,
              "table_cas with a stale version");
    inv_expect(f, 7, 2, 2, "after a stale table_cas");
    /* Right version, condition fails (2 >= 5 is false). */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &sub, 1, &ge5,
                                       1, &nv), SQLLOCK_CONFLICT,
              "table_cas with a failing condition");
    inv_expect(f, 7, 2, 2, "after a failed condition");
    /* Two conditions, one failing (qty <> 2 is false). */
    {
        sqllock_cell conds[2] = { { "qty", SQLLOCK_OP_GE, NULL, 0 },
                                  { "qty", SQLLOCK_OP_NE, NULL, 2 } };
        (void)ne2;
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &add, 1,
                                           conds, 2, &nv), SQLLOCK_CONFLICT,
                  "table_cas with one of two conditions failing");
    }
    /* ADD then SET, two assignments on one row in two calls. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &add, 1, NULL,
                                       0, &nv), SQLLOCK_OK,
              "table_cas ADD");
    inv_expect(f, 7, 12, 3, "after ADD 10");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key, &set, 1, NULL,
                                          0), SQLLOCK_OK,
              "table_update SET");
    inv_expect(f, 7, 2, 4, "after SET 2");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1, &ge5,
                                          1), SQLLOCK_CONFLICT,
              "table_update with a failing condition");
    inv_expect(f, 7, 2, 4, "after a failed table_update");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &nokey, &sub, 1,
                                          NULL, 0), SQLLOCK_CONFLICT,
              "table_update of a missing row");

    /* The schema-qualified table name works too. */
    {
        sqllock_table q = f->t;
        q.table = f->qualified;
        EXPECT_RC(f->db, sqllock_table_get(f->db, &q, &key, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get on the schema-qualified name");
        assert_int_equal(vals[0], 2);
        assert_int_equal(ver, 4);
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &q, &key, 4, &add, 1,
                                           NULL, 0, &nv), SQLLOCK_OK,
                  "table_cas on the schema-qualified name");
        inv_expect(f, 7, 12, 5, "after cas on the qualified name");
    }
    /* A text key (with a quote in it: values are bound, never pasted). */
    {
        const char *tricky = "o'neil\"; DROP TABLE x; --";
        sqllock_value v[2];
        sqllock_table nt;
        sqllock_cell tkey = SQLLOCK_TEXT(tricky);
        v[0] = sqllock__text(tricky);
        v[1] = sqllock__int(4);
        tu_exec_ok(f->db, f->sql->name_insert, f->names, v, 2);
        nt.table = f->names;
        nt.key_column = "name";
        nt.version_column = "version";
        EXPECT_RC(f->db, sqllock_table_get(f->db, &nt, &tkey, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get with a text key");
        assert_int_equal(vals[0], 4);
        assert_int_equal(ver, 1);
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &nt, &tkey, 1, &sub, 1,
                                           NULL, 0, &nv), SQLLOCK_OK,
                  "table_cas with a text key");
        EXPECT_RC(f->db, sqllock_table_get(f->db, &nt, &tkey, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get with a text key after cas");
        assert_int_equal(vals[0], 1);
        assert_int_equal(ver, 2);
    }
}

/* O3, L5 (issue 26 item 3): a fenced update that writes the values the
 * row already has, with the token the row already carries (a retry after
 * a lost answer: equal tokens pass), matched its row: SQLLOCK_OK, not a
 * conflict -- with and without the version column (MySQL counts a row
 * whose values did not change as matched but not changed). A failing
 * condition still conflicts, a missing row is still NOTFOUND. */
void test_optimistic_O3_L5_fenced_same_values_ok(void **state)
{
    fixture *f = *state;
    sqllock_table plain = f->t;
    sqllock_cell key = SQLLOCK_NUMBER(9), nokey = SQLLOCK_NUMBER(999);
    sqllock_cell set = { "qty", SQLLOCK_OP_SET, NULL, 5 };
    sqllock_cell add0 = { "qty", SQLLOCK_OP_ADD, NULL, 0 };
    sqllock_cell ge5 = { "qty", SQLLOCK_OP_GE, NULL, 5 };
    sqllock_cell ge6 = { "qty", SQLLOCK_OP_GE, NULL, 6 };
    int i;

    plain.version_column = NULL;
    inv_reset(f, 9, 5, 3);
    for (i = 0; i < 2; i++)
        EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &key,
                                                     "fence", 7, &set, 1,
                                                     &ge5, 1), SQLLOCK_OK,
                  i == 0 ? "fenced update" : "the same fenced update again");
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &key, "fence",
                                                 7, &add0, 1, NULL, 0),
              SQLLOCK_OK, "fenced ADD 0, the same token");
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &key, "fence",
                                                 7, NULL, 0, NULL, 0),
              SQLLOCK_OK, "only the fence, the same token");
    inv_expect(f, 9, 5, 3, "after the updates that changed nothing");
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &key, "fence",
                                                 7, &set, 1, &ge6, 1),
              SQLLOCK_CONFLICT, "a failing condition");
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &key, "fence",
                                                 6, &set, 1, NULL, 0),
              SQLLOCK_LOST, "a smaller token");
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &plain, &nokey,
                                                 "fence", 7, &set, 1, NULL, 0),
              SQLLOCK_NOTFOUND, "a missing row");
    /* With the version column the version moves, whatever the values. */
    EXPECT_RC(f->db, sqllock_table_fenced_update(f->db, &f->t, &key, "fence",
                                                 7, &set, 1, NULL, 0),
              SQLLOCK_OK, "versioned fenced update of the same value");
    inv_expect(f, 9, 5, 4, "after the versioned update");
}

/* Many different statement shapes: more than the handle's cache of
 * prepared statements holds, each one run twice, so that statements are
 * replaced and re-prepared; the arithmetic must stay exact. */
void test_optimistic_O3_statement_shapes(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(8);
    sqllock_cell conds[8];
    int64_t qty = 1000, version = 1, nv;
    int round, nconds, op, i;
    static const sqllock_op ops[3] = { SQLLOCK_OP_SET, SQLLOCK_OP_ADD,
                                       SQLLOCK_OP_SUB };

    inv_reset(f, 8, qty, version);
    for (i = 0; i < 8; i++) {
        conds[i].column = (i % 2 == 0) ? "qty" : "id";
        conds[i].op = (i % 2 == 0) ? SQLLOCK_OP_GT : SQLLOCK_OP_EQ;
        conds[i].text = NULL;
        conds[i].number = (i % 2 == 0) ? -1 : 8;
    }
    for (round = 0; round < 2; round++) {
        for (nconds = 0; nconds <= 8; nconds++) {
            for (op = 0; op < 3; op++) {
                sqllock_cell s;
                char what[96];
                s.column = "qty";
                s.op = ops[op];
                s.text = NULL;
                s.number = ops[op] == SQLLOCK_OP_SET ? 500 + nconds : 7;
                snprintf(what, sizeof what, "round %d, %d conditions, op %d",
                         round, nconds, op);
                if ((nconds + op) % 2 == 0) {
                    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key,
                                                       version, &s, 1, conds,
                                                       nconds, &nv),
                              SQLLOCK_OK, what);
                    assert_int_equal(nv, version + 1);
                } else {
                    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key,
                                                          &s, 1, conds,
                                                          nconds),
                              SQLLOCK_OK, what);
                }
                version++;
                if (ops[op] == SQLLOCK_OP_SET)
                    qty = s.number;
                else if (ops[op] == SQLLOCK_OP_ADD)
                    qty += s.number;
                else
                    qty -= s.number;
                inv_expect(f, 8, qty, version, what);
            }
        }
    }
}

typedef struct o3_shared {
    int arrived;
    int sales;
    int conflicts;
    int negative_seen;         /* a read saw qty < 0 */
    int bad_version;           /* an OK cas whose new version was wrong */
    int errors;
} o3_shared;

/* One seller with table_cas: read qty and version; stop at 0; otherwise
 * sell one at that version, retry on conflict. */
static int o3_cas_child(o3_shared *sh, const sqllock_table *t)
{
    sqllock_db *db = tu_child_open(g_url, "O3 cas child");
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "qty" };
    int res = 0;

    if (db == NULL)
        return 2;
    tu_barrier(&sh->arrived, PROCS);
    for (;;) {
        int64_t qty = -1, ver = -1, nv = -1;
        int rc = sqllock_table_get(db, t, &key, cols, 1, &qty, &ver);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "O3 cas child: table_get: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 3;
            break;
        }
        if (qty < 0)
            __atomic_add_fetch(&sh->negative_seen, 1, __ATOMIC_SEQ_CST);
        if (qty <= 0)
            break;
        rc = sqllock_table_cas(db, t, &key, ver, &sub, 1, &enough, 1, &nv);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->sales, 1, __ATOMIC_SEQ_CST);
            if (nv != ver + 1)
                __atomic_add_fetch(&sh->bad_version, 1, __ATOMIC_SEQ_CST);
        } else if (rc == SQLLOCK_CONFLICT) {
            __atomic_add_fetch(&sh->conflicts, 1, __ATOMIC_SEQ_CST);
        } else {
            fprintf(stderr, "O3 cas child: table_cas: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 4;
            break;
        }
    }
    sqllock_close(db);
    return res;
}

/* One seller with table_update: `qty = qty - 1 WHERE qty >= 1` until no
 * row matches. */
static int o3_update_child(o3_shared *sh, const sqllock_table *t)
{
    sqllock_db *db = tu_child_open(g_url, "O3 update child");
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int res = 0;

    if (db == NULL)
        return 2;
    tu_barrier(&sh->arrived, PROCS);
    for (;;) {
        int rc = sqllock_table_update(db, t, &key, &sub, 1, &enough, 1);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->sales, 1, __ATOMIC_SEQ_CST);
        } else if (rc == SQLLOCK_CONFLICT) {
            break;             /* sold out */
        } else {
            fprintf(stderr, "O3 update child: table_update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 4;
            break;
        }
    }
    sqllock_close(db);
    return res;
}

static void o3_run(fixture *f, int use_cas)
{
    o3_shared *sh, copy;
    pid_t pids[PROCS];
    int i, failed;
    int64_t qty, ver;
    const char *name = use_cas ? "table_cas" : "table_update";

    inv_reset(f, 1, O3_STOCK, 1);
    sh = tu_shared_map(sizeof *sh);
    tu_close_for_fork(&f->db);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = use_cas ? o3_cas_child(sh, &f->t)
                              : o3_update_child(sh, &f->t);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, PROCS, name);
    tu_reopen(&f->db, g_url);
    copy = *sh;
    munmap(sh, sizeof *sh);
    assert_true(inv_read(f, f->db, 1, &qty, &ver));
    printf("    O3 [%s] %s, %d processes, stock %d: %d sales, %d "
           "conflicts, final qty %lld, version %lld\n", f->driver, name,
           PROCS, O3_STOCK, copy.sales, copy.conflicts, (long long)qty,
           (long long)ver);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    if (copy.negative_seen != 0)
        fail_msg("%s: a reader saw a negative stock %d times", name,
                 copy.negative_seen);
    if (copy.bad_version != 0)
        fail_msg("%s: %d successful cas calls reported a new version other "
                 "than expected + 1", name, copy.bad_version);
    if (copy.sales != O3_STOCK)
        fail_msg("%s: %d sales of a stock of %d", name, copy.sales,
                 O3_STOCK);
    if (qty != 0)
        fail_msg("%s: final stock %lld, want 0", name, (long long)qty);
    if (ver != 1 + O3_STOCK)
        fail_msg("%s: final version %lld, want %d (one per sale)", name,
                 (long long)ver, 1 + O3_STOCK);
}

void test_optimistic_O3_cas_stock_processes(void **state)
{
    o3_run(*state, 1);
}

void test_optimistic_O3_update_stock_processes(void **state)
{
    o3_run(*state, 0);
}
