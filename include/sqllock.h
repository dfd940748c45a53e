/*
 * sqllock.h -- distributed locks on the SQL database you already run.
 *
 * This is the one header an application includes. It declares four kinds
 * of object, all opaque handles:
 *
 *   sqllock_db      a connection to one database, opened from a URL; the
 *                   versioned-record and application-table calls
 *                   (sqllock_record_*, sqllock_table_*) work on it;
 *   sqllock_lease   a lease lock on one name, held through a sqllock_db;
 *   sqllock_txn     a database transaction on a sqllock_db, holding row
 *                   locks (SELECT ... FOR UPDATE) until it ends;
 *   sqllock_reaper  a thread with its own connection that deletes expired
 *                   lease rows;
 *
 * the plain structs that go with them (options, sqllock_table,
 * sqllock_cell, ...), and the free functions that name status codes and
 * parse durations.
 *
 * THREADS. A sqllock_db, and every sqllock_lease and sqllock_txn made from
 * it, is not thread-safe: use a handle, its leases and its transaction
 * from one thread at a time. Different handles may be used from different
 * threads at once. The exceptions say so where they are declared
 * (sqllock_lease_state(), sqllock_lease_cancel(),
 * sqllock_reaper_stats_get()); the driver registry
 * is thread-safe. After fork(), the child must not use handles the parent
 * opened (a database connection cannot be shared between processes): it
 * opens its own.
 *
 * MEMORY. Inputs are copied. A returned `const char *` is borrowed from its
 * handle and stays valid until the next call on that handle (or its free).
 * Every handle is freed by its own close/free call, and each of those accepts
 * NULL. The library never aborts, exits or prints.
 *
 * ERRORS. Every fallible call returns an int status, SQLLOCK_OK (0) on
 * success. Contention is a normal result (SQLLOCK_BUSY), not an error. After
 * any call, sqllock_errmsg() on the handle says what happened in words,
 * including the database's own message where there is one.
 *
 * RULES. The lock contract these calls keep is written in docs/contract.md.
 * Ids such as L5 or C3 below ("contract L5") name its rules: each is
 * stated in the section "Rules" of that page, under an anchor of its own
 * (docs/contract.md#l5, #c3, ...). Source comments that say "DESIGN L5"
 * name the same rule.
 *
 * VERSIONS. Each entry point says in which version of sqllock it first
 * appeared ("Added in 0.1.0"); a field that an options struct gained later
 * says which struct_version brought it. SQLLOCK_VERSION_* below and
 * sqllock_version_string() give the version. An entry point added since
 * the last release says the release it will first be in ("Added in
 * 0.2.0" while SQLLOCK_VERSION_* still say 0.1.0).
 */
#ifndef SQLLOCK_H
#define SQLLOCK_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SQLLOCK_VERSION_MAJOR 0
#define SQLLOCK_VERSION_MINOR 1
#define SQLLOCK_VERSION_PATCH 0

#if defined(_WIN32)
#define SQLLOCK_API
#elif defined(__GNUC__)
#define SQLLOCK_API __attribute__((visibility("default")))
#else
#define SQLLOCK_API
#endif

/* Returns the library's version as "MAJOR.MINOR.PATCH".
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_version_string(void);

/*
 * Status codes. One table drives the enum, sqllock_strerror() and
 * sqllock_errname(). Numbers are explicit and never reused: a retired code
 * stays in the table as SQLLOCK_OBSOLETEnn.
 *
 * Codes below 10 are outcomes of a lock operation that a correct program
 * expects to see; codes from 10 on are errors.
 *
 * SQLLOCK_EKIND (32, added in 0.9.0): a name is used as two kinds of lock
 * (contract N1), e.g. `sqllock run NAME` while `sqllock run NAME
 * --shared` holds it; the message names the kind in use and how to take
 * it. Not retryable: the name keeps its kind.
 */
#define SQLLOCK_STATUS_MAP(X)                                                  \
    X(OK,          0,  "success")                                             \
    X(BUSY,        1,  "the lock is held by another owner")                   \
    X(TIMEOUT,     2,  "the wait deadline passed before the lock was free")   \
    X(LOST,        3,  "the lease was lost: another owner took it over or "   \
                       "it was removed after it expired")                     \
    X(CONFLICT,    4,  "the version changed: another writer got there "      \
                       "first (or a condition did not hold)")                 \
    X(NOTFOUND,    5,  "no such record")                                      \
    X(EINVAL,      10, "invalid argument")                                    \
    X(ENOMEM,      11, "out of memory")                                       \
    X(EURL,        12, "malformed database URL")                              \
    X(ESCHEME,     13, "no driver is registered for the URL's scheme")        \
    X(ENOTBUILT,   14, "the driver for this URL scheme was not built into "   \
                       "this copy of sqllock")                                \
    X(ECONNECT,    15, "cannot connect to the database, or the connection "   \
                       "was lost")                                            \
    X(ENOSCHEMA,   16, "the sqllock tables do not exist: run `sqllock init` " \
                       "or sqllock_init()")                                   \
    X(ESCHEMAVER,  17, "the database's sqllock schema is newer than this "    \
                       "library")                                             \
    X(EDBBUSY,     18, "the database stayed busy (locked by another "         \
                       "writer) past the busy timeout; a retry is safe")      \
    X(EPERM,       19, "the database refused the operation (permission "      \
                       "denied or read-only)")                                \
    X(EDB,         20, "the database reported an error")                      \
    X(ENOTHELD,    21, "the lease is not held by this handle")                \
    X(ESYS,        22, "an operating-system call failed")                     \
    X(EMISUSE,     23, "the call is not valid in the handle's state")         \
    X(EUNSUPPORTED, 24, "the driver does not support this operation")     \
    X(EEXISTS,     25, "a row with this key already exists (unique "       \
                       "violation)")                                          \
    X(ELOCKED,     26, "the row is locked by another transaction (NOWAIT, "  \
                       "or the lock wait timed out); a retry is safe")        \
    X(EDEADLOCK,   27, "the database detected a deadlock and rolled the "     \
                       "transaction back; a retry is safe")                   \
    X(ESERIALIZATION, 28, "the database could not serialize the "             \
                       "transaction and rolled it back; a retry is safe")     \
    X(ECANCELED,   29, "the statement was canceled or ran past its time "     \
                       "limit")                                               \
    X(EFULL,       30, "the database is out of space (disk full, or a size "  \
                       "limit reached): the statement wrote nothing")         \
    X(EPROXY,      31, "a connection pooler or proxy between the client and " \
                       "the database broke what the call needs (a "           \
                       "transaction left open, or session state lost): "      \
                       "nothing was committed; see the URL's pooler= "        \
                       "parameter")                                           \
    X(EKIND,       32, "the name is in use as another kind of lock (a "       \
                       "plain lease, a shared/exclusive lock, a semaphore "   \
                       "or an election): one name has one meaning")

typedef enum sqllock_status {
#define SQLLOCK_STATUS_ENUM_(name, code, text) SQLLOCK_##name = code,
    SQLLOCK_STATUS_MAP(SQLLOCK_STATUS_ENUM_)
#undef SQLLOCK_STATUS_ENUM_
    SQLLOCK_STATUS_END_ = 33
} sqllock_status;

/* 1 if the status reports contention or a transaction the database rolled
 * back, so that the same operation may simply be tried again: BUSY,
 * TIMEOUT, CONFLICT, EDBBUSY, ELOCKED, EDEADLOCK, ESERIALIZATION. 0 for
 * success, LOST (the hold is gone; acquire again instead) and errors.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_retryable(int status);

/* A sentence that describes a status code; never NULL.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_strerror(int status);
/* The code's name, e.g. "SQLLOCK_BUSY"; "SQLLOCK_UNKNOWN" for a stray value.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_errname(int status);

/* Limits. A lock name is 1..SQLLOCK_NAME_MAX bytes of valid UTF-8 without
 * control characters. An owner id is SQLLOCK_OWNER_LEN hexadecimal digits. */
#define SQLLOCK_NAME_MAX 255
#define SQLLOCK_OWNER_LEN 32
#define SQLLOCK_HOLDER_MAX 255
/* A semaphore's, shared lock's, fair lock's or election's name: a lock
 * name of at most this many bytes (the rest of the lease table's 255
 * bytes names the rows it keeps under it). Added in 0.9.0. */
#define SQLLOCK_PRIMITIVE_NAME_MAX 200

/* Waits longer than this are "forever" (see sqllock_lease_acquire()). */
#define SQLLOCK_WAIT_FOREVER INT64_MAX

/* ------------------------------------------------------------------------ */
/* Database handles                                                          */
/* ------------------------------------------------------------------------ */

typedef struct sqllock_db sqllock_db;

/*
 * Options for sqllock_open(). Zero in any field means its default, so
 *     sqllock_options opts = SQLLOCK_OPTIONS_INIT;
 * and a zeroed struct are both valid. `struct_version` lets later versions
 * append fields: set it with SQLLOCK_OPTIONS_INIT.
 */
typedef struct sqllock_options {
    int struct_version;
    /* How long one statement may wait for the database's own locks before
     * it reports SQLLOCK_EDBBUSY (SQLite busy timeout). Default 5000 ms. */
    int64_t busy_timeout_ms;
    /* How long a connect may take, through TCP, TLS and authentication;
     * a server (or network) that stops answering midway fails it with
     * SQLLOCK_ECONNECT. Default 10000 ms. It applies to each host of a
     * multi-host URL in turn, so a host that never answers is given up
     * after it and the next one tried (a URL of N hosts that all fail to
     * answer can take N times it). PostgreSQL: to the millisecond (a
     * connect_timeout in the URL is not used). MySQL/MariaDB: whole
     * seconds, rounded up. */
    int64_t connect_timeout_ms;
    /*
     * How long the client waits for the server's answer to one statement
     * (struct_version 2; with version 1 the default applies). Default
     * 30000 ms; negative is SQLLOCK_EINVAL. It bounds each round trip on
     * the client's side, so that a network that stalls (packets dropped
     * or held, a server frozen; the kernel may still acknowledge the
     * bytes, so TCP keepalives notice nothing) never blocks a call
     * forever. When it passes, the connection is dropped and the call
     * returns SQLLOCK_ECONNECT with a message saying that the server did
     * not answer within N ms; the next call connects again. The status
     * is that of a lost connection, not SQLLOCK_ECANCELED, because the
     * outcome is just as unknown: the statement may have run.
     *   - An acquire whose answer never came may have been granted on
     *     the server: the handle does not hold it, and the row stays
     *     until its ttl passes (or the reaper removes it); the same name
     *     is busy until then.
     *   - A release or a renewal whose answer never came is sent once
     *     more on a fresh connection (contract C3; see
     *     sqllock_lease_release()), so such a call can take this timeout
     *     twice plus a connect. A release that fails again may not have
     *     happened: the handle keeps its hold (release again), and the
     *     lease lasts at most until its ttl.
     *   - A renewal's failure makes a watched lease UNCERTAIN, then LOST
     *     at its local deadline (contract L6, L7). A watched lease's LOST
     *     callback can come up to the longer of this timeout and
     *     connect_timeout_ms after the local deadline (the renewer may be
     *     waiting in a statement or a reconnect); sqllock_lease_state() is
     *     exact. Keep both below the lease's safety margin to hear LOST
     *     before the server can let another owner in.
     * Waits the server itself bounds are added, not cut: a row-lock wait
     * of a sqllock_txn may take its lock_timeout_ms on top of this (the
     * longest lock timeout the handle has used counts for all its
     * statements; a transaction with a longer one than before reconnects
     * first, so that the new bound applies), and the LISTEN wait of a
     * PostgreSQL acquire is timed by its own deadline. MySQL/MariaDB apply
     * it, with the lock wait, as the client's read and write timeouts in
     * whole seconds rounded up; Oracle's libmysqlclient documents up to
     * three reads, so there a call can take up to three times as long
     * (what each client library was seen to do: docs/contract.md,
     * "Bounded calls"). SQLite has no network:
     * busy_timeout_ms bounds its waits, and this is not used.
     */
    int64_t statement_timeout_ms;
} sqllock_options;

#define SQLLOCK_OPTIONS_VERSION 2
#define SQLLOCK_OPTIONS_INIT { SQLLOCK_OPTIONS_VERSION, 0, 0, 0 }

/*
 * Opens a database handle from a URL:
 *
 *   sqlite:///absolute/path/locks.db   sqlite:relative/path/locks.db
 *   postgres://user:pass@host:port/db  postgresql://...
 *   mysql://user:pass@host:port/db     mariadb://...
 *
 * `opts` may be NULL. On success *out is a connected handle. On failure the
 * status says why and *out is STILL set (unless the status is SQLLOCK_EINVAL
 * for a NULL `out`, or SQLLOCK_ENOMEM): read sqllock_errmsg(*out), then
 * sqllock_close() it. The database must already hold the sqllock schema for
 * lock calls to work (see sqllock_init()).
 *
 * `sqlite::memory:` is refused with SQLLOCK_EURL: an in-memory database
 * lives in one connection, so it cannot lock anything between processes.
 *
 * Several hosts. A PostgreSQL or MySQL/MariaDB URL may list up to 16
 * hosts, each with an optional port, IPv6 addresses in brackets:
 *
 *   postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write
 *   mysql://user:pass@h1:3306,h2:3307,[::1]:3308/db
 *
 * (a primary and its standbys, a MariaDB Galera cluster's nodes). Every
 * database follows one policy (docs/drivers.md, "Host lists"): the hosts
 * are tried in the order given, one connect each with the connect timeout
 * and the URL's other parameters; a host that cannot be reached, refuses
 * the connection for another reason than the credentials (too many
 * connections, an unknown database, TLS), drops it during the session
 * set-up, is a standby that target_session_attrs=read-write turns down,
 * or is a Galera node that is not ready (wsrep_ready OFF: not part of the
 * cluster's primary component) is passed over for the next. Refused
 * credentials (SQLLOCK_EPERM) end the connect at once, since every host
 * gets the same ones (libpq's documented rule for its own lists). When no
 * host will do, the status is SQLLOCK_ECONNECT and the message names each
 * host tried and why (never the password). The handle keeps the
 * connection it got; when the connection is lost later, the call that
 * sees it reports SQLLOCK_ECONNECT and the next call connects again,
 * starting from the first host. An empty entry, a bad port, a bare IPv6
 * address, more than 16 hosts, `socket=` with several hosts, or a
 * PostgreSQL list in the query (host=h1,h2) is SQLLOCK_EURL.
 *
 * TLS and credentials (docs/credentials.md). A PostgreSQL URL
 * takes libpq's parameters (sslmode, sslrootcert, sslcert, sslkey,
 * passfile, service, ...). A MySQL/MariaDB URL takes ssl_mode (DISABLED,
 * PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY), ssl_ca, ssl_capath,
 * ssl_cert, ssl_key, ssl_cipher, ssl_crl, ssl_crlpath, and option_file
 * and option_group for the user, password and TLS settings of a MySQL
 * option file (~/.my.cnf, group [client], when the URL names neither user
 * nor password); the URL's own values win. No part of a password is ever
 * part of a message (contract C4).
 *
 * Connection poolers (PostgreSQL; docs/poolers.md). The URL says what is
 * between the client and the server: `pooler=none` (the default: the
 * connection is the client's own), `pooler=transaction` (PgBouncer in
 * transaction mode: no prepared statement, session setting or LISTEN
 * outlives a transaction), `pooler=session` (a connect waits, within the
 * connect timeout, until the pooler has given it a server connection)
 * or `pooler=pgpool` (pgpool-II: no LISTEN through it).
 * `listen_host=H&listen_port=P` name the server itself, for waiters to
 * LISTEN on past the pooler; without them waiters behind a transaction
 * pooler or pgpool-II poll. These parameters are sqllock's and do not go
 * to libpq.
 *
 * SQLLOCK_EPROXY (any call that runs a statement). A statement that must
 * commit on its own left the connection inside a transaction that the
 * library did not begin: something in between opened one (pgpool-II in
 * raw mode does, on a new backend). It was rolled back; nothing was
 * committed. Also when the statements a connection prepared are on
 * another server connection: a transaction pooler the URL does not
 * declare (the message says to add pooler=transaction); nothing ran.
 * A statement sent while the application has a transaction of its own
 * open on the native handle is refused with SQLLOCK_EMISUSE, unsent.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_open(const char *url, const sqllock_options *opts,
                             sqllock_db **out);

/* Closes the connection and frees the handle, its leases' database state
 * excepted: leases still held stay held in the database until they expire.
 * Free the leases first (sqllock_lease_free()). Accepts NULL.
 * Added in 0.1.0. */
SQLLOCK_API void sqllock_close(sqllock_db *db);

/* The last status and message on this handle. The message names what was
 * wrong and includes the database's own message and code where there is
 * one; it has no trailing newline. A NULL handle gives "no database handle".
 * sqllock_errcode() returns the last status (SQLLOCK_OK after a success).
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_errmsg(const sqllock_db *db);
SQLLOCK_API int sqllock_errcode(const sqllock_db *db);

/* The name of the handle's driver ("sqlite", "postgres", "mysql").
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_db_driver(const sqllock_db *db);

/* The driver's own connection (sqlite3 *, PGconn *, MYSQL *), borrowed: do
 * not close it. NULL when not connected.
 * Added in 0.1.0. */
SQLLOCK_API void *sqllock_db_native(sqllock_db *db);

