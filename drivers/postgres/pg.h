/*
 * pg.h -- what the files of the PostgreSQL driver share: the connection
 * and statement structs and the functions one file calls in another.
 * Not installed; nothing outside drivers/postgres includes it.
 *
 *   postgres.c   the driver table
 *   pg_sql.c     the dialect: the SQL text of every statement
 *   pg_conn.c    connecting (one host or a host list), the notice receiver
 *   pg_exec.c    round trips, statements, results, transactions, errors
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

struct sqllock_conn {
    PGconn *pg;
    unsigned next_name;          /* for naming prepared statements */
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
};

struct sqllock_stmt {
    sqllock_conn *conn;
    PGresult *res;
    int row;                     /* the current row; -1 before the first */
    int nparams;
    int durable;                 /* SQL_LEASE_ACQUIRE or SQL_LEASE_RENEW */
    char name[24];
    /* Decoded bytea columns of the current row (column_blob()), one slot
     * per column, freed at the next fetch, reset or finalize. */
    unsigned char **blobs;
    size_t *blob_lens;
    int nblobs;
};


/* pg_sql.c */
extern const sqllock_dialect sqllock__pg_dialect;
/* What a statement is, for the round trip that runs it. */
enum { PG_STMT_PLAIN = 0, PG_STMT_DURABLE };
int sqllock__pg_stmt_kind(const char *sql);

/* pg_conn.c */
int sqllock__pg_connect(const sqllock_url *url, const sqllock_connect_params *p,
                        sqllock_conn **out, sqllock_dberr *err);
void sqllock__pg_disconnect(sqllock_conn *c);
/* The monotonic clock, in ms. */
int64_t sqllock__pg_mono_ms(void);
/* Waits until `fd` is ready for `events` or the deadline passes: 1 ready,
 * 0 out of time, -1 poll() failed (errno). */
int sqllock__pg_wait_fd(int fd, short events, int64_t deadline_ms);

/* pg_exec.c */
int sqllock__pg_simple(sqllock_conn *c, const char *sql, sqllock_dberr *err);
int sqllock__pg_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                        sqllock_dberr *err);
void sqllock__pg_finalize(sqllock_stmt *s);
int sqllock__pg_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                        sqllock_dberr *err);
int sqllock__pg_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err);
int64_t sqllock__pg_column_int64(sqllock_stmt *s, int col);
const char *sqllock__pg_column_text(sqllock_stmt *s, int col);
const void *sqllock__pg_column_blob(sqllock_stmt *s, int col, size_t *len);
int64_t sqllock__pg_affected_rows(sqllock_stmt *s);
void sqllock__pg_reset(sqllock_stmt *s);
int sqllock__pg_exec_script(sqllock_conn *c, const char *sql,
                            sqllock_dberr *err);
int sqllock__pg_begin(sqllock_conn *c, sqllock_dberr *err);
int sqllock__pg_commit(sqllock_conn *c, sqllock_dberr *err);
int sqllock__pg_rollback(sqllock_conn *c, sqllock_dberr *err);
int64_t sqllock__pg_insert_id(sqllock_stmt *s);
void *sqllock__pg_native(sqllock_conn *c);

/* pg_notify.c */
int sqllock__pg_listen(sqllock_conn *c, const char *channel, int on,
                       sqllock_dberr *err);
int sqllock__pg_wait_notify(sqllock_conn *c, int64_t timeout_ms, int *woke,
                            sqllock_dberr *err);

#endif /* SQLLOCK_PG_H */
