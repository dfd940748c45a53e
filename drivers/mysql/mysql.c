/*
 * mysql.c -- the MySQL and MariaDB driver (URL schemes mysql: and mariadb:).
 *
 * The driver is built against the MySQL C API as MariaDB Connector/C and
 * Oracle's libmysqlclient both provide it. Its SQL stays within what
 * MySQL 8.0 also runs (DESIGN D4): there is no RETURNING and there are no
 * sequences, so the driver declares no SQLLOCK_CAP_RETURNING and the core
 * takes its declared branch for acquire: the insert-or-takeover statement
 * in a transaction, then a token from an AUTO_INCREMENT counter
 * (TOKEN_NEXT) stored into the row just taken (LEASE_SET_TOKEN), then
 * commit (see sqllock_driver.h).
 *
 * Each session runs with the time zone set to UTC, so that NOW(6) and the
 * DATETIME(6) columns are UTC and no daylight-saving jump can move an
 * expiry, with READ COMMITTED isolation, so that the insert path takes no
 * gap locks, and with autocommit on, so that a statement the core runs
 * outside its own transaction commits by itself; a session found inside a
 * transaction after such a statement fails it with SQLLOCK_EPROXY (DESIGN
 * C2, check_committed()). Automatic reconnection stays off: a silent
 * reconnect could run a statement again whose effect is unknown; the core
 * reconnects on the next call instead, after the driver reports
 * SQLLOCK_ECONNECT.
 *
 * The URL takes MySQL's TLS settings (ssl_mode, ssl_ca, ssl_capath,
 * ssl_cert, ssl_key, ssl_cipher, ssl_crl, ssl_crlpath) and an option file
 * (option_file, option_group; optfile.c reads it) for the login and the
 * TLS settings; the URL's own values win over the file's.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <mysql.h>

#include "mydrv.h"

/*
 * The statements. Placeholders are `?`; the `args` string of each entry
 * in mysql_dialect says which core argument binds to each placeholder.
 *
 * L1: one statement inserts the row, or takes it over when it has expired
 * by the server's clock. The assignments of ON DUPLICATE KEY UPDATE are
 * evaluated left to right and each sees the columns as the earlier ones
 * left them, so expires_at, which every condition reads, is assigned
 * last. The affected-row count says what happened: 1 inserted, 2 taken
 * over, 0 held by another owner (the connection must not set
 * CLIENT_FOUND_ROWS, which would count a held row as 1). VALUES() is the
 * one spelling that MySQL 8.0 and MariaDB both accept. The token is 0
 * here; TOKEN_NEXT and LEASE_SET_TOKEN set it in the same transaction.
 */
static const char SQL_LEASE_ACQUIRE[] =
    "INSERT INTO sqllock_lease "
    "(name, owner, holder, token, acquired_at, expires_at) "
    "VALUES (?, ?, ?, 0, NOW(6), NOW(6) + INTERVAL (? * 1000) MICROSECOND) "
    "ON DUPLICATE KEY UPDATE "
    "owner = IF(expires_at <= NOW(6), VALUES(owner), owner), "
    "holder = IF(expires_at <= NOW(6), VALUES(holder), holder), "
    "token = IF(expires_at <= NOW(6), 0, token), "
    "acquired_at = IF(expires_at <= NOW(6), VALUES(acquired_at), acquired_at), "
    "expires_at = IF(expires_at <= NOW(6), VALUES(expires_at), expires_at)";

/* L5: REPLACE gives the name's counter row a new AUTO_INCREMENT value,
 * which is the token (insert_id()). The counter belongs to the table, so
 * it outlives every lease row and increases across all names. */
static const char SQL_TOKEN_NEXT[] =
    "REPLACE INTO sqllock_token (name) VALUES (?)";

static const char SQL_LEASE_SET_TOKEN[] =
    "UPDATE sqllock_lease SET token = ? WHERE name = ? AND owner = ?";

/* MySQL counts a matched row whose values did not change as 0 affected
 * rows, so the new expiry is made to differ from the old one by at least
 * a microsecond: a renewal that matched always reports 1. */
static const char SQL_LEASE_RENEW[] =
    "UPDATE sqllock_lease SET expires_at = "
    "GREATEST(expires_at + INTERVAL 1 MICROSECOND, "
    "NOW(6) + INTERVAL (? * 1000) MICROSECOND) "
    "WHERE name = ? AND owner = ? AND token = ?";

static const char SQL_LEASE_RELEASE[] =
    "DELETE FROM sqllock_lease WHERE name = ? AND owner = ? AND token = ?";

/* Milliseconds since the epoch are counted with TIMESTAMPDIFF from
 * 1970-01-01, which is exact because the session time zone is UTC, and
 * unlike UNIX_TIMESTAMP() it does not stop at the year 2038 on MariaDB. */
#define EPOCH_MS(col) \
    "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col \
    ") DIV 1000 AS SIGNED)"

static const char SQL_LEASE_LIST[] =
    "SELECT name, owner, holder, token, " EPOCH_MS("acquired_at") ", "
    EPOCH_MS("expires_at") ", "
    "CAST(TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) DIV 1000 AS SIGNED) "
    "FROM sqllock_lease ORDER BY name";

static const char SQL_SCHEMA_VERSION[] =
    "SELECT CAST(`value` AS SIGNED) FROM sqllock_meta "
    "WHERE `key` = 'schema_version'";

/* Versioned records (DESIGN O1). `key` is a reserved word in MySQL and
 * `value` a keyword, so both are quoted. CREATE must report 0 affected
 * rows when the key exists, without turning other errors into warnings
 * as INSERT IGNORE would: ON DUPLICATE KEY UPDATE that sets a column to
 * its own value changes nothing, which counts 0 rows (without
 * CLIENT_FOUND_ROWS), and 1 for a new row. A CAS always changes the
 * version, so a matched row always counts 1. */
static const char SQL_RECORD_GET[] =
    "SELECT `value`, version FROM sqllock_record WHERE `key` = ?";

static const char SQL_RECORD_CREATE[] =
    "INSERT INTO sqllock_record (`key`, `value`, version) VALUES (?, ?, 1) "
    "ON DUPLICATE KEY UPDATE version = version";

static const char SQL_RECORD_CAS[] =
    "UPDATE sqllock_record SET `value` = ?, version = version + 1 "
    "WHERE `key` = ? AND version = ?";

static const char SQL_RECORD_DELETE[] =
    "DELETE FROM sqllock_record WHERE `key` = ? AND version = ?";

/* Row locks (DESIGN R1-R5). The row is created only when no committed
 * row has the name: under the session's READ COMMITTED the NOT EXISTS
 * subquery is a consistent (non-locking) read, so the statement does not
 * wait for another transaction's FOR UPDATE lock on an existing row
 * (checked on MariaDB 10.11; under REPEATABLE READ it would take a shared
 * lock and wait). It does wait for another transaction that inserted the
 * same name and has not committed, then fails with 1062 (EEXISTS) if
 * that one commits. */
static const char SQL_ROW_ENSURE[] =
    "INSERT INTO sqllock_row (name) SELECT ? FROM DUAL "
    "WHERE NOT EXISTS (SELECT 1 FROM sqllock_row WHERE name = ?)";

/* InnoDB counts the lock wait in whole seconds, at least 1. The session
 * variable applies to the statements that follow on this connection;
 * the core sets it at the start of each row-lock transaction. */
static const char SQL_TXN_LOCK_TIMEOUT[] =
    "SET SESSION innodb_lock_wait_timeout = GREATEST(1, CEILING(? / 1000))";

/*
 * P1: the expiry test is in the DELETE, by NOW(6) as in acquire and renew,
 * so a lease renewed a moment earlier no longer matches; LIMIT bounds the
 * batch. P2: InnoDB locks each index entry of the expiry index that the
 * scan reads, then its row. Read in ascending order, the scan also locks
 * the first entry past the range -- a live lease -- and a renewal or
 * release of that lease, which locks the row first and the index entry
 * second, could then deadlock with the reaper and be the one rolled back.
 * Read in descending order from "now - grace", the scan starts inside the
 * range and touches expired entries only (checked on MariaDB 10.11). Two
 * reapers read in the same order, so they wait for each other, never
 * deadlock; a renewal that races the reaper for an expired row may still
 * deadlock with it, and the core retries the reaper's statement.
 */
