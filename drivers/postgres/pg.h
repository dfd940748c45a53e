/*
 * pg.h -- what the files of the PostgreSQL driver share: the connection
 * and statement structs and the functions one file calls in another.
 * Not installed; nothing outside drivers/postgres includes it.
 *
 *   postgres.c   the driver table
 *   pg_sql.c     the dialect: the SQL text of every statement
 *   pg_url.c     the URL: sqllock's own parameters, the URL for libpq
 *   pg_conn.c    connecting to one host, the notice receiver
 *   pg_exec.c    bounded round trips, statements, results
 *   pg_txn.c     statements without parameters (scripts), transactions
 *   pg_error.c   the error map (SQLSTATEs, connect messages)
 *   pg_notify.c  LISTEN and waiting for notifications
 */
#ifndef SQLLOCK_PG_H
#define SQLLOCK_PG_H

#include <stdint.h>

#include <libpq-fe.h>

#include "sqllock_driver.h"

/* The most values one statement binds. The core's largest statement (a
 * compare-and-set on an application table with 16 assignments and 16
 * conditions) binds 35. */
#define PG_MAX_PARAMS 64

/* What stands between the client and the server, as the URL's pooler=
 * parameter says (docs/poolers.md). */
typedef enum pg_pooler {
    PG_POOLER_NONE = 0,          /* the connection is our own */
    PG_POOLER_SESSION,           /* a pooler that gives each client a
                                    server connection for its session */
    PG_POOLER_TRANSACTION,       /* one that may give each transaction
                                    another server connection: no state
                                    may outlive a transaction (DESIGN C1) */
    PG_POOLER_PGPOOL             /* pgpool-II: a session keeps its server
                                    connection, but a notification that
                                    arrives between statements stalls the
                                    next one: no LISTEN on it */
} pg_pooler;

/* What pg_url.c read from a URL. */
typedef struct pg_target {
    pg_pooler pooler;
    char *libpq_url;             /* the URL for libpq */
    char *listen_url;            /* for LISTEN past the pooler, or NULL */
} pg_target;

struct sqllock_conn {
    PGconn *pg;
    pg_pooler pooler;
    unsigned next_name;          /* for naming prepared statements */
    char name_prefix[26];        /* "sqllock_" and 16 random hex digits:
                                    a named statement never meets another
                                    client's of the same name (a pooler
                                    the URL does not declare) */
    int in_txn;                  /* begin() succeeded; no commit() or
                                    rollback() since */
    int64_t txn_lock_timeout_ms; /* transaction pooling: the lock timeout
                                    each transaction sets; -1: none yet */
    char *listen_url;            /* LISTEN past the pooler (listen_host),
                                    or NULL */
    struct sqllock_conn *listener; /* that connection, once opened */
    int64_t connect_ms;          /* the connect bound, for the listener */
    int64_t statement_ms;        /* the bound of one round trip: */
    int64_t lock_wait_ms;        /* statement timeout + lock wait */
    int broken;                  /* a round trip ran out of time: the
                                    connection's state is unknown, nothing
                                    more is sent on it */
    int durable;                 /* the statement in flight is a durable
                                    grant or renewal */
    int sync_canceled;           /* its commit's wait for a synchronous
                                    standby was canceled (see on_notice) */
    char sync_state[6];          /* that warning's SQLSTATE */
    char sync_msg[200];          /* and its message */
    int borrowed;                /* the application's PGconn (adopt()):
                                    never closed here, no C2 checks */
    int was_nonblocking;         /* its nonblocking mode before our round
                                    trip, put back after it */
    int pins_unsent;             /* a pooler refused the pins in the
                                    connect: they go in a SET after it */
    int wrap_txn;                /* transaction pooling, and the servers'
                                    default isolation level is not READ
                                    COMMITTED: every statement that
                                    commits on its own goes in BEGIN
                                    ISOLATION LEVEL READ COMMITTED ...
                                    COMMIT (pg_exec.c, pg_execute) */
};

struct sqllock_stmt {
    sqllock_conn *conn;
    PGresult *res;
    int row;                     /* the current row; -1 before the first */
    int nparams;
    int kind;                    /* PG_STMT_* */
    char *sql;                   /* transaction pooling: the text, run as
                                    an unnamed statement each time; NULL
                                    when prepared under `name` */
    char name[48];
    /* Decoded bytea columns of the current row (column_blob()), one slot
     * per column, freed at the next fetch, reset or finalize. */
    unsigned char **blobs;
    size_t *blob_lens;
    int nblobs;
};


/* pg_sql.c */
extern const sqllock_dialect sqllock__pg_dialect;
/* What a statement is, for the round trip that runs it. */
enum {
    PG_STMT_PLAIN = 0,
    PG_STMT_DURABLE,             /* a grant or renewal that must be durable */
    PG_STMT_LOCK_TIMEOUT         /* TXN_LOCK_TIMEOUT */
};
int sqllock__pg_stmt_kind(const char *sql);
int sqllock__pg_upgrade(sqllock_conn *c, sqllock_dberr *err);
/* TXN_LOCK_TIMEOUT for this transaction only (transaction pooling). */
extern const char sqllock__pg_sql_lock_timeout_local[];
/* Every transaction the driver begins (DESIGN D5): READ COMMITTED whatever
 * the session's default_transaction_isolation says, also behind a
 * transaction pooler, where no session setting of ours survives
 * (pg_sql.c, SESSION_PINS, says why the statements need it). */
