/*
 * pg_exec.c -- statements on a PostgreSQL connection: bounded round
 * trips, prepared statements, results (transactions are in pg_txn.c, the
 * map from SQLSTATE to sqllock status in pg_error.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg.h"

/*
 * A named statement's error that means the server connection is not the
 * one it was prepared on (26000, it does not exist) or was prepared on by
 * another client (42P05, the name is taken): the connection goes through
 * a pooler in transaction mode that the URL did not declare. The names
 * carry 64 random bits per connection, so another client's statement is
 * never run in place of ours; the call fails, clearly. (Only the Parse,
 * Describe or Bind failed: nothing ran.)
 */
static int undeclared_pooler(int rc, sqllock_dberr *err)
{
    char msg[sizeof err->msg];

    if (rc == SQLLOCK_OK || (strcmp(err->code, "26000") != 0 &&
                             strcmp(err->code, "42P05") != 0))
        return rc;
    memcpy(msg, err->msg, sizeof msg);
    return sqllock_dberr_set(err, SQLLOCK_EPROXY, err->code, "%s: the "
                             "statements this connection prepared are on "
                             "another server connection, so it goes through "
                             "a connection pooler in transaction mode "
                             "(PgBouncer pool_mode = transaction): add "
                             "pooler=transaction to the URL; nothing ran",
                             msg);
}