static const char SQL_LEASE_REAP[] =
    "DELETE FROM sqllock_lease "
    "WHERE expires_at < NOW(6) - INTERVAL (? * 1000) MICROSECOND "
    "ORDER BY expires_at DESC LIMIT ?";

/*
 * L5: sqllock_token keeps a row for every name ever locked. Deleting one
 * loses nothing: tokens come from the table's AUTO_INCREMENT counter,
 * which MySQL 8.0 and MariaDB 10.2.4+ persist, and the next grant of the
 * name inserts a fresh row with a new token, above every earlier one.
 * Servers that recomputed the counter at start-up as MAX(token) + 1 would
 * hand out a token again if the row with the largest token were gone, so
 * that row is kept. The table cannot be named in a subquery of its own
 * DELETE (error 1093): MAX(token) is read through a derived table, which
 * MySQL materializes.
 *
 * The locking is chosen so that the statement cannot deadlock with an
 * acquire (seen on MariaDB 10.11 with each rejected shape, the acquire
 * often being the one rolled back):
 * - Every lock is on primary-key records, taken in key order: MAX reads
 *   the primary key, not the token index, and `token + 0` keeps the range
 *   optimizer off that index. REPLACE locks the record first and the
 *   token index second; a statement holding token-index entries while
 *   waiting for a record can deadlock with it.
 * - MAX reads FOR UPDATE: a plain read in a DELETE takes shared locks,
 *   and upgrading one to exclusive behind a REPLACE already waiting for
 *   the record is a deadlock. Two trims at once now simply queue.
 * - Rows of names that hold a lease are deleted too. Testing for the
 *   lease row would lock it after the token row, the reverse of an
 *   acquire (lease row, then REPLACE).
 */
static const char SQL_TOKEN_TRIM[] =
    "DELETE FROM sqllock_token "
    "WHERE token + 0 < (SELECT m FROM (SELECT MAX(token) AS m "
    "FROM sqllock_token IGNORE INDEX (sqllock_token_token) FOR UPDATE) "
    "AS newest) "
    "ORDER BY name LIMIT ?";

extern const char sqllock__schema_mysql[];

static const sqllock_dialect mysql_dialect = {
    .sql = {
        [SQLLOCK_SQL_LEASE_ACQUIRE] = { SQL_LEASE_ACQUIRE, "1234" },
        [SQLLOCK_SQL_TOKEN_NEXT] = { SQL_TOKEN_NEXT, "1" },
        [SQLLOCK_SQL_LEASE_SET_TOKEN] = { SQL_LEASE_SET_TOKEN, "312" },
        [SQLLOCK_SQL_LEASE_RENEW] = { SQL_LEASE_RENEW, "4123" },
        [SQLLOCK_SQL_LEASE_RELEASE] = { SQL_LEASE_RELEASE, "123" },
        [SQLLOCK_SQL_LEASE_LIST] = { SQL_LEASE_LIST, "" },
        [SQLLOCK_SQL_SCHEMA_VERSION] = { SQL_SCHEMA_VERSION, "" },
        [SQLLOCK_SQL_RECORD_GET] = { SQL_RECORD_GET, "1" },
        [SQLLOCK_SQL_RECORD_CREATE] = { SQL_RECORD_CREATE, "12" },
        [SQLLOCK_SQL_RECORD_CAS] = { SQL_RECORD_CAS, "312" },
        [SQLLOCK_SQL_RECORD_DELETE] = { SQL_RECORD_DELETE, "12" },
        [SQLLOCK_SQL_ROW_ENSURE] = { SQL_ROW_ENSURE, "11" },
        [SQLLOCK_SQL_TXN_LOCK_TIMEOUT] = { SQL_TXN_LOCK_TIMEOUT, "1" },
    },
    .schema = sqllock__schema_mysql,
    .ident_quote = '`',
    .placeholder = SQLLOCK_PLACEHOLDER_QUESTION,
    /* MariaDB 10.6+ and MySQL 8.0 both have NOWAIT and SKIP LOCKED. */
    .for_update = { " FOR UPDATE", " FOR UPDATE NOWAIT",
                    " FOR UPDATE SKIP LOCKED" },
    .sql_v2 = {
        [SQLLOCK_SQL_LEASE_REAP - SQLLOCK_SQL_COUNT_V1_] =
            { SQL_LEASE_REAP, "12" },
        [SQLLOCK_SQL_TOKEN_TRIM - SQLLOCK_SQL_COUNT_V1_] =
            { SQL_TOKEN_TRIM, "1" },
    },
};

/* The session set-up, run once per connection (see the file comment). */
static const char SQL_SESSION_TZ[] =
    "SET time_zone = '+00:00', autocommit = 1";
static const char SQL_SESSION_ISOLATION[] =
    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
/* Galera (see after_connect()). MySQL 8.0 runs both and answers no row. */
static const char SQL_WSREP_ON[] = "SHOW VARIABLES LIKE 'wsrep_on'";
static const char SQL_WSREP_READY[] = "SHOW STATUS LIKE 'wsrep_ready'";

/*
 * How long one read or write on the socket may take before the client
 * gives up and reports the connection lost, so that a server or network
 * that stalls never blocks a caller forever: sqllock_options'
 * statement_timeout_ms plus the longest row-lock wait the handle has asked
 * for (innodb_lock_wait_timeout, which the core sets per transaction; the
 * server ends that wait itself, so it must not be cut), each in whole
 * seconds rounded up, at least 1. The client library takes the value at
 * the connect only (set later, it has no effect: measured), which is why
 * the core connects again when a transaction wants a longer lock wait.
 * MariaDB Connector/C 3.3.20 gives up after this time, once (measured
 * through a proxy that holds every byte: READ_TIMEOUT=1, 2 and 3 end
 * mysql_query() and mysql_stmt_execute() after 1.0, 2.0 and 3.0 s, and
 * the connect's handshake ends after CONNECT_TIMEOUT). Oracle's
 * libmysqlclient documents that it tries a read up to three times, so
 * there the bound is up to three times this (not measured here).
 */
static unsigned int io_timeout_s(const sqllock_connect_params *p)
{
    int64_t s = (p->statement_timeout_ms + 999) / 1000 +
                (p->lock_wait_ms + 999) / 1000;

    if (s < 1)
        s = 1;
    return s > INT_MAX ? (unsigned int)INT_MAX : (unsigned int)s;
}

static int64_t mono_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The first size of a column's buffer; a longer value grows it. */
#define MYDRV_COL_MIN 64ul
#define MYDRV_COL_FIRST_MAX 1024ul

/* MariaDB Connector/C and libmysqlclient before 8.0 spell the flag type
 * my_bool; MySQL 8.0's client uses bool. */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(LIBMYSQL_VERSION_ID) || \
    LIBMYSQL_VERSION_ID < 80000
typedef my_bool mydrv_flag;
#else
#include <stdbool.h>
typedef bool mydrv_flag;
#endif

struct sqllock_conn {
    MYSQL *my;
    int galera;                 /* a Galera cluster node (wsrep_on ON) */
    int in_txn;                 /* between begin() and commit()/rollback() */
    unsigned int io_timeout_s;  /* io_timeout_s() at the connect */
    int64_t statement_ms;       /* its parts, for messages */
    int64_t lock_wait_ms;
};

/* One result column: a growable text buffer, bound as MYSQL_TYPE_STRING
 * (the client converts integers and decimals to text). */
typedef struct mydrv_col {
    char *buf;
    unsigned long cap;          /* bytes in buf, the NUL included */
    unsigned long len;          /* the value's full length */
    mydrv_flag is_null;
    mydrv_flag error;              /* truncated */
} mydrv_col;

struct sqllock_stmt {
    sqllock_conn *conn;
    MYSQL_STMT *st;
    unsigned nparams;
    unsigned ncols;
    MYSQL_BIND *params;
    long long *ints;            /* storage of the bound integers */
    unsigned long *lens;        /* lengths of the bound texts */
    MYSQL_BIND *binds;          /* result binds, one per column */
    mydrv_col *cols;
    int has_result;             /* a result set is stored and open */
    int64_t affected;
    int64_t insert_id;
};

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Classifies a MySQL or MariaDB error number. MariaDB reports a NOWAIT
 * failure as 1205, the same number as a lock wait timeout (checked on
 * MariaDB 10.11); MySQL 8.0 reports it as 3572. Galera reports a
 * certification failure as a deadlock, 1213.
 */
