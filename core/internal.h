/*
 * internal.h -- declarations shared between the core's files (and the
 * tests, which link the static library). Not installed.
 */
#ifndef SQLLOCK_INTERNAL_H
#define SQLLOCK_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sqllock.h"
#include "sqllock_driver.h"

#define SQLLOCK__ERRMSG_MAX 640

/* Statements the core builds at run time (on the application's tables),
 * kept prepared per connection, the least recently used one replaced. */
#define SQLLOCK__DYN_CACHE 16

typedef struct sqllock__dyn {
    char *sql;
    sqllock_stmt *stmt;
    uint64_t used;
} sqllock__dyn;

/* ---- Metrics and the log hook (core/metrics.c) ---- */

#define SQLLOCK__HIST_BUCKETS 17

typedef struct sqllock__hist {
    _Atomic uint64_t bucket[SQLLOCK__HIST_BUCKETS]; /* not cumulative */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
} sqllock__hist;

/* Kinds of acquire, outcomes, operations, renewal results, loss causes,
 * release outcomes, row-lock and compare-and-set outcomes: the labels. */
enum { SQLLOCK__MK_LEASE, SQLLOCK__MK_FAIR, SQLLOCK__MK_MANY,
       SQLLOCK__MK_SEM, SQLLOCK__MK_SHARED, SQLLOCK__MK_EXCLUSIVE,
       SQLLOCK__MK_LEADER, SQLLOCK__MK_COUNT };
enum { SQLLOCK__MO_GRANTED, SQLLOCK__MO_BUSY, SQLLOCK__MO_TIMEOUT,
       SQLLOCK__MO_ERROR, SQLLOCK__MO_COUNT };
enum { SQLLOCK__OP_OTHER, SQLLOCK__OP_ACQUIRE, SQLLOCK__OP_RELEASE,
       SQLLOCK__OP_RENEW, SQLLOCK__OP_ROW_LOCK, SQLLOCK__OP_RECORD,
       SQLLOCK__OP_REAP, SQLLOCK__OP_COUNT };
enum { SQLLOCK__MR_ON_TIME, SQLLOCK__MR_LATE, SQLLOCK__MR_FAILED,
       SQLLOCK__MR_COUNT };
/* A hold's end: a loss's cause, or SQLLOCK__END_RELEASED (no loss). */
enum { SQLLOCK__ML_TAKEN_OVER, SQLLOCK__ML_EXPIRED, SQLLOCK__ML_CONNECTION,
       SQLLOCK__ML_COUNT };
#define SQLLOCK__END_RELEASED (-1)
/* A grant that was no hold (a kind marker's): undone, not timed. */
#define SQLLOCK__END_NONE (-2)
enum { SQLLOCK__MREL_RELEASED, SQLLOCK__MREL_LOST, SQLLOCK__MREL_ERROR,
       SQLLOCK__MREL_COUNT };
enum { SQLLOCK__MRL_GRANTED, SQLLOCK__MRL_BUSY, SQLLOCK__MRL_TIMEOUT,
       SQLLOCK__MRL_DEADLOCK, SQLLOCK__MRL_ERROR, SQLLOCK__MRL_COUNT };
enum { SQLLOCK__MC_OK, SQLLOCK__MC_CONFLICT, SQLLOCK__MC_ERROR,
       SQLLOCK__MC_COUNT };

typedef struct sqllock__metrics {
    _Atomic uint64_t acq[SQLLOCK__MK_COUNT][SQLLOCK__MO_COUNT];
    sqllock__hist acq_wait;
    sqllock__hist hold;
    _Atomic int64_t held;
    _Atomic uint64_t renewals[SQLLOCK__MR_COUNT];
    _Atomic uint64_t losses[SQLLOCK__ML_COUNT];
    _Atomic uint64_t releases[SQLLOCK__MREL_COUNT];
    _Atomic uint64_t wakeups, polls;
    _Atomic uint64_t stmts[SQLLOCK__OP_COUNT];
    _Atomic uint64_t trips[SQLLOCK__OP_COUNT];
    _Atomic uint64_t rowlocks[SQLLOCK__MRL_COUNT];
    _Atomic uint64_t cas[SQLLOCK__MC_COUNT];
    _Atomic uint64_t reaped, reap_sweeps, reconnects;
} sqllock__metrics;

/* The operation a handle's statements count under; returns the old one
 * (for the caller to put back). */
int sqllock__op_set(sqllock_db *db, int op);
/* One round trip carrying `statements` statements. */
void sqllock__m_statement(sqllock_db *db, int statements);
/* A public acquire call of `kind` ended with `rc`, begun at start_us
 * (sqllock__now_us(); 0: not timed -- a campaign's term); logs the
 * grant. */
void sqllock__m_acquire(sqllock_db *db, int kind, int rc, int64_t start_us,
                        const char *name, int64_t token);
/* Around a public acquire: sqllock__m_enter() notes the time and makes
 * the handle's statements count as `op`; sqllock__m_acquired() puts the
 * operation back, counts the call (sqllock__m_acquire()) and returns
 * rc. */
typedef struct sqllock__mcall {
    sqllock_db *db;
    int64_t start_us;
    int op;
} sqllock__mcall;
void sqllock__m_enter(sqllock__mcall *c, sqllock_db *db, int op);
int sqllock__m_acquired(sqllock__mcall *c, int kind, int rc,
                        const char *name, int64_t token);
/* A grant: the hold starts (a reentrant grant changes nothing). */
void sqllock__m_grant(sqllock_lease *l);
/* The SQLLOCK__MK_ kind a lease handle's own acquires count as
 * (lease_acquire.c). */
int sqllock__lease_mkind(const sqllock_lease *l);
/* The hold ends: SQLLOCK__END_RELEASED or a SQLLOCK__ML_ cause. 1 when
 * this call ended it (0: it had ended, or never started); *held_us (may
 * be NULL) its length. */
int sqllock__m_hold_end(sqllock_lease *l, int end, int64_t *held_us);
void sqllock__m_release(sqllock_lease *l, int rc, int64_t token,
                        int64_t held_us);
