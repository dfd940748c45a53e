/*
 * my_error.c -- the error map: MySQL and MariaDB error numbers as sqllock
 * statuses, and the messages of failed calls.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "my.h"

/*
 * Classifies a MySQL or MariaDB error number. MariaDB reports a NOWAIT
 * failure as 1205, the same number as a lock wait timeout (checked on
 * MariaDB 10.11); MySQL 8.0 reports it as 3572. Galera reports a
 * certification failure as a deadlock, 1213.
 */
int sqllock__my_classify(unsigned int code)
{
    switch (code) {
    case 1062:                 /* ER_DUP_ENTRY */
        return SQLLOCK_EEXISTS;
    case 1205:                 /* ER_LOCK_WAIT_TIMEOUT, MariaDB NOWAIT */
    case 3572:                 /* MySQL ER_LOCK_NOWAIT */
        return SQLLOCK_ELOCKED;
    case 1213:                 /* ER_LOCK_DEADLOCK */
        return SQLLOCK_EDEADLOCK;
    case 1146:                 /* ER_NO_SUCH_TABLE */
    case 1305:                 /* ER_SP_DOES_NOT_EXIST (the acquire
                                  routine, not installed) */
        return SQLLOCK_ENOSCHEMA;
    /* A Galera node that has left the primary component answers every
     * statement but SET and SHOW with 1047 ("WSREP has not yet prepared
     * node for application use"): the connection is of no use, and the
     * next call reconnects, to another host of a host list. */
    case 1047:                 /* ER_UNKNOWN_COM_ERROR */
    /* A Galera node cut off from the primary component while a commit
     * was in flight answers 1180 ("Error while appending streaming
     * replication fragment (provider status: Not connected to Primary
     * Component)"), and yet the other nodes may have committed the
     * write set it had sent them: seen with a partition on the
     * test's network namespaces (scripts/galera_net.sh), 2 runs of 3.
     * So the statement may or may not have run, as after a lost
     * connection, and the connection is of no use: ECONNECT, never a
     * definite failure of a grant that the cluster may hold. */
    case 1180:                 /* ER_ERROR_DURING_COMMIT */
    case 1053:                 /* ER_SERVER_SHUTDOWN */
    case 1927:                 /* MariaDB ER_CONNECTION_KILLED */
    case 2002:                 /* CR_CONNECTION_ERROR (socket) */
    case 2003:                 /* CR_CONN_HOST_ERROR */
    case 2005:                 /* CR_UNKNOWN_HOST */
    case 2006:                 /* CR_SERVER_GONE_ERROR */
    case 2013:                 /* CR_SERVER_LOST */
    case 2055:                 /* CR_SERVER_LOST_EXTENDED */
    case 4031:                 /* MySQL ER_CLIENT_INTERACTION_TIMEOUT */
        return SQLLOCK_ECONNECT;
    case 1317:                 /* ER_QUERY_INTERRUPTED */
    case 1969:                 /* MariaDB ER_STATEMENT_TIMEOUT */
    case 3024:                 /* MySQL ER_QUERY_TIMEOUT */
        return SQLLOCK_ECANCELED;
    case 1044:                 /* ER_DBACCESS_DENIED_ERROR */
    case 1045:                 /* ER_ACCESS_DENIED_ERROR */
    case 1142:                 /* ER_TABLEACCESS_DENIED_ERROR */
    case 1227:                 /* ER_SPECIFIC_ACCESS_DENIED_ERROR */
    case 1370:                 /* ER_PROCACCESS_DENIED_ERROR (EXECUTE) */
    case 1290:                 /* ER_OPTION_PREVENTS_STATEMENT (read-only) */
        return SQLLOCK_EPERM;
    case 2008:                 /* CR_OUT_OF_MEMORY */
        return SQLLOCK_ENOMEM;
    /* A value the caller gave does not fit its column (strict mode turns
     * these warnings into errors): bad input, as on PostgreSQL's class
     * 22 (DESIGN E2). */
    case 1264:                 /* ER_WARN_DATA_OUT_OF_RANGE */
    case 1265:                 /* WARN_DATA_TRUNCATED */
    case 1292:                 /* ER_TRUNCATED_WRONG_VALUE */
    case 1300:                 /* ER_INVALID_CHARACTER_STRING */
    case 1366:                 /* ER_TRUNCATED_WRONG_VALUE_FOR_FIELD */
    case 1406:                 /* ER_DATA_TOO_LONG */
    case 1690:                 /* ER_DATA_OUT_OF_RANGE (BIGINT overflow) */
        return SQLLOCK_EINVAL;
    case 1021:                 /* ER_DISK_FULL */
    case 1114:                 /* ER_RECORD_FILE_FULL ("table is full") */
        return SQLLOCK_EFULL;
    default:
        return SQLLOCK_EDB;
    }
}

/* Fills `err` from an error number and message; `context`, when not NULL,
 * goes before the message. Returns the status. */
static int fail_code(unsigned int code, const char *msg, sqllock_dberr *err,
                     const char *context)
{
    char num[16];
    int status = sqllock__my_classify(code);

    snprintf(num, sizeof num, "%u", code);
    if (msg == NULL || msg[0] == '\0')
        msg = "unknown error";
    if (context != NULL)
        return sqllock_dberr_set(err, status, num, "%s: %s", context, msg);
    return sqllock_dberr_set(err, status, num, "%s", msg);
}

int sqllock__my_fail_conn(MYSQL *my, sqllock_dberr *err, const char *context)
{
    return fail_code(mysql_errno(my), mysql_error(my), err, context);
}

int sqllock__my_fail_stmt(MYSQL_STMT *st, sqllock_dberr *err,
                          const char *context)
{
    return fail_code(mysql_stmt_errno(st), mysql_stmt_error(st), err,
                     context);
}

/* A lost connection (`rc`, already in `err`) reported once the call
 * started at t0 had run for the whole read or write timeout: the server
 * did not answer in time. Says so, keeping the client's own message. */
int sqllock__my_fail_timed(const sqllock_conn *c, int64_t t0, int rc,
                           sqllock_dberr *err)
{
    char msg[sizeof err->msg];
    int64_t took = sqllock_driver_now_ms() - t0;

    if (rc != SQLLOCK_ECONNECT || took < (int64_t)c->io_timeout_s * 1000 - 20)
        return rc;
    memcpy(msg, err->msg, sizeof msg);
    return sqllock_dberr_set(err, rc, err->code, "the server did not answer "
                             "within %u s (statement timeout %lld ms + lock "
                             "wait %lld ms, in whole seconds); the connection "
                             "is dropped: the statement may or may not have "
                             "run (%s)", c->io_timeout_s,
                             (long long)c->statement_ms,
                             (long long)c->lock_wait_ms, msg);
}

/* Appends to buf[size], cutting what does not fit. */
void sqllock__my_append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* Sets one option; the client library refuses only options it does not
 * know, which is reported as an error. */
int sqllock__my_set_option(MYSQL *my, enum mysql_option opt, const void *value,
                           const char *what, sqllock_dberr *err)
{
    if (mysql_options(my, opt, value) != 0)
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "the MySQL client "
                                 "library refused the option %s", what);
    return SQLLOCK_OK;
}