static int classify(unsigned int code)
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
        return SQLLOCK_ENOSCHEMA;
    /* A Galera node that has left the primary component answers every
     * statement but SET and SHOW with 1047 ("WSREP has not yet prepared
     * node for application use"): the connection is of no use, and the
     * next call reconnects, to another host of a host list. */
    case 1047:                 /* ER_UNKNOWN_COM_ERROR */
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
    int status = classify(code);

    snprintf(num, sizeof num, "%u", code);
    if (msg == NULL || msg[0] == '\0')
        msg = "unknown error";
    if (context != NULL)
        return sqllock_dberr_set(err, status, num, "%s: %s", context, msg);
    return sqllock_dberr_set(err, status, num, "%s", msg);
}

static int fail_conn(MYSQL *my, sqllock_dberr *err, const char *context)
{
    return fail_code(mysql_errno(my), mysql_error(my), err, context);
}

static int fail_stmt(MYSQL_STMT *st, sqllock_dberr *err, const char *context)
{
    return fail_code(mysql_stmt_errno(st), mysql_stmt_error(st), err,
                     context);
}

/* A lost connection (`rc`, already in `err`) reported once the call
 * started at t0 had run for the whole read or write timeout: the server
 * did not answer in time. Says so, keeping the client's own message. */
static int fail_timed(const sqllock_conn *c, int64_t t0, int rc,
                      sqllock_dberr *err)
{
    char msg[sizeof err->msg];
    int64_t took = mono_ms() - t0;

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

/* ------------------------------------------------------------------------ */
/* Connecting                                                               */
/* ------------------------------------------------------------------------ */

/* The client library's global set-up runs once per process, before the
 * first mysql_init(), so that threads connecting at once do not race it.
 * The library keeps what it allocates there until the process ends. */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static int library_rc;     /* written once, inside pthread_once */

static void library_init(void)
{
    library_rc = mysql_library_init(0, NULL, NULL);
}

/* The most hosts a URL may list (a Galera cluster has a handful of
 * nodes; a longer list is more likely a mistake). */
#define MYDRV_MAX_HOSTS 16

typedef struct mydrv_host {
    const char *name;          /* "localhost", "10.0.0.1", "::1" */
    unsigned int port;         /* 0: the default, 3306 */
} mydrv_host;

typedef struct mydrv_target {
    mydrv_host hosts[MYDRV_MAX_HOSTS];
    int nhosts;
    char *hostbuf;             /* a host list's entries, split; or NULL */
    const char *socket;
    const char *database;
    /* The login and TLS settings: the URL's, else the option file's
     * (see load_option_file()). */
    const char *user;
    const char *password;
    mydrv_ssl_mode ssl;        /* the mode in force (see tls_mode()) */
    const char *tls[MYDRV_TLS_N];
    /* The URL's option_file= (has_option_file: given, maybe empty) and
     * option_group=, and what the file said. */
    int has_option_file;
    const char *option_file;
    const char *option_group;
    mydrv_optfile file;
} mydrv_target;

/* The URL's ssl_mode. */
static int parse_ssl_mode(const char *v, mydrv_ssl_mode *mode,
                          sqllock_dberr *err)
{
    if (sqllock__my_ssl_mode_parse(v, mode))
        return SQLLOCK_OK;
    return sqllock_dberr_set(err, SQLLOCK_EURL, "", "ssl_mode must be "
                             "DISABLED, PREFERRED, REQUIRED, VERIFY_CA or "
                             "VERIFY_IDENTITY, not '%s'", v);
}

/* A port of a host list: 1..65535. */
static int parse_list_port(const char *s, unsigned int *port)
{
    unsigned long v = 0;
    size_t i, n = strlen(s);

    if (n == 0 || n > 5)
        return 0;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return 0;
    *port = (unsigned int)v;
    return 1;
}

/*
 * Splits a host list, "h1:p1,h2,[::1]:p3" (the URL parser keeps it whole
 * and already decoded), into t->hosts, in a copy that t->hostbuf owns.
 */
static int parse_hosts(const char *list, mydrv_target *t, sqllock_dberr *err)
{
    char *p, *entry;
    int n = 0;

    t->hostbuf = malloc(strlen(list) + 1);
    if (t->hostbuf == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    strcpy(t->hostbuf, list);
    p = t->hostbuf;
    for (;;) {
        char *comma = strchr(p, ','), *name, *colon = NULL;
        unsigned int port = 0;

        if (comma != NULL)
            *comma = '\0';
        entry = p;
        n++;
        if (n > MYDRV_MAX_HOSTS)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the host list "
                                     "names more than %d hosts",
                                     MYDRV_MAX_HOSTS);
        if (*entry == '\0')
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of the "
                                     "host list is empty (write "
                                     "host1:port1,host2:port2)", n);
        if (*entry == '[') {
            char *close = strchr(entry, ']');
            if (close == NULL)
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of "
                                         "the host list has an unclosed '[' "
                                         "('%s')", n, entry);
            *close = '\0';
            name = entry + 1;
            if (close[1] == ':')
                colon = close + 1;
            else if (close[1] != '\0')
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of "
                                         "the host list has junk after ']' "
                                         "('%s')", n, close + 1);
        } else {
            name = entry;
            colon = strchr(entry, ':');
            if (colon != NULL && strchr(colon + 1, ':') != NULL)
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of "
                                         "the host list, '%s', has several "
                                         "':': write an IPv6 address in "
                                         "brackets, [::1]:3306", n, entry);
        }
        if (colon != NULL) {
            *colon = '\0';
            if (!parse_list_port(colon + 1, &port))
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of "
                                         "the host list ('%s') has the port "
                                         "'%s': a port is a number from 1 "
                                         "to 65535", n, name, colon + 1);
        }
        if (*name == '\0')
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "host %d of the "
                                     "host list has no host name", n);
        t->hosts[n - 1].name = name;
        t->hosts[n - 1].port = port;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    t->nhosts = n;
    return SQLLOCK_OK;
}

static void target_free(mydrv_target *t)
{
    free(t->hostbuf);
    t->hostbuf = NULL;
    sqllock__my_optfile_free(&t->file);
}

/* The URL parameters the driver knows, for the message about one it does
 * not. */
#define MYDRV_KNOWN_PARAMS "socket, ssl_mode, ssl_ca, ssl_capath, " \
    "ssl_cert, ssl_key, ssl_cipher, ssl_crl, ssl_crlpath, option_file, " \
    "option_group"

/* 1 if an unknown parameter's name looks like a password's. */
static int password_like(const char *key)
{
    static const char *const names[] = {
        "password", "passwd", "pass", "pwd", "secret", NULL
    };
    int i;

    for (i = 0; names[i] != NULL; i++)
        if (strcasecmp(key, names[i]) == 0)
            return 1;
    return 0;
}

/* Reads one URL parameter into `t`: 1 if it is the driver's, 0 if not. */
static int url_param(const sqllock_url *url, int i, mydrv_target *t,
                     int *rc, sqllock_dberr *err)
{
    const char *key = url->keys[i], *value = url->values[i];
    int k;

    *rc = SQLLOCK_OK;
    if (strcmp(key, "socket") == 0) {
        if (value[0] != '/')
            *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "socket must be "
                                    "an absolute path, not '%s'", value);
        t->socket = value;
        return 1;
    }
    if (strcmp(key, "ssl_mode") == 0) {
        *rc = parse_ssl_mode(value, &t->ssl, err);
        return 1;
    }
    if (strcmp(key, "option_file") == 0) {
        /* Empty: read no option file, not even ~/.my.cnf. */
        t->has_option_file = 1;
        t->option_file = value;
        return 1;
    }
    if (strcmp(key, "option_group") == 0) {
        if (value[0] == '\0')
            *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "option_group is "
                                    "empty: name the group to read besides "
                                    "[client]");
        t->option_group = value;
        return 1;
    }
    if (strncmp(key, "ssl_", 4) == 0) {
        for (k = 0; k < MYDRV_TLS_N; k++) {
            if (strcmp(key + 4, sqllock__my_tls_names[k]) != 0)
                continue;
            if (value[0] == '\0')
                *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "%s is empty: "
                                        "give a %s", key,
                                        k == MYDRV_TLS_CIPHER ? "cipher list"
                                        : k == MYDRV_TLS_CAPATH ||
                                          k == MYDRV_TLS_CRLPATH
                                        ? "directory" : "file");
            t->tls[k] = value;
            return 1;
        }
    }
    return 0;
}