void sqllock__m_renewal(sqllock_db *db, int result);
void sqllock__m_pause(sqllock_db *db, int woke);
void sqllock__m_reaped(sqllock_db *db, int64_t rows);
void sqllock__m_rowlock(sqllock_db *db, int rc);
void sqllock__m_cas(sqllock_db *db, int rc);
void sqllock__m_reconnected(sqllock_db *db);
void sqllock__m_leader_add(sqllock_leader *leader);
void sqllock__m_leader_remove(sqllock_leader *leader);
/* A growing text in the OpenMetrics format (core/omtext.c). `oom` set:
 * an allocation failed and the text is void. Zeroed to start; freed with
 * sqllock__mt_free(). */
typedef struct sqllock__mtext {
    char *buf;
    size_t len, cap;
    int oom;
} sqllock__mtext;
void sqllock__mt_printf(sqllock__mtext *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sqllock__mt_append(sqllock__mtext *t, const char *s, size_t n);
/* A label value, escaped: backslash, double quote, line feed. */
void sqllock__mt_label(sqllock__mtext *t, const char *s, size_t n);
/* A family's TYPE, UNIT (NULL: none) and HELP lines. */
void sqllock__mt_family(sqllock__mtext *t, const char *name,
                        const char *type, const char *unit,
                        const char *help);
void sqllock__mt_free(sqllock__mtext *t);

/* 1 when an event of `level` goes to the hook (cheap: one atomic). */
int sqllock__log_on(int level);
/* Sends an event to the process's hook, if any (printf-style message,
 * scrubbed of the handle's secrets). Call with no library mutex held. */
void sqllock__log(int type, int level, sqllock_db *db, const char *name,
                  int64_t token, int status, int64_t value_ms,
                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;

struct sqllock_db {
    const sqllock_driver *drv;
    sqllock_conn *conn;
    sqllock_stmt *stmts[SQLLOCK_SQL_COUNT_];
    sqllock__dyn dyn[SQLLOCK__DYN_CACHE];
    uint64_t dyn_clock;
    int in_txn;                /* a sqllock_txn is open on the handle */
    struct sqllock_txn *txn;   /* that transaction (txn.c), or NULL */
    int txn_fresh;             /* a transaction was begun on the connection
                                  and nothing has run in it yet */
    int begin_pending;         /* a row-lock transaction is begun but its
                                  BEGIN not sent: it goes with the next
                                  statement, in the same round trip
                                  (the driver's execute_txn()) */
    int64_t lock_timeout_ms;   /* last TXN_LOCK_TIMEOUT sent on this
                                  connection; -1 when unknown */
    sqllock_connect_params params;
    struct sqllock__renewer *renewer; /* watchdog thread (watch.c), or NULL */
    const struct sqllock__renewer_ops *renewer_ops; /* set with it */
    char *url;                 /* the URL as given, for reconnects */
    char *url_redacted;        /* the URL with any password hidden */
    char *secrets;             /* sqllock__url_secrets(url), for messages */
    int no_routine;            /* LEASE_ACQUIRE_ONE cannot be used on this
                                  connection (not installed, not allowed):
                                  the acquire runs its transaction */
    int no_many_routine;       /* LEASE_ACQUIRE_MANY cannot be used on
                                  this connection (not installed, not
                                  allowed): a transaction of statements */
    int no_wake_routine;       /* LEASE_ACQUIRE_WAKE cannot be used on
                                  this connection (not installed, not
                                  allowed): no session-lock wake-ups */
    int wake_known;            /* wake_usable holds sqllock__session_wake()'s
                                  answer for this connection (0 until
                                  asked; dropping the connection clears
                                  it) */
    int wake_usable;
    uint64_t conn_gen;         /* counts the connects: a session lock
                                  taken on an older connection is gone */
    int borrowed;              /* sqllock_borrow(): the connection is the
                                  application's; never reconnected */
    char lost_why[200];        /* borrowed: why the connection was dropped */
    int errcode;
    char errmsg[SQLLOCK__ERRMSG_MAX];
    int op;                    /* SQLLOCK__OP_*: what statements count as */
    sqllock__metrics metrics;  /* this handle's counts (metrics.c) */
};

/* A lease handle (core/lease.c). `state` and `deadline_us` are atomics:
 * the renewer thread (watch.c) writes them, and sqllock_lease_state() may
 * read them from any thread; everything else belongs to the thread that
 * uses the handle. */
struct sqllock_lease {
    sqllock_db *db;
    int count;                       /* reentrant holds; 0 = not held */
    int64_t token;
    int64_t ttl_ms;
    int64_t margin_ms;
    int margin_default;              /* margin_ms is ttl_ms / 10, not given */
    int64_t backoff_min_ms;
    int64_t backoff_max_ms;
    int64_t release_timeout_ms;      /* C3: how long a release retries */
    unsigned flags;                  /* SQLLOCK_LEASE_* */
    uint64_t wake_key;               /* sqllock__wake_key(url, name) */
    int companion;                   /* the handle's connection took the
                                        companion session lock with the
                                        grant (LEASE_ACQUIRE_WAKE) */
    uint64_t companion_gen;          /* db->conn_gen of that connection */
    int busy_companion;              /* the last try found the lease held
                                        and its companion lock taken */
    _Atomic int64_t deadline_us;     /* local monotonic; L6 */
    _Atomic int state;               /* SQLLOCK_STATE_* */
    _Atomic int64_t granted_us;      /* when the hold began, for the
                                        metrics; 0 when none (metrics.c) */
    _Atomic int cancel;              /* sqllock_lease_cancel(): a wait's
                                        end asked for, from any thread */
    void *watch;                     /* the renewer's entry of this lease
                                        while watched, else NULL; under
                                        the renewer's mutex (watch.c) */
    char owner[SQLLOCK_OWNER_LEN + 1];
    char name[SQLLOCK_NAME_MAX + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
    const char *wake_name;           /* the name whose channel a release
                                        notifies, when not `name` (a
                                        reader of core/rw.c wakes its
                                        writer's waiters); NULL: name */
    int derived;                     /* `name` is a primitive's derived
                                        row (internal.h, derived names):
                                        the public acquire calls refuse
                                        the handle (issue 26 item 8b) */
    int kind;                        /* SQLLOCK__KIND_LEADER for a handle
                                        of sqllock_leader_lease_new(): its
                                        acquire is allowed, once the base
                                        name is marked (core/kind.c);
                                        else SQLLOCK__KIND_PLAIN */
    int kind_checked;                /* that marker was found or made */
    const char *fixed_owner;         /* a kind marker's grant: this owner
                                        instead of a random one */
};

/* SQLLOCK_EMISUSE for a call that needs a connection of the library's
 * own (leases, the reaper, init, list) on a borrowed handle; else
 * SQLLOCK_OK (core/db.c). */
int sqllock__refuse_borrowed(sqllock_db *db, const char *what);

/* The handle's connection (core/db.c). sqllock__connected() makes sure
 * there is one, connecting again after a loss (never a borrowed one);
 * sqllock__connect() connects now; sqllock__drop_connection() closes it
 * and its statements. sqllock__db_error() records a database error on the
 * handle and drops a broken connection, so that the next call connects
 * again; it returns the status. */
int sqllock__connected(sqllock_db *db);
int sqllock__connect(sqllock_db *db);
void sqllock__drop_connection(sqllock_db *db);
int sqllock__db_error(sqllock_db *db, const sqllock_dberr *err,
                      const char *what);
/* The largest client-side bound a handle takes, in ms: an int64 of
 * milliseconds far beyond any real wait would overflow the deadlines the
 * drivers compute. */
#define SQLLOCK__MAX_TIMEOUT_MS ((int64_t)1000 * 86400 * 365 * 100)

/* Errors (core/error.c). Sets the handle's status and message (printf
 * style; cut safely to fit; CR and LF removed) and returns the status. */
int sqllock__fail(sqllock_db *db, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The same for a database error: "<what>: <db message> (<code>)". */
int sqllock__fail_db(sqllock_db *db, const sqllock_dberr *err,
                     const char *what);
/* Clears the handle's status to SQLLOCK_OK and returns SQLLOCK_OK. */
int sqllock__ok(sqllock_db *db);

/* Formats into a fixed buffer, cutting at a UTF-8 boundary and replacing
 * CR/LF with spaces; trailing white space is removed. */
void sqllock__vformat(char *buf, size_t size, const char *fmt, va_list ap);

/* URLs (core/url.c). Parses `text` into a newly allocated sqllock_url
 * (decoded parts); on failure returns SQLLOCK_EURL (or ENOMEM) and writes
 * a reason into why[why_size]. Free with sqllock__url_free(). */
int sqllock__url_parse(const char *text, sqllock_url **out, char *why,
                       size_t why_size);
void sqllock__url_free(sqllock_url *url);
/* The value of one hex digit, or -1 (core/url.c; redact.c decodes with
 * it too). */
int sqllock__hexval(int c);
/* The URL with every secret replaced by "***": the user info's password
 * (up to the last '@'), the values of password=-like parameters, and the
 * value of every query parameter that is not public (names are kept).
 * malloc'd, NULL on ENOMEM. */
char *sqllock__url_redact(const char *text);
/* The same with the value of every query parameter hidden, public ones
 * too: for a message about a parameter the driver refused, whose value
 * may be a password pasted into the wrong parameter (DESIGN C4). */
char *sqllock__url_redact_params(const char *text);
/* 1 when the query parameter `name` (decoded) is one whose value a
 * message may show (sslmode, host, socket, ...). */
int sqllock__url_param_public(const char *name);
/* What sqllock__scrub() needs to keep a URL's secrets out of messages:
 * the secrets redaction hides (as written and percent-decoded, with the
 * parts of them a first-'@' reading could show) and the URL's public
 * parts, as entries of a kind byte (below), the text and a NUL, ended by
 * a lone NUL. NULL on ENOMEM (or for a NULL text). Free with
 * sqllock__secrets_free(), which wipes it. */
char *sqllock__url_secrets(const char *text);
void sqllock__secrets_free(char *secrets);
#define SQLLOCK__SCRUB_SECRET 'S'     /* hidden wherever it appears */
#define SQLLOCK__SCRUB_BEFORE_AT 'A'  /* hidden where an '@' follows it */
#define SQLLOCK__SCRUB_PUBLIC 'P'     /* a secret inside it stays */
/* The shortest secret hidden wherever it appears: shorter ones would
 * turn every message into asterisks (and show where they were). */
#define SQLLOCK__SCRUB_MIN 4
/* Replaces each secret of the list in msg (a string in a buffer of at
 * most SQLLOCK__ERRMSG_MAX bytes) with "***", except where it lies
 * within a public part or a word of the drivers' own messages (a tail
 * before an '@' always); cuts at a UTF-8 boundary if the result does
 * not fit. A NULL list does nothing. */
void sqllock__scrub(char *msg, size_t size, const char *secrets);
/* 1 when `w` is one of the words of the connect messages that
 * sqllock__scrub() never takes out (in any case). */
int sqllock__message_word(const char *w);
/* Zeroes n bytes at p in a way the compiler keeps before a free(). */
void sqllock__wipe(void *p, size_t n);

/* Failover (core/failover.c). Connects db->drv to the URL's hosts in
 * turn, by the one policy of every driver, into db->conn; on failure
 * fills `err` (the status in err->status too) and returns it. */
int sqllock__connect_hosts(sqllock_db *db, const sqllock_url *url,
                           sqllock_dberr *err);

/* Registry (core/registry.c). 1 if `scheme` names a driver sqllock ships,
 * built in or not. */
int sqllock__scheme_known(const char *scheme);
/* The oldest driver version registered: 14, the counted statement table
 * (sqllock_driver.h). */
#define SQLLOCK_DRIVER_VERSION_MIN 14
/* The version of the driver refused for `scheme` (its name copied to
 * `name`), or 0 when none was. */
int sqllock__scheme_refused(const char *scheme, char *name, size_t size);
void sqllock__register_builtin(void);

/* Statements (core/stmt.c). Runs the dialect's statement `id` with the core
 * arguments `args`, prepared once per connection; the result is left open
 * for sqllock__fetch() and must be ended with sqllock__end(). */
int sqllock__run(sqllock_db *db, sqllock_sql_id id, const sqllock_value *args,
                 int nargs, const char *what);
/* The dialect's statement `id`, or NULL when the dialect has none (a NULL
 * text, or a table that ends before it). */
const sqllock_sql *sqllock__sql_of(const sqllock_driver *drv, sqllock_sql_id id);
int sqllock__fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                   const char *what);
void sqllock__end(sqllock_db *db, sqllock_sql_id id);

/* Transactions on the handle's connection (core/stmt.c). rollback keeps
 * the handle's current error and only drops a broken connection. */
/* Statements the core has sent, all handles together: one per execute,
 * begin, commit and rollback (a prepare, once per connection, is not
 * counted). For bench/bench_many.c's count of round trips; relaxed. */
extern _Atomic uint64_t sqllock__statements_sent;
int sqllock__begin(sqllock_db *db, const char *what);
/* Whether a BEGIN can wait for the next statement (sqllock__run(),
 * sqllock__run_dyn()) and go in its round trip, db->begin_pending: the
 * driver has execute_txn(), and the connection is the
 * library's own. */
int sqllock__can_defer_begin(const sqllock_db *db);
/* Runs `sql` (cached as sqllock__run_dyn() caches it) as the last
 * statement of the handle's transaction and commits: in one round trip
 * with the driver's execute_txn() (and the deferred BEGIN too, if still
 * pending), else the statement, then COMMIT. *affected: the rows it
 * changed. On failure the caller rolls back. */
int sqllock__run_dyn_commit(sqllock_db *db, const char *sql,
                            const sqllock_value *args, int nargs,
                            int64_t *affected, const char *what);
/* Sends a deferred BEGIN now, on its own (before the application's own
 * statements on the native connection). */
int sqllock__begin_flush(sqllock_db *db, const char *what);
int sqllock__commit(sqllock_db *db, const char *what);
void sqllock__rollback(sqllock_db *db);

/* Row-lock transactions (core/txn.c), for the calls that run statements
 * on a handle that may have a sqllock_txn open (R7). Before a statement:
 * SQLLOCK_OK, or SQLLOCK_EMISUSE when the handle's transaction has
 * failed (its database transaction ended, or may have: nothing may run
 * in it any more) or lost its connection, with a message that says so.
 * After a statement failed with `status`: when that may have ended the
 * database's transaction, the transaction is rolled back and marked
 * failed, and its later calls are refused; returns `status`. */
int sqllock__txn_check(sqllock_db *db, const char *what);
int sqllock__txn_failed(sqllock_db *db, int status);
/* A row-lock transaction (core/txn.c); its state is read by the
 * statement layer below it. */
enum sqllock__txn_state {
    TXN_PENDING,      /* nothing sent yet (SQLite: BEGIN IMMEDIATE not run) */
    TXN_OPEN,
    TXN_FAILED,       /* rolled back after a failure (R7); the handle's
                         transaction until rolled back or freed */
    TXN_OVER
};
struct sqllock_txn {
    sqllock_db *db;
    enum sqllock__txn_state state;
    int joined;       /* the application's transaction (sqllock_txn_join()):
                         nothing begins, commits or rolls it back here */
    int64_t saved_timeout_ms; /* a borrowed connection's own row-lock wait,
                                 put back when the txn ends; -1 unread */
    int64_t lock_timeout_ms;
    int ended_by;     /* the status that ended it early, or SQLLOCK_OK */
    char why[SQLLOCK__ERRMSG_MAX];  /* TXN_FAILED: that failure's message */
};
/* 1 while the handle's sqllock_txn has sent nothing yet: no database
 * transaction is open, so the connection may be replaced. */
static inline int sqllock__txn_pending(const sqllock_db *db)
{
    return db->txn != NULL && db->txn->state == TXN_PENDING;
}
/* 1 when the handle's transaction has failed (R7). */
static inline int sqllock__txn_is_failed(const sqllock_db *db)
{
    return db->txn != NULL && db->txn->state == TXN_FAILED;
}
/* For the row locks of a transaction (core/txn_lock.c), from its life
 * (core/txn.c): sqllock__txn_check_open() refuses a call in a failed or
 * ended transaction; sqllock__txn_start() begins it (SQLite: takes the
 * write lock, waiting as `mode` says; *taken 0 when SKIP LOCKED found the
 * database busy); sqllock__txn_set_lock_timeout() sets the row-lock wait
 * when it changes; sqllock__txn_ends() says whether a status may have
 * ended the database's transaction, and sqllock__txn_end_failed() then
 * rolls it back and fails the sqllock_txn (R7), returning `status`. */
int sqllock__txn_check_open(sqllock_txn *t, const char *what);
int sqllock__txn_start(sqllock_txn *t, sqllock_lock_mode mode, int *taken);
int sqllock__txn_set_lock_timeout(sqllock_txn *t, int64_t ms);
/* As the transaction ends: a borrowed connection's own row-lock wait
 * put back, the handle's message kept (core/txn_timeout.c). */
void sqllock__txn_restore_lock_timeout(sqllock_txn *t);
int sqllock__txn_ends(int status);
int sqllock__txn_end_failed(sqllock_txn *t, int status);
/* sqllock__run(), sqllock__fetch(), sqllock__run_dyn() and
 * sqllock__fetch_dyn() inside the handle's row-lock transaction, if one
 * is open: refused in a failed one, and failing it when the statement's
 * failure ended it (R7). */
int sqllock__txn_run(sqllock_db *db, sqllock_sql_id id,
                     const sqllock_value *args, int nargs, const char *what);
int sqllock__txn_fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                       const char *what);
int sqllock__txn_run_dyn(sqllock_db *db, const char *sql,
                         const sqllock_value *args, int nargs,
                         const char *what, sqllock_stmt **out);
int sqllock__txn_fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                           const char *what);
/* *in_txn = 1 when the handle's statements run inside a transaction: a
 * sqllock_txn on it (begun or joined), or, on a borrowed connection, the
 * application's own (the driver's answer, no round trip). */
int sqllock__in_txn(sqllock_db *db, int *in_txn);

/* Runs SQL text built at run time, prepared once per connection and kept
 * in the handle's cache; *out is the statement, whose result is read with
 * the driver's fetch() and ended with its reset(). */
int sqllock__run_dyn(sqllock_db *db, const char *sql, const sqllock_value *args,
                     int nargs, const char *what, sqllock_stmt **out);

/* fetch() on such a statement, with the error handling of the above
 * (the statement is reset on failure). */
int sqllock__fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                       const char *what);