/*
 * A handle over the application's own open connection (contract G2):
 * `scheme` names the driver ("postgres", "mysql", "sqlite") and `native`
 * is that driver's connection, a `PGconn *`, a `MYSQL *` or a
 * `sqlite3 *`, opened by the application with the same client library
 * this copy of sqllock uses (libpq, libmysqlclient/libmariadb, the
 * system's SQLite). `opts` may be NULL (statement_timeout_ms bounds a
 * round trip on PostgreSQL; on MySQL the connection's own read and write
 * timeouts do; the connect options are not used).
 *
 * The connection stays the application's: sqllock_close() frees the
 * handle and leaves the connection open; the library never reconnects
 * it (after a lost connection every call fails with SQLLOCK_ECONNECT),
 * changes no session setting it does not put back (the row-lock wait of
 * a transaction), and prepares nothing the application could meet
 * (PostgreSQL: unnamed statements). Use the handle from the thread that
 * uses the connection, between the application's own statements, never
 * while one of them has a result open.
 *
 * What runs on it: row locks (sqllock_txn_join() inside the
 * application's transaction, or sqllock_txn_begin() when none is open),
 * the versioned-record and table calls, sqllock_table_guarded_update()
 * and sqllock_db_exec(). Outside a sqllock_txn they run inside the
 * application's transaction when it has one open (commit or roll back
 * with it), else each commits on its own. Leases, the watchdog, the
 * reaper, sqllock_init() and sqllock_list() need a connection of the
 * library's own (a grant must commit by itself, contract L10) and fail
 * with SQLLOCK_EMISUSE here.
 *
 * SQLLOCK_EINVAL for a NULL or empty scheme or a NULL connection,
 * SQLLOCK_ESCHEME / SQLLOCK_ENOTBUILT for an unknown or absent driver,
 * SQLLOCK_EUNSUPPORTED for a driver that cannot borrow. As with
 * sqllock_open(), *out is set whenever memory allows, even on failure:
 * read the message with sqllock_errmsg(), then sqllock_close() it.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_borrow(const char *scheme, void *native,
                               const sqllock_options *opts, sqllock_db **out);

/* 1 if the handle borrows the application's connection (sqllock_borrow()).
 * Added in 0.2.0. */
SQLLOCK_API int sqllock_db_borrowed(const sqllock_db *db);

/*
 * Creates the sqllock tables if they do not exist, and records the schema
 * version. Idempotent: running it again, from any number of processes at
 * once, changes nothing. When the database already records this schema
 * version it only reads that row, so an application whose user has only
 * SELECT, INSERT, UPDATE and DELETE (all that the other calls need) may
 * call it at every start; creating the schema needs CREATE privileges,
 * and without them it fails with the database's reason (SQLLOCK_EPERM for
 * "permission denied"). It does not re-create a table
 * dropped after the version row was written: lock calls then fail with
 * SQLLOCK_ENOSCHEMA (or EDB) naming the table.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_init(sqllock_db *db);

/* The schema version this library writes and reads. */
#define SQLLOCK_SCHEMA_VERSION 1

/* ------------------------------------------------------------------------ */
/* Lease locks                                                               */
/* ------------------------------------------------------------------------ */

typedef struct sqllock_lease sqllock_lease;

/*
 * Options for a lease. Zero means default, except ttl_ms, which is
 * required and must be positive.
 */
typedef struct sqllock_lease_options {
    int struct_version;
    /* How long the lease lasts after each acquire or renew, judged by the
     * database server's clock. Required, > 0. */
    int64_t ttl_ms;
    /* How much earlier than the server the holder stops believing it holds
     * the lease (contract L6). Default ttl/10; must be < ttl. */
    int64_t safety_margin_ms;
    /* Backoff between attempts while waiting: exponential from min to max,
     * with full jitter. Defaults 5 ms and 500 ms. */
    int64_t backoff_min_ms;
    int64_t backoff_max_ms;
    /* A free-text description of the holder shown by `sqllock list`
     * (at most SQLLOCK_HOLDER_MAX bytes). Default "host:pid". */
    const char *holder;
    /* SQLLOCK_LEASE_* flags (struct_version 2). */
    unsigned flags;
    /* How long sqllock_lease_release() (and the releases of the
     * primitives built on leases) keeps trying after the connection was
     * lost or the database cannot be reached (contract C3): again at once
     * on a fresh connection, then with backoff (the backoff times above,
     * at least 50 ms apart), until the release is answered, this much
     * time has passed, or the lease's local deadline (L6) -- the lease
     * then expires by itself. An outage of seconds (a restart, a
     * failover, a pooler restart) then does not leave the name held for
     * the rest of its ttl. Default (0) 60000 ms; a caller who cannot
     * wait sets 1: one retry at once, as before struct_version 3. Each
     * try may also take up to the connect timeout, when the server does
     * not answer at all (struct_version 3). */
    int64_t release_timeout_ms;
} sqllock_lease_options;

/* A waiting acquire only polls (with backoff): it neither listens for
 * PostgreSQL notifications, nor blocks on a MySQL holder's companion
 * session lock, nor waits for releases in this process; and a release
 * sends no wake-up (on PostgreSQL it then skips the NOTIFY; on MySQL the
 * grant takes no companion lock; what that saves is measured in
 * docs/benchmarks.md). For locks
 * nobody waits for, and for measuring what wake-ups are worth. (Behind a
 * pooler that cannot keep a LISTEN, the URL's pooler= parameter already
 * keeps waiters from LISTENing there: docs/poolers.md.) */
#define SQLLOCK_LEASE_NO_WAKEUP (1u << 0)

/* Fast mode (contract L10's opt-in), PostgreSQL only: acquires and renewals
 * commit asynchronously too (synchronous_commit off for their own
 * transaction), so a grant costs no WAL flush (figures in
 * docs/benchmarks.md). What it risks: a lease
 * granted or renewed less than about 3 x wal_writer_delay (600 ms by
 * default) before a database crash can be forgotten by the restarted
 * server, which may then grant the same lock to someone else while the
 * first holder still believes it holds it: TWO HOLDERS ARE POSSIBLE AFTER
 * A DATABASE CRASH. Use it only where a crash-time overlap is harmless.
 * Fencing tokens cannot be kept monotonic in this mode (a sequence value
 * drawn by an asynchronous commit can be drawn again after a crash), so a
 * fast lease has NO fencing token: sqllock_lease_token() returns 0 for it
 * and it cannot be handed to sqllock_lease_attach(). Tokens of durable
 * leases stay monotonic (L5) even when fast leases share the database,
 * because every durable grant flushes the log past every earlier draw.
 * MySQL/MariaDB have no per-session asynchronous commit
 * (innodb_flush_log_at_trx_commit is global) and SQLite none per
 * statement: there sqllock_lease_new() fails with SQLLOCK_EUNSUPPORTED. */
#define SQLLOCK_LEASE_FAST (1u << 1)

/* Fair (FIFO) waiting (contract M3), opt-in: a waiting
 * sqllock_lease_acquire() joins a queue kept in the lease table (one
 * lease row per waiter, named after the lock, with the lease's ttl, kept
 * alive by the waiter while it waits) and the oldest live waiter gets the
 * lock next; only it is woken by a release, and each waiter is woken only
 * by the one ahead of it (no thundering herd). A waiter that dies leaves
 * the queue when its row expires: it delays the others by at most its
 * ttl. A waiter whose enqueue committed before another's began is served
 * first. sqllock_lease_try_acquire() (and an acquire with wait_ms 0) of a
 * fair lease fails with SQLLOCK_BUSY while any waiter is queued. The lock
 * itself is the ordinary lease row, so exclusion (L1-L10) is unchanged,
 * and handles without this flag on the same name still exclude but do
 * not queue: they can barge in ahead of the queue. The lock name is at
 * most SQLLOCK_PRIMITIVE_NAME_MAX bytes; sqllock_lease_acquire_many()
 * refuses fair leases (SQLLOCK_EUNSUPPORTED), and so does a driver
 * without LEASE_RANGE. Added in 0.9.0. */
#define SQLLOCK_LEASE_FAIR (1u << 2)

#define SQLLOCK_LEASE_OPTIONS_VERSION 3
#define SQLLOCK_LEASE_OPTIONS_INIT { SQLLOCK_LEASE_OPTIONS_VERSION, 0, 0, 0, 0, NULL, 0, 0 }

/*
 * Makes a lease handle for lock `name` on `db`. Nothing is sent to the
 * database. The name is copied. Errors: SQLLOCK_EINVAL for a NULL db, NULL
 * or empty name, a name over SQLLOCK_NAME_MAX bytes, not valid UTF-8 or with
 * control characters, or a ttl_ms <= 0 (the message on `db` says which).
 * Free with sqllock_lease_free().
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_new(sqllock_db *db, const char *name,
                                  const sqllock_lease_options *opts,
                                  sqllock_lease **out);

/*
 * Tries to take the lease once: one atomic statement inserts the row, or
 * takes over a row whose lease has expired by the server's clock.
 * Returns SQLLOCK_OK (held; a fresh owner id and a fencing token larger than
 * any issued before), SQLLOCK_BUSY (held by another owner), or an error.
 *
 * One name, one meaning (contract N1): SQLLOCK_EKIND when the name is a
 * shared/exclusive lock, a semaphore or an election (its row is their
 * kind marker, which never goes: a try that finds the name held reads
 * the row to tell; the message names the kind and how to take it).
 * SQLLOCK_EMISUSE on the lease of a primitive's own row
 * (sqllock_rw_lease(), sqllock_sem_lease()), which only its primitive
 * acquires; the lease of sqllock_leader_lease_new() may be acquired.
 *
 * Reentrant (contract L8): on a handle that already holds the lease, this
 * counts up and renews the lease (SQLLOCK_LOST if the renewal finds it lost;
 * the handle then no longer holds it).
 *
 * PostgreSQL with a synchronous standby: when the commit's wait for the
 * standby is canceled (pg_cancel_backend(), a pooler's cancel), the
 * server keeps the commit but the standby may not have it, so a failover
 * could forget it. sqllock then returns SQLLOCK_ECANCELED and does not
 * count the lease as held (its row stays until its ttl, keeping the name
 * busy); a renewal so canceled leaves the local deadline as it was. Other
 * writes (row-lock commits, records) report the same cancel as
 * SQLLOCK_ECANCELED: committed on the primary, not known to be
 * replicated.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_try_acquire(sqllock_lease *lease);

/*
 * Like sqllock_lease_try_acquire(), but while the lock is busy keeps trying,
 * with exponential backoff and full jitter, until `wait_ms` has passed
 * (0 = try once, SQLLOCK_WAIT_FOREVER = no deadline; negative is EINVAL).
 * Returns SQLLOCK_TIMEOUT when the deadline passes with the lock still held
 * elsewhere. An error other than contention ends the wait at once.
 * SQLLOCK_EKIND (N1) as sqllock_lease_try_acquire(): at the first try
 * when the name is marked as another kind, and within about a second
 * when it becomes one while the acquire waits (a busy name's row is read
 * at the first busy try and once a second after), never after waiting
 * out the deadline.
 *
 * Wake-ups (contract L9), unless SQLLOCK_LEASE_NO_WAKEUP: a release of the
 * name through any handle of this process on the same URL wakes the waiter
 * at once; on PostgreSQL the waiter also LISTENs on a channel derived from
 * the name (on its handle's connection, for the duration of the wait) and
 * every release NOTIFYs it, so a release in any process wakes it. On
 * MySQL and MariaDB (not a Galera node) a holder keeps a session lock
 * derived from the name while it holds the lease, and the waiter pauses
 * blocked on that lock, so a release, or the holder's death, in any
 * process wakes it (since 0.2.0; docs/contract.md#renewal-and-waiting).
 * Polling stays as the fallback, since a notification can be lost with a
 * connection and an expiry announces nothing.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_acquire(sqllock_lease *lease, int64_t wait_ms);

/*
 * Asks for the end of a wait in sqllock_lease_acquire() on `lease` (fair
 * or not), from any thread: the one exception to E3 on a lease handle
 * in use. The wait ends at its next check -- before each try, and so
 * within one pause of its backoff (at most its backoff_max_ms, 500 ms by
 * default) or one statement -- with SQLLOCK_ECANCELED, the lock not
 * held and a fair waiter's place in the queue given up. A request that
 * no wait has seen yet (none runs, or the wait ended first with its own
 * outcome) stays until the next wait on the handle sees it, which then
 * ends before its first try; `cancel` 0 withdraws it. A caller that
 * cancels on an event of its own (a context, an abort signal) asks
 * while it waits and withdraws once the wait returned, so that a
 * request that came too late does not end the next wait.
 * sqllock_lease_try_acquire() and the grant of a wait of 0 do not look
 * at it. The handle must stay valid (not freed) until this call
 * returns. SQLLOCK_EINVAL for a NULL lease.
 *
 * Added in 0.12.0.
 */
SQLLOCK_API int sqllock_lease_cancel(sqllock_lease *lease, int cancel);

/*
 * Extends the held lease to ttl from now by the server's clock. Succeeds as
 * long as the row still names this owner and token, even past expiry if no
 * one took it over in between (no other owner held it meanwhile).
 * SQLLOCK_LOST when another owner took it over or it was removed; the handle
 * then no longer holds it. SQLLOCK_ENOTHELD when the handle does not hold.
 * A renewal that finds its connection lost (SQLLOCK_ECONNECT: the
 * answer may have been lost with it) is sent once more on a fresh
 * connection (contract C3): it names owner and token, so running it twice
 * does nothing the first did not. Not after a connect that failed
 * (nothing was sent). Such a call can take the statement timeout, plus
 * a connect and a second statement timeout. When that fails too, the
 * local deadline is left as it was and the message gives both reasons.
 * A renewal the database rolls back (a deadlock, a serialization
 * failure, a Galera certification failure, a row-lock timeout: nothing
 * was done) is run again up to 3 times after a short random pause, as an
 * acquire is; after that its status (sqllock_retryable()) is returned.
 * The same holds for sqllock_lease_release().
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_renew(sqllock_lease *lease);

/* Renews the held lease now for `ttl_ms` (by the server's clock) and
 * makes that its ttl from then on: each later renewal, the watchdog's
 * included, is for ttl_ms. A longer ttl extends the hold; a shorter one
 * shortens it, on this host at once (the local deadline moves back
 * before the statement is sent, L6), and on the server -- except on
 * MySQL/MariaDB, whose renewal never moves a row's expiry back: there
 * the shorter ttl governs once the old expiry has passed. The safety margin follows the ttl
 * when it was the default (ttl/10), else it stays and must be smaller;
 * a watched lease's renewal interval follows it likewise (the default
 * ttl/3), and one given to sqllock_lease_watch() must stay shorter than
 * ttl minus margin. SQLLOCK_EINVAL (a ttl <= 0 or too large, a margin or
 * interval that no longer fits: nothing changed), SQLLOCK_ENOTHELD,
 * SQLLOCK_EMISUSE from the lease's own watch callback; otherwise as
 * sqllock_lease_renew() (SQLLOCK_LOST, a connection's error: the new ttl
 * stays, and the watchdog renews with it). Added in 0.10.0. */
SQLLOCK_API int sqllock_lease_renew_ttl(sqllock_lease *lease, int64_t ttl_ms);

/*
 * Counts a reentrant hold down; at zero, deletes the row if it still names
 * this owner and token. SQLLOCK_OK: released, and no other owner held the
 * lock at any moment since the acquire. SQLLOCK_LOST: another owner took
 * it over, or the row was removed after it expired; the handle is released
 * all the same. SQLLOCK_ENOTHELD when the handle does not hold.
 * A release that finds its connection lost is sent once more on a fresh
 * connection (contract C3; as sqllock_lease_renew()). The lost one may have
 * committed: when the second finds the row gone and the first was sent
 * before the lease's local deadline (L6), no one else could have taken
 * or reaped the lease before it ran, so it is SQLLOCK_OK (released, not
 * lost); sent later, it is SQLLOCK_LOST. When the second fails too, the
 * handle keeps the hold, so release can be called again; a call then
 * that finds the row gone returns SQLLOCK_LOST, which there means
 * "already released" as much as "taken over".
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_release(sqllock_lease *lease);

/* Frees the handle. A lease still held is NOT released in the database: it
 * stays until it expires (call sqllock_lease_release() first). Accepts NULL.
 * Added in 0.1.0. */
SQLLOCK_API void sqllock_lease_free(sqllock_lease *lease);

/* The most leases sqllock_lease_acquire_many() takes at once. */
#define SQLLOCK_LEASE_MANY_MAX 64

/*
 * Takes several locks at once, all or none (contract L12): `leases` are
 * `n` handles made by sqllock_lease_new() on `db`, for distinct names,
 * none of them held. One transaction takes every name, in byte order of
 * the names whatever order the array gives (so two multi-name acquires
 * never wait for each other in a cycle), each as sqllock_lease_acquire()
 * would (L1, L2: an expired row is taken over atomically), and commits
 * only when it has them all; a name held by another owner rolls it back,
 * leaving nothing taken. Each handle then holds its own name with its
 * own owner id and its own fencing token, larger than every token issued
 * before for that name (L5; tokens drawn for the other names of a
 * rolled-back attempt leave gaps in the counter, nothing else), and is
 * renewed, watched (sqllock_lease_watch(): each lease by itself, so a
 * lost one is reported LOST alone), read and released as any lease.
 *
 * Waiting is as sqllock_lease_acquire()'s, on the name found held:
 * `wait_ms` 0 tries once, SQLLOCK_WAIT_FOREVER has no deadline; a
 * release of that name (on PostgreSQL, of any name found held during the
 * wait) wakes the waiter, which then tries for all of them again.
 * Returns SQLLOCK_OK (every handle holds its name), SQLLOCK_BUSY (wait_ms
 * 0) or SQLLOCK_TIMEOUT (the message names the lock found held; no
 * handle holds anything), or an error, which also leaves none held.
 * Bad input, with a message on `db`, nothing sent: SQLLOCK_EINVAL for a
 * NULL array or lease, n < 1 or n > SQLLOCK_LEASE_MANY_MAX, a lease made
 * on another handle, a name given twice, a negative wait;
 * SQLLOCK_EMISUSE for a handle that already holds its lease (no
 * reentrant multi-name acquire), a row-lock transaction open on `db`, or
 * the lease of a primitive's row (as sqllock_lease_try_acquire());
 * SQLLOCK_EUNSUPPORTED for a lease in fast mode. SQLLOCK_EKIND (N1) when
 * the name found held is marked as another kind (the message names it);
 * nothing is taken then either.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_lease_acquire_many(sqllock_db *db,
                                           sqllock_lease *const *leases,
                                           int n, int64_t wait_ms);

/*
 * Releases every lease of the array, as sqllock_lease_release() each
 * (one statement per name; a reentrant hold counts down). All are
 * released whatever the others' outcome; the status and message are
 * those of the first that failed (SQLLOCK_LOST: that name had been
 * lost; SQLLOCK_ENOTHELD: that handle held nothing), else SQLLOCK_OK.
 * The same bad input as sqllock_lease_acquire_many() is SQLLOCK_EINVAL.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_lease_release_many(sqllock_db *db,
                                           sqllock_lease *const *leases,
                                           int n);

/* The lock name.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_lease_name(const sqllock_lease *lease);
/* 1 while the handle holds the lease AND its local deadline has not
 * passed (sqllock_lease_remaining_ms() > 0), 0 otherwise: a lease whose
 * renewals could not reach the server is never reported as held past its
 * local deadline (contract L6). A handle past its deadline still counts its
 * holds (sqllock_lease_count()) and can still be renewed or released.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_lease_held(const sqllock_lease *lease);
/* The reentrancy count: 0 when not held.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_lease_count(const sqllock_lease *lease);
/* The fencing token of the current hold (> 0), or 0 when not held or in
 * fast mode (SQLLOCK_LEASE_FAST), which has no fencing token. A name's
 * tokens strictly increase from grant to grant (contract L5). Tokens of
 * different names come from one counter per database and are unique,
 * but on a Galera cluster, where each node draws its own AUTO_INCREMENT
 * values, a later grant of another name may get a smaller token: compare
 * tokens of one name only.
 * Added in 0.1.0. */