/* Checks the URL and reads its parameters into `t`; target_free() frees
 * what it allocated, also after a failure. */
static int parse_url(const sqllock_url *url, mydrv_target *t,
                     sqllock_dberr *err)
{
    const char *host;
    int i, rc;

    memset(t, 0, sizeof *t);
    if (!url->has_authority)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "write a %s URL as "
                                 "%s://user:password@host:port/database",
                                 url->scheme, url->scheme);
    for (i = 0; i < url->nparams; i++) {
        /* The message names the parameter, never its value, which may be
         * a password under a name the driver does not know (DESIGN C4). */
        if (!url_param(url, i, t, &rc, err))
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "unknown %s URL "
                                     "parameter '%s'%s (known: "
                                     MYDRV_KNOWN_PARAMS ")", url->scheme,
                                     url->keys[i], password_like(url->keys[i])
                                     ? ": a password goes in the URL's user "
                                       "info (mysql://user:password@host/db) "
                                       "or in an option file (option_file=)"
                                     : "");
        if (rc != SQLLOCK_OK)
            return rc;
    }
    host = url->host != NULL && url->host[0] != '\0' ? url->host : NULL;
    if (host != NULL && strchr(host, ',') != NULL) {
        if (t->socket != NULL)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= connects through one unix "
                                     "socket: it cannot list several hosts "
                                     "('%s')", host);
        if (url->port != 0)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a host name "
                                     "cannot contain ',' ('%s')", host);
        rc = parse_hosts(host, t, err);
        if (rc != SQLLOCK_OK)
            return rc;
    } else if (t->socket != NULL) {
        if (host != NULL && strcmp(host, "localhost") != 0)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= connects through the unix "
                                     "socket: leave the host out or write "
                                     "localhost, not '%s'", host);
        if (url->port != 0)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= takes no port");
        t->hosts[0].name = "localhost";
        t->nhosts = 1;
    } else if (host == NULL) {
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the %s URL has no "
                                 "host: write %s://user:password@host:port/"
                                 "database, or give ?socket=/path/to/socket",
                                 url->scheme, url->scheme);
    } else {
        t->hosts[0].name = host;
        t->hosts[0].port = (unsigned int)url->port;
        t->nhosts = 1;
    }
    t->database = url->path[0] == '/' ? url->path + 1 : url->path;
    if (t->database[0] == '\0')
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the %s URL names no "
                                 "database: write %s://user:password@host:"
                                 "port/database", url->scheme, url->scheme);
    if (strchr(t->database, '/') != NULL)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the database name "
                                 "'%s' has a '/': the URL path is one "
                                 "database name", t->database);
    return SQLLOCK_OK;
}

/*
 * Reads the option file the URL asks for, and fills the login and TLS
 * settings of `t` with the file's where the URL gives none (the URL's own
 * values win). Which file:
 * - option_file=PATH: that file, which must exist; option_file= (empty)
 *   reads none, not even ~/.my.cnf.
 * - otherwise ~/.my.cnf ($HOME/.my.cnf, skipped when it does not exist),
 *   when the URL names option_group=, or has neither a user nor a
 *   password: the user's own file, where MySQL's clients find their
 *   login. A URL with its own credentials reads no file unless it says
 *   so, as before option files were read.
 * The groups are [client] (with MariaDB's [client-server] and
 * [client-mariadb]) and option_group's, in file order.
 */
static int load_option_file(const sqllock_url *url, mydrv_target *t,
                            sqllock_dberr *err)
{
    const char *home = getenv("HOME"), *path = NULL;
    char *buf = NULL;
    int rc = SQLLOCK_OK, k, no_login;

    no_login = (url->user == NULL || url->user[0] == '\0') &&
               url->password == NULL;
    if (t->has_option_file) {
        path = t->option_file[0] != '\0' ? t->option_file : NULL;
    } else if ((t->option_group != NULL || no_login) && home != NULL &&
               home[0] != '\0') {
        buf = malloc(strlen(home) + sizeof "/.my.cnf");
        if (buf == NULL)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        sprintf(buf, "%s/.my.cnf", home);
        path = buf;
    }
    if (path != NULL)
        rc = sqllock__my_optfile_read(path, t->option_group, buf != NULL,
                                      &t->file, err);
    free(buf);
    if (rc != SQLLOCK_OK)
        return rc;
    t->user = url->user != NULL && url->user[0] != '\0' ? url->user
                                                         : t->file.user;
    t->password = url->password != NULL ? url->password : t->file.password;
    if (t->ssl == MYDRV_SSL_DEFAULT)
        t->ssl = t->file.mode;
    for (k = 0; k < MYDRV_TLS_N; k++)
        if (t->tls[k] == NULL)
            t->tls[k] = t->file.tls[k];
    return SQLLOCK_OK;
}

/*
 * Settles the TLS mode. Without ssl_mode (in the URL or the option file),
 * a named CA means VERIFY_CA and other TLS settings (a client certificate,
 * a cipher list, a CRL) mean REQUIRED: TLS files must not leave the
 * connection open to a plain-text fallback. With none, the client
 * library's default holds (MariaDB Connector/C 3.3: no TLS).
 * VERIFY_CA needs a CA: MariaDB Connector/C checks the certificate chain
 * only against a CA it is given, so without one it would check nothing.
 */
static int tls_mode(mydrv_target *t, sqllock_dberr *err)
{
    int k, ca = t->tls[MYDRV_TLS_CA] != NULL ||
                t->tls[MYDRV_TLS_CAPATH] != NULL, other = 0;

    for (k = 0; k < MYDRV_TLS_N; k++)
        if (t->tls[k] != NULL)
            other = 1;
    if (t->ssl == MYDRV_SSL_DEFAULT)
        t->ssl = ca ? MYDRV_SSL_VERIFY_CA
                    : other ? MYDRV_SSL_REQUIRED : MYDRV_SSL_DEFAULT;
    if (t->ssl == MYDRV_SSL_VERIFY_CA && !ca)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "ssl_mode=VERIFY_CA "
                                 "needs the CA that signed the server's "
                                 "certificate: give ssl_ca=/path/to/ca.pem "
                                 "or ssl_capath=/path/to/dir (in the URL or "
                                 "the option file)");
    return SQLLOCK_OK;
}

/* Sets one option; the client library refuses only options it does not
 * know, which is reported as an error. */
static int set_option(MYSQL *my, enum mysql_option opt, const void *value,
                      const char *what, sqllock_dberr *err)
{
    if (mysql_options(my, opt, value) != 0)
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "the MySQL client "
                                 "library refused the option %s", what);
    return SQLLOCK_OK;
}

/*
 * Asks for TLS as the mode in force says (see tls_mode()), and hands the
 * client library the TLS files; with DISABLED it gets none, since
 * MariaDB Connector/C turns TLS on when it is given any.
 *
 * What each mode checks with MariaDB Connector/C 3.3 (OpenSSL), read
 * from its source (libmariadb/secure/openssl.c, ma_pvio.c,
 * plugins/auth/my_auth.c) and tested in tests/test_tls.c:
 * - PREFERRED, REQUIRED: MYSQL_OPT_SSL_ENFORCE, which only asks for TLS
 *   when the server offers it (a server without TLS gets plain text; for
 *   REQUIRED after_connect() then refuses the connection). A named CA
 *   makes the library verify the chain against it (SSL_VERIFY_PEER).
 * - VERIFY_CA: the same, with a CA (tls_mode() insists): the chain must
 *   lead to it; the host name is not checked.
 * - VERIFY_IDENTITY: MYSQL_OPT_SSL_VERIFY_SERVER_CERT as well: the chain
 *   is verified (against the named CA, else OpenSSL's default CA store)
 *   and the host as written in the URL must match the certificate
 *   (X509_check_host() on its DNS names, X509_check_ip_asc() on its IP
 *   addresses), before the login is sent; a server without TLS is
 *   refused then too.
 * Oracle's libmysqlclient takes the mode itself (MYSQL_OPT_SSL_MODE).
 */