/* Runs free SQL text (prepared, executed, finalized at once) with `args`
 * bound in order; if it returns a row, *first (when not NULL) gets the
 * first column of the first row as an integer and *has_row is set; the
 * affected-row count goes to *affected when not NULL. For tests and tools
 * that need a few statements of their own on the handle's connection. */
int sqllock__exec_sql(sqllock_db *db, const char *sql,
                      const sqllock_value *args, int nargs, int *has_row,
                      int64_t *first, int64_t *affected);

/* Notifications (core/notify.c), for drivers with SQLLOCK_CAP_NOTIFY. They
 * leave the handle's message alone and drop a broken connection. */
int sqllock__can_notify(const sqllock_db *db);
/* *usable = 1 when the connection (opened now if need be) can carry
 * session-lock wake-ups (LEASE_ACQUIRE_WAKE and the rest, sqllock_driver.h),
 * else 0. Fails only when the connection cannot be opened (that status,
 * the handle's message set), so that a caller does not wait for a second
 * connect timeout in its own statement. */
int sqllock__session_wake(sqllock_db *db, int *usable);
/* A routine was refused on this connection (core/lease.c): marks it, and
 * the routines its refusal implies, as not to be tried again. */
void sqllock__routine_refused(sqllock_db *db, sqllock_sql_id id);
int sqllock__listen(sqllock_db *db, const char *channel, int on);
/* Waits for a notification on the channels LISTENed to, until `until_us`
 * (a sqllock__now_us() time), asking the driver for a slice at a time
 * (SQLLOCK__WAIT_SLICE_MS: its timeout counts CLOCK_MONOTONIC time);
 * *woke = 1 when one came. */