int sqllock__pg_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                        sqllock_dberr *err)
{
    sqllock_stmt *s;
    PGresult *desc = NULL;
    int rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    s->kind = sqllock__pg_stmt_kind(sql);
    s->conn = c;
    s->row = -1;
    /* DESIGN C1: behind a transaction pooler a named statement would stay
     * on one server connection, which the next transaction may not get.
     * The text is sent as an unnamed statement each time instead: Parse,
     * Bind, Execute and Sync in one round trip, as before, at the cost of
     * planning it each time (docs/benchmarks.md has the figures). */
    if (c->pooler == PG_POOLER_TRANSACTION) {
        const char *text = s->kind == PG_STMT_LOCK_TIMEOUT
                           ? sqllock__pg_sql_lock_timeout_local : sql;

        s->sql = malloc(strlen(text) + 1);
        if (s->sql == NULL) {
            free(s);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "",
                                     "out of memory");
        }
        strcpy(s->sql, text);
        s->nparams = -1;         /* the server checks the count */
        *out = s;
        return SQLLOCK_OK;
    }
    snprintf(s->name, sizeof s->name, "%s_%u", c->name_prefix,
             c->next_name++);
    rc = sqllock__pg_check_usable(c, err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__pg_expect_result(c, PQsendPrepare(c->pg, s->name, sql,
                                                        0, NULL),
                                       PGRES_COMMAND_OK, 0, NULL, err);
    /* The number of parameters the server inferred, to check the core's
     * arguments against. One more round trip, once per connection. */
    if (rc == SQLLOCK_OK)
        rc = sqllock__pg_check_usable(c, err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__pg_expect_result(c, PQsendDescribePrepared(c->pg,
                                                                 s->name),
                                       PGRES_COMMAND_OK, 0, &desc, err);
    if (rc != SQLLOCK_OK) {
        free(s);
        return undeclared_pooler(rc, err);
    }
    s->nparams = PQnparams(desc);
    PQclear(desc);
    *out = s;
    return SQLLOCK_OK;
}

/* Frees the decoded bytea values of the current row. */
static void free_blobs(sqllock_stmt *s)
{
    int i;

    for (i = 0; i < s->nblobs; i++) {
        if (s->blobs[i] != NULL)
            PQfreemem(s->blobs[i]);
    }
    free(s->blobs);
    free(s->blob_lens);
    s->blobs = NULL;
    s->blob_lens = NULL;
    s->nblobs = 0;
}

void sqllock__pg_reset(sqllock_stmt *s)
{
    if (s != NULL) {
        free_blobs(s);
        PQclear(s->res);
        s->res = NULL;
        s->row = -1;
    }
}

void sqllock__pg_finalize(sqllock_stmt *s)
{
    if (s == NULL)
        return;
    sqllock__pg_reset(s);
    /* A statement dies with its connection; deallocating it one by one
     * would cost a round trip each for nothing. */
    free(s->sql);
    free(s);
}

/*
 * The statement `s` with BEGIN before it (SQLLOCK_EXEC_BEGIN) and/or
 * COMMIT after it (SQLLOCK_EXEC_COMMIT), in one round trip (driver
 * version 10, execute_txn()): libpq's pipeline mode, the queries queued
 * -- after BEGIN, behind a transaction pooler, the lock timeout for this
 * transaction, as sqllock__pg_begin() sends it -- and one Sync after
 * them. The round trip is bounded as round_trip() bounds one. The server
 * runs them in order and stops at the first error: each query's results
 * end with a NULL from PQgetResult(), a query after a failed one is
 * PGRES_PIPELINE_ABORTED, and PGRES_PIPELINE_SYNC ends the round trip.
 * The connection leaves pipeline mode before this returns, whatever
 * happened, or is given up (c->broken: never used again). *in_txn: a
 * transaction is open on the connection afterwards (maybe failed). The
 * statement's result goes to s->res as execute() leaves it.
 */
#define PIPE_MAX 4
static int pipeline(sqllock_stmt *s, int nargs, const char *const *vals,
                    const int *lens, const int *formats, int binary,
                    unsigned with, int *in_txn, sqllock_dberr *err)
{
    sqllock_conn *c = s->conn;
    int64_t bound = c->statement_ms + c->lock_wait_ms;
    int64_t deadline = sqllock_driver_now_ms() + bound;
    PGresult *res[PIPE_MAX] = { NULL, NULL, NULL, NULL };
    char timeout[32];
    const char *tv[1];
    int nq = 0, q, r, rc = SQLLOCK_OK, ok = 1, synced = 0, i, stmt_q;
    PGTransactionStatusType ts;

    *in_txn = c->in_txn;
    c->sync_canceled = 0;
    if (PQenterPipelineMode(c->pg) != 1)
        return sqllock__pg_fail(c->pg, NULL, err);
    c->in_txn = 1;                     /* no C2 check inside */
    if (with & SQLLOCK_EXEC_BEGIN) {
        ok = PQsendQueryParams(c->pg, PG_BEGIN, 0, NULL, NULL, NULL, NULL,
                               0);
        nq++;
        if (ok && c->pooler == PG_POOLER_TRANSACTION &&
            c->txn_lock_timeout_ms >= 0) {
            snprintf(timeout, sizeof timeout, "%lldms",
                     (long long)(c->txn_lock_timeout_ms > 2147483647
                                 ? 2147483647 : c->txn_lock_timeout_ms));
            tv[0] = timeout;
            ok = PQsendQueryParams(c->pg, "SELECT pg_catalog.set_config("
                                   "'lock_timeout', $1, true)", 1, NULL, tv,
                                   NULL, NULL, 0);
            nq++;
        }
    }
    stmt_q = nq;
    if (ok && s->sql != NULL)
        ok = PQsendQueryParams(c->pg, s->sql, nargs, NULL, vals,
                               binary ? lens : NULL, binary ? formats : NULL,
                               0);
    else if (ok)
        ok = PQsendQueryPrepared(c->pg, s->name, nargs, vals,
                                 binary ? lens : NULL,
                                 binary ? formats : NULL, 0);
    nq++;
    if (ok && (with & SQLLOCK_EXEC_COMMIT)) {
        ok = PQsendQueryParams(c->pg, "COMMIT", 0, NULL, NULL, NULL, NULL,
                               0);
        nq++;
    }
    if (ok)
        ok = PQpipelineSync(c->pg);
    if (!ok) {
        /* Part of it queued, maybe: the connection's state is not worth
         * guessing. */
        rc = sqllock__pg_fail(c->pg, NULL, err);
        c->broken = 1;
        goto out;
    }
    while ((r = PQflush(c->pg)) != 0) {
        if (r < 0) {
            rc = sqllock__pg_fail(c->pg, NULL, err);
            goto out;
        }
        rc = sqllock__pg_wait_step(c, POLLIN | POLLOUT, deadline, bound, err);
        if (rc != SQLLOCK_OK)
            goto out;
        if (PQconsumeInput(c->pg) == 0) {
            rc = sqllock__pg_fail(c->pg, NULL, err);
            goto out;
        }
    }
    /* The results: query q's, then a NULL; after the last, the Sync. */
    q = 0;
    while (!synced && PQstatus(c->pg) != CONNECTION_BAD) {
        PGresult *one;

        while (PQisBusy(c->pg)) {
            rc = sqllock__pg_wait_step(c, POLLIN, deadline, bound, err);
            if (rc != SQLLOCK_OK)
                goto out;
            if (PQconsumeInput(c->pg) == 0)
                break;                 /* closed: its last words below */
        }
        one = PQgetResult(c->pg);
        if (one == NULL) {
            if (PQstatus(c->pg) == CONNECTION_BAD || ++q > nq)
                break;
            continue;
        }
        if (PQresultStatus(one) == PGRES_PIPELINE_SYNC) {
            PQclear(one);
            synced = 1;
            break;
        }
        if (q < nq) {
            PQclear(res[q]);
            res[q] = one;
        } else {
            PQclear(one);
        }
    }
    if (!synced) {
        /* The connection is gone (or answered out of order): the first
         * failed result says why. */
        for (i = 0; i < nq; i++)
            if (res[i] != NULL &&
                PQresultStatus(res[i]) != PGRES_COMMAND_OK &&
                PQresultStatus(res[i]) != PGRES_TUPLES_OK &&
                PQresultStatus(res[i]) != PGRES_PIPELINE_ABORTED)
                break;
        /* No result says why and the connection is not known to be
         * closed (a Patroni leader demoting itself cut one during
         * test_patroni's isolate): libpq has no message, and the answer
         * is as unknown as after a lost connection -- ECONNECT below,
         * not an "unknown libpq error" of EDB. */
        if (i < nq || PQstatus(c->pg) == CONNECTION_BAD)
            rc = sqllock__pg_fail(c->pg, i < nq ? res[i] : NULL, err);
        else
            rc = SQLLOCK_OK;
        if (rc == SQLLOCK_OK || PQstatus(c->pg) != CONNECTION_BAD) {
            c->broken = 1;
            if (rc == SQLLOCK_OK)
                rc = sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the "
                                       "pipeline got no complete answer; "
                                       "the connection is dropped");
        }
        goto out;
    }
    if (PQexitPipelineMode(c->pg) != 1) {
        rc = sqllock__pg_fail(c->pg, NULL, err);
        c->broken = 1;
        goto out;
    }
    PQsetnonblocking(c->pg, c->was_nonblocking);
    /* The first failure in order is the one to report: BEGIN's, the lock
     * timeout's, the statement's, COMMIT's. */
    for (i = 0; i < nq; i++) {
        ExecStatusType st = res[i] != NULL ? PQresultStatus(res[i])
                                           : PGRES_FATAL_ERROR;
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
            rc = sqllock__pg_fail(c->pg, res[i], err);
            goto out;
        }
    }
    /* A COMMIT in a failed transaction answers ROLLBACK: not a
     * success (cannot happen after a statement that succeeded, but the
     * answer is what counts). */
    if ((with & SQLLOCK_EXEC_COMMIT) &&
        strcmp(PQcmdStatus(res[nq - 1]), "COMMIT") != 0) {
        rc = sqllock_dberr_set(err, SQLLOCK_EDB, "", "the database rolled "
                               "the transaction back instead of "
                               "committing it");
        goto out;
    }
    /* A COMMIT whose wait for the synchronous standby was canceled, or
     * a server ending the connection as it answered: what a statement
     * sent on its own would report. */
    rc = sqllock__pg_sync_wait_status(c, rc, err);
    if (rc != SQLLOCK_OK)
        goto out;
    s->res = res[stmt_q];
    res[stmt_q] = NULL;