static int set_tls(MYSQL *my, const mydrv_target *t, sqllock_dberr *err)
{
    static const enum mysql_option files[MYDRV_TLS_N] = {
        MYSQL_OPT_SSL_CA, MYSQL_OPT_SSL_CAPATH, MYSQL_OPT_SSL_CERT,
        MYSQL_OPT_SSL_KEY, MYSQL_OPT_SSL_CIPHER, MYSQL_OPT_SSL_CRL,
        MYSQL_OPT_SSL_CRLPATH
    };
    static const char *const names[MYDRV_TLS_N] = {
        "SSL_CA", "SSL_CAPATH", "SSL_CERT", "SSL_KEY", "SSL_CIPHER",
        "SSL_CRL", "SSL_CRLPATH"
    };
    int k, rc = SQLLOCK_OK;
#if defined(MARIADB_PACKAGE_VERSION)
    mydrv_flag on = 1, off = 0;
#else
    unsigned int m;
#endif

    if (t->ssl != MYDRV_SSL_DISABLED)
        for (k = 0; k < MYDRV_TLS_N && rc == SQLLOCK_OK; k++)
            if (t->tls[k] != NULL)
                rc = set_option(my, files[k], t->tls[k], names[k], err);
    if (rc != SQLLOCK_OK)
        return rc;
#if defined(MARIADB_PACKAGE_VERSION)
    switch (t->ssl) {
    case MYDRV_SSL_DEFAULT:
        break;
    case MYDRV_SSL_DISABLED:
        rc = set_option(my, MYSQL_OPT_SSL_ENFORCE, &off, "SSL_ENFORCE", err);
        break;
    case MYDRV_SSL_PREFERRED:
    case MYDRV_SSL_REQUIRED:
    case MYDRV_SSL_VERIFY_CA:
        rc = set_option(my, MYSQL_OPT_SSL_ENFORCE, &on, "SSL_ENFORCE", err);
        break;
    case MYDRV_SSL_VERIFY_IDENTITY:
        rc = set_option(my, MYSQL_OPT_SSL_ENFORCE, &on, "SSL_ENFORCE", err);
        if (rc == SQLLOCK_OK)
            rc = set_option(my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on,
                            "SSL_VERIFY_SERVER_CERT", err);
        break;
    }
    return rc;
#else
    /* Oracle's libmysqlclient 5.7.11 and later take the mode itself. */
    switch (t->ssl) {
    case MYDRV_SSL_DEFAULT:
        return SQLLOCK_OK;
    case MYDRV_SSL_DISABLED:
        m = SSL_MODE_DISABLED;
        break;
    case MYDRV_SSL_PREFERRED:
        m = SSL_MODE_PREFERRED;
        break;
    case MYDRV_SSL_REQUIRED:
        m = SSL_MODE_REQUIRED;
        break;
    case MYDRV_SSL_VERIFY_CA:
        m = SSL_MODE_VERIFY_CA;
        break;
    default:
        m = SSL_MODE_VERIFY_IDENTITY;
        break;
    }
    return set_option(my, MYSQL_OPT_SSL_MODE, &m, "SSL_MODE", err);
#endif
}

/* Sets the options every connection gets (see the file comment). */
static int set_options(MYSQL *my, const sqllock_connect_params *p,
                       const mydrv_target *t, sqllock_dberr *err)
{
    int64_t connect_s = (p->connect_timeout_ms + 999) / 1000;
    unsigned int connect_timeout, io_timeout = io_timeout_s(p);
    int rc;

    if (connect_s < 1)
        connect_s = 1;
    if (connect_s > INT_MAX)
        connect_s = INT_MAX;
    connect_timeout = (unsigned int)connect_s;
    rc = set_option(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout,
                    "CONNECT_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = set_option(my, MYSQL_OPT_READ_TIMEOUT, &io_timeout,
                        "READ_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = set_option(my, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout,
                        "WRITE_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = set_option(my, MYSQL_SET_CHARSET_NAME, "utf8mb4",
                        "SET_CHARSET_NAME", err);
#if defined(MARIADB_PACKAGE_VERSION)
    /* Off is the default; say so, since a reconnect behind the core's back
     * could run a statement again. (MySQL 8.0.34 deprecates the option
     * and prints a warning when it is set, so it is left alone there.) */
    if (rc == SQLLOCK_OK) {
        mydrv_flag off = 0;
        rc = set_option(my, MYSQL_OPT_RECONNECT, &off, "RECONNECT", err);
    }
#endif
    if (rc == SQLLOCK_OK)
        rc = set_tls(my, t, err);
    return rc;
}

/* Reads the second column of the row whose first column is `name` from
 * a SHOW statement's result into val[size]; *found says whether there
 * was one. */
static int show_value(MYSQL *my, const char *sql, const char *name,
                      char *val, size_t size, int *found, sqllock_dberr *err,
                      const char *context)
{
    MYSQL_RES *res;
    MYSQL_ROW row;

    *found = 0;
    val[0] = '\0';
    if (mysql_real_query(my, sql, (unsigned long)strlen(sql)) != 0)
        return fail_conn(my, err, context);
    res = mysql_store_result(my);
    if (res == NULL)
        return fail_conn(my, err, context);
    if (mysql_num_fields(res) >= 2) {
        while ((row = mysql_fetch_row(res)) != NULL) {
            if (row[0] != NULL && strcasecmp(row[0], name) == 0) {
                snprintf(val, size, "%s", row[1] != NULL ? row[1] : "");
                *found = 1;
                break;
            }
        }
    }
    mysql_free_result(res);
    return SQLLOCK_OK;
}

/* The session variable that holds the isolation level: MySQL named it
 * transaction_isolation in 5.7.20 (and dropped tx_isolation in 8.0),
 * MariaDB in 11.1 (keeping tx_isolation). */
static const char *isolation_var(MYSQL *my)
{
    const char *info = mysql_get_server_info(my);
    unsigned long v = mysql_get_server_version(my);

    if (info != NULL && strstr(info, "MariaDB") != NULL)
        return v >= 110100 ? "transaction_isolation" : "tx_isolation";
    return v >= 50720 ? "transaction_isolation" : "tx_isolation";
}

/*
 * Sets the session up after the connect, and learns whether the server is
 * a Galera cluster node. On a plain server that costs two round trips, as
 * before Galera support: one SET for the time zone, the isolation level
 * and autocommit (the isolation level set through its variable, whose
 * name the server's version gives; should the server not know it, error
 * 1193, two statements run instead), and SHOW
 * VARIABLES LIKE 'wsrep_on', which MySQL 8.0 runs too and answers with no
 * row (D4). On a Galera node (wsrep_on ON) a third, SHOW STATUS LIKE
 * 'wsrep_ready', says whether the node is in the primary component; a
 * node that is not would refuse every statement with error 1047, so the
 * connect reports it as a failed connect (SQLLOCK_ECONNECT) and a host
 * list goes on to its next host. SET and SHOW are the statements such a
 * node still runs.
 *
 * autocommit = 1 undoes a server's autocommit=0 and an init_connect that
 * turns it off (both run before this SET), so that the statements the
 * core runs outside its own transactions commit on their own (DESIGN C2).
 * Whatever turns it off later, or opens a transaction behind the
 * driver's back (a proxy, the application through the native handle), is
 * caught by check_committed() and mydrv_begin().
 */
static int after_connect(sqllock_conn *c, const mydrv_target *t,
                         sqllock_dberr *err)
{
    MYSQL *my = c->my;
    char sql[128], val[32];
    int found = 0, rc;

    if ((t->ssl == MYDRV_SSL_REQUIRED || t->ssl == MYDRV_SSL_VERIFY_CA ||
         t->ssl == MYDRV_SSL_VERIFY_IDENTITY) &&
        mysql_get_ssl_cipher(my) == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "ssl_mode=%s "
                                 "asks for TLS, but the connection does not "
                                 "use it (the server offers no TLS)",
                                 sqllock__my_ssl_mode_name(t->ssl));
    snprintf(sql, sizeof sql, "SET time_zone = '+00:00', %s = "
             "'READ-COMMITTED', autocommit = 1", isolation_var(my));
    if (mysql_real_query(my, sql, (unsigned long)strlen(sql)) != 0) {
        if (mysql_errno(my) != 1193)       /* ER_UNKNOWN_SYSTEM_VARIABLE */
            return fail_conn(my, err, "setting the session time zone to UTC, "
                             "READ COMMITTED isolation and autocommit");
        if (mysql_real_query(my, SQL_SESSION_TZ,
                             sizeof SQL_SESSION_TZ - 1) != 0)
            return fail_conn(my, err, "setting the session time zone to UTC "
                             "and autocommit");
        if (mysql_real_query(my, SQL_SESSION_ISOLATION,
                             sizeof SQL_SESSION_ISOLATION - 1) != 0)
            return fail_conn(my, err, "setting READ COMMITTED isolation");
    }
    rc = show_value(my, SQL_WSREP_ON, "wsrep_on", val, sizeof val, &found,
                    err, "asking whether the server is a Galera node");
    if (rc != SQLLOCK_OK)
        return rc;
    c->galera = found && strcasecmp(val, "ON") == 0;
    if (!c->galera)
        return SQLLOCK_OK;
    rc = show_value(my, SQL_WSREP_READY, "wsrep_ready", val, sizeof val,
                    &found, err, "asking whether the Galera node is ready");
    if (rc != SQLLOCK_OK)
        return rc;
    if (!found || strcasecmp(val, "ON") != 0)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the Galera node "
                                 "is not ready (wsrep_ready %s): it is not "
                                 "part of the cluster's primary component",
                                 found ? val : "missing");
    return SQLLOCK_OK;
}

