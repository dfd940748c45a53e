/*
 * my_txn.c -- committed on its own (DESIGN C2), scripts and transactions.
 */
#include <stdio.h>
#include <string.h>

#include "my.h"

/* ------------------------------------------------------------------------ */
/* Committed on its own (DESIGN C2)                                         */
/* ------------------------------------------------------------------------ */

/* Why a session is inside a transaction the driver did not begin, from
 * the server's status flags: autocommit off, or a transaction opened. */
static const char *why_in_transaction(const MYSQL *my)
{
    if (!(my->server_status & SERVER_STATUS_AUTOCOMMIT))
        return "autocommit is off on this session, turned off after the "
               "connect (which turns it on, whatever the server's "
               "autocommit or init_connect say) by a proxy or by a "
               "statement through the native handle";
    return "a transaction was opened on this connection outside sqllock, "
           "by a proxy or by a statement through the native handle";
}

/*
 * After a statement the core ran outside its own transaction (outside
 * begin() .. commit()): such a statement -- a lease grant, renewal or
 * release, a record's create, compare-and-set or delete, the reaper's
 * DELETE -- must have committed on its own. The server's answer says
 * whether the session is still inside a transaction
 * (SERVER_STATUS_IN_TRANS); if it is, the statement's effect is not
 * committed and would be committed by whoever commits next -- a renewal
 * or a release reported as failed, or a compare-and-set the caller then
 * retries, could take effect after all. So it is rolled back, and the
 * call fails with SQLLOCK_EPROXY. A ROLLBACK that fails leaves the
 * transaction open: the connection is reported lost then
 * (SQLLOCK_ECONNECT), so that the core drops it and the server rolls the
 * transaction back when the connection ends. The check costs no round
 * trip: the status comes with every answer.
 */
int sqllock__my_check_committed(sqllock_conn *c, sqllock_dberr *err)
{
    char why[300], rbmsg[200];

    if (c->in_txn || c->borrowed ||
        !(c->my->server_status & SERVER_STATUS_IN_TRANS))
        return SQLLOCK_OK;
    snprintf(why, sizeof why, "%s", why_in_transaction(c->my));
    if (mysql_rollback(c->my) != 0) {
        snprintf(rbmsg, sizeof rbmsg, "%s", mysql_error(c->my));
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the statement "
                                 "was not committed: the connection was "
                                 "left inside a transaction after it, "
                                 "because %s; the ROLLBACK failed too (%s), "
                                 "so the connection is dropped and the "
                                 "server rolls the transaction back", why,
                                 rbmsg);
    }
    return sqllock_dberr_set(err, SQLLOCK_EPROXY, "", "the statement was not "
                             "committed: the connection was left inside a "
                             "transaction after it, because %s; it was "
                             "rolled back, nothing was committed", why);
}

/*
 * Before a statement outside the core's own transaction: if the server's
 * last answer left the session inside a transaction (the application
 * ran START TRANSACTION, or a statement with autocommit off, on the
 * native handle), the statement would not commit on its own, and a
 * rollback or commit of ours would end the application's own work too.
 * It is refused, unsent, as on PostgreSQL. (A proxy's transaction is
 * opened in the same exchange as our statement, so
 * sqllock__my_check_committed()
 * meets it afterwards.)
 */
int sqllock__my_check_no_foreign_txn(sqllock_conn *c, sqllock_dberr *err)
{
    if (c->in_txn || c->borrowed ||
        !(c->my->server_status & SERVER_STATUS_IN_TRANS))
        return SQLLOCK_OK;
    return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "25001", "the connection "
                             "is inside a transaction that sqllock did not "
                             "begin (START TRANSACTION, or a statement with "
                             "autocommit off, on the native handle?): the "
                             "statement would not commit on its own, so it "
                             "was not sent");
}

/* ------------------------------------------------------------------------ */
/* Scripts and transactions                                                 */
/* ------------------------------------------------------------------------ */

/* 1 if sql[0..len) holds only white space and "--" comments. */
static int only_comments(const char *sql, size_t len)
{
    size_t i = 0;

    while (i < len) {
        if (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' ||
            sql[i] == '\r') {
            i++;
        } else if (sql[i] == '-' && i + 1 < len && sql[i + 1] == '-') {
            while (i < len && sql[i] != '\n')
                i++;
        } else {
            return 0;
        }
    }
    return 1;
}

/*
 * Runs a script one statement at a time: a statement ends at a ';' that
 * ends its line (see schema/mysql.sql). DDL commits implicitly in MySQL,
 * so the script is not one transaction; each statement is idempotent
 * instead (CREATE TABLE IF NOT EXISTS, INSERT IGNORE), so several
 * processes may run it at once.
 */
