/*
 * my.h -- what the files of the MySQL/MariaDB driver share: the
 * connection and statement structs, the TLS modes and settings, what a
 * URL asks for, and the functions one file calls in another. Not
 * installed; outside drivers/mysql only tests/tls/optfile.c (test_tls)
 * includes it (for the option-file reader).
 *
 *   mysql.c       the driver table
 *   my_sql.c      the dialect: the SQL text of every statement
 *   my_url.c      the URL: host, socket, database, TLS settings, the
 *                 option file's login
 *   my_optfile.c  reading an option file (~/.my.cnf)
 *   my_tls.c      the TLS mode in force, the client's TLS options
 *   my_conn.c     connecting to one host, the session set-up
 *   my_exec.c     statements, results, columns
 *   my_txn.c      committed on its own (DESIGN C2), scripts, transactions
 *   my_error.c    the error map and messages; options, each set or refused
 *
 * Names: driver-private types and macros are my_ and MY_ (pg_ and PG_ in
 * the PostgreSQL driver, sq_ in the SQLite one); functions and data one
 * file of the driver calls in another are sqllock__my_ (sqllock__pg_),
 * plain static inside a file. A driver includes sqllock_driver.h and
 * nothing of the core's; the helpers any driver may use are declared
 * there (sqllock_driver_now_ms(), sqllock_driver_wait_slice_ms()).
 */
#ifndef SQLLOCK_MY_H
#define SQLLOCK_MY_H

#include <stdint.h>

#include <mysql.h>

#include "sqllock_driver.h"

/* The TLS modes of the ssl_mode URL parameter (and of an option file's
 * ssl-mode), named as MySQL names them. MY_SSL_DEFAULT: none given. */
typedef enum my_ssl_mode {
    MY_SSL_DEFAULT = 0,
    MY_SSL_DISABLED,
    MY_SSL_PREFERRED,
    MY_SSL_REQUIRED,
    MY_SSL_VERIFY_CA,
    MY_SSL_VERIFY_IDENTITY
} my_ssl_mode;

/* The TLS files and settings, in the order of sqllock__my_tls_names:
 * the URL spells them ssl_ca, ssl_capath, ..., an option file ssl-ca,
 * ssl-capath, ... (MySQL's option names). */
enum {
    MY_TLS_CA = 0,
    MY_TLS_CAPATH,
    MY_TLS_CERT,
    MY_TLS_KEY,
    MY_TLS_CIPHER,
    MY_TLS_CRL,
    MY_TLS_CRLPATH,
    MY_TLS_N
};

/* "ca", "capath", "cert", "key", "cipher", "crl", "crlpath". */
extern const char *const sqllock__my_tls_names[MY_TLS_N];

/* The mode that `name` spells (ASCII case ignored): 1, or 0 for none. */
int sqllock__my_ssl_mode_parse(const char *name, my_ssl_mode *mode);

/* MySQL's name of a mode ("VERIFY_IDENTITY"). */
const char *sqllock__my_ssl_mode_name(my_ssl_mode mode);

/* What an option file gave: copies, owned; NULL where it said nothing. */
typedef struct my_optfile {
    char *user;
    char *password;            /* overwritten with zeros before it is freed */
    my_ssl_mode mode;       /* ssl-mode, or ssl-verify-server-cert */
    char *tls[MY_TLS_N];
    int files;                 /* option files read (includes counted) */
} my_optfile;

/*
 * Reads the option file `path` as MySQL's clients read one: the options
 * of the groups [client], [client-server], [client-mariadb] and, when not
 * NULL, [group], in the order they appear (a later value replaces an
 * earlier one), with !include and !includedir. Only user, password and
 * the TLS options are taken; every other option is ignored. With
 * `missing_ok`, a file that does not exist reads as empty. Fills `out`
 * (which must be zeroed or hold an earlier read's results, which later
 * values replace). On failure returns SQLLOCK_EURL (or SQLLOCK_ENOMEM)
 * and says why in `err`, naming the file and line but never a value read
 * from it. Free `out` with sqllock__my_optfile_free(), also after a
 * failure.
 */
int sqllock__my_optfile_read(const char *path, const char *group,
                             int missing_ok, my_optfile *out,
                             sqllock_dberr *err);

void sqllock__my_optfile_free(my_optfile *f);

/* ------------------------------------------------------------------------ */
/* The connection and its statements                                        */
/* ------------------------------------------------------------------------ */