/* "host:port", "[::1]:port", for messages. */
static void host_label(const mydrv_host *h, char *out, size_t size)
{
    unsigned int port = h->port != 0 ? h->port : 3306;

    if (strchr(h->name, ':') != NULL)
        snprintf(out, size, "[%s]:%u", h->name, port);
    else
        snprintf(out, size, "%s:%u", h->name, port);
}

/* Appends to buf[size], cutting what does not fit. */
static void append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* After a failed TLS handshake (2026), says what the mode in force checked,
 * since the client library's words are OpenSSL's ("self-signed
 * certificate in certificate chain"). */
static void tls_hint(const mydrv_target *t, const mydrv_host *h,
                     sqllock_dberr *err)
{
    const char *ca = t->tls[MYDRV_TLS_CA] != NULL ? t->tls[MYDRV_TLS_CA]
                     : t->tls[MYDRV_TLS_CAPATH];

    if (strstr(err->msg, "does not support it") != NULL)
        return;                 /* "SSL is required, but the server ..." */
    if (strstr(err->msg, "Validation of SSL server certificate") != NULL)
        append(err->msg, sizeof err->msg, "; the server's certificate does "
               "not name the host '%s' (ssl_mode=VERIFY_IDENTITY checks the "
               "host name as the URL writes it; VERIFY_CA does not)",
               h->name);
    else if (ca != NULL)
        append(err->msg, sizeof err->msg, "; the server's certificate was "
               "not accepted: it must be signed by the CA in %s (ssl_%s)",
               ca, t->tls[MYDRV_TLS_CA] != NULL ? "ca" : "capath");
    else if (t->ssl == MYDRV_SSL_VERIFY_IDENTITY)
        append(err->msg, sizeof err->msg, "; without ssl_ca the server's "
               "certificate is checked against the system's CA store: give "
               "ssl_ca= with the CA that signed it");
}

/*
 * Connects `c` to one host and sets the session up. On failure c->my is
 * closed and NULL, and `err` says why, without naming the host.
 */
static int connect_host(sqllock_conn *c, const sqllock_connect_params *p,
                        const mydrv_target *t, const mydrv_host *h,
                        sqllock_dberr *err)
{
    int rc;

    c->galera = 0;
    c->my = mysql_init(NULL);
    if (c->my == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                 "(mysql_init)");
    rc = set_options(c->my, p, t, err);
    /* The password (the URL's or the option file's) goes to the client
     * library only, never into a message. */
    if (rc == SQLLOCK_OK &&
        mysql_real_connect(c->my, h->name, t->user, t->password,
                           t->database, h->port, t->socket, 0) == NULL) {
        unsigned int code = mysql_errno(c->my);

        rc = fail_conn(c->my, err, NULL);
        /* Whatever else goes wrong in a connect (unknown database, too
         * many connections, a TLS failure) is a failed connect; refused
         * credentials and memory keep their own status. */
        if (rc != SQLLOCK_EPERM && rc != SQLLOCK_ENOMEM)
            err->status = rc = SQLLOCK_ECONNECT;
        /* An account created REQUIRE SSL (or X509) that logs in without
         * TLS is refused like a wrong password, 1045, with nothing that
         * says TLS; the server never tells which. */
        if (code == 1045 && (t->ssl == MYDRV_SSL_DEFAULT ||
                             t->ssl == MYDRV_SSL_DISABLED))
            append(err->msg, sizeof err->msg, "; the account may require "
                   "TLS: add ssl_mode=REQUIRED (or VERIFY_IDENTITY with "
                   "ssl_ca=...)");
        else if (code == 1045 && t->tls[MYDRV_TLS_CERT] == NULL)
            append(err->msg, sizeof err->msg, "; if the account requires a "
                   "client certificate (REQUIRE X509), give ssl_cert= and "
                   "ssl_key=");
        else if (code == 2026)     /* CR_SSL_CONNECTION_ERROR */
            tls_hint(t, h, err);
    } else if (rc == SQLLOCK_OK) {
        rc = after_connect(c, t, err);
    }
    if (rc != SQLLOCK_OK) {
        mysql_close(c->my);
        c->my = NULL;
    }
    return rc;
}

/*
 * Connects to the URL's hosts in order (see sqllock_open() in sqllock.h):
 * the first host that connects and sets the session up wins. A failed
 * connect (SQLLOCK_ECONNECT: unreachable, refused, lost during the set-up,
 * a Galera node that is not ready) moves on to the next host; any other
 * failure ends the connect, since the next host would fail the same way:
 * refused credentials above all (SQLLOCK_EPERM; every host gets the same
 * ones, and more attempts would only count against the account or the
 * client's address, max_connect_errors), and memory. The message of a
 * failed connect names every host tried and why.
 */
static int mydrv_connect(const sqllock_url *url,
                         const sqllock_connect_params *p, sqllock_conn **out,
                         sqllock_dberr *err)
{
    sqllock_conn *c;
    mydrv_target t;
    sqllock_dberr herr;
    char tried[sizeof err->msg], label[300];
    int rc, i;

    *out = NULL;
    rc = parse_url(url, &t, err);
    if (rc == SQLLOCK_OK)
        rc = load_option_file(url, &t, err);
    if (rc == SQLLOCK_OK)
        rc = tls_mode(&t, err);
    if (rc != SQLLOCK_OK) {
        target_free(&t);
        return rc;
    }
    if (pthread_once(&library_once, library_init) != 0 || library_rc != 0) {
        target_free(&t);
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "the MySQL client "
                                 "library failed to initialise");
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        target_free(&t);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    c->io_timeout_s = io_timeout_s(p);
    c->statement_ms = p->statement_timeout_ms;
    c->lock_wait_ms = p->lock_wait_ms;
    tried[0] = '\0';
    for (i = 0; i < t.nhosts; i++) {
        memset(&herr, 0, sizeof herr);
        rc = connect_host(c, p, &t, &t.hosts[i], &herr);
        if (rc == SQLLOCK_OK) {
            target_free(&t);
            *out = c;
            return SQLLOCK_OK;
        }
        if (t.socket != NULL)
            snprintf(label, sizeof label, "the socket %s", t.socket);
        else
            host_label(&t.hosts[i], label, sizeof label);
        if (t.nhosts == 1 || (rc != SQLLOCK_ECONNECT && i == 0)) {
            /* One host: the message of old. */
            sqllock_dberr_set(err, rc, herr.code, "cannot connect to %s %s "
                              "%s (database '%s'): %s", url->scheme,
                              t.socket != NULL ? "through" : "at", label,
                              t.database, herr.msg);
            break;
        }
        if (rc != SQLLOCK_ECONNECT) {
            sqllock_dberr_set(err, rc, herr.code, "cannot connect to %s at "
                              "%s (database '%s'): %s; hosts tried before: "
                              "%s", url->scheme, label, t.database,
                              herr.msg, tried);
            break;
        }
        append(tried, sizeof tried, "%s%s: %s%s%s%s", tried[0] ? "; " : "",
               label, herr.msg, herr.code[0] ? " (" : "", herr.code,
               herr.code[0] ? ")" : "");
        if (i == t.nhosts - 1)
            sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "cannot "
                              "connect to %s at any of its %d hosts "
                              "(database '%s'): %s", url->scheme, t.nhosts,
                              t.database, tried);
    }
    target_free(&t);
    free(c);
    return rc;
}