int sqllock__wait_notify(sqllock_db *db, int64_t until_us, int *woke);

/* In-process wake-ups (core/wake.c). A key names a lock on a database
 * (the URL and the name hashed); a release posts to its key and waiters
 * sleep until a post or their timeout. Keys share slots, so a wake-up may
 * be spurious: a waiter only tries again. */
uint64_t sqllock__wake_key(const char *url, const char *name);
uint64_t sqllock__wake_gen(uint64_t key);
void sqllock__wake_post(uint64_t key);
/* Sleeps until `until_us` (a sqllock__now_us() time) unless the key's
 * generation differs from `seen`; 1 when woken by a post. */
int sqllock__wake_wait(uint64_t key, uint64_t seen, int64_t until_us);
/* The PostgreSQL channel of lock `name`: "sqllock_" and 16 hex digits of
 * its hash; out must hold SQLLOCK__CHANNEL_MAX bytes. */
#define SQLLOCK__CHANNEL_MAX 32
void sqllock__wake_channel(const char *name, char *out);

/* For the tests, which must know that a waiter is asleep before they
 * release (test_pooler's wake-up cases): when not NULL, a waiting
 * sqllock_lease_acquire() calls it just before each sleep between tries,
 * with the lease's name, the sleep's length, and 1 when it sleeps
 * LISTENing for a notification (0 when it polls). Set it before the
 * waiting threads start; it runs on the waiter's thread. */