/* The first size of a column's buffer; a longer value grows it. */
#define MY_COL_MIN 64ul
#define MY_COL_FIRST_MAX 1024ul

/* MariaDB Connector/C and libmysqlclient before 8.0 spell the flag type
 * my_bool; MySQL 8.0's client uses bool. */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(LIBMYSQL_VERSION_ID) || \
    LIBMYSQL_VERSION_ID < 80000
typedef my_bool my_flag;
#else
#include <stdbool.h>
typedef bool my_flag;
#endif

struct sqllock_conn {
    MYSQL *my;
    int galera;                 /* a Galera cluster node (wsrep_on ON) */
    int in_txn;                 /* between begin() and commit()/rollback() */
    unsigned int io_timeout_s;  /* io_timeout_s() at the connect */
    int64_t statement_ms;       /* its parts, for messages */
    int64_t lock_wait_ms;
    int borrowed;               /* the application's MYSQL * (adopt()):
                                   never closed here, no C2 checks */
};

/* One result column: a growable text buffer, bound as MYSQL_TYPE_STRING
 * (the client converts integers and decimals to text). */
typedef struct my_col {
    char *buf;
    unsigned long cap;          /* bytes in buf, the NUL included */
    unsigned long len;          /* the value's full length */
    my_flag is_null;
    my_flag error;              /* truncated */
} my_col;

struct sqllock_stmt {
    sqllock_conn *conn;
    MYSQL_STMT *st;
    unsigned nparams;
    unsigned ncols;
    MYSQL_BIND *params;
    long long *ints;            /* storage of the bound integers */
    unsigned long *lens;        /* lengths of the bound texts */
    MYSQL_BIND *binds;          /* result binds, one per column */
    my_col *cols;
    int has_result;             /* a result set is stored and open */
    int is_call;                /* CALL: its columns are known only after
                                   it runs, and a status result follows
                                   its rows */
    int is_update;              /* UPDATE: affected_rows() counts the rows
                                   it matched (matched_rows(), my_exec.c) */
    int64_t affected;
    int64_t insert_id;
};

/* ------------------------------------------------------------------------ */
/* What a URL asks for (my_url.c)                                           */
/* ------------------------------------------------------------------------ */

typedef struct my_target {
    /* The one host to connect to (core/failover.c picks it from a host
     * list): "localhost", "10.0.0.1", "::1"; "localhost" with socket=. */
    const char *host;
    unsigned int port;         /* 0: the default, 3306 */
    const char *socket;
    const char *database;
    /* The login and TLS settings: the URL's, else the option file's
     * (see sqllock__my_load_option_file()). */
    const char *user;
    const char *password;
    my_ssl_mode ssl;           /* the mode in force (see
                                  sqllock__my_tls_mode()) */
    const char *tls[MY_TLS_N];
    /* The URL's option_file= (has_option_file: given, maybe empty) and
     * option_group=, and what the file said. */
    int has_option_file;
    const char *option_file;
    const char *option_group;
    my_optfile file;
    /* The URL's innodb_flush=any: accept a server whose
     * innodb_flush_log_at_trx_commit is not 1 (after_connect()). */
    int innodb_flush_any;
} my_target;

/* my_sql.c */
extern const sqllock_dialect sqllock__my_dialect;
/* The session set-up (see after_connect() in my_conn.c). */
/* The sql_mode of the library's own sessions (my_conn.c, after_connect):
 * modes both MySQL 8.0 and MariaDB 10.11 have in their defaults. */
#define MY_SQL_MODE \
    "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
extern const char sqllock__my_sql_session_tz[];
extern const char sqllock__my_sql_session_isolation[];
extern const char sqllock__my_sql_wsrep_on[];
extern const char sqllock__my_sql_wsrep_ready[];
extern const char sqllock__my_routine_name[];
extern const char sqllock__my_sql_routine_create[];
extern const char sqllock__my_wake_acquire_name[];
extern const char sqllock__my_sql_wake_acquire_create[];
extern const char sqllock__my_wake_release_name[];
extern const char sqllock__my_sql_wake_release_create[];
extern const char sqllock__my_sql_routines_present[];
extern const char sqllock__my_many_name[];
extern const char sqllock__my_sql_many_create[];
extern const char sqllock__my_read_name[];
extern const char sqllock__my_sql_read_create[];
int sqllock__my_session_wake(sqllock_conn *c, int *usable,
                             sqllock_dberr *err);