static void mydrv_disconnect(sqllock_conn *c)
{
    if (c != NULL) {
        mysql_close(c->my);
        free(c);
    }
}

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
static int check_committed(sqllock_conn *c, sqllock_dberr *err)
{
    char why[300], rbmsg[200];

    if (c->in_txn || !(c->my->server_status & SERVER_STATUS_IN_TRANS))
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
 * opened in the same exchange as our statement, so check_committed()
 * meets it afterwards.)
 */
static int check_no_foreign_txn(sqllock_conn *c, sqllock_dberr *err)
{
    if (c->in_txn || !(c->my->server_status & SERVER_STATUS_IN_TRANS))
        return SQLLOCK_OK;
    return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "25001", "the connection "
                             "is inside a transaction that sqllock did not "
                             "begin (START TRANSACTION, or a statement with "
                             "autocommit off, on the native handle?): the "
                             "statement would not commit on its own, so it "
                             "was not sent");
}

/* ------------------------------------------------------------------------ */
/* Statements                                                               */
/* ------------------------------------------------------------------------ */

static void stmt_free(sqllock_stmt *s)
{
    unsigned i;

    if (s == NULL)
        return;
    if (s->st != NULL)
        mysql_stmt_close(s->st);
    if (s->cols != NULL)
        for (i = 0; i < s->ncols; i++)
            free(s->cols[i].buf);
    free(s->cols);
    free(s->binds);
    free(s->params);
    free(s->ints);
    free(s->lens);
    free(s);
}

/* Gives column `i` a buffer of `cap` bytes and points its bind at it. */
static int col_alloc(sqllock_stmt *s, unsigned i, unsigned long cap)
{
    char *buf = realloc(s->cols[i].buf, cap);

    if (buf == NULL)
        return SQLLOCK_ENOMEM;
    s->cols[i].buf = buf;
    s->cols[i].cap = cap;
    s->binds[i].buffer_type = MYSQL_TYPE_STRING;
    s->binds[i].buffer = buf;
    s->binds[i].buffer_length = cap - 1;    /* room for the NUL */
    s->binds[i].length = &s->cols[i].len;
    s->binds[i].is_null = &s->cols[i].is_null;
    s->binds[i].error = &s->cols[i].error;
    return SQLLOCK_OK;
}

/* Sizes the result columns from the statement's metadata. */
static int setup_columns(sqllock_stmt *s, sqllock_dberr *err)
{
    MYSQL_RES *meta;
    MYSQL_FIELD *fields;
    unsigned i;

    s->ncols = mysql_stmt_field_count(s->st);
    if (s->ncols == 0)
        return SQLLOCK_OK;
    meta = mysql_stmt_result_metadata(s->st);
    if (meta == NULL)
        return fail_stmt(s->st, err, "reading the result's columns");
    fields = mysql_fetch_fields(meta);
    s->binds = calloc(s->ncols, sizeof *s->binds);
    s->cols = calloc(s->ncols, sizeof *s->cols);
    if (s->binds == NULL || s->cols == NULL || fields == NULL) {
        mysql_free_result(meta);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    for (i = 0; i < s->ncols; i++) {
        /* The declared width is a good first guess; a longer value grows
         * the buffer when it is fetched. */
        unsigned long cap = fields[i].length;
        if (cap < MYDRV_COL_MIN)
            cap = MYDRV_COL_MIN;
        if (cap > MYDRV_COL_FIRST_MAX)
            cap = MYDRV_COL_FIRST_MAX;
        if (col_alloc(s, i, cap + 1) != SQLLOCK_OK) {
            mysql_free_result(meta);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        }
    }
    mysql_free_result(meta);
    return SQLLOCK_OK;
}

static int mydrv_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                         sqllock_dberr *err)
{
    sqllock_stmt *s;
    int64_t t0;
    int rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    s->conn = c;
    s->st = mysql_stmt_init(c->my);
    if (s->st == NULL) {
        free(s);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                 "(mysql_stmt_init)");
    }
    t0 = mono_ms();
    if (mysql_stmt_prepare(s->st, sql, (unsigned long)strlen(sql)) != 0) {
        rc = fail_timed(c, t0, fail_stmt(s->st, err, NULL), err);
        stmt_free(s);
        return rc;
    }
    s->nparams = (unsigned)mysql_stmt_param_count(s->st);
    if (s->nparams > 0) {
        s->params = calloc(s->nparams, sizeof *s->params);
        s->ints = calloc(s->nparams, sizeof *s->ints);
        s->lens = calloc(s->nparams, sizeof *s->lens);
        if (s->params == NULL || s->ints == NULL || s->lens == NULL) {
            stmt_free(s);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        }
    }
    rc = setup_columns(s, err);
    if (rc != SQLLOCK_OK) {
        stmt_free(s);
        return rc;
    }
    *out = s;
    return SQLLOCK_OK;
}

static void mydrv_finalize(sqllock_stmt *s)
{
    stmt_free(s);
}

/* Ends a stored result so that the statement can run again. A stored
 * result needs no round trip to end, so no mysql_stmt_reset() is sent. */
static void end_result(sqllock_stmt *s)
{
    if (s->has_result) {
        /* Frees client memory only; it cannot fail on a stored result. */
        (void)mysql_stmt_free_result(s->st);
        s->has_result = 0;
    }
}

static int mydrv_execute(sqllock_stmt *s, const sqllock_value *args,
                         int nargs, sqllock_dberr *err)
{
    int64_t t0;
    unsigned i;
    int rc;

    end_result(s);
    s->affected = 0;
    s->insert_id = 0;
    if (nargs < 0 || (unsigned)nargs != s->nparams)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "the statement has "
                                 "%u placeholders but %d arguments were "
                                 "given", s->nparams, nargs);
    for (i = 0; i < s->nparams; i++) {
        MYSQL_BIND *b = &s->params[i];

        memset(b, 0, sizeof *b);
        switch (args[i].type) {
        case SQLLOCK_VALUE_INT64:
            s->ints[i] = (long long)args[i].i;
            b->buffer_type = MYSQL_TYPE_LONGLONG;
            b->buffer = &s->ints[i];
            break;
        case SQLLOCK_VALUE_TEXT:
        case SQLLOCK_VALUE_BLOB:
            if (args[i].len > ULONG_MAX)
                return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "a %s "
                                         "value is too long to bind",
                                         args[i].type == SQLLOCK_VALUE_BLOB
                                         ? "binary" : "text");
            s->lens[i] = (unsigned long)args[i].len;
            /* A blob is sent with its length, NUL bytes and all. */
            b->buffer_type = args[i].type == SQLLOCK_VALUE_BLOB
                             ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
            b->buffer = (void *)(args[i].s != NULL ? args[i].s : "");
            b->buffer_length = s->lens[i];
            b->length = &s->lens[i];
            break;
        default:
            b->buffer_type = MYSQL_TYPE_NULL;
            break;
        }
    }
    if (s->nparams > 0 && mysql_stmt_bind_param(s->st, s->params) != 0)
        return fail_stmt(s->st, err, "binding the parameters");
    rc = check_no_foreign_txn(s->conn, err);
    if (rc != SQLLOCK_OK)
        return rc;
    t0 = mono_ms();
    if (mysql_stmt_execute(s->st) != 0)
        return fail_timed(s->conn, t0, fail_stmt(s->st, err, NULL), err);
    if (s->ncols == 0 || mysql_stmt_field_count(s->st) == 0) {
        s->affected = (int64_t)mysql_stmt_affected_rows(s->st);
        s->insert_id = (int64_t)mysql_stmt_insert_id(s->st);
        /* A statement without rows writes: it must have committed unless
         * it ran in the core's transaction (C2). */
        return check_committed(s->conn, err);
    }
    /* The whole result comes to the client at once, so the connection is
     * free again at once and no later call finds it busy. */
    if (mysql_stmt_store_result(s->st) != 0)
        return fail_timed(s->conn, t0, fail_stmt(s->st, err, "reading the "
                                                 "result"), err);
    /* A read has nothing to commit, but one that left the session inside
     * a transaction (autocommit off, a proxy's) would leave it there for
     * the next statement: rolled back and reported now, as on
     * PostgreSQL. */
    rc = check_committed(s->conn, err);
    if (rc != SQLLOCK_OK) {
        mysql_stmt_free_result(s->st);
        return rc;
    }
    s->has_result = 1;
    if (mysql_stmt_bind_result(s->st, s->binds) != 0) {
        rc = fail_stmt(s->st, err, "binding the result");
        end_result(s);
        return rc;
    }
    return SQLLOCK_OK;
}