typedef void sqllock__backoff_hook(const char *name, int64_t sleep_ms,
                                   int listening);
extern sqllock__backoff_hook *_Atomic sqllock__on_backoff;

/* The watchdog (core/watch.c). The handle and its leases, below it, reach
 * a handle's renewer only through these, which watch.c sets on the handle
 * (db->renewer_ops) with the renewer when the first watch starts it. */
struct sqllock__renewer;
typedef struct sqllock__renewer_ops {
    /* Stops and joins the renewer, unwatching every lease. */
    void (*free)(struct sqllock__renewer *r);
    /* Removes `lease` from the renewer's list, waiting for a renewal or
     * a callback of it in progress. */
    void (*forget)(struct sqllock__renewer *r, sqllock_lease *lease);
    /* sqllock_lease_renew_ttl(): the watched `lease`'s entry takes the
     * new ttl and margin (its interval and retry following them where
     * they were the defaults), after a renewal of it in flight has
     * settled, so that none with the old ttl is sent after this returns.
     * SQLLOCK_EINVAL (nothing changed) when a given interval is not
     * shorter than ttl - margin; SQLLOCK_EMISUSE from the lease's own
     * watch callback. Nothing for a lease not watched. */
    int (*retune)(struct sqllock__renewer *r, sqllock_lease *lease,
                  int64_t ttl_ms, int64_t margin_ms);
} sqllock__renewer_ops;
/* Renews the lease named by (name, owner, token) on `db`: *affected is 1
 * when it was still ours, 0 when lost (core/lease.c). `fast`: with the
 * asynchronous commit of SQLLOCK_LEASE_FAST. */
int sqllock__lease_renew_raw(sqllock_db *db, const char *name,
                             const char *owner, int64_t token, int64_t ttl_ms,
                             int fast, int64_t *affected);
/* The state word of a lease and its local deadline (core/lease.c), for
 * the renewer. */