SQLLOCK_API int64_t sqllock_lease_token(const sqllock_lease *lease);
/* The owner id of the current hold (SQLLOCK_OWNER_LEN hex digits), or ""
 * when not held. Borrowed from the lease handle.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_lease_owner(const sqllock_lease *lease);
/* How long the holder may still trust the lease, in ms, by the local
 * clock of sqllock_now_us() (it counts a suspend): (time the last
 * acquire/renew was SENT) + ttl - margin - now, never below 0. 0 when not
 * held.
 * Added in 0.1.0. */
SQLLOCK_API int64_t sqllock_lease_remaining_ms(const sqllock_lease *lease);

/* ------------------------------------------------------------------------ */
/* Semaphores (contract M1)                                                  */
/* ------------------------------------------------------------------------ */

/* A semaphore handle: at most one permit of one semaphore. Not
 * thread-safe; it belongs to the handle `db` it was made on. */
typedef struct sqllock_sem sqllock_sem;

/* The most permits a semaphore has. */
#define SQLLOCK_SEM_PERMITS_MAX 1000

/*
 * Makes a handle for semaphore `name` with `permits` permits (contract
 * M1). Each permit is a lease of its own in the lease table -- permit i
 * is the row "name [p<i>]" in `sqllock list` -- with its own owner id,
 * expiry by the server's clock, fencing token and LOST, made with `opts`
 * as sqllock_lease_new() makes a lease (ttl_ms required). A holder that
 * dies leaves its permit to expire after its ttl, as a lease.
 *
 * The number of permits is the acquirer's own; nothing stores it. An
 * acquirer with N takes only permits 0..N-1, so the database never holds
 * more than N live permits of acquirers that agree on N. Changing N:
 * after an acquirer lowers N, holders of permits >= the new N keep them
 * until they release or lose them (the live count falls to the new N as
 * they leave; until then it stays at most the old N); raising N takes
 * effect at once for the acquirers that use it. Acquirers that disagree
 * on N see at most max(N) live permits.
 *
 * One name, one meaning (contract N1): the handle's first acquire makes
 * NAME a semaphore for good -- the plain lease row NAME becomes its kind
 * marker (`sqllock list` shows "NAME [kind: semaphore]"), so a plain
 * lease on NAME is refused from then on (SQLLOCK_EKIND) -- or finds it
 * one already; it is refused with SQLLOCK_EKIND, naming what is there,
 * while NAME is held as a plain lease or is another kind.
 *
 * Nothing is sent to the database. Errors, with a message on `db`:
 * SQLLOCK_EINVAL for a NULL db, out or opts, a NULL or empty name, one
 * over SQLLOCK_PRIMITIVE_NAME_MAX bytes, not valid UTF-8 or with control
 * characters, permits < 1 or > SQLLOCK_SEM_PERMITS_MAX, and what
 * sqllock_lease_new() refuses in `opts`.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_sem_new(sqllock_db *db, const char *name,
                                int permits, const sqllock_lease_options *opts,
                                sqllock_sem **out);
/*
 * Takes a permit if one is free, without waiting: a random permit first
 * (one round trip while the semaphore has room), then, if that one is
 * held, the free and expired ones among permits 0..N-1 (one read of the
 * semaphore's rows, then a try of each, in random order). Returns
 * SQLLOCK_OK (sqllock_sem_permit() says which permit,
 * sqllock_sem_lease() is its lease) or SQLLOCK_BUSY when all N are held.
 * A handle holds one permit at most: on a handle that holds one, an
 * acquire counts that permit's hold up and renews it (L8, as for every
 * kind since 0.10.0; SQLLOCK_EMISUSE before), and a release counts it
 * down, letting the permit go at zero.
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_sem_try_acquire(sqllock_sem *sem);
/*
 * As sqllock_sem_try_acquire(), waiting up to wait_ms for a permit
 * (0 tries once; SQLLOCK_WAIT_FOREVER), with the backoff of `opts` and
 * the wake-ups of leases: between tries the waiter pauses on one held
 * permit, a fresh random one each round, whose release wakes it (on
 * PostgreSQL a NOTIFY, on MySQL the holder's companion lock, in the
 * process at once); a release of a permit it does not pause on is found
 * at its next try. SQLLOCK_TIMEOUT when none came free in time.
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_sem_acquire(sqllock_sem *sem, int64_t wait_ms);
/*
 * Releases the permit the handle holds (its lease, as
 * sqllock_lease_release()). SQLLOCK_LOST when it had been taken over or
 * removed after it expired; SQLLOCK_ENOTHELD when the handle holds none
 * (never acquired, already released, or released or found lost through
 * its lease).
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_sem_release(sqllock_sem *sem);
/* The lease of the permit held, for its token, owner, state, deadline,
 * renewal and watch (sqllock_lease_token(), sqllock_lease_watch(), ...),
 * borrowed from the semaphore handle; NULL when it holds none. Acquired
 * only through sqllock_sem_acquire(): the lease acquire calls refuse it
 * (SQLLOCK_EMISUSE).
 * Added in 0.9.0. */
SQLLOCK_API sqllock_lease *sqllock_sem_lease(const sqllock_sem *sem);
/* The permit held, 0..permits-1, or -1 when none.
 * Added in 0.9.0. */
SQLLOCK_API int sqllock_sem_permit(const sqllock_sem *sem);
/* The handle's number of permits, and the semaphore's name.
 * Added in 0.9.0. */
SQLLOCK_API int sqllock_sem_permits(const sqllock_sem *sem);
SQLLOCK_API const char *sqllock_sem_name(const sqllock_sem *sem);
/* Frees the handle. A permit still held is NOT released: it stays until
 * it expires. Accepts NULL.
 * Added in 0.9.0. */
SQLLOCK_API void sqllock_sem_free(sqllock_sem *sem);
/*
 * *live = the permits of semaphore `name` that are live now, by the
 * server's clock, whatever N they were taken under (one read of its
 * rows). SQLLOCK_EINVAL for a bad name or a NULL `live`.
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_sem_count(sqllock_db *db, const char *name,
                                  int *live);

/* ------------------------------------------------------------------------ */
/* Watchdog renewal (contract L6, L7)                                        */
/* ------------------------------------------------------------------------ */

/* What a lease handle knows of its lease (sqllock_lease_state()). */
#define SQLLOCK_STATE_NOT_HELD  0 /* not acquired, or released */
#define SQLLOCK_STATE_HELD      1 /* held, and the local deadline is ahead */
#define SQLLOCK_STATE_UNCERTAIN 2 /* renewals are failing, but the local
                                     deadline has not passed: the lease is
                                     still ours until then */
#define SQLLOCK_STATE_LOST      3 /* another owner took it, it was removed,
                                     or the local deadline passed without
                                     a successful renewal: stop acting as
                                     the holder */

/*
 * The state of the handle's lease. Safe to call from any thread while
 * another thread uses the handle (it reads only atomics), and from a watch
 * callback. A lease past its local deadline is LOST even before the
 * renewer notices. After LOST the handle still counts its holds: release
 * it (which reports SQLLOCK_LOST if another owner took over) or free it.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_state(const sqllock_lease *lease);
/* "not-held", "held", "uncertain", "lost"; "?" for other values.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_lease_state_name(int state);

/*
 * Called by the renewer thread when a watched lease changes state: to
 * UNCERTAIN (status: the error of the failed renewal, `msg` its message),
 * back to HELD (a renewal succeeded again; status SQLLOCK_OK), or to LOST
 * (status SQLLOCK_LOST when another owner took it over or the row was
 * removed; SQLLOCK_TIMEOUT when the local deadline passed). `msg` is
 * borrowed for the call. It runs ON THE RENEWER THREAD, which serves every
 * watched lease of the handle: keep it short (set a flag, write to a pipe,
 * signal a condition variable, kill a child process), and call no sqllock
 * function from it other than sqllock_lease_state(), sqllock_lease_name()
 * and sqllock_lease_unwatch() on this lease. After LOST it is not called
 * again for this hold.
 */
typedef void (*sqllock_watch_fn)(void *ctx, sqllock_lease *lease, int state,
                                 int status, const char *msg);

typedef struct sqllock_watch_options {
    int struct_version;
    /* Between renewals. Default ttl/3; must be shorter than ttl - margin. */
    int64_t interval_ms;
    /* Between retries after a failed renewal, while the lease is
     * UNCERTAIN. Default interval/4, at least 10 ms. */
    int64_t retry_ms;
    sqllock_watch_fn callback;          /* may be NULL */
    void *ctx;
} sqllock_watch_options;

#define SQLLOCK_WATCH_OPTIONS_VERSION 1
#define SQLLOCK_WATCH_OPTIONS_INIT { SQLLOCK_WATCH_OPTIONS_VERSION, 0, 0, NULL, NULL }

/*
 * Puts the held lease under automatic renewal (contract L7) until it is
 * released, lost, unwatched or freed. The renewer is one thread per
 * database handle, started by the first watch, with its own connection
 * to the handle's URL; it never uses the caller's connection. The first
 * watch opens that connection unless sqllock_watch_prepare() already did,
 * so a failure to connect is reported here, and the time the connect
 * takes comes out of the lease's ttl. `opts` may be NULL.
 * A transient failure (lost connection, busy database) makes the lease
 * UNCERTAIN and is retried until the local deadline; a renewal that finds
 * another owner makes it LOST at once.
 *
 * Batched renewal (since 0.2.0, drivers of version 8: PostgreSQL,
 * MySQL/MariaDB, SQLite). The renewer keeps the handle's watched leases
 * ordered by when each is due (watch, unwatch and the next due lease cost
 * O(log n); 100 000 leases of one handle are cheap), and renews every
 * lease that is due -- or due within its own safety margin, renewed that
 * much early so that leases due close together share a statement -- in
 * one statement per 1 000 leases (SQLLOCK_RENEW_BATCH_MAX in
 * sqllock_driver.h) and per durability (fast-mode leases in a statement
 * of their own, their commit still asynchronous). Each lease is still
 * renewed by the server's clock only where its name, owner and token all
 * match, and each is judged alone: the statement reports which leases it
 * renewed; one that it did not renew is LOST (SQLLOCK_LOST) while the
 * others stay HELD; a statement that fails (lost connection, busy
 * database) makes every lease of it UNCERTAIN, as a single renewal's
 * failure does, retried until each one's local deadline. Each renewed
 * lease's local deadline is counted from when the batch's statement was
 * sent. MySQL/MariaDB learn which leases were renewed from the UPDATE's
 * affected rows when all were, else from a SELECT on the same connection
 * right after it.
 *
 * Errors: SQLLOCK_ENOTHELD when the handle does not hold the lease,
 * SQLLOCK_EINVAL for bad intervals or a handle already watched,
 * SQLLOCK_ESYS when the thread cannot start, or the connection's error.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_watch(sqllock_lease *lease,
                                    const sqllock_watch_options *opts);
/* Stops automatic renewal of the lease. It waits for a callback about
 * the lease that is running, but not for a renewal statement in flight:
 * that one's answer is dropped without touching the lease (a late renewal
 * names the owner and token, so it cannot revive a released row).
 * Harmless on a lease that is not watched. Release and free do this
 * first, so a renewer never renews a released lease.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_lease_unwatch(sqllock_lease *lease);

/*
 * Starts the handle's renewer now -- its thread and its own connection --
 * instead of at the first sqllock_lease_watch(). Call it before acquiring
 * a lease that will be watched when the ttl is short compared with a
 * connect (a PostgreSQL connect with SCRAM authentication takes tens of
 * milliseconds, far more on a loaded host), so that the connect does not
 * spend the lease's ttl. Harmless when the renewer already runs.
 * Errors: the connection's error, or SQLLOCK_ESYS when the thread cannot
 * start.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_watch_prepare(sqllock_db *db);

/*
 * Makes a handle for a lease that was acquired elsewhere (e.g. by
 * `sqllock acquire`, which prints the owner and token), so that it can be
 * renewed or released. The handle counts one hold; its remaining time is 0
 * until a successful renew, since the send time of the acquire is unknown.
 * `opts` is required as for sqllock_lease_new(): its ttl is what a renew
 * extends the lease by. `owner` must be SQLLOCK_OWNER_LEN lower-case hex
 * digits and `token` positive (else SQLLOCK_EINVAL, and *out is NULL).
 * Nothing is sent to the database.
 * `name` may also be the row of a shared/exclusive lock, a semaphore, a
 * fair queue or an election as sqllock_list() reports it (NAME, 0x1f, a
 * tag of printable ASCII: `sqllock list` prints it "NAME [tag]"), so
 * that an operator's program can release a stuck permit, writer or
 * leadership by its owner and token; such a handle can be renewed and
 * released, not acquired (since 0.10.0; before, EINVAL).
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_lease_attach(sqllock_db *db, const char *name,
                                     const char *owner, int64_t token,
                                     const sqllock_lease_options *opts,
                                     sqllock_lease **out);

/* ------------------------------------------------------------------------ */
/* Shared and exclusive holds on one name (contract M2)                      */
/* ------------------------------------------------------------------------ */

/*
 * A shared/exclusive (read/write) lock: many shared holders of NAME at
 * once, or one exclusive holder, never both. Each hold is a lease of its
 * own (owner, server-clock expiry, renewal, LOST), read and renewed
 * through sqllock_rw_lease(). Policy: writer preference. A writer first
 * takes an ordinary lease on a row of its own under NAME, from when no
 * new reader is let in, then waits until the readers already inside have
 * left (released, or expired by the server's clock, at most their ttl
 * after they last renewed), keeping that row renewed; only then is it
 * granted. So a writer waits at most for the readers inside when it
 * arrived, whatever stream of readers follows, and readers wait for each
 * writer that came before them. Tokens: the exclusive holder's token is
 * its row's lease token, which grows with every exclusive grant of NAME
 * (L5): a write fenced by it (sqllock_table_fenced_update()) is refused
 * after any later exclusive grant. Each shared grant has a token too,
 * from the same counter, on a row of its own.
 *
 * The rows live in the lease table under NAME (sqllock list shows them
 * as 'NAME [w]' and 'NAME [r...]'). One name, one meaning (contract N1):
 * the first acquire of a handle makes NAME a shared/exclusive lock for
 * good -- the plain lease row NAME becomes its kind marker, 'NAME [kind:
 * shared/exclusive lock]' -- so that an ordinary lease on NAME
 * (sqllock_lease_new(), `sqllock run NAME`) is refused from then on with
 * SQLLOCK_EKIND, held pair or not; and a shared or exclusive acquire is
 * refused with SQLLOCK_EKIND, naming what is there, while NAME is held as
 * an ordinary lease or is a semaphore or an election.
 *
 * Needs a driver with RW_EXPIRE (sqllock_driver.h; SQLLOCK_EUNSUPPORTED
 * without) and, on
 * PostgreSQL and MySQL/MariaDB, the routine that sqllock_init() installs
 * (SQLLOCK_ENOSCHEMA until it has run with this version). Not on a
 * MariaDB Galera cluster (SQLLOCK_EUNSUPPORTED: a reader's lock there is
 * one node's, sqllock_row_lock_scope()).
 *
 * A sqllock_rw belongs to its sqllock_db and its thread, as a lease does.
 */
typedef struct sqllock_rw sqllock_rw;

