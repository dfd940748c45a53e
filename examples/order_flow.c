/*
 * order_flow.c -- the classic order payment under a row lock (PostgreSQL).
 *
 *   example_order_flow postgres://user:pass@host/db [--reset | --drop]
 *
 * (--reset marks order 1 unpaid again and exits; --drop drops the
 * example's table and exits.)
 *
 * Pays order 1 exactly once, however many copies of this program run at
 * the same time: lock the order's row (SELECT ... FOR UPDATE through
 * sqllock_txn_lock_rows), check it is unpaid, mark it paid, commit. The
 * application's own statements run on the transaction's connection.
 *
 * It touches no table but its own, example_orders, which it makes with
 * a column made_by_sqllock_example that marks it as the example's. A
 * table of that name without the mark is someone else's: the example
 * stops, having changed nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>
#include <sqllock.h>

#define MARK "made_by_sqllock_example"

/* Whether example_orders is there and is the example's (its mark). */
static int ours(PGconn *pg)
{
    PGresult *res = PQexec(pg, "SELECT " MARK " FROM example_orders "
                               "WHERE false");
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;

    PQclear(res);
    return ok;
}

static int run(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK ||
             PQresultStatus(res) == PGRES_TUPLES_OK;

    if (!ok)
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
    return ok;
}

int main(int argc, char **argv)
{
    sqllock_table orders = { "example_orders", "order_id", NULL };
    sqllock_cell order = SQLLOCK_NUMBER(1);
    sqllock_db *db = NULL;
    sqllock_txn *txn = NULL;
    PGconn *pg;
    PGresult *res;
    int rc, paid;

    if (argc < 2) {
        fprintf(stderr, "usage: %s postgres://...\n", argv[0]);
        return 64;
    }
    rc = sqllock_open(argv[1], NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK || strcmp(sqllock_db_driver(db), "postgres") != 0) {
        fprintf(stderr, "open: %s\n", rc != SQLLOCK_OK ? sqllock_errmsg(db)
                : "this example is for PostgreSQL");
        sqllock_close(db);
        return 1;
    }
    pg = sqllock_db_native(db);
    if (argc > 2 && strcmp(argv[2], "--drop") == 0) {
        rc = !ours(pg) || run(pg, "DROP TABLE example_orders");
        sqllock_close(db);
        return rc ? 0 : 1;
    }
    /* The example's table: made by the first copy; a copy that loses the
     * race to make it finds it made. */
    if (!ours(pg)) {
        res = PQexec(pg, "CREATE TABLE example_orders (order_id bigint "
                         "PRIMARY KEY, paid boolean NOT NULL, " MARK
                         " boolean)");
        PQclear(res);
        if (!ours(pg)) {
            fprintf(stderr, "%s: a table example_orders that this example "
                    "did not make (it has no column " MARK ") is there: it "
                    "is never touched; run the example on another database\n",
                    argv[0]);
            sqllock_close(db);
            return 1;
        }
    }
    if (!run(pg, "INSERT INTO example_orders VALUES (1, false, true) "
                 "ON CONFLICT DO NOTHING")) {
        sqllock_close(db);
        return 1;
    }
    if (argc > 2 && strcmp(argv[2], "--reset") == 0) {
        rc = run(sqllock_db_native(db), "UPDATE example_orders SET paid = "
                 "false WHERE order_id = 1") ? SQLLOCK_OK : SQLLOCK_EDB;
        sqllock_close(db);
        return rc == SQLLOCK_OK ? 0 : 1;
    }

    for (;;) {
        rc = sqllock_txn_begin(db, NULL, &txn);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock_rows(txn, &orders, &order, 1,
                                       SQLLOCK_LOCK_WAIT, NULL);
        if (rc != SQLLOCK_OK)
            goto done;
        pg = sqllock_txn_native(txn);
        res = PQexec(pg, "SELECT paid FROM example_orders WHERE order_id = 1");
        paid = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
               strcmp(PQgetvalue(res, 0, 0), "t") == 0;
        PQclear(res);
        if (paid) {
            printf("order 1 is already paid: nothing to do\n");
            rc = sqllock_txn_rollback(txn);
        } else if (!run(pg, "UPDATE example_orders SET paid = true "
                            "WHERE order_id = 1")) {
            rc = SQLLOCK_EDB;
        } else {
            rc = sqllock_txn_commit(txn);
            if (rc == SQLLOCK_OK)
                printf("order 1 paid\n");
        }
done:
        if (rc != SQLLOCK_OK && sqllock_retryable(rc)) {
            sqllock_txn_free(txn);       /* deadlock or timeout: try again */
            txn = NULL;
            continue;
        }
        break;
    }
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "%s: %s\n", sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_txn_free(txn);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : 1;
}