int sqllock__my_upgrade(sqllock_conn *c, sqllock_dberr *err);
/* SQLLOCK_EPROXY, nothing sent, when the session's autocommit is off
 * (my_txn.c): refused before a grant (START TRANSACTION, the acquire
 * routine), so that no lease is granted that could be neither renewed nor
 * released. */
int sqllock__my_check_autocommit(sqllock_conn *c, sqllock_dberr *err);

/* my_url.c. Checks the URL and reads its parameters into `t`;
 * sqllock__my_target_free() frees what it allocated, also after a
 * failure. */
int sqllock__my_parse_url(const sqllock_url *url, my_target *t,
                          sqllock_dberr *err);
/* Fills the login and TLS settings the URL leaves out from the option
 * file it asks for. */
int sqllock__my_load_option_file(const sqllock_url *url, my_target *t,
                                 sqllock_dberr *err);
void sqllock__my_target_free(my_target *t);

/* my_tls.c */
/* Settles the TLS mode in force. */
int sqllock__my_tls_mode(my_target *t, sqllock_dberr *err);
/* Hands the client library the TLS mode and files. */
int sqllock__my_set_tls(MYSQL *my, const my_target *t, sqllock_dberr *err);
/* After a failed TLS handshake, says what the mode in force checked. */
void sqllock__my_tls_hint(const my_target *t, sqllock_dberr *err);

/* my_conn.c */
int sqllock__my_connect(const sqllock_url *url,
                        const sqllock_connect_params *p, sqllock_conn **out,
                        sqllock_dberr *err);
void sqllock__my_disconnect(sqllock_conn *c);
int sqllock__my_adopt(void *native, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err);
int sqllock__my_txn_status(sqllock_conn *c, int *in_txn, sqllock_dberr *err);
void *sqllock__my_native(sqllock_conn *c);
int sqllock__my_row_lock_scope(sqllock_conn *c, int *scope,
                               sqllock_dberr *err);

/* my_exec.c */
int sqllock__my_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                        sqllock_dberr *err);
void sqllock__my_finalize(sqllock_stmt *s);
int sqllock__my_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                        sqllock_dberr *err);
int sqllock__my_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err);
int64_t sqllock__my_column_int64(sqllock_stmt *s, int col);
const char *sqllock__my_column_text(sqllock_stmt *s, int col);
const void *sqllock__my_column_blob(sqllock_stmt *s, int col, size_t *len);
int64_t sqllock__my_affected_rows(sqllock_stmt *s);
void sqllock__my_reset(sqllock_stmt *s);
int64_t sqllock__my_insert_id(sqllock_stmt *s);

/* my_txn.c */
/* After a statement outside the core's transaction: it must have
 * committed (DESIGN C2). */
int sqllock__my_check_committed(sqllock_conn *c, sqllock_dberr *err);
/* Before one: the session must not be inside someone else's
 * transaction. */
int sqllock__my_check_no_foreign_txn(sqllock_conn *c, sqllock_dberr *err);
int sqllock__my_exec_script(sqllock_conn *c, const char *sql,
                            sqllock_dberr *err);
int sqllock__my_begin(sqllock_conn *c, sqllock_dberr *err);
int sqllock__my_commit(sqllock_conn *c, sqllock_dberr *err);
int sqllock__my_rollback(sqllock_conn *c, sqllock_dberr *err);

/* my_error.c */
/* Sets one option of the client library; an option it refuses is an
 * error. */
int sqllock__my_set_option(MYSQL *my, enum mysql_option opt,
                           const void *value, const char *what,
                           sqllock_dberr *err);
/* The sqllock status of a MySQL or MariaDB error number. */
int sqllock__my_classify(unsigned int code);
/* Fill `err` from the connection's or the statement's last error;
 * `context`, when not NULL, goes before the message. Return the status. */
int sqllock__my_fail_conn(MYSQL *my, sqllock_dberr *err, const char *context);
int sqllock__my_fail_stmt(MYSQL_STMT *st, sqllock_dberr *err,
                          const char *context);
/* A lost connection after the whole read or write timeout: says so. */
int sqllock__my_fail_timed(const sqllock_conn *c, int64_t t0, int rc,
                           sqllock_dberr *err);
/* Appends to buf[size], cutting what does not fit. */
void sqllock__my_append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* SQLLOCK_MY_H */