/*
 * Makes a shared (`shared` != 0) or exclusive handle for `name` (a lock
 * name of at most SQLLOCK_PRIMITIVE_NAME_MAX bytes) on `db`. `opts` as
 * for sqllock_lease_new(): every hold lasts ttl_ms after each acquire or
 * renewal, and waits back off as a lease's. Nothing is sent (the name's
 * kind, N1, is checked at the first acquire). Free with
 * sqllock_rw_free(). SQLLOCK_EINVAL for a NULL, empty, oversized or
 * malformed name, missing options or a ttl <= 0.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_rw_new(sqllock_db *db, const char *name, int shared,
                               const sqllock_lease_options *opts,
                               sqllock_rw **out);

/*
 * Tries once. Shared: SQLLOCK_OK, or SQLLOCK_BUSY while a writer holds
 * or waits. Exclusive: SQLLOCK_OK, or SQLLOCK_BUSY while a writer holds
 * or readers are inside (nothing is kept: the writer's row is let go at
 * once). On a handle that already holds, its hold counts up and is
 * renewed (L8, as for every kind since 0.10.0; SQLLOCK_EMISUSE before);
 * each release counts down, and the hold ends at zero.
 * SQLLOCK_EKIND when NAME is held as a plain lease or is another kind
 * (N1, above).
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_rw_try_acquire(sqllock_rw *rw);

/*
 * As sqllock_rw_try_acquire(), waiting up to wait_ms (SQLLOCK_TIMEOUT
 * after it; SQLLOCK_WAIT_FOREVER waits forever). A writer's wait for the
 * readers inside holds its row and keeps it renewed; a release of a
 * reader or a writer of NAME wakes the waiters (L9: NOTIFY on
 * PostgreSQL, a session lock for readers waiting on a writer on
 * MySQL/MariaDB, in-process wake-ups everywhere; polling with backoff
 * underneath). A statement of a writer's wait for the readers that the
 * database gives up on (a deadlock, a lock wait that timed out, a busy
 * SQLite database) changed nothing and is tried again within the wait;
 * it is not returned. SQLLOCK_EKIND at once, not after the wait, as
 * sqllock_rw_try_acquire().
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_rw_acquire(sqllock_rw *rw, int64_t wait_ms);

/*
 * Releases the hold: SQLLOCK_OK, SQLLOCK_LOST as sqllock_lease_release()
 * (the row was lost before), SQLLOCK_ENOTHELD when the handle holds
 * nothing.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_rw_release(sqllock_rw *rw);

/*
 * The lease of the handle's hold, borrowed until sqllock_rw_free(): its
 * token, state, remaining time, owner; it may be watched
 * (sqllock_lease_watch()) and renewed (sqllock_lease_renew()). Exclusive:
 * the writer's row. Shared: the reader's row of the current hold (a new
 * row, name and token at each acquire). Acquire and release through
 * sqllock_rw_acquire() and sqllock_rw_release(): the lease acquire calls
 * refuse it (SQLLOCK_EMISUSE). NULL for a NULL handle.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API sqllock_lease *sqllock_rw_lease(sqllock_rw *rw);

/* 1 for a shared handle, 0 for an exclusive one. Added in 0.9.0. */
SQLLOCK_API int sqllock_rw_shared(const sqllock_rw *rw);

/* Frees the handle; a hold still held is NOT released (its row stays
 * until its ttl). Accepts NULL. Added in 0.9.0. */
SQLLOCK_API void sqllock_rw_free(sqllock_rw *rw);

/* ------------------------------------------------------------------------ */
/* Reaping expired leases (contract P1-P4)                                   */
/* ------------------------------------------------------------------------ */

/*
 * One pass of the reaper on `db`: deletes the lease rows that expired more
 * than grace_ms (>= 0) ago by the server's clock, at most `batch` (> 0)
 * rows per statement, statement after statement until one deletes fewer
 * than `batch`. *deleted (may be NULL) gets the rows deleted, also when a
 * later statement fails. Only expired rows are deleted, judged inside the
 * DELETE, so a lease renewed a moment earlier stays; many reapers may run
 * at once; fencing tokens stay monotonic afterwards (L5). Where the
 * dialect keeps per-name rows of its token counter (MySQL), those are
 * trimmed too, all but the one with the largest token (not counted in
 * *deleted). Errors: SQLLOCK_EINVAL for a NULL handle, a negative (or
 * absurdly large) grace_ms, or a batch outside 1..1000000;
 * SQLLOCK_EMISUSE inside a sqllock_txn on the same handle; else the
 * database's. A statement the database rolled back (a deadlock with
 * another reaper) is run again a few times first.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_reap(sqllock_db *db, int64_t grace_ms, int batch,
                             int64_t *deleted);

typedef struct sqllock_reaper sqllock_reaper;

typedef struct sqllock_reaper_options {
    int struct_version;
    int64_t interval_ms;   /* between passes; default (0) 60 000 */
    int64_t grace_ms;      /* only rows expired longer ago; default 0 */
    int batch;             /* rows per DELETE; default (0) 1000, at most
                              1 000 000 */
    const sqllock_options *db_options;  /* for its connection; may be NULL */
} sqllock_reaper_options;

#define SQLLOCK_REAPER_OPTIONS_VERSION 1
#define SQLLOCK_REAPER_OPTIONS_INIT { SQLLOCK_REAPER_OPTIONS_VERSION, 0, 0, 0, NULL }

/* Counters of a running reaper, copied at one moment. */
typedef struct sqllock_reaper_stats {
    int64_t reaped;        /* rows deleted */
    int64_t passes;        /* passes completed, failed ones included */
    int64_t errors;        /* passes that failed */
    int last_status;       /* status of the last pass */
    char last_error[256];  /* its message; "" after a success */
} sqllock_reaper_stats;

/*
 * Starts a reaper thread with its own connection to `url` (opened here, so
 * URL and connection errors are reported here), which runs a pass at once
 * and then every interval. `opts` may be NULL. On failure the status says
 * why and *out is NULL; `why` (may be NULL) gets the message, cut to
 * why_size. Errors from passes are counted, not fatal: the reaper keeps
 * trying, reconnecting as needed.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_reaper_start(const char *url,
                                     const sqllock_reaper_options *opts,
                                     sqllock_reaper **out, char *why,
                                     size_t why_size);
/* Copies the counters; thread-safe.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_reaper_stats_get(sqllock_reaper *reaper,
                                         sqllock_reaper_stats *out);
/* Wakes the thread, waits for it to end (within one statement's time:
 * it never sleeps through the request) and frees the reaper. Accepts
 * NULL.
 * Added in 0.1.0. */
SQLLOCK_API void sqllock_reaper_stop(sqllock_reaper *reaper);

/* ------------------------------------------------------------------------ */
/* Inspection                                                                */
/* ------------------------------------------------------------------------ */

/* One row of the lease table, as sqllock_list() reports it. Strings are
 * borrowed for the duration of the callback. Times are by the server's
 * clock, in ms since the Unix epoch; remaining_ms is negative for a lease
 * that has expired but whose row was not yet taken over or reaped. */
typedef struct sqllock_lease_info {
    const char *name;
    const char *owner;
    const char *holder;
    int64_t token;
    int64_t acquired_at_ms;
    int64_t expires_at_ms;
    int64_t remaining_ms;
} sqllock_lease_info;

/* Calls `cb` for each lease row, in name order. A non-zero return from `cb`
 * stops the walk, and sqllock_list() returns that value.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_list(sqllock_db *db,
                             int (*cb)(void *ctx, const sqllock_lease_info *),
                             void *ctx);

/* The lease row of exactly NAME -- a lock name, or a primitive's row by
 * its name in the table (BASE 0x1f TAG, as sqllock_list() reports it) or
 * as `sqllock list` shows it, "BASE [TAG]" (a semaphore's permit
 * "jobs [p0]", a shared lock's writer row "jobs [w]", ...) -- handed to
 * `cb` once (info->name is the row's name in the table), in one or two
 * round trips whatever the size of the table. SQLLOCK_NOTFOUND when
 * there is no row. A row
 * that expired but was not yet taken over or reaped is found, with
 * remaining_ms <= 0: a lock is held only while remaining_ms > 0.
 * Added in 0.10.0. */
SQLLOCK_API int sqllock_lease_lookup(sqllock_db *db, const char *name,
                                     int (*cb)(void *ctx,
                                               const sqllock_lease_info *),
                                     void *ctx);

/*
 * Kind markers (contract N1, one name, one meaning). The first use of NAME
 * as a shared/exclusive lock, a semaphore or an election takes the plain
 * lease row NAME itself for good: a lease granted to one of these fixed
 * owners (never an owner id of SQLLOCK_OWNER_LEN hex digits, so that no
 * client can attach to it, renew it or release it), whose holder text
 * names the kind, lasting about 1000 years by the server's clock (no
 * reaper deletes it). A plain lease on NAME is then refused with
 * SQLLOCK_EKIND, as is another kind; sqllock_list() shows the marker as
 * the row NAME with one of these owners.
 */
#define SQLLOCK_KIND_OWNER_RW "sqllock-kind:rw"
#define SQLLOCK_KIND_OWNER_SEM "sqllock-kind:sem"
#define SQLLOCK_KIND_OWNER_LEADER "sqllock-kind:leader"

/* The kind a lease row's owner marks its name as: "shared/exclusive
 * lock", "semaphore" or "leader election" for the owners above, NULL for
 * any other owner (an ordinary lease) and for NULL. A static string.
 * Added in 0.9.0. */
SQLLOCK_API const char *sqllock_kind_marker(const char *owner);

/*
 * The lock tables as the database sees them -- every client's rows, not
 * this process's calls (sqllock_metrics_text() counts those) -- in the
 * OpenMetrics text format, for monitoring: `sqllock metrics` prints it
 * for node_exporter's textfile collector. Gauges, by the database's
 * clock where they are times of the lease table:
 *
 *   sqllock_db_lease_rows               rows read (live, expired, markers)
 *   sqllock_db_locks_held{kind}         live rows by kind: lease, shared,
 *                                       exclusive (a writer's row, also
 *                                       while it waits for readers),
 *                                       semaphore (permits), leader,
 *                                       fair_waiter, other; kind markers
 *                                       are not holds
 *   sqllock_db_waiters_queued           live fair-queue waiters
 *   sqllock_db_expired_rows             expired rows not yet reaped
 *   sqllock_db_kind_markers             names marked with a kind (N1)
 *   sqllock_db_oldest_hold_seconds      age of the oldest live hold since
 *                                       its grant (waiters apart), 0: none
 *   sqllock_db_hold_age_seconds{name,kind}
 *                                       the same per lock name (a
 *                                       primitive's base name), for the
 *                                       SQLLOCK_METRICS_DB_OLDEST names
 *                                       held longest only
 *   sqllock_db_run_histories            names with a run history
 *   sqllock_db_run_failures{name}       finished runs among the kept ones
 *                                       (SQLLOCK_HISTORY_MAX) that exited
 *                                       non-zero or not "ok"
 *   sqllock_db_run_last_end_timestamp_seconds{name}, ..._last_exit_code
 *                                       the last finished run (by the
 *                                       runner host's clock)
 *   sqllock_db_forced_releases{name}    forced releases among the kept
 *                                       audit lines
 *   sqllock_db_slot_records             schedule slot records (`run
 *                                       --once-per`), one per name
 *   sqllock_db_slot_last_start_timestamp_seconds{name}
 *                                       the start of the last slot run
 *   sqllock_db_slot_last_state{name,state}
 *                                       its run's state as a state set:
 *                                       1 for the record's (running, ok,
 *                                       failed, timeout, lost), 0 others
 *   sqllock_db_slot_last_exit_code{name} its exit code, once it ended
 *   sqllock_db_slots_missed{name}       slots in which nothing ran since
 *                                       it, the current one apart, by
 *                                       its schedule and the clock (and
 *                                       time zone) of the calling host;
 *                                       at most 1000 ("1000 or more")
 *   sqllock_db_up 1, sqllock_db_scrape_duration_seconds
 *
 * The per-name series of the histories, and those of the slots, are
 * written for the first SQLLOCK_METRICS_DB_NAMES_MAX names (in byte
 * order; a long name as its record key has it, cut and hashed), so that
 * the number of series stays bounded whatever the number of locks. The
 * text ends with "# EOF". Cost: one read of the whole lease table and
 * one range read each of the history and the slot records, per call;
 * a name of a cron schedule whose last slot run is long past costs a
 * walk of up to 1000 slots here (about 0.5 ms). Nothing is kept
 * per row, but PostgreSQL's and MySQL's client libraries hold a
 * statement's whole result while it is walked: with 100 000 lease rows
 * a call took 0.3 s and 26 MB on PostgreSQL, 0.25 s and 15 MB on
 * MariaDB, 0.06 s and 2 MB on SQLite (freed when it returns). On any failure to read, the status
 * and no text (*out NULL): a scrape is never partial. SQLLOCK_EINVAL for
 * a NULL db or out; SQLLOCK_EMISUSE on a borrowed handle (as
 * sqllock_list()). *out is freed with sqllock_free().
 *
 * Added in 0.11.0.
 */
#define SQLLOCK_METRICS_DB_OLDEST 10
#define SQLLOCK_METRICS_DB_NAMES_MAX 500
SQLLOCK_API int sqllock_metrics_db_text(sqllock_db *db, char **out);

/* ------------------------------------------------------------------------ */
/* Observers: following lock names without holding them (added in 0.11.0)  */
/* ------------------------------------------------------------------------ */

/*
 * An observer follows lock names and reports each change of their holds
 * -- acquired, released, expired, taken over, freed by an operator --
 * holding and writing nothing. It reads the lease rows of all its names
 * with ONE statement per poll, on its handle's connection, in the
 * caller's thread: sqllock_observer_next() waits for the next poll,
 * makes it and hands out the changes, one per call, in the order they
 * were seen (for one row, in the order they happened). It has no thread
 * of its own.
 *
 * What a name covers. Observing NAME follows the lease row NAME and
 * every row a primitive keeps under it, each reported by its own name
 * as `sqllock list` shows it: an election's leader, "NAME [leader]" (a
 * follower hears of each new leader: ACQUIRED, or TAKEN_OVER after a
 * leader's lease expired, with the new term's token); a semaphore's
 * permits, "NAME [p0]", "NAME [p1]", ...; a shared/exclusive lock's
 * writer, "NAME [w]" (taken when the writer starts waiting for the
 * readers inside), and each reader, "NAME [r" 16 hex digits "]" (a row
 * of its own per shared hold); a fair lock's holder, the row NAME (its
 * waiters' queue rows are not holds and are not reported). NAME's kind
 * marker (contract N1) is no hold and is never reported.
 *
 * The changes, each judged by the lease row and the database's clock
 * (contract L2) alone:
 *   HELD, FREE     the state at the start, when include_initial asks for
 *                  it: HELD per live row, FREE (named NAME, token 0) for
 *                  a name without one, in the order the names were given.
 *   ACQUIRED       a row with a token where there was none, or after the
 *                  last one ended. Also a lease renewed after it had
 *                  expired, no one having taken it over meanwhile (by the
 *                  database's clock it was free in between): its own
 *                  token again.
 *   RELEASED       the row gone (or holding a later grant's token) before
 *                  the expiry last seen, with no forced release of its
 *                  token in NAME's history.
 *   FORCE_RELEASED the row gone, and NAME's history has the audit line of
 *                  a forced release of its token (sqllock_force_release(),
 *                  `sqllock release --force`).
 *   EXPIRED        the expiry passed without a renewal (reported once,
 *                  whether the row is still there or was reaped); a row
 *                  gone with no forced release once the database's clock
 *                  is past the expiry last seen is EXPIRED too.
 *   TAKEN_OVER     a new grant of a row whose lease had expired (after
 *                  its EXPIRED): the takeover of contract L1. `old_token`
 *                  is the expired one's.
 * A token that changed between two polls while the old one was live (a
 * release, then a new grant) gives RELEASED, then ACQUIRED. Renewals are
 * not changes. A hold that begins and ends between two polls is not
 * seen at all.
 *
 * The bound. Every change is reported within the poll interval plus one
 * round trip after it happened by the database's clock, while the caller
 * is in sqllock_observer_next() (the observer looks at the database only
 * there); `lag_ms` says how late each one was seen. On PostgreSQL the
 * observer also LISTENs on the wake-up channel of each row it follows
 * (contract L9), so a release that notifies -- every release of a lease
 * without SQLLOCK_LEASE_NO_WAKEUP; not a forced release or a reaper's
 * delete -- is reported one round trip after its commit (not behind a
 * transaction pooler or pgpool-II without listen_host=: they poll).
 * MySQL/MariaDB and SQLite poll at the interval. So on them a release
 * in the last interval before the lease's expiry may be seen only after
 * it, and is reported EXPIRED.
 *
 * Cost: one statement per poll (each name's rows by an index range
 * scan); one more, a read of NAME's history record, when a hold of NAME
 * ends; on PostgreSQL, one LISTEN per row name the first time it is seen
 * (and a poll at once after it). A hold's end is judged by the expiry
 * the last poll saw: with an interval below two thirds of the leases'
 * ttl (the watchdog renews every ttl/3), the release of a renewed lease
 * is never taken for its expiry.
 *
 * THREADS. An observer uses its handle's connection, as every call on the
 * handle does (one thread at a time): give it a handle of its own. Its
 * LISTENs are the connection's, so a waiting acquire on the same handle
 * would consume the notifications it waits for (it then sees the
 * release at its next poll). Free it before closing its handle.
 */
typedef struct sqllock_observer sqllock_observer;

typedef enum sqllock_change_type {
    SQLLOCK_CHANGE_HELD = 1,
    SQLLOCK_CHANGE_FREE = 2,
    SQLLOCK_CHANGE_ACQUIRED = 3,
    SQLLOCK_CHANGE_RELEASED = 4,
    SQLLOCK_CHANGE_EXPIRED = 5,
    SQLLOCK_CHANGE_TAKEN_OVER = 6,
    SQLLOCK_CHANGE_FORCE_RELEASED = 7
} sqllock_change_type;

/* One change, as sqllock_observer_next() hands it out. The caller sets
 * struct_version (SQLLOCK_CHANGE_INIT); the library fills the fields
 * that version has. Strings are borrowed from the observer until the
 * next call on it. Times are by the database's clock, in ms since the
 * Unix epoch. */
typedef struct sqllock_change {
    int struct_version;
    int type;                 /* SQLLOCK_CHANGE_* */
    const char *name;         /* the row, as `sqllock list` shows it:
                                 "jobs", "jobs [leader]", "jobs [p1]" */
    const char *watched;      /* the name given that it falls under */
    int64_t token;            /* the hold's token: the new holder's for
                                 ACQUIRED, TAKEN_OVER and HELD, the ended
                                 one's for RELEASED, EXPIRED and
                                 FORCE_RELEASED; 0 for FREE */
    int64_t old_token;        /* TAKEN_OVER: the expired hold's; else 0 */
    const char *holder;       /* that hold's holder text; "" for FREE */
    int64_t expires_at_ms;    /* that hold's expiry as last seen; 0 for
                                 FREE */
    int64_t seen_at_ms;       /* the database's clock at the poll that
                                 saw the change */
    int64_t lag_ms;           /* how late it was seen, at most: since the
                                 grant (ACQUIRED, TAKEN_OVER), the expiry
                                 (EXPIRED), or the last poll that saw the
                                 hold (RELEASED, FORCE_RELEASED, a renewal
                                 after expiry); 0 for HELD and FREE */
} sqllock_change;