/* Fetches the rest of each column that did not fit its buffer, growing the
 * buffer so that later rows fit too. */
static int fetch_truncated(sqllock_stmt *s, sqllock_dberr *err)
{
    unsigned i;
    int rebind = 0;

    for (i = 0; i < s->ncols; i++) {
        mydrv_col *col = &s->cols[i];

        if (col->is_null || col->len < col->cap)
            continue;
        if (col->len == ULONG_MAX ||
            col_alloc(s, i, col->len + 1) != SQLLOCK_OK)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                     "for a %lu-byte column", col->len);
        rebind = 1;
        if (mysql_stmt_fetch_column(s->st, &s->binds[i], i, 0) != 0)
            return fail_stmt(s->st, err, "reading a long column");
    }
    if (rebind && mysql_stmt_bind_result(s->st, s->binds) != 0)
        return fail_stmt(s->st, err, "binding the result");
    return SQLLOCK_OK;
}

static int mydrv_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err)
{
    unsigned i;
    int rc;

    *has_row = 0;
    if (!s->has_result)
        return SQLLOCK_OK;
    rc = mysql_stmt_fetch(s->st);
    if (rc == MYSQL_NO_DATA)
        return SQLLOCK_OK;
    if (rc == 1)
        return fail_stmt(s->st, err, "fetching a row");
    if (rc == MYSQL_DATA_TRUNCATED) {
        rc = fetch_truncated(s, err);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    /* Every value is text now; end each with a NUL for column_text(). */
    for (i = 0; i < s->ncols; i++) {
        mydrv_col *col = &s->cols[i];
        unsigned long n = col->is_null ? 0 : col->len;
        col->buf[n < col->cap ? n : col->cap - 1] = '\0';
    }
    *has_row = 1;
    return SQLLOCK_OK;
}

/* An integer column, which the client delivered as text: digits from a
 * BIGINT, or a decimal such as "12.000" whose fraction is dropped. */
static int64_t mydrv_column_int64(sqllock_stmt *s, int col)
{
    long long v;

    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null)
        return 0;
    errno = 0;
    v = strtoll(s->cols[col].buf, NULL, 10);
    if (errno != 0)
        return 0;
    return (int64_t)v;
}

static const char *mydrv_column_text(sqllock_stmt *s, int col)
{
    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null)
        return "";
    return s->cols[col].buf;
}

/* A binary column. The column buffers hold the value's bytes with its
 * full length (fetch_truncated() fetched the rest of a long one), so NUL
 * bytes inside come through. */
static const void *mydrv_column_blob(sqllock_stmt *s, int col, size_t *len)
{
    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null) {
        *len = 0;
        return "";
    }
    *len = s->cols[col].len;
    return s->cols[col].buf;
}

static int64_t mydrv_affected_rows(sqllock_stmt *s)
{
    return s->affected;
}

static void mydrv_reset(sqllock_stmt *s)
{
    if (s != NULL)
        end_result(s);
}

static int64_t mydrv_insert_id(sqllock_stmt *s)
{
    return s->insert_id;
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
static int mydrv_exec_script(sqllock_conn *c, const char *sql,
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
                return fail_conn(c->my, err, "running the schema script");
            /* A statement that returns rows must have them read before the
             * next one can run. */
            if (mysql_field_count(c->my) > 0) {
                MYSQL_RES *res = mysql_store_result(c->my);
                if (res == NULL)
                    return fail_conn(c->my, err, "running the schema script");
                mysql_free_result(res);
            }
        }
        p = *end == ';' ? end + 1 : end;
    }
    /* DDL commits by itself, the script's inserts must too (C2). */
    return check_committed(c, err);
}

static void *mydrv_native(sqllock_conn *c)
{
    return c->my;
}

/*
 * A session whose autocommit is off would run the transaction well, but
 * every statement the core runs outside a transaction afterwards (the
 * lease's renewal and release, records) would not commit (C2): refused
 * here already, from the status of the server's last answer (no round
 * trip), so that a lease is not granted that could be neither renewed nor
 * released. A transaction someone else opened is refused too: our START
 * TRANSACTION would commit its work (check_no_foreign_txn()).
 */
static int mydrv_begin(sqllock_conn *c, sqllock_dberr *err)
{
    static const char begin[] = "START TRANSACTION";
    int64_t t0;
    int rc = check_no_foreign_txn(c, err);

    if (rc != SQLLOCK_OK)
        return rc;

    if (!(c->my->server_status & SERVER_STATUS_AUTOCOMMIT))
        return sqllock_dberr_set(err, SQLLOCK_EPROXY, "", "not begun: %s, so "
                                 "the statements that must commit on their "
                                 "own would not; nothing was committed",
                                 why_in_transaction(c->my));
    t0 = mono_ms();
    if (mysql_real_query(c->my, begin, sizeof begin - 1) != 0)
        return fail_timed(c, t0, fail_conn(c->my, err, "START TRANSACTION"),
                          err);
    c->in_txn = 1;
    return SQLLOCK_OK;
}

/*
 * The client's status flags come with every OK from the server, but an
 * error carries none: after a COMMIT or a ROLLBACK that failed they still
 * say "in a transaction" from the last OK, and check_no_foreign_txn()
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
    if (classify(mysql_errno(c->my)) == SQLLOCK_ECONNECT)
        return -1;
    return mysql_rollback(c->my) == 0 ? 0 : -1;
}

/* A COMMIT that fails (a Galera certification failure, 1213) has ended
 * the transaction on the server; a ROLLBACK brings the status flags up
 * to date (rollback_resync()) and does not change the status reported. */
static int mydrv_commit(sqllock_conn *c, sqllock_dberr *err)
{
    int64_t t0 = mono_ms();
    int rc;

    c->in_txn = 0;
    if (mysql_commit(c->my) == 0)
        return SQLLOCK_OK;
    rc = fail_timed(c, t0, fail_conn(c->my, err, "COMMIT"), err);
    if (rc != SQLLOCK_ECONNECT)
        (void)rollback_resync(c);
    return rc;
}

/* On a lost connection this reports SQLLOCK_ECONNECT (the server rolls
 * the transaction back when the connection ends). */
static int mydrv_rollback(sqllock_conn *c, sqllock_dberr *err)
{
    int64_t t0 = mono_ms();

    c->in_txn = 0;
    if (rollback_resync(c) != 0)
        return fail_timed(c, t0, fail_conn(c->my, err, "ROLLBACK"), err);
    return SQLLOCK_OK;
}

/* Galera's row locks exclude only the clients of the same node: a
 * conflicting commit through another node fails certification (1213,
 * SQLLOCK_EDEADLOCK) instead of waiting. */
static int mydrv_row_lock_scope(sqllock_conn *c, int *scope,
                                sqllock_dberr *err)
{
    (void)err;
    *scope = c->galera ? SQLLOCK_ROW_LOCKS_NODE : SQLLOCK_ROW_LOCKS_EXCLUSIVE;
    return SQLLOCK_OK;
}

static const char *const mysql_schemes[] = { "mysql", "mariadb", NULL };

const sqllock_driver sqllock__mysql_driver = {
    .version = SQLLOCK_DRIVER_VERSION,
    .name = "mysql",
    .schemes = mysql_schemes,
    .caps = SQLLOCK_CAP_SKIP_LOCKED | SQLLOCK_CAP_NOWAIT,
    .dialect = &mysql_dialect,
    .connect = mydrv_connect,
    .disconnect = mydrv_disconnect,
    .prepare = mydrv_prepare,
    .finalize = mydrv_finalize,
    .execute = mydrv_execute,
    .fetch = mydrv_fetch,
    .column_int64 = mydrv_column_int64,
    .column_text = mydrv_column_text,
    .affected_rows = mydrv_affected_rows,
    .reset = mydrv_reset,
    .exec_script = mydrv_exec_script,
    .native = mydrv_native,
    .begin = mydrv_begin,
    .commit = mydrv_commit,
    .rollback = mydrv_rollback,
    .insert_id = mydrv_insert_id,
    .column_blob = mydrv_column_blob,
    .row_lock_scope = mydrv_row_lock_scope,
};