void sqllock__lease_set_state(sqllock_lease *l, int state);
void sqllock__lease_extend(sqllock_lease *l, int64_t deadline_us);
/* Moves the local deadline back to `deadline_us` if it is later. */
void sqllock__lease_shorten(sqllock_lease *l, int64_t deadline_us);
int64_t sqllock__lease_deadline(const sqllock_lease *l);

/* Shared by the files of leases (core/lease.c, lease_wait.c,
 * lease_many.c). */
/* The handle no longer holds: renewal stops first (L7). */
void sqllock__lease_forget(sqllock_lease *l);
/* Takes the lease off its handle's renewer, if watched (core/lease.c). */
void sqllock__lease_unwatch(sqllock_lease *l);
/* A fresh random owner id in l->owner. */
int sqllock__lease_new_owner(sqllock_lease *l);
/* The acquire's statements in the caller's transaction (no RETURNING):
 * LEASE_ACQUIRE, then TOKEN_NEXT and LEASE_SET_TOKEN while the row is
 * locked. args: name, owner, holder, ttl_ms. */
int sqllock__lease_acquire_statements(sqllock_db *db,
                                      const sqllock_value *args, int *got,
                                      int64_t *token);
/* SQLLOCK_EMISUSE, nothing sent, while a row-lock transaction is open on
 * the lease's handle (R8). */
int sqllock__lease_refuse_in_txn(sqllock_lease *l, const char *what);
/* The first column of the first row of statement `id`, then the rest of
 * the result drained, so that the statement has fully run. */
int sqllock__first_int(sqllock_db *db, sqllock_sql_id id, int *has_row,
                       int64_t *value, const char *what);
/* 1 for a status that says the database rolled the statement back
 * (deadlock, serialization failure, lock wait timed out): running it
 * again is safe. */
int sqllock__rolled_back(int rc);
/* How often a lease statement that the database rolled back is run
 * again. */
#define SQLLOCK__ROLLBACK_RETRIES 3
/* How long a release keeps trying after a lost connection by default
 * (sqllock_lease_options.release_timeout_ms, contract C3). */
#define SQLLOCK__RELEASE_TIMEOUT_MS 60000

/* A blocking acquire's wait between two tries (core/lease_wait.c, L9),
 * for one name or several: start, then a pause after each busy try on
 * the lease `b` found held (index `i` of the names; `seen` its
 * in-process wake-up generation read before the try), then end, which
 * stops listening. The caller checks `deadline` (sqllock__now_ms()). */
typedef struct sqllock__wait {
    sqllock_db *db;
    int64_t deadline;
    int n;                      /* names waited on */
    int attempt;                /* pauses so far */
    int notify;                 /* LISTEN/NOTIFY may be used */
    int session;                /* session-lock wake-ups: 1, 0, -1 unknown */
    int plain_next;             /* one plain backoff before the next pause
                                   on a companion lock */
    int listening;              /* some LISTEN is on */
    char listened[SQLLOCK_LEASE_MANY_MAX];   /* per name: LISTEN sent */
} sqllock__wait;
void sqllock__wait_start(sqllock__wait *w, sqllock_db *db, int n,
                         int64_t wait_ms);
void sqllock__wait_pause(sqllock__wait *w, sqllock_lease *b, int i,
                         uint64_t seen);
void sqllock__wait_end(sqllock__wait *w, sqllock_lease *const *leases);

/*
 * One name, one meaning (core/kind.c, contract N1). A shared/exclusive
 * lock, a semaphore or an election named NAME keeps its rows under
 * derived names, and it also occupies the plain lease row NAME itself
 * with a kind marker: a lease granted to a fixed, public owner per kind
 * (never 32 hex digits, so no client can have it, attach to it, renew or
 * release it) that lasts SQLLOCK__KIND_TTL_MS, which is never. A plain
 * acquire of NAME then finds it held, on every driver and by every
 * client version, and tells the marker from a holder when it reads the
 * row after a busy try; a primitive of another kind, or of the same
 * name while a plain lease holds it, is refused with SQLLOCK_EKIND.
 */
#define SQLLOCK__KIND_PLAIN 0
#define SQLLOCK__KIND_RW 1
#define SQLLOCK__KIND_SEM 2
#define SQLLOCK__KIND_LEADER 3
/* 1000 years of 365.25 days: within PostgreSQL's timestamptz, MySQL's
 * DATETIME(6) (to the year 9999: a server clock before 8999 is enough)
 * and SQLite's integer ms, and far past any reaper's grace (at most
 * about 285 years, core/reaper.c), so no reaper ever deletes it. */
#define SQLLOCK__KIND_TTL_MS (INT64_C(1000) * 36525 * 864 * 1000)
/* How often a waiting plain acquire reads NAME's row again while it
 * finds NAME held (a marker made while it waited ends the wait). */
#define SQLLOCK__KIND_RECHECK_MS 1000
/* The kind of a marker's owner text (SQLLOCK__KIND_RW, _SEM, _LEADER),
 * or SQLLOCK__KIND_PLAIN for any other owner. */
int sqllock__kind_of_owner(const char *owner);
/* Makes sure the plain row `base` (a checked name) is the marker of
 * `kind`: SQLLOCK_OK when it is (found, or granted now), SQLLOCK_EKIND
 * with a message naming what is there (another kind's marker, a live
 * plain lease), or the error of the statements. */
int sqllock__kind_mark(sqllock_db *db, const char *base, int kind);
/* After a plain acquire of the lease `l` ended with status `rc`: when
 * rc is SQLLOCK_BUSY, `l` is no derived row and the check is due (always
 * when next_ms is NULL, else once *next_ms has passed, which it then
 * moves SQLLOCK__KIND_RECHECK_MS on), reads the row of l->name and
 * returns SQLLOCK_EKIND with a message when it is a kind marker. Else
 * returns rc, with the handle's status and message as they were. */