#define SQLLOCK_CHANGE_VERSION 1
#define SQLLOCK_CHANGE_INIT \
    { SQLLOCK_CHANGE_VERSION, 0, NULL, NULL, 0, 0, NULL, 0, 0, 0 }

/* Options of an observer. Zero in a field means its default. */
typedef struct sqllock_observer_options {
    int struct_version;
    /* The time between polls: the bound on how late a change is seen
     * (above). Default (0) 1000 ms; at least
     * SQLLOCK_OBSERVER_INTERVAL_MIN_MS; negative is SQLLOCK_EINVAL. */
    int64_t interval_ms;
    /* Non-zero: the first changes are the state at the start, HELD and
     * FREE. */
    int include_initial;
} sqllock_observer_options;

#define SQLLOCK_OBSERVER_OPTIONS_VERSION 1
#define SQLLOCK_OBSERVER_OPTIONS_INIT \
    { SQLLOCK_OBSERVER_OPTIONS_VERSION, 0, 0 }
#define SQLLOCK_OBSERVER_INTERVAL_MIN_MS 50
/* The most names one observer follows. */
#define SQLLOCK_OBSERVER_NAMES_MAX 256

/*
 * Makes an observer of `names[0..n)` on `db` (`opts` may be NULL). It
 * reads the names' rows once here -- the state the changes start from
 * (and, on PostgreSQL, LISTENs first) -- so a change after this call
 * returns is reported, however late sqllock_observer_next() is called.
 * Inputs are copied. Errors, *out NULL and the message on `db`:
 * SQLLOCK_EINVAL for a NULL db or out, a NULL array, n < 1 or n >
 * SQLLOCK_OBSERVER_NAMES_MAX, a NULL, empty, oversized or malformed name
 * (as sqllock_lease_new() checks names), a name given twice, options
 * without a struct_version, or an interval that is negative or below the
 * minimum; SQLLOCK_EMISUSE on a borrowed handle (as sqllock_list()), or
 * while a row-lock transaction is open on it; SQLLOCK_EUNSUPPORTED for a
 * driver without the statement LEASE_OBSERVE (sqllock_driver.h); the
 * database's status when the first read fails. Free with
 * sqllock_observer_free().
 *
 * Added in 0.11.0.
 */
SQLLOCK_API int sqllock_observer_new(sqllock_db *db, const char *const *names,
                                     int n,
                                     const sqllock_observer_options *opts,
                                     sqllock_observer **out);

/*
 * The next change: SQLLOCK_OK with *out filled; SQLLOCK_TIMEOUT when none
 * came within `timeout_ms` (0: only what the changes queued, or a poll
 * that is due, bring; SQLLOCK_WAIT_FOREVER: no deadline). It polls when a
 * poll is due (every interval, and at once after a wake-up) and sleeps in
 * between, until the deadline. A poll that fails returns its status
 * (SQLLOCK_ECONNECT, ...; the message on the handle) and changes
 * nothing the observer knows: call again, and the next poll, a
 * reconnect first if need be, reports what changed meanwhile -- late,
 * as its lag says. SQLLOCK_EINVAL for a NULL observer or out, a change
 * without a struct_version, or a negative timeout; SQLLOCK_EMISUSE while
 * a row-lock transaction is open on the handle.
 *
 * Added in 0.11.0.
 */
SQLLOCK_API int sqllock_observer_next(sqllock_observer *obs,
                                      sqllock_change *out,
                                      int64_t timeout_ms);

/* Frees the observer (on PostgreSQL, UNLISTENs what it listened to).
 * Free it before its handle is closed. Accepts NULL.
 * Added in 0.11.0. */
SQLLOCK_API void sqllock_observer_free(sqllock_observer *obs);

/* "held", "free", "acquired", "released", "expired", "taken_over",
 * "force_released"; "unknown" for another value. A static string.
 * Added in 0.11.0. */
SQLLOCK_API const char *sqllock_change_name(int type);

/* ------------------------------------------------------------------------ */
/* Row locks (contract R1-R8)                                                */
/* ------------------------------------------------------------------------ */

/*
 * A row lock is held inside a database transaction on the handle's own
 * connection and ends at commit or rollback; if the connection dies, the
 * database ends it (no expiry is needed). One transaction per handle at a
 * time; while it is open, use the handle only through it (lease calls on
 * the same handle that would send a statement fail with SQLLOCK_EMISUSE,
 * nothing sent: contract R8), and run your own
 * statements on the connection sqllock_txn_native() returns (which starts
 * the transaction), not one taken earlier from sqllock_db_native().
 *
 * The versioned-record and table calls (sqllock_record_get/create/cas/
 * delete(), sqllock_table_*()) on the same handle work inside it too:
 * once the transaction has started (at its first lock call, or
 * sqllock_txn_native()), they run in it and commit or roll back with it;
 * before that, each commits on its own.
 *
 * A failed transaction stays failed until rolled back (R7). When a
 * statement of the transaction -- a lock call's, or a record or table
 * call's on the handle -- fails with SQLLOCK_EDEADLOCK,
 * SQLLOCK_ESERIALIZATION, SQLLOCK_ELOCKED, SQLLOCK_ECONNECT (or
 * SQLLOCK_ECANCELED, SQLLOCK_EDBBUSY, SQLLOCK_EFULL), the database has
 * ended the transaction, or may have: that call returns the status, and
 * the transaction is rolled back and failed. From then on every call in
 * it -- lock calls, sqllock_txn_native(), the record and table calls on
 * the handle, sqllock_db_exec(), sqllock_txn_commit(), and
 * sqllock_txn_begin() on the handle -- returns SQLLOCK_EMISUSE without
 * sending anything, with a
 * message that names the failure and says the transaction was rolled
 * back; nothing commits outside it, and a lost connection is not
 * reconnected under it. Roll it back (sqllock_txn_rollback() or
 * sqllock_txn_free()), then begin again if sqllock_retryable() said so
 * of the failure. Failures of the application's own statements on the
 * native connection are not seen (docs/contract.md, "Records and table
 * calls inside a row-lock transaction").
 *
 * SQLite has no row locks: there the transaction takes the database's
 * write lock (BEGIN IMMEDIATE) at its first lock call — coarser, the same
 * API. NOWAIT then fails at once if another connection writes, and SKIP
 * LOCKED gets every requested row or none.
 */
typedef struct sqllock_txn sqllock_txn;
typedef struct sqllock_table sqllock_table;

/* What a row lock excludes, by database (sqllock_row_lock_scope()). */
#define SQLLOCK_ROW_LOCKS_EXCLUSIVE 1 /* every client of the database waits
                                         for the row (or fails with
                                         NOWAIT): PostgreSQL, MySQL,
                                         MariaDB without Galera */
#define SQLLOCK_ROW_LOCKS_NODE      2 /* MariaDB Galera cluster: only the
                                         clients of the same node wait; a
                                         conflicting transaction that
                                         commits through another node
                                         makes this one's commit (or the
                                         other's) fail with
                                         SQLLOCK_EDEADLOCK, so a lock
                                         held here does not keep another
                                         node's writer out; it only
                                         decides who may commit */
#define SQLLOCK_ROW_LOCKS_DATABASE  3 /* no row locks: the transaction
                                         takes the whole database's write
                                         lock (SQLite, contract R5) */
typedef struct sqllock_cell sqllock_cell;

typedef enum sqllock_lock_mode {
    SQLLOCK_LOCK_WAIT = 0,     /* wait, up to the transaction's lock timeout */
    SQLLOCK_LOCK_NOWAIT,       /* fail at once with SQLLOCK_ELOCKED */
    SQLLOCK_LOCK_SKIP_LOCKED   /* take the free rows, skip the others */
} sqllock_lock_mode;

/* Options for sqllock_txn_begin(). Zero means default, and a zeroed
 * struct is valid; `struct_version` lets later versions append fields
 * (read only from a caller whose struct_version has them): set it with
 * SQLLOCK_TXN_OPTIONS_INIT. */
typedef struct sqllock_txn_options {
    int struct_version;
    /* How long SQLLOCK_LOCK_WAIT waits for one row before SQLLOCK_ELOCKED.
     * Default 5000 ms. MySQL counts whole seconds (rounded up, at least
     * 1); PostgreSQL at most 2^31-1 ms (a longer one waits that long);
     * SQLite applies it as the busy timeout of BEGIN IMMEDIATE. */
    int64_t lock_timeout_ms;
} sqllock_txn_options;

#define SQLLOCK_TXN_OPTIONS_VERSION 1
#define SQLLOCK_TXN_OPTIONS_INIT { SQLLOCK_TXN_OPTIONS_VERSION, 0 }

/*
 * What a row lock taken through `db` excludes: *scope gets one of
 * SQLLOCK_ROW_LOCKS_EXCLUSIVE, _NODE or _DATABASE. It connects first if
 * the handle is not connected (MySQL/MariaDB learn whether the server is
 * a Galera node when they connect, and the answer holds for that
 * connection; a reconnect, perhaps to another host, may change it), but
 * sends no statement. Use it to refuse, at start-up, a database whose
 * row locks do not give the exclusion the application relies on; use
 * lease locks there, whose grant is one committed write that the
 * cluster certifies. SQLLOCK_EINVAL for a NULL handle or `scope` (*scope
 * is 0 on any failure); else the connection's error.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_row_lock_scope(sqllock_db *db, int *scope);
/* "exclusive", "node", "database"; "?" for other values.
 * Added in 0.1.0. */
SQLLOCK_API const char *sqllock_row_lock_scope_name(int scope);

/* Begins a transaction on `db`. `opts` may be NULL. Nothing is sent yet:
 * the database transaction starts at the first lock call, or at
 * sqllock_txn_native(), whichever comes first (on SQLite that is when the
 * write lock is taken). Free the handle with sqllock_txn_free() (which
 * rolls back a transaction still open). SQLLOCK_EMISUSE while another
 * transaction is open on the handle, a failed one included (R7).
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_txn_begin(sqllock_db *db, const sqllock_txn_options *opts,
                                  sqllock_txn **out);

/*
 * Joins the transaction the application has open on a borrowed
 * connection (sqllock_borrow(); contract G2): lock calls, the record and
 * table calls and sqllock_table_guarded_update() then run inside it, and
 * their locks and writes commit or roll back with the application's
 * own, when the application ends its transaction on its connection.
 * `opts` may be NULL; its lock timeout applies to the lock calls of this
 * sqllock_txn only: the session's own value is read at the first lock
 * call and put back when the sqllock_txn ends.
 *
 * The transaction is the application's: sqllock_txn_commit() returns
 * SQLLOCK_EMISUSE (commit on the connection), and sqllock_txn_rollback()
 * and sqllock_txn_free() end the library's part without rolling
 * anything back. A lock call that fails with a status after which the
 * database has ended the transaction, or may have (SQLLOCK_ELOCKED,
 * SQLLOCK_EDEADLOCK, SQLLOCK_ESERIALIZATION, SQLLOCK_ECONNECT, ...),
 * fails the sqllock_txn as R7 says, but sends no ROLLBACK: roll the
 * application's transaction back yourself (MySQL ends a lock wait
 * timeout's statement only, and a commit after it would commit without
 * the lock).
 *
 * On SQLite the first lock call takes the database's write lock inside
 * the application's transaction (any BEGIN: DEFERRED, IMMEDIATE);
 * WAIT waits up to the lock timeout, NOWAIT fails at once with
 * SQLLOCK_ELOCKED, SKIP LOCKED gets nothing. In WAL mode a DEFERRED
 * transaction that has read from a snapshot another connection has
 * since written past cannot take the lock at all (SQLLOCK_EDBBUSY):
 * begin with BEGIN IMMEDIATE, or lock before reading.
 *
 * SQLLOCK_EMISUSE when no transaction is open on the connection (begin
 * one there first; with MySQL autocommit off, the transaction the next
 * statement opens is joined), when another sqllock_txn is open on the
 * handle, or when the handle does not borrow its connection (a handle
 * of the library's own refuses statements inside a transaction it did
 * not begin, contract C2).
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_txn_join(sqllock_db *db, const sqllock_txn_options *opts,
                                 sqllock_txn **out);

/*
 * Locks the library's own lock rows `names[0..n)` (1 <= n <= 64; each a
 * valid lock name; the row is created on first use, race-free), always in
 * one sorted byte order whatever the order given, so that two clients
 * locking overlapping sets through the library never deadlock (R2).
 * Duplicates are locked once. `got` (when not NULL) gets, per name, 1 if
 * it is now locked by this transaction, 0 if not.
 *
 * WAIT and NOWAIT lock all or fail: SQLLOCK_ELOCKED (NOWAIT, or the lock
 * timeout passed), SQLLOCK_EDEADLOCK (a deadlock through rows the
 * application locked itself; the database rolled back). SKIP_LOCKED
 * returns SQLLOCK_OK with `got` saying which names it took.
 *
 * After ELOCKED, EDEADLOCK, ESERIALIZATION or a lost connection the
 * transaction is rolled back and failed (R7; sqllock_retryable() says
 * whether to begin again): later calls in it, the record calls on the
 * handle and the commit included, return SQLLOCK_EMISUSE and send
 * nothing, until sqllock_txn_rollback() or sqllock_txn_free().
 *
 * On a MariaDB Galera cluster a row lock excludes only the clients of
 * the same node (SQLLOCK_ROW_LOCKS_NODE, see sqllock_row_lock_scope()):
 * a client of another node locks the same row at once, and of two such
 * transactions the one that commits second fails, at its commit (or at
 * a later statement), with SQLLOCK_EDEADLOCK.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_txn_lock(sqllock_txn *txn, const char *const *names,
                                 int n, sqllock_lock_mode mode, int *got);

/*
 * The same for the application's rows: `SELECT key FROM table WHERE key =
 * ? FOR UPDATE [NOWAIT | SKIP LOCKED]` per key, keys in sorted order
 * (numbers by value, texts by bytes). The table's version_column is not
 * used and may be NULL. WAIT/NOWAIT: SQLLOCK_NOTFOUND if a key has no row
 * (the rows locked so far stay locked). SKIP_LOCKED: a missing row is
 * `got` 0 too.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_txn_lock_rows(sqllock_txn *txn, const sqllock_table *t,
                                      const sqllock_cell *keys, int n,
                                      sqllock_lock_mode mode, int *got);

/* The connection, for the application's own statements inside the
 * transaction (sqlite3 *, PGconn *, MYSQL *); starts the transaction if no
 * lock call did yet. Borrowed. NULL if the transaction could not start,
 * or has failed (R7) (sqllock_errmsg() on the handle says why).
 * Added in 0.1.0. */
SQLLOCK_API void *sqllock_txn_native(sqllock_txn *txn);

/* Commits (the locks end). SQLLOCK_EMISUSE if the transaction is over,
 * or has failed (R7: a statement of it failed with a status that ended
 * the database's transaction; nothing is sent, and the transaction stays
 * until rolled back); an error (never SQLLOCK_OK) when the database had
 * already aborted the transaction after a failed statement of the
 * application's and rolls it back instead. On a Galera cluster, SQLLOCK_EDEADLOCK when a
 * conflicting transaction committed first through another node
 * (certification failure): nothing was committed, and a retry is safe.
 * Read the rows you locked after locking them: a MySQL session runs READ
 * COMMITTED, so a read after the lock sees the latest committed row.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_txn_commit(sqllock_txn *txn);
/*
 * Runs one last statement of the application's in the transaction -- a
 * write, usually -- and commits, in ONE round trip on PostgreSQL (the
 * statement and COMMIT pipelined; with BEGIN too when nothing of the
 * transaction was sent yet); elsewhere the statement, then the commit.
 * `sql`, `args` and `nargs` as sqllock_db_exec() takes them ($1, $2 on
 * PostgreSQL; ? on SQLite and MySQL); the statement is prepared once per
 * connection and kept, as the table calls' are. *affected (when not
 * NULL) gets the rows it changed, 0 on failure.
 *
 * Either way the transaction is over when it returns (free it): on
 * SQLLOCK_OK committed, statement and all; on a failure of the
 * statement (SQLLOCK_EDB, SQLLOCK_ELOCKED, SQLLOCK_EDEADLOCK, ... with
 * the database's message) or of the commit, rolled back, nothing of it
 * kept, and the status returned as sqllock_txn_commit() returns a
 * failed commit's (SQLLOCK_ECONNECT: the connection was lost, and
 * whether the commit happened is not known; on PostgreSQL with a
 * synchronous standby, SQLLOCK_ECANCELED when the commit's wait for the
 * standby was canceled: committed on the primary, not known to be
 * replicated, as sqllock_lease_try_acquire() says). SQLLOCK_EMISUSE as
 * sqllock_txn_commit() (over, failed, or joined: an application's
 * transaction is committed on its connection); SQLLOCK_EINVAL for a
 * NULL transaction or statement, or a negative `nargs` or NULL `args`
 * with nargs > 0.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_txn_commit_exec(sqllock_txn *txn, const char *sql,
                                        const sqllock_cell *args, int nargs,
                                        int64_t *affected);
/* Rolls back (the locks end). OK on a transaction that is already over,
 * and the one way out of a failed one (R7; the database's transaction
 * was rolled back when it failed). Leaves the handle's last error
 * message as it was (the reason for rolling back, usually).
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_txn_rollback(sqllock_txn *txn);
/* Rolls back if still open, and frees. Free a transaction before closing
 * its handle. Accepts NULL.
 * Added in 0.1.0. */