#define PG_BEGIN "BEGIN ISOLATION LEVEL READ COMMITTED"

/* pg_url.c. Reads sqllock's parameters and builds the URLs for libpq;
 * free the result with sqllock__pg_target_free(). */
int sqllock__pg_url_read(const sqllock_url *url, pg_target *t,
                         sqllock_dberr *err);
void sqllock__pg_target_free(pg_target *t);

/* pg_conn.c */
int sqllock__pg_connect(const sqllock_url *url,
                        const sqllock_connect_params *p, sqllock_conn **out,
                        sqllock_dberr *err);
void sqllock__pg_disconnect(sqllock_conn *c);
int sqllock__pg_adopt(void *native, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err);
int sqllock__pg_txn_status(sqllock_conn *c, int *in_txn, sqllock_dberr *err);
/* Connects to a libpq URL without sqllock's parameters (pooler none: the
 * listener's connection, whose session settings are pinned in the connect
 * when `pin` says so; pg_conn.c, PINS_OPTIONS). */
int sqllock__pg_connect_url(const char *libpq_url, int pin,
                            int64_t connect_ms, sqllock_conn **out,
                            sqllock_dberr *err);

/* pg_trip.c */
/* Waits until `fd` is ready for `events` or the deadline passes: 1 ready,
 * 0 out of time, -1 poll() failed (errno). */
int sqllock__pg_wait_fd(int fd, short events, int64_t deadline_ms);
/* Refuses a round trip on a connection given up, or inside a transaction
 * sqllock did not begin. */
int sqllock__pg_check_usable(sqllock_conn *c, sqllock_dberr *err);
/* A bounded round trip whose result must be `want` (or `want2`). */
int sqllock__pg_expect_result(sqllock_conn *c, int sent,
                              ExecStatusType want, ExecStatusType want2,
                              PGresult **out, sqllock_dberr *err);
/* Waits for the socket, as a round trip's step, until `deadline` (ms);
 * the status when not ready (out of time: the connection given up, or
 * poll() failed). */
int sqllock__pg_wait_step(sqllock_conn *c, short events, int64_t deadline,
                          int64_t bound_ms, sqllock_dberr *err);
/* The status of a round trip or pipeline the server answered, given the
 * warning on_notice() may have caught during it: `rc`, unless it
 * succeeded and a commit in it never reached the synchronous standby
 * (SQLLOCK_ECANCELED, or SQLLOCK_ECONNECT when the server is ending the
 * connection). */
int sqllock__pg_sync_wait_status(sqllock_conn *c, int rc, sqllock_dberr *err);

/* pg_exec.c */
int sqllock__pg_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                        sqllock_dberr *err);
void sqllock__pg_finalize(sqllock_stmt *s);
int sqllock__pg_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                        sqllock_dberr *err);
/* The statement with BEGIN and/or COMMIT in one round trip (pipeline
 * mode). */
int sqllock__pg_execute_txn(sqllock_stmt *s, const sqllock_value *args,
                            int nargs, unsigned with, int *in_txn,
                            sqllock_dberr *err);
int sqllock__pg_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err);
int64_t sqllock__pg_column_int64(sqllock_stmt *s, int col);
const char *sqllock__pg_column_text(sqllock_stmt *s, int col);
const void *sqllock__pg_column_blob(sqllock_stmt *s, int col, size_t *len);
int64_t sqllock__pg_affected_rows(sqllock_stmt *s);
void sqllock__pg_reset(sqllock_stmt *s);

int64_t sqllock__pg_insert_id(sqllock_stmt *s);
void *sqllock__pg_native(sqllock_conn *c);

/* pg_txn.c */
/* One round trip of `sql` (simple query protocol) bounded by bound_ms. */
int sqllock__pg_simple_within(sqllock_conn *c, const char *sql,
                              int64_t bound_ms, sqllock_dberr *err);
int sqllock__pg_simple(sqllock_conn *c, const char *sql, sqllock_dberr *err);
int sqllock__pg_exec_script(sqllock_conn *c, const char *sql,
                            sqllock_dberr *err);
int sqllock__pg_begin(sqllock_conn *c, sqllock_dberr *err);
int sqllock__pg_commit(sqllock_conn *c, sqllock_dberr *err);
int sqllock__pg_rollback(sqllock_conn *c, sqllock_dberr *err);

/* pg_error.c */
/* Fills `err` from a failed result (or the connection's error when `res`
 * is NULL) and returns its status. */
int sqllock__pg_fail(PGconn *pg, const PGresult *res, sqllock_dberr *err);
/* The status of a failed connect, from libpq's message. */
int sqllock__pg_classify_connect(const char *msg);

/* pg_notify.c */
int sqllock__pg_listen(sqllock_conn *c, const char *channel, int on,
                       sqllock_dberr *err);
int sqllock__pg_wait_notify(sqllock_conn *c, int64_t timeout_ms, int *woke,
                            sqllock_dberr *err);

#endif /* SQLLOCK_PG_H */