out:
    ts = PQtransactionStatus(c->pg);
    c->in_txn = !c->broken && PQstatus(c->pg) == CONNECTION_OK &&
                (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR);
    *in_txn = c->in_txn;
    if (rc != SQLLOCK_OK && PQpipelineStatus(c->pg) != PQ_PIPELINE_OFF)
        c->broken = 1;            /* still inside the pipeline: unusable */
    if (rc == SQLLOCK_OK && c->broken)
        rc = SQLLOCK_ECONNECT;
    for (i = 0; i < PIPE_MAX; i++)
        PQclear(res[i]);
    return rc;
}

static int pg_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                      unsigned with, int *in_txn, sqllock_dberr *err)
{
    const char *vals[PG_MAX_PARAMS];
    int lens[PG_MAX_PARAMS], formats[PG_MAX_PARAMS];
    char ints[PG_MAX_PARAMS][24];
    char *texts[PG_MAX_PARAMS];
    int i, binary = 0, rc = SQLLOCK_OK, sent;

    sqllock__pg_reset(s);
    if (nargs > PG_MAX_PARAMS)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "a statement may "
                                 "bind at most %d values (%d given)",
                                 PG_MAX_PARAMS, nargs);
    if (s->nparams >= 0 && nargs != s->nparams)
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "statement %s takes %d "
                                 "parameters, %d given", s->name, s->nparams,
                                 nargs);
    /* Text-format parameters must be NUL-terminated; the core's values
     * carry a length and need not be. A BLOB may hold NUL bytes, which no
     * text-format parameter can carry: it goes in binary format, which
     * for bytea is the bytes themselves. */
    for (i = 0; i < nargs; i++) {
        texts[i] = NULL;
        lens[i] = 0;
        formats[i] = 0;
        switch (args[i].type) {
        case SQLLOCK_VALUE_INT64:
            snprintf(ints[i], sizeof ints[i], "%lld", (long long)args[i].i);
            vals[i] = ints[i];
            break;
        case SQLLOCK_VALUE_TEXT:
            texts[i] = malloc(args[i].len + 1);
            if (texts[i] == NULL) {
                rc = SQLLOCK_ENOMEM;
                break;
            }
            memcpy(texts[i], args[i].s, args[i].len);
            texts[i][args[i].len] = '\0';
            vals[i] = texts[i];
            break;
        case SQLLOCK_VALUE_BLOB:
            if (args[i].len > INT32_MAX) {
                rc = SQLLOCK_EINVAL;
                break;
            }
            /* Not NULL even when empty: NULL would send SQL NULL. */
            vals[i] = args[i].len > 0 ? args[i].s : "";
            lens[i] = (int)args[i].len;
            formats[i] = 1;
            binary = 1;
            break;
        default:
            vals[i] = NULL;
            break;
        }
        if (rc != SQLLOCK_OK) {
            nargs = i;
            break;
        }
    }
    if (rc == SQLLOCK_EINVAL)
        sqllock_dberr_set(err, rc, "", "a binary value is too long to bind");
    else if (rc != SQLLOCK_OK)
        sqllock_dberr_set(err, rc, "", "out of memory");
    if (rc == SQLLOCK_OK)
        rc = sqllock__pg_check_usable(s->conn, err);
    s->conn->durable = s->kind == PG_STMT_DURABLE;
    /* DESIGN D5 behind a transaction pooler, whose server connections
     * default to another isolation level than READ COMMITTED (the role's
     * or the database's default_transaction_isolation): no session
     * setting may be made there (C1), so a statement that commits on its
     * own goes in a transaction that names its level, BEGIN ISOLATION
     * LEVEL READ COMMITTED and COMMIT around it in the same round trip,
     * once one statement's check (pg_sql.c, SESSION_PINS) has found the
     * level wrong -- that statement did nothing and is sent again so. */
    if (rc == SQLLOCK_OK && with == 0 && s->conn->wrap_txn &&
        !s->conn->in_txn)
        with = SQLLOCK_EXEC_BEGIN | SQLLOCK_EXEC_COMMIT;
    if (rc == SQLLOCK_OK && with == 0 && s->sql != NULL &&
        s->conn->pooler == PG_POOLER_TRANSACTION && !s->conn->borrowed &&
        !s->conn->in_txn && PQtransactionStatus(s->conn->pg) == PQTRANS_IDLE) {
        sent = PQsendQueryParams(s->conn->pg, s->sql, nargs, NULL, vals,
                                 binary ? lens : NULL,
                                 binary ? formats : NULL, 0);
        rc = sqllock__pg_expect_result(s->conn, sent, PGRES_TUPLES_OK,
                                       PGRES_COMMAND_OK, &s->res, err);
        if (rc != SQLLOCK_EMISUSE || strcmp(err->code, "25001") != 0)
            goto done;
        s->conn->wrap_txn = 1;
        rc = sqllock__pg_check_usable(s->conn, err);
        with = SQLLOCK_EXEC_BEGIN | SQLLOCK_EXEC_COMMIT;
    }
    if (rc == SQLLOCK_OK && with != 0) {
        int open = 0;

        rc = undeclared_pooler(pipeline(s, nargs, vals, lens, formats,
                                        binary, with,
                                        in_txn != NULL ? in_txn : &open,
                                        err), err);
    } else if (rc == SQLLOCK_OK && s->sql != NULL) {
        sent = PQsendQueryParams(s->conn->pg, s->sql, nargs, NULL, vals,
                                 binary ? lens : NULL,
                                 binary ? formats : NULL, 0);
        rc = sqllock__pg_expect_result(s->conn, sent, PGRES_TUPLES_OK,
                                       PGRES_COMMAND_OK, &s->res, err);
    } else if (rc == SQLLOCK_OK) {
        sent = PQsendQueryPrepared(s->conn->pg, s->name, nargs, vals,
                                   binary ? lens : NULL,
                                   binary ? formats : NULL, 0);
        rc = undeclared_pooler(sqllock__pg_expect_result(s->conn, sent,
                                                         PGRES_TUPLES_OK,
                                                         PGRES_COMMAND_OK,
                                                         &s->res, err),
                               err);
    }