int sqllock__my_exec_script(sqllock_conn *c, const char *sql,
                            sqllock_dberr *err)
{
    const char *p = sql;

    while (*p != '\0') {
        const char *end = p;
        size_t len;

        /* Find a ';' followed by optional blanks and the end of a line. */
        for (;;) {
            const char *semi = strchr(end, ';');
            const char *q;
            if (semi == NULL) {
                end = p + strlen(p);
                break;
            }
            q = semi + 1;
            while (*q == ' ' || *q == '\t' || *q == '\r')
                q++;
            if (*q == '\n' || *q == '\0') {
                end = semi;
                break;
            }
            end = semi + 1;
        }
        len = (size_t)(end - p);
        if (!only_comments(p, len)) {
            if (mysql_real_query(c->my, p, (unsigned long)len) != 0)
                return sqllock__my_fail_conn(c->my, err, "running the schema "
                                             "script");
            /* A statement that returns rows must have them read before the
             * next one can run. */
            if (mysql_field_count(c->my) > 0) {
                MYSQL_RES *res = mysql_store_result(c->my);
                if (res == NULL)
                    return sqllock__my_fail_conn(c->my, err, "running the "
                                                 "schema script");
                mysql_free_result(res);
            }
        }
        p = *end == ';' ? end + 1 : end;
    }
    /* DDL commits by itself, the script's inserts must too (C2). */
    return sqllock__my_check_committed(c, err);
}

/*
 * A session whose autocommit is off would run the transaction well (and
 * the acquire routine, which commits by itself), but
 * every statement the core runs outside a transaction afterwards (the
 * lease's renewal and release, records) would not commit (C2): refused
 * here already, from the status of the server's last answer (no round
 * trip), so that a lease is not granted that could be neither renewed nor
 * released. A transaction someone else opened is refused too: our START
 * TRANSACTION would commit its work (sqllock__my_check_no_foreign_txn()).
 */
int sqllock__my_check_autocommit(sqllock_conn *c, sqllock_dberr *err)
{
    if (c->borrowed || (c->my->server_status & SERVER_STATUS_AUTOCOMMIT))
        return SQLLOCK_OK;
    return sqllock_dberr_set(err, SQLLOCK_EPROXY, "", "not begun: %s, so "
                             "the statements that must commit on their "
                             "own would not; nothing was committed",
                             why_in_transaction(c->my));
}

int sqllock__my_begin(sqllock_conn *c, sqllock_dberr *err)
{
    static const char begin[] = "START TRANSACTION";
    int64_t t0;
    int rc = sqllock__my_check_no_foreign_txn(c, err);

    if (rc == SQLLOCK_OK)
        rc = sqllock__my_check_autocommit(c, err);
    if (rc != SQLLOCK_OK)
        return rc;
    t0 = sqllock_driver_now_ms();
    if (mysql_real_query(c->my, begin, sizeof begin - 1) != 0)
        return sqllock__my_fail_timed(c, t0,
                                      sqllock__my_fail_conn(c->my, err,
                                                            "START "
                                                            "TRANSACTION"),
                                      err);
    c->in_txn = 1;
    return SQLLOCK_OK;
}

/*
 * The client's status flags come with every OK from the server, but an
 * error carries none: after a COMMIT or a ROLLBACK that failed they still
 * say "in a transaction" from the last OK, and
 * sqllock__my_check_no_foreign_txn()
 * would take that for someone else's transaction. On a Galera node a
 * transaction that a conflicting write set aborted (brute force) fails
 * the next command with 1213, the ROLLBACK included, and only the one
 * after it succeeds. So a ROLLBACK that fails on a live connection is
 * sent once more: its OK ends what is left of the transaction and brings
 * the flags up to date. 0 when one of them succeeded.
 */
static int rollback_resync(sqllock_conn *c)
{
    if (mysql_rollback(c->my) == 0)
        return 0;
    if (sqllock__my_classify(mysql_errno(c->my)) == SQLLOCK_ECONNECT)
        return -1;
    return mysql_rollback(c->my) == 0 ? 0 : -1;
}

/* A COMMIT that fails (a Galera certification failure, 1213) has ended
 * the transaction on the server; a ROLLBACK brings the status flags up
 * to date (rollback_resync()) and does not change the status reported. */
int sqllock__my_commit(sqllock_conn *c, sqllock_dberr *err)
{
    int64_t t0 = sqllock_driver_now_ms();
    int rc;

    c->in_txn = 0;
    if (mysql_commit(c->my) == 0)
        return SQLLOCK_OK;
    rc = sqllock__my_fail_timed(c, t0,
                                sqllock__my_fail_conn(c->my, err, "COMMIT"),
                                err);
    if (rc != SQLLOCK_ECONNECT)
        (void)rollback_resync(c);
    return rc;
}

/* On a lost connection this reports SQLLOCK_ECONNECT (the server rolls
 * the transaction back when the connection ends). */
int sqllock__my_rollback(sqllock_conn *c, sqllock_dberr *err)
{
    int64_t t0 = sqllock_driver_now_ms();

    c->in_txn = 0;
    if (rollback_resync(c) != 0)
        return sqllock__my_fail_timed(c, t0,
                                      sqllock__my_fail_conn(c->my, err,
                                                            "ROLLBACK"),
                                      err);
    return SQLLOCK_OK;
}