int sqllock__kind_busy(sqllock_lease *l, int rc, int64_t *next_ms);
/* The public acquire calls' gate (issue 26 item 8b): SQLLOCK_OK for a
 * lease of a plain name; for the row of a leadership lease
 * (sqllock_leader_lease_new()), its election's marker made first (once
 * per handle), else SQLLOCK_EKIND; for any other derived row
 * SQLLOCK_EMISUSE with a message naming the primitive to acquire it
 * through. */
int sqllock__lease_acquirable(sqllock_lease *l);
/* Grants the lease row `name` to the fixed owner `owner` with `holder`
 * and `ttl_ms` (no wake-up companion), as a try of a lease handle does,
 * without keeping a handle: SQLLOCK_OK, SQLLOCK_BUSY, or an error
 * (core/lease.c). */
int sqllock__lease_grant_fixed(sqllock_db *db, const char *name,
                               const char *owner, const char *holder,
                               int64_t ttl_ms);
/* A try of `l` as the library's own primitives make it, without the
 * public calls' gate and kind check: the fair lease's try, or the
 * plain one (core/lease.c). */
int sqllock__lease_try(sqllock_lease *l);
/* SQLLOCK_ECANCELED when sqllock_lease_cancel() asked for the end of the
 * wait on l (the request is then used up), else SQLLOCK_OK
 * (lease_acquire.c). */
int sqllock__lease_canceled(sqllock_lease *l);

/* Fair waiting (core/lease_fair.c, contract M3). sqllock__lease_try_plain
 * is sqllock_lease_try_acquire() without a fair lease's look at its
 * queue; sqllock__fair_try and sqllock__fair_acquire are the fair
 * lease's try and waiting acquire (arguments already checked). */
/* The grant of l's row, once (core/lease_grant.c): SQLLOCK_OK with the
 * lease held, SQLLOCK_BUSY, or the statement's failure. */
int sqllock__lease_insert(sqllock_lease *l);
int sqllock__lease_try_plain(sqllock_lease *l);
int sqllock__fair_try(sqllock_lease *l);
int sqllock__fair_acquire(sqllock_lease *l, int64_t wait_ms);

/* Value constructors (core/stmt.c). sqllock__cell() is the value of one
 * of the application's cells; sqllock__cells() those of cells[0..n), in
 * stack[0..nstack) when they fit, else in a block of their own, which the
 * caller frees when *out is not stack (*out is NULL for n == 0). */
sqllock_value sqllock__int(int64_t v);
sqllock_value sqllock__text(const char *s);
sqllock_value sqllock__cell(const sqllock_cell *c);
int sqllock__cells(sqllock_db *db, const sqllock_cell *cells, int n,
                   sqllock_value *stack, int nstack, sqllock_value **out);

/* The caller's input (core/check.c). A handle: SQLLOCK_EINVAL for NULL,
 * SQLLOCK_EMISUSE, saying so, when its open failed. */
int sqllock__check_db(sqllock_db *db);
/* Lock names and record keys: 1..SQLLOCK_NAME_MAX bytes of valid UTF-8
 * without control characters. `what` is "lock name" or "record key" for
 * the message. */
int sqllock__check_name(sqllock_db *db, const char *name, const char *what);
/* The version a versioned write expects: 1..INT64_MAX - 1. */
int sqllock__check_version(sqllock_db *db, int64_t expected);

/* sqllock_record_get(), _create() and _cas() (core/record.c) for a
 * key the caller has checked: the library's own records, under derived
 * names (below), which sqllock__check_name() refuses. */
int sqllock__record_get(sqllock_db *db, const char *key, void **value,
                        size_t *len, int64_t *version);
int sqllock__record_create(sqllock_db *db, const char *key, const void *value,
                           size_t len);
int sqllock__record_cas(sqllock_db *db, const char *key, int64_t expected,
                        const void *value, size_t len, int64_t *new_version);
/* The key of a record the tool keeps about lock NAME (core/history.c):
 * prefix + NAME, or for a long NAME the name cut (at a character's
 * start) and a hash of the whole, in key[size] (at least
 * SQLLOCK_NAME_MAX + 1): "sqllock:history:NAME" (sqllock_history_key()),
 * "sqllock:slot:NAME" (sqllock_slot_key()). */
void sqllock__record_key(const char *prefix, const char *name, char *key,
                         size_t size);

/*
 * Derived names (core/check.c). A semaphore, a shared lock, a fair queue
 * or an election named NAME keeps its rows in the lease table under
 * names NAME + SQLLOCK__SEP + tag: the separator is a control character,
 * which no name a user gives may contain, so a derived name never meets
 * a user's lock; and all rows of NAME lie in the byte range
 * [NAME "\x1f", NAME " "), which LEASE_RANGE reads with one index range
 * scan. NAME itself (checked as a lock name, at most
 * SQLLOCK_PRIMITIVE_NAME_MAX bytes) may also be an ordinary lease row of
 * the primitive. A tag is printable ASCII, at most SQLLOCK__TAG_MAX
 * bytes, so a derived name fits the lease table's 255 bytes.
 */
#define SQLLOCK__SEP '\x1f'
#define SQLLOCK__TAG_MAX (SQLLOCK_NAME_MAX - SQLLOCK_PRIMITIVE_NAME_MAX - 1)
#define SQLLOCK__DERIVED_MAX SQLLOCK_NAME_MAX
/* Checks `base` (a lock name of at most SQLLOCK_PRIMITIVE_NAME_MAX bytes;
 * `what` names it in the message, e.g. "semaphore name") and writes
 * base SEP tag into out[SQLLOCK__DERIVED_MAX + 1]; tag NULL writes only
 * the range's low end's prefix (base SEP). */
int sqllock__derived_name(sqllock_db *db, char *out, const char *base,
                          const char *tag, const char *what);
/* The byte range of every derived name of `base` (already checked):
 * lo = base SEP, hi = base " ", each of SQLLOCK__DERIVED_MAX + 1 bytes. */
void sqllock__derived_range(const char *base, char *lo, char *hi);
/* A lease handle for a derived name (made by sqllock__derived_name()):
 * as sqllock_lease_new() without the lock-name check. */