done:
    s->conn->durable = 0;
    /* Transaction pooling: begin() sets this timeout again in every
     * transaction from now on. */
    if (rc == SQLLOCK_OK && s->kind == PG_STMT_LOCK_TIMEOUT && nargs == 1 &&
        s->sql != NULL)
        s->conn->txn_lock_timeout_ms = args[0].i;
    for (i = 0; i < nargs; i++)
        free(texts[i]);
    return rc;
}

int sqllock__pg_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                        sqllock_dberr *err)
{
    return pg_execute(s, args, nargs, 0, NULL, err);
}

int sqllock__pg_execute_txn(sqllock_stmt *s, const sqllock_value *args,
                            int nargs, unsigned with, int *in_txn,
                            sqllock_dberr *err)
{
    int open = s->conn->in_txn, rc;

    with &= SQLLOCK_EXEC_BEGIN | SQLLOCK_EXEC_COMMIT;
    if (with == 0) {
        rc = pg_execute(s, args, nargs, 0, NULL, err);
        *in_txn = s->conn->in_txn;
        return rc;
    }
    rc = pg_execute(s, args, nargs, with, &open, err);
    *in_txn = open;
    return rc;
}

int sqllock__pg_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err)
{
    free_blobs(s);
    if (s->res == NULL) {
        *has_row = 0;
        return SQLLOCK_OK;
    }
    s->row++;
    *has_row = s->row < PQntuples(s->res);
    return SQLLOCK_OK;
}