SQLLOCK_API void sqllock_txn_free(sqllock_txn *txn);

/* ------------------------------------------------------------------------ */
/* Optimistic versioned updates (contract O1-O3)                             */
/* ------------------------------------------------------------------------ */

/*
 * No lock is held: each record carries a version, and a write names the
 * version it read. `UPDATE ... SET ..., version = version + 1 WHERE key = ?
 * AND version = ?` changes one row (success) or none (SQLLOCK_CONFLICT:
 * someone else wrote in between; read again and retry).
 *
 * The library's own table, sqllock_record, holds byte values by key (keys
 * follow the rules of lock names: 1..SQLLOCK_NAME_MAX bytes of valid UTF-8
 * without control characters; values up to SQLLOCK_VALUE_MAX bytes).
 *
 * Inside a started row-lock transaction on the same handle these calls,
 * and the table calls below, run in the transaction (R4). One that fails
 * with a status that ended the database's transaction fails the
 * sqllock_txn, and in a failed transaction each of them returns
 * SQLLOCK_EMISUSE without sending anything, until it is rolled back
 * (R7, in the row-lock section above).
 */
#define SQLLOCK_VALUE_MAX (1024 * 1024)

/* Reads record `key`: *value (malloc'd, free with sqllock_free(); NUL-
 * terminated for convenience, not counted in *len), *len and *version.
 * SQLLOCK_NOTFOUND when there is no such record (outputs zeroed). Any
 * output pointer may be NULL.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_record_get(sqllock_db *db, const char *key,
                                   void **value, size_t *len,
                                   int64_t *version);

/* Creates record `key` with version 1 if it does not exist. SQLLOCK_OK, or
 * SQLLOCK_CONFLICT when it already exists (nothing is changed).
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_record_create(sqllock_db *db, const char *key,
                                      const void *value, size_t len);

/* Replaces the value of record `key` if its version is still `expected`;
 * the version becomes expected + 1 (*new_version, when not NULL).
 * SQLLOCK_CONFLICT when the version moved or the record is gone. On a
 * Galera cluster a write that raced one through another node can also
 * fail certification: SQLLOCK_EDEADLOCK, nothing written, retryable
 * (sqllock_record_update() retries it like a conflict).
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_record_cas(sqllock_db *db, const char *key,
                                   int64_t expected, const void *value,
                                   size_t len, int64_t *new_version);

/*
 * A lock name's history (`sqllock history NAME`): one versioned record,
 * key sqllock_history_key(NAME), whose value is lines, newest first, of
 * runs (kind "run", `sqllock run` writes them) and audit lines ("force",
 * "clear"), up to SQLLOCK_HISTORY_MAX of each:
 *   KIND \t TOKEN \t START_MS \t END_MS \t EXIT \t STATUS \t WHO \n
 * Times are the writing host's clock, ms since the epoch; tabs and line
 * breaks in a field become spaces. In WHO, SQLLOCK_HISTORY_ROLE is
 * replaced by the database's current user in an audit line (PostgreSQL,
 * MySQL; SQLite has no users). Added in 0.10.0 (the tool's until then).
 */
#define SQLLOCK_HISTORY_MAX 20
#define SQLLOCK_HISTORY_LINE_MAX 600
#define SQLLOCK_HISTORY_ROLE "\001"
/* The record key of NAME's history into key[size] (size at least
 * SQLLOCK_NAME_MAX + 1): "sqllock:history:NAME", or for a long NAME the
 * name cut and a hash of the whole. */
SQLLOCK_API void sqllock_history_key(const char *name, char *key,
                                     size_t size);
/* Adds the line of a run of NAME (token, who ran it, times, exit code,
 * status), replacing that run's earlier line (the same token). */
SQLLOCK_API int sqllock_history_note(sqllock_db *db, const char *name,
                                     int64_t token, const char *who,
                                     int64_t start_ms, int64_t end_ms,
                                     int exit_code, const char *status);
/* Clears NAME's history: the runs, or with `all` the audit lines too;
 * the clearing is itself an audit line, first, naming `who` (DESIGN
 * C5). */
SQLLOCK_API int sqllock_history_clear(sqllock_db *db, const char *name,
                                      int all, const char *who);

/* Options of sqllock_force_release(). */
typedef struct sqllock_force_options {
    int struct_version;        /* SQLLOCK_FORCE_OPTIONS_VERSION */
    int64_t token;             /* free only the hold of this token; 0: the
                                  hold there now */
    int live;                  /* free a lease that is still live by the
                                  database's clock (its holder may be
                                  alive and working) */
    const char *who;           /* who forces it, for the audit line; NULL:
                                  "user@host" of this process, and the
                                  database user (SQLLOCK_HISTORY_ROLE) */
} sqllock_force_options;
#define SQLLOCK_FORCE_OPTIONS_VERSION 1
#define SQLLOCK_FORCE_OPTIONS_INIT { SQLLOCK_FORCE_OPTIONS_VERSION, 0, 0, NULL }

/*
 * An operator's forced release (DESIGN C5): frees the lease row of NAME
 * whoever holds it, by the owner and token read just before, and writes
 * an audit line ("force", the token, "live" or "expired", who) into
 * NAME's history -- in one transaction: both or neither. NAME is a lock
 * name or a primitive's row as sqllock_lease_lookup() takes it ("jobs
 * [w]", "jobs [p1]": its line goes into BASE's history, the tag beside
 * the status). Its holder hears SQLLOCK_LOST at its next renewal (L4),
 * and a write it fences with its token is refused (L5).
 * `cb`, when not NULL, is called with the row found (before it is
 * freed, and also when it is not). Returns SQLLOCK_OK when freed;
 * SQLLOCK_NOTFOUND when NAME has no row; SQLLOCK_EKIND for a kind
 * marker (N1: never freed); SQLLOCK_CONFLICT when opts->token is given
 * and the row has another; SQLLOCK_BUSY when the lease is still live and
 * opts->live is 0; SQLLOCK_LOST when the row changed between the read
 * and the delete (released, taken over, reaped: nothing changed); a
 * database's status otherwise (SQLLOCK_EPERM: the role may not write the
 * audit record, and nothing was changed). Not on a borrowed handle.
 * Added in 0.10.0.
 */
SQLLOCK_API int sqllock_force_release(sqllock_db *db, const char *name,
                                      const sqllock_force_options *opts,
                                      int (*cb)(void *ctx,
                                                const sqllock_lease_info *row),
                                      void *ctx);

/* Calls `cb` for each record whose key begins with `prefix` ("" for
 * every record), in key order (by bytes), with its key, value, the
 * value's length and its version; they live until `cb` returns. A
 * non-zero return from `cb` stops the walk and is returned. One index
 * range scan; inside the handle's row-lock transaction when one is open
 * (R4). Records the library keeps for itself under keys no caller can
 * give (an election's) are not shown; the tool's history records are
 * ordinary ones, under "sqllock:history:".
 * SQLLOCK_EINVAL for a NULL or oversized prefix or one with control
 * characters, or a NULL callback. Added in 0.10.0. */
SQLLOCK_API int sqllock_record_list(sqllock_db *db, const char *prefix,
                                    int (*cb)(void *ctx, const char *key,
                                              const void *value, size_t len,
                                              int64_t version),
                                    void *ctx);

/* Deletes record `key` if its version is still `expected`.
 * SQLLOCK_CONFLICT otherwise.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_record_delete(sqllock_db *db, const char *key,
                                      int64_t expected);

/*
 * The update function of sqllock_record_update(). It gets the current
 * value (NULL and 0 when the record does not exist yet) and sets *out and
 * *out_len to the new value; the memory it points *out at must stay valid
 * until the function is called again or sqllock_record_update() returns
 * (a buffer in ctx, say). Return SQLLOCK_OK to write the new value; any
 * other status ends the update, and sqllock_record_update() returns it
 * (e.g. SQLLOCK_CONFLICT from a function that finds the stock sold out).
 */
typedef int (*sqllock_update_fn)(void *ctx, const void *old, size_t old_len,
                                 const void **out, size_t *out_len);

/* Retry policy for sqllock_record_update(). Zero means default, and a
 * zeroed struct is valid; `struct_version` lets later versions append
 * fields (read only from a caller whose struct_version has them): set it
 * with SQLLOCK_RETRY_OPTIONS_INIT. */
typedef struct sqllock_retry_options {
    int struct_version;
    int max_attempts;          /* default 16 */
    int64_t backoff_min_ms;    /* default 1 */
    int64_t backoff_max_ms;    /* default 100 */
} sqllock_retry_options;

#define SQLLOCK_RETRY_OPTIONS_VERSION 1
#define SQLLOCK_RETRY_OPTIONS_INIT { SQLLOCK_RETRY_OPTIONS_VERSION, 0, 0, 0 }

/*
 * The retry helper (contract O2): reads the record, calls `fn`, writes the
 * new value with compare-and-set (creating the record when it did not
 * exist), and on a conflict sleeps with jittered exponential backoff and
 * starts again, up to max_attempts. A write the database rolled back as a
 * deadlock or serialization failure (a lost certification on Galera, say)
 * counts as a conflict: nothing was written, and it is tried again --
 * except inside a started row-lock transaction on the handle, where the
 * database rolled back the whole transaction, which a retry cannot redo:
 * there the deadlock or serialization failure is returned after that
 * attempt, and the transaction has failed (R7); likewise inside the
 * application's transaction on a borrowed handle (sqllock_borrow()),
 * which the database ended: roll it back and run it again. Inside
 * either transaction the record is read with a lock (FOR UPDATE; SQLite
 * holds the database already), so that a retry sees the latest committed
 * record and not the snapshot of the transaction's first read (MySQL
 * REPEATABLE READ), and the record stays locked until the transaction
 * ends, as its write would keep it. A conflict is retried inside a
 * transaction too. In a failed transaction the call returns
 * SQLLOCK_EMISUSE at once.
 * *attempts (when not NULL) gets the number of attempts made. Returns
 * SQLLOCK_OK, SQLLOCK_CONFLICT when every attempt conflicted, the
 * function's own status, or an error.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_record_update(sqllock_db *db, const char *key,
                                      sqllock_update_fn fn, void *ctx,
                                      const sqllock_retry_options *opts,
                                      int *attempts);

/*
 * Schedules and their slots: a job that runs at most once per slot
 * across hosts (`sqllock run NAME --once-per DUR`, --once-per-cron).
 *
 * A schedule is a text. A duration ("1h", as sqllock_parse_duration()
 * reads it, longer than 0) cuts Unix time into the slots [k * DUR,
 * (k + 1) * DUR), k whole: UTC, whatever the time zone. A cron
 * expression of five fields separated by white space, "minute hour
 * day-of-month month day-of-week" -- each a list (a,b) of numbers,
 * ranges (a-b), steps (*\/n, a-b/n) or *; day of week 0-7, 0 and 7
 * Sunday; day of month and day of week combined as Vixie cron does
 * (both restricted: either matches; one begins with *: both must) -- or
 * @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly:
 * a slot runs from one minute whose local time (the host's time zone,
 * TZ honoured) matches to the next such minute. When the clocks go
 * forward the minutes skipped never match; when they go back, a minute
 * of the repeated hour matches at both of its times. A slot is judged
 * by the clock of the host that asks, as cron fires by it: the hosts of
 * one job must keep their clocks far closer together than a slot is
 * long.
 */
#define SQLLOCK_SCHEDULE_MAX 200
/* SQLLOCK_OK when `schedule` is one; SQLLOCK_EINVAL otherwise, with *why
 * (when not NULL) a static sentence saying what is wrong (NULL on
 * success). Added in 0.11.0. */
SQLLOCK_API int sqllock_schedule_check(const char *schedule,
                                       const char **why);
/* The slot of the time `at_ms` (ms since the epoch): *start_ms, its
 * start (the latest slot start <= at_ms), and *end_ms, the next one.
 * SQLLOCK_EINVAL for a bad schedule, SQLLOCK_NOTFOUND when no slot
 * start lies within 10 years of at_ms (or beyond what time_t holds).
 * Thread-safe (it reads the time zone, tzset()). Added in 0.11.0. */
SQLLOCK_API int sqllock_schedule_slot(const char *schedule, int64_t at_ms,
                                      int64_t *start_ms, int64_t *end_ms);
/* *count: the slot starts s with after_ms < s < before_ms, at most
 * `max` (a cron schedule is walked slot by slot: `max` bounds the
 * work). SQLLOCK_EINVAL for a bad schedule or max < 0. Added in
 * 0.11.0. */
SQLLOCK_API int sqllock_schedule_count(const char *schedule,
                                       int64_t after_ms, int64_t before_ms,
                                       int64_t max, int64_t *count);

/*
 * The slot record of lock NAME: one versioned record, key
 * sqllock_slot_key(NAME) ("sqllock:slot:NAME"), whose value is one line
 * of the fields below, separated by tabs (later versions may append
 * fields; readers ignore them). Times are the writing host's clock, ms
 * since the epoch.
 */
typedef struct sqllock_slot_info {
    int64_t slot_ms;           /* the start of the slot of the last run */
    int64_t prev_slot_ms;      /* the start of the slot recorded before
                                  it, 0 for none */
    const char *schedule;      /* the schedule it was judged by */
    const char *state;         /* "running", "ok", "failed", "timeout",
                                  "lost" */
    int64_t token;             /* the run's lease token */
    const char *who;           /* who ran it */
    int64_t start_ms;          /* when the run started */
    int64_t end_ms;            /* when it ended; 0 while "running" */
    int exit_code;             /* its exit code, once it ended */
    int64_t version;           /* the record's version */
} sqllock_slot_info;
/* The record key of NAME's slots into key[size] (size at least
 * SQLLOCK_NAME_MAX + 1): SQLLOCK_SLOT_KEY_PREFIX NAME, or for a long NAME
 * the name cut and a hash of the whole (as sqllock_history_key()).
 * Added in 0.11.0. */
#define SQLLOCK_SLOT_KEY_PREFIX "sqllock:slot:"
SQLLOCK_API void sqllock_slot_key(const char *name, char *key, size_t size);
/* Reads a slot record's value -- as sqllock_record_list() hands out the
 * records under SQLLOCK_SLOT_KEY_PREFIX -- and hands it to `cb` (its
 * strings live until cb returns; version is 0). SQLLOCK_EINVAL when it
 * is not a slot record. Added in 0.11.0. */
SQLLOCK_API int sqllock_slot_parse(const void *value, size_t len,
                                   int (*cb)(void *ctx,
                                             const sqllock_slot_info *info),
                                   void *ctx);
/* Hands NAME's slot record to `cb` (its strings live until cb returns).
 * SQLLOCK_NOTFOUND when there is none; SQLLOCK_EINVAL when the record is
 * not a slot record. Added in 0.11.0. */
SQLLOCK_API int sqllock_slot_read(sqllock_db *db, const char *name,
                                  int (*cb)(void *ctx,
                                            const sqllock_slot_info *info),
                                  void *ctx);

/* Options of sqllock_slot_claim(). */
typedef struct sqllock_slot_options {
    int struct_version;        /* SQLLOCK_SLOT_OPTIONS_VERSION */
    const char *schedule;      /* the schedule (required) */
    int64_t slot_ms;           /* the start of the slot claimed
                                  (sqllock_schedule_slot()) */
    int64_t token;             /* the token of the run's lease on NAME */
    const char *who;           /* who runs it (user@host, say) */
    int64_t start_ms;          /* when the run started; 0: now */
    int retry_failed;          /* run again a slot whose run did not end
                                  "ok" (see below) */
} sqllock_slot_options;
#define SQLLOCK_SLOT_OPTIONS_VERSION 1
#define SQLLOCK_SLOT_OPTIONS_INIT \
    { SQLLOCK_SLOT_OPTIONS_VERSION, NULL, 0, 0, NULL, 0, 0 }

/*
 * Claims the slot opts->slot_ms of NAME for a run, which must hold
 * NAME's lease (it keeps the runs of NAME apart). Reads the slot record
 * and writes "running" for this slot, with compare-and-set (DESIGN O1),
 * unless the record holds this slot or a later one (a later one always
 * wins: a slot is never run after a later one). A slot whose run is
 * recorded "ok" is never claimed again; one recorded "failed",
 * "timeout", "lost" -- or "running", whose runner is then gone, since
 * the caller holds the lease -- only with opts->retry_failed.
 * Returns SQLLOCK_OK: the slot is this run's (run the job, then
 * sqllock_slot_finish()); SQLLOCK_BUSY: the slot, or a later one, has
 * had its run; SQLLOCK_CONFLICT: another run claimed the slot between
 * this call's read and its write (even when NAME's lease was lost
 * meanwhile, one of the two claims fails); SQLLOCK_EINVAL for bad
 * options, or a record that is not a slot record (nothing is written);
 * or a database's status. `cb`, when not NULL, is called once before
 * the return with the record as found, when there was one. Added in
 * 0.11.0.
 */
SQLLOCK_API int sqllock_slot_claim(sqllock_db *db, const char *name,
                                   const sqllock_slot_options *opts,
                                   int (*cb)(void *ctx,
                                             const sqllock_slot_info *found),
                                   void *ctx);
/* Notes the end of the run of `token` in NAME's slot record: `state`
 * "ok", "failed", "timeout" or "lost", its exit code, and when it ended
 * (end_ms; 0: now), with compare-and-set. SQLLOCK_CONFLICT when the
 * record is another run's by now (nothing written); SQLLOCK_NOTFOUND
 * when there is none. Added in 0.11.0. */
SQLLOCK_API int sqllock_slot_finish(sqllock_db *db, const char *name,
                                    int64_t token, const char *state,
                                    int exit_code, int64_t end_ms);

/*
 * The application's own tables (contract O3). A table is named by the
 * application, e.g. inventory(id, qty, version): table, key column and
 * version column are identifiers `[A-Za-z_][A-Za-z0-9_]*` (the table may
 * be schema-qualified, "shop.inventory"), at most 63 bytes each; the
 * library validates and quotes them for the database. Values always go as
 * bound parameters. Numbers are int64; keys may be numbers or text.
 */