int sqllock__lease_new_derived(sqllock_db *db, const char *derived,
                               const sqllock_lease_options *opts,
                               sqllock_lease **out);
/* The lease rows with lo <= name < hi (LEASE_RANGE;
 * SQLLOCK_EUNSUPPORTED without it), expired ones included (remaining_ms <= 0),
 * each handed to `cb` (its texts live until cb returns) until it returns
 * non-zero, which is then returned (core/rows.c). */
int sqllock__lease_range(sqllock_db *db, const char *lo, const char *hi,
                         int (*cb)(void *ctx, const sqllock_lease_info *),
                         void *ctx, const char *what);
/* The lease row of exactly `name` (a lock name or a derived name), with
 * its owner and holder copied into buf; *found 0 when there is none
 * (expired rows are found: check info->remaining_ms). */
#define SQLLOCK__LEASE_GET_BUF (SQLLOCK_OWNER_LEN + SQLLOCK_HOLDER_MAX + 2)
int sqllock__lease_get(sqllock_db *db, const char *name,
                       sqllock_lease_info *info,
                       char buf[SQLLOCK__LEASE_GET_BUF], int *found,
                       const char *what);

/* Identifiers of the application's tables (core/check.c):
 * [A-Za-z_][A-Za-z0-9_]*, at most SQLLOCK__IDENT_MAX bytes,
 * "schema.table" when `qualified`. */
#define SQLLOCK__IDENT_MAX 63
int sqllock__check_ident(sqllock_db *db, const char *s, int qualified,
                         const char *what);

/* SQL on the application's tables, built at run time (core/sqlbuild.c):
 * text appended, identifiers quoted, placeholders numbered as the
 * dialect writes them; `overflow` is set once text did not fit. */
#define SQLLOCK__SQL_MAX 2048
typedef struct sqllock__sqlbuf {
    const sqllock_dialect *d;
    char text[SQLLOCK__SQL_MAX];
    size_t len;
    int nph;
    int overflow;
} sqllock__sqlbuf;
void sqllock__sb_add(sqllock__sqlbuf *b, const char *s);
/* A validated identifier, quoted; "schema.table" becomes
 * "schema"."table". */
void sqllock__sb_ident(sqllock__sqlbuf *b, const char *ident);
void sqllock__sb_placeholder(sqllock__sqlbuf *b);
/* The guard (core/guard.c, contract G1): the dialect's LEASE_GUARD text
 * with its placeholders written in `style` (SQLLOCK_PARAM_*), numbered
 * from `first` where the style numbers them, into out[size]; *len (when
 * not NULL) its length. SQLLOCK_EUNSUPPORTED when the driver has none,
 * SQLLOCK_EINVAL when it does not fit, with the message on db. */
int sqllock__guard_text(sqllock_db *db, int style, int first, char *out,
                        size_t size, size_t *len);

/* Builds SELECT key FROM table WHERE key = <placeholder><suffix> with the
 * dialect's quoting, for a table whose identifiers were checked
 * (core/sqlbuild.c). */
int sqllock__sql_select_key(sqllock_db *db, const sqllock_table *t,
                            const char *suffix, char *out, size_t size);

/* Utilities (core/util.c). */
/* sqllock__now_us() in ms: the clock of the drivers' deadlines too. */
int64_t sqllock__now_ms(void);
/* The clock of local deadlines: CLOCK_BOOTTIME where there is one (it
 * counts a suspended system's sleep), else CLOCK_MONOTONIC; us. Every
 * timed wait ends at a time of this clock (DESIGN T1). */
int64_t sqllock__now_us(void);
/* The longest a wait blocks in one piece before it reads the deadline
 * clock again, so that a deadline that passed while the host was
 * suspended ends the wait at most this long after the resume (the
 * blocking calls count CLOCK_MONOTONIC time, which stops during a
 * suspend: util.c says why it is done this way). */
#define SQLLOCK__WAIT_SLICE_MS 1000
/* The ms that a wait ending at `until_us` (a sqllock__now_us() time) may
 * block for now, in one piece: the time left, rounded up, at most
 * SQLLOCK__WAIT_SLICE_MS; 0 once it has come. A poll() loop passes it as
 * its timeout and reads it again after each return. */
int64_t sqllock__wait_slice_ms(int64_t until_us);
/* Sleeps until `until_us` (signals do not end the sleep). */
void sqllock__sleep_until(int64_t until_us);
/* Sleeps `ms` from now, as sqllock__sleep_until(). */
void sqllock__sleep_ms(int64_t ms);
/* Initialises a condition variable of CLOCK_MONOTONIC, the only kind that
 * sqllock__cond_wait_until() waits on; 0 or an errno value. */
int sqllock__cond_init(pthread_cond_t *cv);
/* One wait on `cv` (of sqllock__cond_init()), `mu` held, for a signal or
 * until `until_us`, for one slice at most: ETIMEDOUT once the deadline
 * has come (at once when it had already), else 0 -- after a signal, a
 * spurious wake-up or the end of a slice alike, so the caller checks
 * its condition and calls again:
 *   while (!cond && sqllock__cond_wait_until(cv, mu, until) == 0) ; */
int sqllock__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                             int64_t until_us);
/* Fills buf with n bytes from the OS's random source. SQLLOCK_ESYS if
 * that fails. */
int sqllock__random(void *buf, size_t n);
/* A uniformly random integer in [0, bound] (bound >= 0), from a
 * per-thread generator seeded from the OS. */
int64_t sqllock__rand_upto(int64_t bound);
/* 1 if s[0..len) is valid UTF-8 with no control characters (C0, DEL). */
int sqllock__name_ok(const char *s, size_t len);
/* sqllock_parse_duration(), which also points *why (when `why` is not
 * NULL) at a sentence that says what is wrong with a text it refuses
 * (static; NULL on success), for the tool's messages. */
int sqllock__parse_duration(const char *text, int64_t *ms, const char **why);

#endif /* SQLLOCK_INTERNAL_H */