int64_t sqllock__pg_column_int64(sqllock_stmt *s, int col)
{
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return 0;
    return strtoll(PQgetvalue(s->res, s->row, col), NULL, 10);
}

const char *sqllock__pg_column_text(sqllock_stmt *s, int col)
{
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res))
        return "";
    return PQgetvalue(s->res, s->row, col);   /* "" for NULL */
}

/* A bytea column. Results come in text format, so the value is bytea's
 * text form ("\x" hex, or the older escape form under bytea_output =
 * escape), which PQunescapeBytea() reads either way. The decoded bytes
 * are kept until the next fetch, reset or finalize. Returns NULL (and
 * *len = 0) only when memory runs out. */
const void *sqllock__pg_column_blob(sqllock_stmt *s, int col, size_t *len)
{
    unsigned char *b;
    size_t n = 0;

    *len = 0;
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res) ||
        col < 0 || col >= PQnfields(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return "";
    if (s->blobs == NULL) {
        int nf = PQnfields(s->res);
        s->blobs = calloc((size_t)nf, sizeof *s->blobs);
        s->blob_lens = calloc((size_t)nf, sizeof *s->blob_lens);
        if (s->blobs == NULL || s->blob_lens == NULL) {
            free(s->blobs);
            free(s->blob_lens);
            s->blobs = NULL;
            s->blob_lens = NULL;
            return NULL;
        }
        s->nblobs = nf;
    }
    if (s->blobs[col] == NULL) {
        b = PQunescapeBytea((const unsigned char *)
                            PQgetvalue(s->res, s->row, col), &n);
        if (b == NULL)
            return NULL;
        s->blobs[col] = b;
        s->blob_lens[col] = n;
    }
    *len = s->blob_lens[col];
    return s->blobs[col];
}

int64_t sqllock__pg_affected_rows(sqllock_stmt *s)
{
    const char *n = s->res != NULL ? PQcmdTuples(s->res) : "";

    return n[0] ? strtoll(n, NULL, 10) : 0;
}

int64_t sqllock__pg_insert_id(sqllock_stmt *s)
{
    return 0;         /* PostgreSQL returns generated values by RETURNING */
}

void *sqllock__pg_native(sqllock_conn *c)
{
    return c->pg;
}