struct sqllock_table {
    const char *table;
    const char *key_column;
    const char *version_column;
};

/* A key, a value, an assignment or a condition on one column. */
typedef enum sqllock_op {
    SQLLOCK_OP_SET = 0,  /* column = value            (assignment) */
    SQLLOCK_OP_ADD,      /* column = column + value   (assignment; number) */
    SQLLOCK_OP_SUB,      /* column = column - value   (assignment; number) */
    SQLLOCK_OP_EQ,       /* column = value            (condition) */
    SQLLOCK_OP_NE,       /* column <> value           (condition) */
    SQLLOCK_OP_LT,       /* column < value            (condition) */
    SQLLOCK_OP_LE,       /* column <= value           (condition) */
    SQLLOCK_OP_GT,       /* column > value            (condition) */
    SQLLOCK_OP_GE        /* column >= value           (condition) */
} sqllock_op;

struct sqllock_cell {
    const char *column;  /* ignored for the key, which uses key_column */
    sqllock_op op;
    const char *text;    /* a text value, or NULL for the number below */
    int64_t number;
};

#define SQLLOCK_NUMBER(n) { NULL, SQLLOCK_OP_SET, NULL, (n) }
#define SQLLOCK_TEXT(s) { NULL, SQLLOCK_OP_SET, (s), 0 }

/*
 * Reads the integer columns `columns[0..ncolumns)` (at most 16) and the
 * version of the row whose key is `key`. SQLLOCK_NOTFOUND when there is no
 * such row. A NULL column reads as 0.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_table_get(sqllock_db *db, const sqllock_table *t,
                                  const sqllock_cell *key,
                                  const char *const *columns, int ncolumns,
                                  int64_t *values, int64_t *version);

/*
 * Compare-and-set on an application row:
 *   UPDATE t SET <sets>, version = version + 1
 *    WHERE key = ? AND version = ? AND <conds>
 * `sets` are assignments (SET, ADD, SUB), at least one; `conds` are
 * conditions (EQ .. GE), possibly none. SQLLOCK_OK (and *new_version =
 * expected + 1), or SQLLOCK_CONFLICT when no row matched: the version
 * moved, a condition failed, or the row is gone.
 *
 *   sqllock_cell key = SQLLOCK_NUMBER(42);
 *   sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
 *   sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
 *   rc = sqllock_table_cas(db, &inventory, &key, version, &sub, 1,
 *                          &enough, 1, NULL);
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_table_cas(sqllock_db *db, const sqllock_table *t,
                                  const sqllock_cell *key, int64_t expected,
                                  const sqllock_cell *sets, int nsets,
                                  const sqllock_cell *conds, int nconds,
                                  int64_t *new_version);

/*
 * The same conditional update without a version check: one statement,
 *   UPDATE t SET <sets>, version = version + 1 WHERE key = ? AND <conds>
 * (the classic `qty = qty - 1 WHERE qty >= 1`). SQLLOCK_CONFLICT when no
 * row matched.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_table_update(sqllock_db *db, const sqllock_table *t,
                                     const sqllock_cell *key,
                                     const sqllock_cell *sets, int nsets,
                                     const sqllock_cell *conds, int nconds);

/*
 * A fenced write (contract L5): the storage side of a fencing token. The row
 * keeps, in the integer column `fence_column`, the largest token that has
 * written it; the write applies only when `token` is not stale:
 *   UPDATE t SET <sets>, fence = token [, version = version + 1]
 *    WHERE key = ? AND COALESCE(fence, 0) <= token AND <conds>
 * one statement, so a holder that was paused, partitioned or reaped while
 * a newer holder wrote can never overwrite the newer holder's data, even
 * when it still believes it holds the lease. Equal tokens pass (the same
 * hold writes again). `t->version_column` may be NULL here (no version is
 * bumped); `sets` may be empty (only the fence moves). Pass the token of
 * sqllock_lease_token(); a fast-mode lease has none (0: SQLLOCK_EINVAL).
 *
 * It compares tokens in the data row only: until the new holder has
 * written this row, a stale holder's write is still applied, even after
 * its lease was reaped and granted again. sqllock_table_guarded_update()
 * also checks the lease itself, at commit (contract G1); prefer it when
 * the lease is at hand.
 *
 * SQLLOCK_OK: applied. SQLLOCK_LOST: the row carries a larger token, a
 * newer holder wrote it, nothing changed (give up: the lease is gone).
 * SQLLOCK_CONFLICT: a condition failed. SQLLOCK_NOTFOUND: no row has the
 * key. (The three are told apart by reading the row after the update
 * matched nothing; that read decides nothing, the update already has.)
 *
 *   sqllock_cell key = SQLLOCK_NUMBER(7);
 *   sqllock_cell set = { "paid", SQLLOCK_OP_SET, NULL, 1 };
 *   rc = sqllock_table_fenced_update(db, &orders, &key, "fence",
 *                                    sqllock_lease_token(lease), &set, 1,
 *                                    NULL, 0);
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_table_fenced_update(sqllock_db *db,
                                            const sqllock_table *t,
                                            const sqllock_cell *key,
                                            const char *fence_column,
                                            int64_t token,
                                            const sqllock_cell *sets,
                                            int nsets,
                                            const sqllock_cell *conds,
                                            int nconds);

/* ------------------------------------------------------------------------ */
/* Guarding the application's own writes (contract G1)                       */
/* ------------------------------------------------------------------------ */

/*
 * A guard is a condition the application puts in the WHERE of its own
 * write -- on its own connection, in its own transaction, through any
 * client library -- so that the write commits only if the lease (name,
 * token) is still held WHEN IT COMMITS: a takeover that races the commit
 * either waits for it or makes it fail. Expiry is judged by the server's
 * clock when the guard is evaluated. docs/guard.md has the argument, the
 * isolation levels it is correct under, and what it costs: the lease row
 * stays locked (shared) until the guarded transaction ends, so the
 * holder's own renewal, its release and the reaper wait for that commit.
 * Commit (or roll back) before releasing the lease.
 *
 * The placeholder styles of sqllock_guard_sql(): how the application's
 * client library writes the parameters it binds.
 */
typedef enum sqllock_param_style {
    SQLLOCK_PARAM_QMARK = 0, /* ? ?: SQLite (sqlite3_prepare), the MySQL C
                                API's prepared statements, Python's
                                sqlite3 (paramstyle qmark) */
    SQLLOCK_PARAM_DOLLAR,    /* $n $n+1, n = `first`: libpq
                                (PQexecParams, PQprepare) */
    SQLLOCK_PARAM_FORMAT,    /* %s %s: psycopg, psycopg2, mysqlclient
                                (MySQLdb), PyMySQL */
    SQLLOCK_PARAM_PYFORMAT,  /* %(sqllock_name)s %(sqllock_token)s */
    SQLLOCK_PARAM_NAMED,     /* :sqllock_name :sqllock_token */
    SQLLOCK_PARAM_NUMERIC    /* :n :n+1, n = `first` */
} sqllock_param_style;

/* A buffer of this size holds the guard of every driver sqllock ships,
 * in every style. */
#define SQLLOCK_GUARD_SQL_MAX 512

/*
 * Writes into buf[size] the guard of the lease (name, token) in the SQL
 * of db's database, with two placeholders in `style` for the
 * application to bind: the lease's name (text), then its token (a 64-bit
 * integer), e.g. on PostgreSQL with SQLLOCK_PARAM_DOLLAR and first = 3:
 *
 *   EXISTS (SELECT 1 FROM sqllock_lease WHERE name = $3 AND token = $4
 *           AND expires_at > pg_catalog.clock_timestamp() FOR SHARE)
 *
 * It is a boolean expression: AND it into the WHERE of the write, e.g.
 * "UPDATE stock SET qty = qty - 1 WHERE id = $1 AND qty >= $2 AND " guard,
 * or "INSERT INTO t (a) SELECT $1 WHERE " guard (MySQL: "SELECT ? FROM
 * DUAL WHERE ..."). The write then changes no row when the lease is no
 * longer this hold's: taken over, expired by the server's clock, released
 * or reaped. On SQLite put it in the write statement itself (or begin the
 * transaction with BEGIN IMMEDIATE): there only a write takes the lock.
 * Pass the token of the CURRENT hold, sqllock_lease_token() (contract
 * L5). The text holds no value (contract D3); `name` and `token` are only
 * checked here, and the text does not depend on them. It names the lease
 * table as the library's statements do (PostgreSQL: through the
 * connection's search_path). In the FORMAT and PYFORMAT styles a '%' of
 * the text is written "%%". `first` (1 to 65534) numbers the first
 * placeholder of the DOLLAR and NUMERIC styles; the others ignore it.
 * No statement is sent; the handle need not be connected.
 *
 * *len (when `len` is not NULL) gets the length of the text without its
 * NUL, also when it does not fit. SQLLOCK_OK; SQLLOCK_EINVAL for a NULL
 * db or buf, a NULL, empty, oversized or malformed name (as
 * sqllock_lease_new() checks names), a token <= 0 (0 is what
 * sqllock_lease_token() gives for a lease that is not held or in fast
 * mode, which has no token and cannot guard), an unknown style, a
 * `first` out of range, or a buffer too small for the text (nothing is
 * written then; SQLLOCK_GUARD_SQL_MAX is always enough);
 * SQLLOCK_EUNSUPPORTED for a driver without a guard (one built against
 * an older sqllock_driver.h). The message on db says which.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_guard_sql(sqllock_db *db, const char *name,
                                  int64_t token, int style, int first,
                                  char *buf, size_t size, size_t *len);

/*
 * A guarded write on an application row: sqllock_table_update() whose
 * statement also carries the guard of `lease` (contract G1), so it is
 * applied only while the lease is still this hold's, and stays so until
 * it commits:
 *   UPDATE t SET <sets>[, fence = token][, version = version + 1]
 *    WHERE key = ? [AND COALESCE(fence, 0) <= token] AND <conds>
 *      AND <the guard of (name, token)>
 * Unlike sqllock_table_fenced_update(), a stale holder's write is refused
 * as soon as the lease is no longer its own -- expired by the server's
 * clock, taken over, released or reaped -- not only once a newer holder
 * has written the row. `fence_column` may be NULL; when given, the row
 * also keeps the largest token that wrote it, as with
 * sqllock_table_fenced_update(), so that both kinds of writer agree.
 * `t->version_column` may be NULL (no version is bumped). Outside a
 * row-lock transaction the statement commits on its own; inside one
 * (sqllock_txn on db) the lease row stays locked until that commits.
 *
 * `lease` may belong to another handle than `db` (its name and token are
 * read, nothing is sent through it); both must reach the same database.
 * It must hold its lease (SQLLOCK_ENOTHELD otherwise) and not be in fast
 * mode (SQLLOCK_EINVAL: no token). Its local deadline is not consulted:
 * the database decides.
 *
 * SQLLOCK_OK: applied. SQLLOCK_LOST: nothing changed, because the lease
 * is no longer this hold's (or the row carries a larger token): give up
 * the work. SQLLOCK_CONFLICT: the lease is held but a condition failed.
 * SQLLOCK_NOTFOUND: no row has the key. (They are told apart by a read
 * after the update matched nothing, which decides nothing.) On PostgreSQL
 * inside a REPEATABLE READ or SERIALIZABLE transaction, a lease row that
 * changed after the transaction's snapshot (a renewal too) fails it with
 * SQLLOCK_ESERIALIZATION. SQLLOCK_EUNSUPPORTED for a driver without a
 * guard.
 *
 *   sqllock_cell key = SQLLOCK_NUMBER(7);
 *   sqllock_cell set = { "paid", SQLLOCK_OP_SET, NULL, 1 };
 *   rc = sqllock_table_guarded_update(db, lease, &orders, &key, NULL,
 *                                     &set, 1, NULL, 0);
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_table_guarded_update(sqllock_db *db,
                                             const sqllock_lease *lease,
                                             const sqllock_table *t,
                                             const sqllock_cell *key,
                                             const char *fence_column,
                                             const sqllock_cell *sets,
                                             int nsets,
                                             const sqllock_cell *conds,
                                             int nconds);

/* Frees memory the library returned (sqllock_record_get()). Accepts NULL.
 * Added in 0.1.0. */
SQLLOCK_API void sqllock_free(void *p);

/* ------------------------------------------------------------------------ */
/* Metrics and the log hook (added in 0.11.0)                               */
/* ------------------------------------------------------------------------ */

/*
 * METRICS. Every handle counts what its calls did, and the process keeps
 * the sums of all its handles (the watchdog's and the reaper's threads
 * included): acquires by kind and outcome, the time each acquire call
 * took and the time each hold lasted (histograms), renewals on time, late
 * (after a failed try) and failed, losses by cause, releases by outcome,
 * how the waits' pauses ended (a wake-up or the end of a poll interval),
 * statements and round trips by operation, reaped rows, row locks and
 * compare-and-set writes by outcome, the leases held now, and for each
 * sqllock_leader of the process whether it leads. Counting costs a few
 * relaxed atomic additions per call, never a statement.
 *
 * sqllock_metrics_text() writes them in the OpenMetrics text format
 * (https://openmetrics.io; what Prometheus scrapes), metric names after
 * Prometheus' conventions: "sqllock_" first, base units in the name
 * (seconds), "_total" on counters, e.g.
 *
 *     sqllock_acquires_total{kind="lease",outcome="granted"} 42
 *     sqllock_hold_seconds_bucket{le="1.0"} 40
 *
 * `db` NULL: the process's sums; else that handle's own counts (a
 * handle's renewals are those of the leases it watches). The text ends
 * with "# EOF". Sets *out to a new string, freed with sqllock_free().
 * SQLLOCK_EINVAL for a NULL out; SQLLOCK_ENOMEM. Thread-safe for `db`
 * NULL; for a handle, from any thread (its counts are atomics), though a
 * scrape that runs beside a call may see that call half counted.
 * Counters start at 0 with the handle, or the process, and never go
 * back. docs/observability.md lists every metric.
 *
 * Added in 0.11.0.
 */
SQLLOCK_API int sqllock_metrics_text(sqllock_db *db, char **out);

/* The same, written to `out` (stdio; not flushed). SQLLOCK_EINVAL for a
 * NULL out; SQLLOCK_ESYS when the write fails. Added in 0.11.0. */
SQLLOCK_API int sqllock_metrics_write(sqllock_db *db, FILE *out);

/* What happened, as the log hook is told it. */
typedef enum sqllock_event_type {
    SQLLOCK_EVENT_ACQUIRED = 1,   /* a grant: name, token, value_ms = the
                                     acquire call's time */
    SQLLOCK_EVENT_RELEASED = 2,   /* a release: name, token, value_ms =
                                     how long it was held */
    SQLLOCK_EVENT_RENEWED_LATE = 3, /* the watchdog renewed a lease after
                                     failed tries: value_ms = the time
                                     that was left of it (L6) */
    SQLLOCK_EVENT_UNCERTAIN = 4,  /* a renewal failed and is retried while
                                     the lease's time lasts: status, msg,
                                     value_ms = the time left */
    SQLLOCK_EVENT_LOST = 5,       /* the lease is lost (status LOST: taken
                                     over or removed; TIMEOUT: its local
                                     deadline passed), msg says how */
    SQLLOCK_EVENT_RECONNECTED = 6, /* a handle connected again after its
                                     connection was lost: name NULL */
    SQLLOCK_EVENT_REFUSED = 7,    /* the library refused a connection or
                                     a setting (a pooler that cannot keep
                                     a session, a server whose durability
                                     the contract cannot rely on, a
                                     session property it cannot pin):
                                     status, msg */
    SQLLOCK_EVENT_RELEASE_LOST = 8 /* a release found the lease lost (L4):
                                     name, token */
} sqllock_event_type;

/* Levels, with the numbers of Python's logging module. */
#define SQLLOCK_LOG_DEBUG   10
#define SQLLOCK_LOG_INFO    20
#define SQLLOCK_LOG_WARNING 30
#define SQLLOCK_LOG_ERROR   40

typedef struct sqllock_event {
    int struct_version;       /* SQLLOCK_EVENT_VERSION */
    int type;                 /* sqllock_event_type */
    int level;                /* SQLLOCK_LOG_* */
    int status;               /* a sqllock_status, SQLLOCK_OK if none */
    const char *name;         /* the lock's name, or NULL */
    int64_t token;            /* the lease's token, 0 if none */
    int64_t value_ms;         /* per type (above), 0 if none */
    const char *msg;          /* one line, never NULL, no secret (C4) */
    const char *db;           /* the handle's URL, password hidden, or
                                 NULL */
} sqllock_event;
#define SQLLOCK_EVENT_VERSION 1

typedef void (*sqllock_log_fn)(void *ctx, const sqllock_event *event);

/*
 * Sets the process's log hook: `fn` receives every event at `min_level`
 * or above, from whichever thread it happened on (the caller's, the
 * watchdog's, a candidate's campaign), one at a time per thread but not
 * serialized across threads; the event and its strings are borrowed for
 * the call. It must not block for long (the watchdog waits for it) and
 * must not call the library on the handle the event came from (it may
 * use handles of its own). NULL `fn`: no hook (the default). Replacing
 * the hook while another thread is inside the old one is safe; the old
 * `ctx` may still be in use until that call returns. Returns the
 * previous hook's function (NULL if none). Added in 0.11.0.
 */
SQLLOCK_API sqllock_log_fn sqllock_log_set(sqllock_log_fn fn, void *ctx,
                                           int min_level);

/* "acquired", "released", "renewed_late", "uncertain", "lost",
 * "reconnected", "refused", "release_lost"; "unknown" otherwise. Added in
 * 0.11.0. */
SQLLOCK_API const char *sqllock_event_name(int type);

/* ------------------------------------------------------------------------ */
/* Utilities                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * Parses a duration into milliseconds. The text is either a bare whole
 * number, which is seconds ("90"), or one or more components, each a
 * number and its unit, with nothing between them:
 *
 *     duration  = digits | component { component }
 *     component = digits [ "." digits ] unit
 *     unit      = "d" | "h" | "m" | "s" | "ms"    (86400 s, 3600 s, 60 s,
 *                                                 1 s, 1/1000 s)
 *
 * e.g. "500ms", "30s", "5m", "1m30s", "1h30m", "2d12h", "1.5s", "0.25s",
 * "1.5m", "1s500ms". The units of one text come largest first, each at
 * most once; only the last component may have a fraction; the value is
 * the sum of the components and must be a whole number of milliseconds
 * (no rounding: "1.5ms" and "0.0001s" are refused) that fits in int64
 * (at most "106751991167d7h12m55.807s"). Leading zeros and zeros that end
 * a fraction are allowed ("007s", "1.50s").
 *
 * Returns SQLLOCK_OK and sets *ms, or SQLLOCK_EINVAL and leaves *ms alone
 * for NULL, empty text, signs, spaces, upper case, other units, exponents,
 * units out of order or repeated ("30m1h", "1m1m"), a fraction before
 * the last component ("1.5h30m"), a number without a unit after a
 * component ("1m30"), a fraction without a unit ("1.5"), a fraction
 * without digits on both sides (".5s", "1.s"), trailing garbage, and a
 * value that is not a whole number of milliseconds or does not fit.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_parse_duration(const char *text, int64_t *ms);

/* ------------------------------------------------------------------------ */
/* Helpers for tools and examples (added in 0.2.0)                          */
/* ------------------------------------------------------------------------ */

/*
 * sqllock_parse_duration(), which also says why it refused a text: *why
 * (when `why` is not NULL) is set to a sentence such as "the units must
 * come largest first" on SQLLOCK_EINVAL, and to NULL on SQLLOCK_OK. The
 * sentence is static (never freed) and quotes nothing of the text.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_parse_duration_why(const char *text, int64_t *ms,
                                           const char **why);

/*
 * The database URL `url` as it may be shown to a person: the password of
 * the user info, the values of password-like parameters and of every
 * query parameter whose value is not known to be harmless are replaced
 * by "***" (names are kept), e.g. "postgres://app:***@db1/shop". The
 * messages of sqllock_errmsg() show URLs this way. The URL need not be
 * well-formed. Sets *out to a new string, freed with sqllock_free().
 * SQLLOCK_OK; SQLLOCK_EINVAL when `url` or `out` is NULL; SQLLOCK_ENOMEM.
 * *out is NULL after a failure (when `out` is not NULL).
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_url_redact(const char *url, char **out);

/*
 * The clock of every local deadline, in microseconds: CLOCK_BOOTTIME
 * where the system has it (it counts the time a suspended host slept),
 * else CLOCK_MONOTONIC. Only differences between two readings mean
 * anything. Thread-safe.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int64_t sqllock_now_us(void);

/*
 * The lease's local deadline (contract L6) on the sqllock_now_us() clock:
 * the time after which the holder no longer counts on the lease unless a
 * renewal moved it. 0 when the handle has none: never granted, released,
 * or attached (sqllock_lease_attach()) and not yet renewed; a lost lease
 * keeps the deadline it had. 0 for NULL. Like sqllock_lease_state(), it
 * may be read from any thread.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int64_t sqllock_lease_deadline_us(const sqllock_lease *lease);

/*
 * Runs one statement of the application's own on the handle's connection:
 * prepared, executed and finalized at once, inside the transaction of a
 * sqllock_txn open on the handle (so after a row lock), else on its own.
 * `sql` uses the database's own placeholders ($1, $2 on PostgreSQL; ? on
 * SQLite and MySQL), bound in order to args[0..nargs): each cell's `text`,
 * or its `number` when `text` is NULL (`column` and `op` are ignored;
 * SQLLOCK_NUMBER() and SQLLOCK_TEXT() make them). When the statement
 * returns rows, *has_row (when not NULL) is set to 1 and *first (when not
 * NULL) to the first column of the first row as an integer (0 without a
 * row); *affected (when not NULL) gets the rows an INSERT, UPDATE or
 * DELETE changed -- for an UPDATE on every database the rows it matched,
 * also those it left as they were (on MySQL whatever the connection's
 * CLIENT_FOUND_ROWS says). The rest of the result is discarded.
 *
 * For the few statements a tool or an example needs (a table of its own,
 * a count); an application that reads rows uses sqllock_db_native().
 * Inside a sqllock_txn it is one of the transaction's statements (R7): a
 * failure that ended the database's transaction (SQLLOCK_EDEADLOCK,
 * SQLLOCK_ECONNECT, ...) fails the transaction, and in a failed one it
 * returns SQLLOCK_EMISUSE without sending the statement.
 * Returns SQLLOCK_OK or the status of the failure, with the database's
 * message in sqllock_errmsg() (e.g. SQLLOCK_EDB, SQLLOCK_EDBBUSY,
 * SQLLOCK_ELOCKED, SQLLOCK_EDEADLOCK: sqllock_retryable() says when a
 * retry is safe); SQLLOCK_EINVAL for a NULL handle or statement, or a
 * negative `nargs` or NULL `args` with nargs > 0.
 *
 * Added in 0.2.0.
 */
SQLLOCK_API int sqllock_db_exec(sqllock_db *db, const char *sql,
                                const sqllock_cell *args, int nargs,
                                int *has_row, int64_t *first,
                                int64_t *affected);

/* ------------------------------------------------------------------------ */
/* Leader election (contract M4)                                             */
/* ------------------------------------------------------------------------ */

/*
 * An election named NAME has one leader at a time: the holder of an
 * ordinary lease on a row of its own, NAME 0x1f "leader" (`sqllock list`
 * shows it as "NAME [leader]"). One name, one meaning (contract N1): a
 * candidate makes NAME an election for good -- the plain lease row NAME
 * becomes its kind marker, "NAME [kind: leader election]" -- so that a
 * plain lease of the same name is refused (SQLLOCK_EKIND) rather than
 * held beside the leadership. The leadership therefore keeps every rule of leases:
 * expiry by the server's clock (L2), a fencing token per term that grows
 * with each new leader (L5: fence the leader's writes with it), a local
 * deadline at which the leader stops counting on it (L6), renewal by the
 * watchdog (L7), wake-ups of the waiting candidates (L9).
 *
 * A candidate (sqllock_leader_start()) is a campaign thread with
 * connections of its own (one for the campaign, one for the renewer). It
 * waits for the leadership with wake-ups -- a hand-over (resign, stop)
 * wakes the waiting candidates at once: PostgreSQL NOTIFY, the MySQL
 * holder's companion session lock, in-process wake-ups; after a crash the
 * row expires at its ttl and a candidate polling with backoff (at most
 * min(250 ms, ttl/8) between tries) takes it over -- then keeps it
 * renewed until it is lost, resigned or stopped. Before it releases the
 * leadership, a leader notes its term in the library's record table
 * (sqllock_record, one row per election, under the same "NAME [leader]"
 * key, kept), so that a candidate that resigned knows when someone else
 * has led, however briefly (see resign_hold_ms).
 *
 * THREADS. The callbacks run ON THE CAMPAIGN THREAD, one at a time, never
 * while the candidate's mutex is held. A callback may call
 * sqllock_leader_is_leader(), sqllock_leader_token(),
 * sqllock_leader_remaining_ms(), sqllock_leader_name() and
 * sqllock_leader_resign() (which then returns at once and takes effect
 * when the callback returns) on its candidate, and anything on handles
 * of its own; never sqllock_leader_stop() (which joins that thread).
 * While a callback runs the campaign waits, and a lost leadership is
 * reported only after it returns: keep callbacks short. Every other call
 * below is thread-safe unless it says otherwise.
 */
typedef struct sqllock_leader sqllock_leader;

/* Elected: this candidate is the leader of term `token` (its fencing
 * token). */
typedef void (*sqllock_leader_elected_fn)(void *ctx, sqllock_leader *leader,
                                          int64_t token);
/* The leadership of term `token` has ended; the leader must not act any
 * more (sqllock_leader_is_leader() is already 0). `status`:
 * SQLLOCK_TIMEOUT, the local deadline (L6) passed before a renewal
 * succeeded (a stalled database or a paused process: reported when the
 * campaign thread runs again, at the deadline if it can); SQLLOCK_LOST, a
 * renewal found the row taken over or removed; SQLLOCK_OK, it was handed
 * over (sqllock_leader_resign(), sqllock_leader_stop()). `msg` says more,
 * borrowed for the call. */
typedef void (*sqllock_leader_lost_fn)(void *ctx, sqllock_leader *leader,
                                       int64_t token, int status,
                                       const char *msg);
/* A leader was seen whose term differs from the last one this candidate
 * saw (itself included, right after elected): its holder text and token,
 * borrowed for the call. This is the follower's "on new leader" hook: a
 * candidate that does not lead reads the election's row after each try
 * of its campaign (and a resigned one at each look while it stays out),
 * so it hears of each new term -- a takeover after a crash or a stall,
 * or a hand-over -- within one pause of its campaign, at most
 * min(250 ms, ttl/8), and a round trip or two. A term that begins and
 * ends within one pause may go unheard (the next one is heard), and so
 * is every term while the candidate cannot reach the database. Measured
 * (tests/test_leaderhealth.c, ttl 1 s, pause 125 ms): 15-80 ms after a
 * takeover, 0-2 ms after a hand-over, whose release wakes the waiting
 * candidates. Added in 0.9.0; the bound is promised since 0.11.0. */
typedef void (*sqllock_leader_observed_fn)(void *ctx, sqllock_leader *leader,
                                           const char *holder, int64_t token);

typedef struct sqllock_leader_options {
    int struct_version;
    /* The leadership lease's ttl, by the server's clock. Required, > 0.
     * A crashed leader is replaced about this long after its last
     * renewal. */
    int64_t ttl_ms;
    /* L6: default ttl/10, < ttl. */
    int64_t safety_margin_ms;
    /* Between renewals: default ttl/3, < ttl - margin. */
    int64_t renew_interval_ms;
    /* After sqllock_leader_resign(), the candidate stays out of the
     * campaign until a later term has been granted to another candidate
     * or this long has passed (so that the hand-over goes to another
     * candidate when there is one). A later term counts however short
     * it was -- one resigned or stopped before this candidate looked at
     * the row is found in the election's term record -- so while
     * another candidate is live, or has led since, the name is without
     * a leader no longer than a hand-over takes; only when nobody else
     * takes the leadership does it stay free for this long. Default
     * (0): the ttl. Negative: SQLLOCK_EINVAL. */
    int64_t resign_hold_ms;
    /* The candidate's identity, shown to everyone as the leader's holder
     * text (at most SQLLOCK_HOLDER_MAX bytes). Default "host:pid". */
    const char *holder;
    /* For the candidate's connections; may be NULL. */
    const sqllock_options *db_options;
    sqllock_leader_elected_fn on_elected;     /* each may be NULL */
    sqllock_leader_lost_fn on_lost;
    sqllock_leader_observed_fn on_observed;
    void *ctx;
} sqllock_leader_options;

#define SQLLOCK_LEADER_OPTIONS_VERSION 1
#define SQLLOCK_LEADER_OPTIONS_INIT \
    { SQLLOCK_LEADER_OPTIONS_VERSION, 0, 0, 0, 0, NULL, NULL, NULL, NULL, \
      NULL, NULL }

/*
 * Starts a candidate for the election `name` on the database `url`: opens
 * its connections (here, so that a bad URL or an unreachable database is
 * reported here), then campaigns on its own thread until
 * sqllock_leader_stop(). Inputs are copied. Errors, with `why` (may be
 * NULL) filled, cut to why_size, and *out NULL: SQLLOCK_EINVAL for a NULL
 * url or out or opts, a NULL or empty name, a name over
 * SQLLOCK_PRIMITIVE_NAME_MAX bytes, not valid UTF-8 or with control
 * characters, ttl_ms <= 0, a bad margin, interval or resign hold, a bad
 * holder text; the connection's error; SQLLOCK_EKIND when NAME is held as
 * a plain lease or is a shared/exclusive lock or a semaphore (N1: the
 * start makes NAME an election, or finds it one); SQLLOCK_ESYS when the
 * thread cannot start.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_leader_start(const char *url, const char *name,
                                     const sqllock_leader_options *opts,
                                     sqllock_leader **out, char *why,
                                     size_t why_size);

/* 1 while this candidate is the leader AND the leadership's local
 * deadline (L6) has not passed; 0 otherwise (also for NULL). Check it
 * before each action, and fence the action with sqllock_leader_token().
 * Thread-safe (atomics only).
 * Added in 0.9.0. */
SQLLOCK_API int sqllock_leader_is_leader(const sqllock_leader *leader);
/* The term (fencing token) while leader, else 0. Thread-safe.
 * Added in 0.9.0. */
SQLLOCK_API int64_t sqllock_leader_token(const sqllock_leader *leader);
/* How long the leader may still act without a further renewal, in ms
 * (0 when not leader). Thread-safe.
 * Added in 0.9.0. */
SQLLOCK_API int64_t sqllock_leader_remaining_ms(const sqllock_leader *leader);

/*
 * The candidate's health, for a readiness probe (ready = SQLLOCK_OK):
 *
 *   SQLLOCK_OK       it leads, and its last successful renewal (or its
 *                    grant) was sent less than ttl - safety margin ago:
 *                    its local deadline (L6) has not passed. The same
 *                    moment as sqllock_leader_is_leader() == 1.
 *   SQLLOCK_TIMEOUT  stalled: its term is not over as far as the
 *                    candidate goes -- neither handed over nor given up --
 *                    but it may no longer act on it: the local deadline
 *                    passed without a successful renewal (a database
 *                    that stopped answering, a renewer held up), or a
 *                    renewal found the leadership taken over. It lasts
 *                    until the campaign has reported the loss (on_lost)
 *                    and released the row, which on a database that does
 *                    not answer takes until its statements time out;
 *                    then SQLLOCK_BUSY.
 *   SQLLOCK_BUSY     not the leader: a follower, a candidate between
 *                    terms, one that resigned or is stopping.
 *   SQLLOCK_EINVAL   a NULL leader.
 *
 * *since_renewal_ms (may be NULL) gets, for OK and TIMEOUT, the time
 * since the last successful renewal or grant of the term was sent, by
 * this host's monotonic clock (below ttl - margin for OK, at or past it
 * for a stall); -1 otherwise. Thread-safe: atomics and the candidate's
 * mutex; also from its callbacks.
 *
 * Added in 0.11.0.
 */
SQLLOCK_API int sqllock_leader_health(const sqllock_leader *leader,
                                      int64_t *since_renewal_ms);
/* The election's name, as given. Added in 0.9.0. */
SQLLOCK_API const char *sqllock_leader_name(const sqllock_leader *leader);

/*
 * Hands the leadership over: the candidate stops acting at once
 * (sqllock_leader_is_leader() is 0 when this returns, or, from a
 * callback, at once too), its campaign thread notes the term in the
 * election's term record and releases the lease -- which wakes the
 * waiting candidates at once -- and it stays out of the
 * campaign until another candidate has been granted a later term
 * (however briefly: it is then a candidate like the others, woken by the
 * next hand-over) or resign_hold_ms has passed.
 * The lost callback runs with SQLLOCK_OK. Waits for the release, except
 * from a callback. SQLLOCK_OK: handed over (from a callback: will be);
 * SQLLOCK_ENOTHELD: not the leader; SQLLOCK_LOST: the leadership had
 * already been lost; another status: the release failed (the lease then
 * expires at its ttl; sqllock_leader_error() has the message).
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_leader_resign(sqllock_leader *leader);

/* Resigns if leader (as above), stops the campaign, joins its thread,
 * closes its connections and frees the candidate. It returns within one
 * statement's time (a leader's hand-over: its term's note and the
 * release) plus one pause of the campaign (at most 250 ms). Call
 * it once no other thread uses the candidate any more (as any free). Not
 * from a callback (it would join its own thread: it then does nothing).
 * Accepts NULL.
 * Added in 0.9.0. */
SQLLOCK_API void sqllock_leader_stop(sqllock_leader *leader);

/* Copies the last error the campaign met (a lost connection, a busy
 * database: it retries by itself), "" when none, into buf[size].
 * Thread-safe. Added in 0.9.0. */
SQLLOCK_API void sqllock_leader_error(sqllock_leader *leader, char *buf,
                                      size_t size);

/* The current leader of an election, as anyone may read it. */
typedef struct sqllock_leader_info {
    char holder[SQLLOCK_HOLDER_MAX + 1];  /* its identity */
    int64_t token;                        /* its term */
    int64_t remaining_ms;                 /* until its lease expires, by
                                             the server's clock */
} sqllock_leader_info;

/*
 * Reads the current leader of election `name` on `db` (one statement):
 * SQLLOCK_OK with *out filled; SQLLOCK_NOTFOUND when there is none (no
 * row, or its lease has expired: *out zeroed). SQLLOCK_EINVAL for a NULL
 * out, or a name as sqllock_leader_start() refuses. Only the holder text
 * and token are shown, never the owner id.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_leader_get(sqllock_db *db, const char *name,
                                   sqllock_leader_info *out);

/*
 * A lease handle on the leadership row of election `name`, for a caller
 * that campaigns by itself with the lease calls (acquire with a wait,
 * watch, release: `sqllock run NAME --leader` does): holding it IS being
 * the leader, and it excludes and is excluded by every sqllock_leader of
 * the same election. As sqllock_lease_new() otherwise (the name's rules
 * are sqllock_leader_start()'s). Its first acquire makes NAME an
 * election, or finds it one (N1), else fails with SQLLOCK_EKIND as
 * sqllock_leader_start() does.
 *
 * Added in 0.9.0.
 */
SQLLOCK_API int sqllock_leader_lease_new(sqllock_db *db, const char *name,
                                         const sqllock_lease_options *opts,
                                         sqllock_lease **out);

#ifdef __cplusplus
}
#endif

#endif /* SQLLOCK_H */
