/*
 * sqllock_driver.h -- the interface between the sqllock core and a database
 * driver. Applications do not need this header; driver authors do.
 *
 * A driver is a `const sqllock_driver` with designated initialisers:
 *
 *     static const sqllock_driver mydrv = {
 *         .version = SQLLOCK_DRIVER_VERSION,
 *         .name = "mydb",
 *         .schemes = mydrv_schemes,
 *         .connect = mydb_connect,
 *         ...
 *     };
 *     sqllock_driver_register(&mydrv);
 *
 * The core holds the lock logic once. A driver moves bytes: it connects,
 * prepares the statements the core asks for (its own dialect's SQL text,
 * which it declares in `dialect`), executes them with bound parameters,
 * hands back rows and affected-row counts, and classifies the database's
 * errors into sqllock status codes. Every value goes to the database as a
 * bound parameter; nothing is ever pasted into SQL text.
 *
 * The driver ABI is SQLLOCK_DRIVER_VERSION (14). A statement is added
 * without a new version: the dialect's table of statements declares its
 * own length (sqllock_dialect.nstmts), and a statement beyond it is
 * absent. A method is only ever appended to sqllock_driver, and one
 * appended after version 14 is read only from a driver of its version
 * on. sqllock_driver_register() refuses a driver built for a version
 * before 14 (the layout that had one statement array per version).
 *
 * Rule ids such as "contract L1" are those of the lock contract, each
 * stated under its own anchor in docs/contract.md (docs/contract.md#l1).
 *
 * THREADS. The core calls a connection's methods from one thread at a time.
 * Different connections of one driver may be used from different threads at
 * once, so a driver keeps no unguarded global state.
 */
#ifndef SQLLOCK_DRIVER_H
#define SQLLOCK_DRIVER_H

#include "sqllock.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SQLLOCK_DRIVER_VERSION 14

/* A driver's connection and prepared statement: the driver's own structs. */
typedef struct sqllock_conn sqllock_conn;
typedef struct sqllock_stmt sqllock_stmt;

/* Capability bits a driver declares. */
#define SQLLOCK_CAP_RETURNING   (1u << 0) /* INSERT/UPDATE ... RETURNING */
#define SQLLOCK_CAP_SKIP_LOCKED (1u << 1) /* SELECT ... FOR UPDATE SKIP LOCKED */
#define SQLLOCK_CAP_NOWAIT      (1u << 2) /* SELECT ... FOR UPDATE NOWAIT */
#define SQLLOCK_CAP_NOTIFY      (1u << 3) /* push wake-ups (LISTEN/NOTIFY) */
#define SQLLOCK_CAP_SHARED_HOST (1u << 4) /* clients share the server's host
                                             and clock (embedded database) */
#define SQLLOCK_CAP_DB_LOCK     (1u << 5) /* no row locks: a transaction
                                             takes the database's write
                                             lock (SQLite) */

/*
 * The statements the core runs. Each dialect gives the SQL text for each,
 * with its native placeholders, and says which core arguments bind to the
 * placeholders in order (see sqllock_sql.args). A statement whose text is
 * NULL, or whose id lies at or beyond the dialect's nstmts, is absent: the
 * core does without it where its description says how, and reports
 * SQLLOCK_EUNSUPPORTED for what needs it. Every dialect must give the
 * statements from LEASE_ACQUIRE to TXN_LOCK_TIMEOUT, except TOKEN_NEXT and
 * LEASE_SET_TOKEN with SQLLOCK_CAP_RETURNING (sqllock_driver_register()
 * refuses one that does not). The arguments the core passes, numbered
 * from 1, and the result it reads:
 *
 * LEASE_ACQUIRE  1 name, 2 owner, 3 holder, 4 ttl_ms.
 *                Insert the lease row, or take over the row when it has
 *                expired by the server clock, in ONE statement (contract L1).
 *                With SQLLOCK_CAP_RETURNING the statement also takes the
 *                fencing token from a counter that outlives the row, AFTER
 *                it has locked the name (so that the grant order and the
 *                token order agree), and returns one row, (token), when it
 *                took the lease, and no row when the lease is held.
 *                Without RETURNING (MySQL), the core runs it inside a
 *                transaction (begin()); it stores token 0, and the
 *                affected-row count says whether it took the lease (0 =
 *                held); then TOKEN_NEXT and LEASE_SET_TOKEN run in the
 *                same transaction, while the row is locked, and commit().
 * TOKEN_NEXT     1 name. Allocates a token from a counter that outlives
 *                every lease row; the token is insert_id(). (The name lets
 *                a dialect keep one counter row per name instead of a
 *                global hot row; the counter itself must be global.)
 *                Only used without SQLLOCK_CAP_RETURNING.
 * LEASE_SET_TOKEN 1 name, 2 owner, 3 token. Stores the new token in the
 *                row just taken. Only used without SQLLOCK_CAP_RETURNING.
 * LEASE_RENEW    1 name, 2 owner, 3 token, 4 ttl_ms. Sets the expiry to
 *                server now + ttl where name, owner and token match.
 *                Affected rows: 1 renewed, 0 lost.
 * LEASE_RELEASE  1 name, 2 owner, 3 token, 4 wake-up channel. Deletes the
 *                row where all three match. Affected rows: 1 released, 0
 *                lost. Its commit need not be durable (contract L10): a
 *                dialect may make it asynchronous when that costs no extra
 *                round trip. A dialect with SQLLOCK_CAP_NOTIFY sends a
 *                notification on the channel (argument 4, at most 63
 *                bytes of [a-z0-9_]) when it deleted the row, in the same
 *                statement, so that waiters listening on it wake (L9);
 *                argument 4 is NULL when the lease wants no wake-ups, and
 *                then nothing is sent.
 * LEASE_LIST     no arguments. Returns (name, owner, holder, token,
 *                acquired_at_ms, expires_at_ms, remaining_ms) per row,
 *                ordered by name; times in ms since the Unix epoch and the
 *                remainder computed by the server's clock.
 * SCHEMA_VERSION no arguments. Returns (version) from the schema table.
 *
 * Versioned records (contract O1), table sqllock_record(key, value, version):
 * RECORD_GET     1 key. Returns (value, version) or no row; value is
 *                binary (read with column_blob()).
 * RECORD_CREATE  1 key, 2 value (BLOB). Inserts with version 1 unless the
 *                key exists. Affected rows: 1 created, 0 existed; or it
 *                fails with SQLLOCK_EEXISTS (a duplicate key) when the
 *                key existed, if that error does not end the transaction
 *                it runs in (MySQL).
 * RECORD_CAS     1 key, 2 expected version, 3 value (BLOB). Sets the value
 *                and version = version + 1 where key and version match.
 *                Affected rows: 1 written, 0 conflict.
 * RECORD_DELETE  1 key, 2 expected version. Affected rows: 1 or 0.
 *
 * Row locks (contract R1-R5), table sqllock_row(name):
 * ROW_ENSURE     1 name. Creates the lock row if it does not exist, inside
 *                the caller's transaction, WITHOUT waiting for a lock on an
 *                existing row (PostgreSQL ON CONFLICT DO NOTHING does not;
 *                MySQL must not touch an existing key: INSERT ... SELECT
 *                ... WHERE NOT EXISTS). A concurrent creator may make it
 *                fail with SQLLOCK_EEXISTS, which the core ignores.
 * TXN_LOCK_TIMEOUT 1 ms. Sets how long a row-lock wait may take on this
 *                connection from now on (PostgreSQL lock_timeout; MySQL
 *                innodb_lock_wait_timeout in whole seconds; SQLite the busy
 *                timeout). The core sends it only when the value changes.
 * The dialect's `for_update` strings end a SELECT that locks the rows it
 * returns, in the three modes; SQLite's are empty (SQLLOCK_CAP_DB_LOCK).
 *
 * Reaping and fast mode:
 * LEASE_REAP     1 grace_ms, 2 batch. Deletes at most `batch` lease rows
 *                whose expiry lies more than grace_ms before the server's
 *                now, with that expiry test inside the DELETE itself, so
 *                a lease renewed a moment earlier is never deleted
 *                (contract P1). Many reapers may run it at once (P2): a
 *                dialect skips rows another reaper has locked where it
 *                can. Affected rows: the rows deleted.
 * TOKEN_TRIM     1 batch. Deletes at most `batch` rows of a per-name token
 *                counter (TOKEN_NEXT), never the row holding the largest
 *                token, so the counter cannot restart below it. It may
 *                keep the rows of names that hold a lease, where that
 *                costs no lock the acquire path could deadlock with.
 *                Affected rows: the rows deleted. A NULL text where the
 *                dialect keeps no such rows.
 * LEASE_ACQUIRE_FAST, LEASE_RENEW_FAST  the same arguments and results as
 *                LEASE_ACQUIRE and LEASE_RENEW, for leases in fast mode
 *                (SQLLOCK_LEASE_FAST): the statement's commit need not be
 *                durable (PostgreSQL: synchronous_commit off for its own
 *                transaction, at no extra round trip). A NULL text where
 *                the database has no per-transaction asynchronous commit;
 *                the core then refuses fast mode. Only dialects with
 *                SQLLOCK_CAP_RETURNING may give LEASE_ACQUIRE_FAST.
 *
 * The guard:
 * LEASE_GUARD    1 name, 2 token. Not a statement: a boolean SQL
 *                expression (contract G1) that an application puts in the
 *                WHERE of its own write, and that the core puts in the
 *                UPDATE of sqllock_table_guarded_update(). It is true when
 *                the lease row of `name` carries `token` and has not
 *                expired by the server's clock AT THE TIME IT IS
 *                EVALUATED (never the transaction's start time), compared
 *                exactly as LEASE_ACQUIRE compares for a takeover (so that
 *                no instant passes both tests), and it keeps that row from
 *                being taken over, renewed or deleted until the
 *                transaction that evaluated it ends (a shared row lock;
 *                SQLite: the write lock the statement holds). It must
 *                read the lease table as the driver's own statements name
 *                it, bind each argument exactly once, name before token,
 *                and contain no ':' and no placeholder inside a string
 *                literal: the core rewrites its placeholders into the
 *                style an application's client library uses
 *                (sqllock_guard_sql()). A NULL text where the database
 *                cannot hold the row at commit; the guard is then
 *                SQLLOCK_EUNSUPPORTED.
 *
 * For a connection the application lends (adopt()):
 * LOCK_TIMEOUT_GET no arguments. Returns (ms): the row-lock wait that
 *                TXN_LOCK_TIMEOUT sets, as the session has it now, so
 *                that the core can put the application's value back
 *                when its transaction on a borrowed connection ends
 *                (PostgreSQL lock_timeout, 0 = none; MySQL
 *                innodb_lock_wait_timeout; SQLite the busy timeout).
 * TXN_WRITE_LOCK no arguments. With SQLLOCK_CAP_DB_LOCK only: takes the
 *                database's write lock inside a transaction that is
 *                already open (one the application began, which a row
 *                lock joins), waiting as the busy timeout says, and
 *                changes nothing. A NULL text without DB_LOCK.
 *
 * The acquire in one round trip without RETURNING:
 * LEASE_ACQUIRE_ONE 1 name, 2 owner, 3 holder, 4 ttl_ms. For a dialect
 *                without SQLLOCK_CAP_RETURNING: the whole acquire --
 *                LEASE_ACQUIRE, then TOKEN_NEXT and LEASE_SET_TOKEN while
 *                the row is locked, committed -- in one round trip (a
 *                stored routine that upgrade() installs), with the same
 *                effect and the same rules. Returns one row, (token):
 *                the new token when it took the lease, 0 when the lease
 *                is held. When the routine cannot be used (not installed:
 *                SQLLOCK_ENOSCHEMA; not allowed: SQLLOCK_EPERM) the core
 *                goes back to the statements of the transaction for this
 *                connection. A NULL text where there is no such routine.
 *
 * Wake-ups through a session lock (contract L9) for a database
 * without push notifications. A lease with wake-ups has a companion
 * session lock derived from its name and the database it lives in, which
 * its holder keeps on its connection while it holds the lease, and which
 * waiters block on. The companion is only a hint that the holder let go
 * or died: the lease row and the server's clock alone decide who holds
 * (L1, L2). The core sends these only where session_wake() allows.
 * LEASE_ACQUIRE_WAKE 1 name, 2 owner, 3 holder, 4 ttl_ms. LEASE_ACQUIRE_ONE
 *                (same rules, same one round trip) which, when it took
 *                the lease, also takes the companion lock, waiting at
 *                most a moment (the waiters woken by the last release
 *                pass it on at once), unless this connection has it (a
 *                session lock counted twice would outlive the release).
 *                Returns one row, (token, companion): token as
 *                LEASE_ACQUIRE_ONE; after a grant, companion 1 when the
 *                connection holds the companion lock, 0 when another
 *                session held it at that moment (a waiter between its
 *                wake-up and its try: the lease is granted without, and
 *                its waiters poll); when the lease is held (token 0),
 *                companion 1 when some session holds the companion lock
 *                (a waiter may block on it), else 0.
 *                SQLLOCK_ENOSCHEMA or SQLLOCK_EPERM as LEASE_ACQUIRE_ONE;
 *                the core then uses that one.
 * LEASE_RELEASE_WAKE 1 name, 2 owner, 3 token. LEASE_RELEASE, and the
 *                companion lock let go whatever the delete found (a lost
 *                lease must not keep it), in one round trip. Returns one
 *                row, (deleted): 1 released, 0 lost.
 * WAKE_WAIT      1 name, 2 timeout_ms (> 0). Waits up to timeout_ms for
 *                the companion lock and, when it gets it, lets it go at
 *                once, in the same statement (a waiter never keeps it).
 *                Returns one row, (woke): 1 when it got the lock (the
 *                holder let go, its session ended, or no one held it), 0
 *                when the time ran out. The wait is the server's; the core
 *                keeps it below statement_timeout_ms, the client's bound
 *                on a round trip.
 *
 * Batched renewal by the watchdog (contract L6, L7). The
 * batch is ONE bound text argument, a JSON array of at most
 * SQLLOCK_RENEW_BATCH_MAX leases, each [name, owner, token, ttl_ms]
 * (name and owner JSON strings, token and ttl_ms integers); the core
 * builds it, so nothing is pasted into SQL text and the statement's text
 * is fixed (PostgreSQL: jsonb_to_recordset; MySQL 8.0 and MariaDB 10.6:
 * JSON_TABLE; SQLite: json_each).
 * LEASE_RENEW_MANY 1 batch. LEASE_RENEW for every lease of the batch in
 *                one statement: each row whose name, owner and token all
 *                match one element gets the expiry server now + that
 *                element's ttl_ms, by the server's clock; rows that do not
 *                match are left alone and do not fail the statement (a
 *                lost lease does not fail the others). With
 *                SQLLOCK_CAP_RETURNING it returns one row, (name, token),
 *                per lease it renewed; without, it returns nothing and
 *                LEASE_RENEWED_MANY says which. Durable as LEASE_RENEW.
 *                A NULL text where the dialect has none: the core then
 *                renews one lease per LEASE_RENEW.
 * LEASE_RENEW_MANY_FAST 1 batch. The same for leases in fast mode, its
 *                commit as LEASE_RENEW_FAST's. NULL where LEASE_RENEW_FAST
 *                is NULL (or where the core should renew fast leases one
 *                by one).
 * LEASE_RENEWED_MANY 1 batch. Only without SQLLOCK_CAP_RETURNING, run on
 *                the same connection right after LEASE_RENEW_MANY
 *                succeeded with fewer affected rows than the batch has
 *                leases (then LEASE_RENEW_MANY must count every row it
 *                matched as affected, as LEASE_RENEW does): returns (name, token) of every lease row that
 *                matches an element by name, owner and token. That is
 *                exactly the rows the renewal changed: only the holder
 *                writes its owner and token into a row, so a row that did
 *                not match when the renewal ran cannot match later, and a
 *                row it renewed stays ours until it expires (a row gone
 *                meanwhile, deleted by hand, is reported lost, as it is).
 *                NULL with SQLLOCK_CAP_RETURNING.
 *
 * Several names at once:
 * LEASE_ACQUIRE_MANY 1 names, 2 owners, 3 holder, 4 ttl_ms. Several
 *                leases at once, all or none (contract L12), in one round
 *                trip: `names` are the names, distinct and sorted in
 *                byte order, joined by line feeds ('\n', which no name
 *                contains), `owners` their fresh owner ids in the same
 *                order, joined the same way. The routine takes each name in
 *                that order exactly as LEASE_ACQUIRE (or, without
 *                RETURNING, LEASE_ACQUIRE_ONE) would, in ONE transaction
 *                that it commits (durably) only when it took every name,
 *                and rolls back (nothing left behind) at the first name
 *                held by a live holder. Returns one row, (blocker,
 *                tokens): blocker 0 and `tokens` the new tokens in the
 *                names' order, as decimal numbers separated by spaces,
 *                when it took them all; blocker k (from 1), the position
 *                of the first held name, and `tokens` empty when it took
 *                none. A deadlock or serialization failure is reported as
 *                such (the transaction was rolled back). When the routine
 *                is not installed (SQLLOCK_ENOSCHEMA) or not allowed
 *                (SQLLOCK_EPERM) the core takes the names with
 *                LEASE_ACQUIRE in a transaction of its own. A NULL text
 *                where there is no such routine (the transaction is then
 *                always used).
 *
 * One name, and the rows a primitive keeps under it:
 * LEASE_RANGE    1 lo, 2 hi. The lease rows whose name n has lo <= n < hi
 *                in byte order (a range of the primary key, so an index
 *                range scan), ordered by name, with the columns of
 *                LEASE_LIST: (name, owner, holder, token, acquired_at_ms,
 *                expires_at_ms, remaining_ms), expired rows included
 *                (remaining_ms <= 0). The core reads one name with it
 *                (hi = name + "\x01": names have no control characters)
 *                and the rows a semaphore, a shared lock, a fair queue or
 *                an election keeps under one name (lo = name + "\x1f", hi =
 *                name + " "; see sqllock__derived_name() in the core).
 *
 * Shared and exclusive holds on one name (contract M2). The
 * writer is an ordinary lease on the derived name W = NAME "\x1f" "w";
 * each reader is a lease row of its own, R = NAME "\x1f" "r" and 16
 * random hex digits. No side ever relies on a row having expired without
 * deleting it under its row lock first, so that a renewal in flight
 * either commits before (and keeps its row) or finds no row (LOST).
 * RW_READ_ACQUIRE 1 W, 2 R, 3 owner, 4 holder, 5 ttl_ms. In ONE round
 *                trip and one transaction, serialized against every grant
 *                of W (PostgreSQL: the shared form of the advisory lock
 *                LEASE_ACQUIRE takes on W, then a fresh snapshot; MySQL: a
 *                shared lock on W's row of the token counter, which a
 *                grant REPLACEs): deletes W's row if it has expired by the
 *                server's clock, and when no row of W is left, inserts the
 *                reader's lease row R (owner, holder, expiry server now +
 *                ttl, a token from the counter of LEASE_ACQUIRE). Returns
 *                one row, (token): the token when it inserted, 0 when W is
 *                held. SQLLOCK_ENOSCHEMA or SQLLOCK_EPERM when its routine
 *                is not installed or not allowed. A NULL text where the
 *                dialect has no routine: the core then runs RW_EXPIRE on
 *                (W, W "\x01") and RW_READ_INSERT in one transaction of its
 *                own (begin() must then lock out every other writer of the
 *                lease table, as SQLite's BEGIN IMMEDIATE does).
 * RW_EXPIRE      1 lo, 2 hi. Deletes the lease rows with lo <= name < hi
 *                that have expired by the server's clock, taking each row's
 *                lock (a renewal that has it makes the delete wait, and
 *                then see its new expiry). Affected rows: the rows deleted.
 * RW_READ_INSERT 1 W, 2 R, 3 owner, 4 holder, 5 ttl_ms. Only where
 *                RW_READ_ACQUIRE is NULL, inside the core's transaction:
 *                inserts R as RW_READ_ACQUIRE does when no row of W
 *                exists. Returns (token) when it inserted, no row when not.
 */
typedef enum sqllock_sql_id {
    SQLLOCK_SQL_LEASE_ACQUIRE = 0,
    SQLLOCK_SQL_TOKEN_NEXT,
    SQLLOCK_SQL_LEASE_SET_TOKEN,
    SQLLOCK_SQL_LEASE_RENEW,
    SQLLOCK_SQL_LEASE_RELEASE,
    SQLLOCK_SQL_LEASE_LIST,
    SQLLOCK_SQL_SCHEMA_VERSION,
    SQLLOCK_SQL_RECORD_GET,
    SQLLOCK_SQL_RECORD_CREATE,
    SQLLOCK_SQL_RECORD_CAS,
    SQLLOCK_SQL_RECORD_DELETE,
    SQLLOCK_SQL_ROW_ENSURE,
    SQLLOCK_SQL_TXN_LOCK_TIMEOUT,
    SQLLOCK_SQL_LEASE_REAP,
    SQLLOCK_SQL_TOKEN_TRIM,
    SQLLOCK_SQL_LEASE_ACQUIRE_FAST,
    SQLLOCK_SQL_LEASE_RENEW_FAST,
    SQLLOCK_SQL_LEASE_GUARD,
    SQLLOCK_SQL_LOCK_TIMEOUT_GET,
    SQLLOCK_SQL_TXN_WRITE_LOCK,
    SQLLOCK_SQL_LEASE_ACQUIRE_ONE,
    SQLLOCK_SQL_LEASE_ACQUIRE_WAKE,
    SQLLOCK_SQL_LEASE_RELEASE_WAKE,
    SQLLOCK_SQL_WAKE_WAIT,
    SQLLOCK_SQL_LEASE_RENEW_MANY,
    SQLLOCK_SQL_LEASE_RENEW_MANY_FAST,
    SQLLOCK_SQL_LEASE_RENEWED_MANY,
    SQLLOCK_SQL_LEASE_ACQUIRE_MANY,
    SQLLOCK_SQL_LEASE_RANGE,
    SQLLOCK_SQL_RW_READ_ACQUIRE,
    SQLLOCK_SQL_RW_EXPIRE,
    SQLLOCK_SQL_RW_READ_INSERT,
    /* key, value, version of the records with ?1 <= key < ?2, in key
     * (byte) order: sqllock_record_list(). */
    SQLLOCK_SQL_RECORD_RANGE,
    /* A forced release's audit (core/history.c), in one transaction:
     * HISTORY_PUT sets record ?2's value to ?1 -- with byte 0x01 in it
     * replaced by the database's current user where it has users -- if
     * its version is still ?3, counting the version up; LEASE_FORCE_DELETE
     * deletes the lease row (?1 name, ?2 owner, ?3 token), durably, with
     * no wake-up (the holder is not waited for). */
    SQLLOCK_SQL_HISTORY_PUT,
    SQLLOCK_SQL_LEASE_FORCE_DELETE,
    /* An observer's poll (core/observe.c, sqllock_observer_next()), one
     * statement for all its names: ?1 is a JSON array of lock names
     * (strings); the lease rows whose name n has w <= n < w || ' ' for
     * some element w (the row w and the rows a primitive keeps under
     * it, as LEASE_RANGE reads them: an index range scan per element),
     * with LEASE_LIST's seven columns and an eighth, the server's now
     * in ms since the epoch; and a row whose first seven columns are
     * NULL -- when no row matches, or always -- so that the server's
     * clock is read every time. Reads only. A NULL text: no observers
     * (SQLLOCK_EUNSUPPORTED). */
    SQLLOCK_SQL_LEASE_OBSERVE,
    /* A new statement is appended here, one line, and gets one row in
     * each driver's table; nothing else changes. A driver built before
     * it has a shorter table (its nstmts is smaller), and the core
     * reads that as the statement being absent. Ids are never reused
     * or reordered. */
    SQLLOCK_SQL_COUNT_
} sqllock_sql_id;

/* One statement of a dialect. `args` lists, in placeholder order, which of
 * the core's arguments bind to the placeholders, as digits: "1234", or
 * "21" for a statement whose first placeholder takes argument 2. NULL means
 * every argument, in order. */
typedef struct sqllock_sql {
    const char *text;
    const char *args;
} sqllock_sql;

/* How a dialect writes placeholders in SQL the core builds at run time
 * (statements on the application's own tables). */
typedef enum sqllock_placeholder {
    SQLLOCK_PLACEHOLDER_QUESTION = 0,   /* ?, ?, ?       (MySQL, SQLite) */
    SQLLOCK_PLACEHOLDER_DOLLAR          /* $1, $2, $3    (PostgreSQL) */
} sqllock_placeholder;

typedef struct sqllock_dialect {
    /* The statements, indexed by sqllock_sql_id, and how many the table
     * holds: SQLLOCK_SQL_COUNT_ of the header the driver was built with
     * (as SQLite's sqlite3_vfs declares szOsFile). The core reads
     * stmts[id] only for id < nstmts; a later id is absent, as a NULL
     * text is. A driver writes it with designated initialisers:
     *     static const sqllock_sql my_stmts[SQLLOCK_SQL_COUNT_] = {
     *         [SQLLOCK_SQL_LEASE_ACQUIRE] = { "INSERT ...", "1234" }, ...
     *     };
     *     ... .stmts = my_stmts, .nstmts = SQLLOCK_SQL_COUNT_, ... */
    const sqllock_sql *stmts;
    size_t nstmts;
    /* The DDL, schema/<driver>.sql embedded at build time; run by
     * exec_script() inside sqllock_init(). */
    const char *schema;
    /* For SQL the core builds: the character that quotes an identifier
     * ('"' standard, '`' MySQL; the core only quotes identifiers it has
     * validated as [A-Za-z_][A-Za-z0-9_]*), and the placeholder style. */
    char ident_quote;
    sqllock_placeholder placeholder;
    /* Suffixes of a locking SELECT, indexed by sqllock_lock_mode:
     * " FOR UPDATE", " FOR UPDATE NOWAIT", " FOR UPDATE SKIP LOCKED". */
    const char *for_update[3];
} sqllock_dialect;

/* The most leases one LEASE_RENEW_MANY carries. */
#define SQLLOCK_RENEW_BATCH_MAX 1000

/* A bound value. Text is passed with its length and need not be
 * NUL-terminated. */
typedef enum sqllock_value_type {
    SQLLOCK_VALUE_NULL = 0,
    SQLLOCK_VALUE_INT64,
    SQLLOCK_VALUE_TEXT,
    SQLLOCK_VALUE_BLOB          /* bytes (s, len), may hold NULs */
} sqllock_value_type;

typedef struct sqllock_value {
    sqllock_value_type type;
    int64_t i;
    const char *s;
    size_t len;
} sqllock_value;

/* One host of a URL: its name, decoded, without the brackets of an IPv6
 * address, and its port (0 when the URL gives none: the driver's
 * default). */
typedef struct sqllock_url_host {
    const char *name;
    int port;
} sqllock_url_host;

/* The most hosts a URL may list (a Galera cluster or a primary with its
 * standbys has a handful; a longer list is more likely a mistake). */
#define SQLLOCK_URL_MAX_HOSTS 16

/*
 * A parsed URL, decoded, handed to connect(). Absent parts are NULL (port:
 * 0). `raw` is the URL as the application gave it. For
 * "scheme:path" (no "//") authority parts are NULL and `path` is the rest.
 *
 * Hosts. The core parses a host list ("h1:5432,h2,[::1]:5433") once, into
 * `hosts` (a malformed list is SQLLOCK_EURL before any driver sees it),
 * and runs one failover policy for every driver (see `connect` below).
 * connect() is handed ONE host, in `host` and `port`, and connects to
 * exactly that one; `hosts` and `nhosts` describe the URL's whole list
 * (nhosts is 0 when the URL names no host, 1 for a single host), for a
 * driver that must know whether it is one of several. `raw` still holds
 * the list as written. (The parsed URL itself, before the core picks a
 * host, keeps a list whole in `host`, decoded, with port 0.)
 */
typedef struct sqllock_url {
    const char *raw;
    const char *scheme;        /* lower-cased */
    int has_authority;         /* the URL had "//" */
    const char *user;
    const char *password;
    const char *host;
    int port;
    const char *path;          /* "" when empty */
    int nparams;
    const char *const *keys;   /* query parameters, decoded */
    const char *const *values;
    /* Added in 0.2.0: the host list, parsed by the core. */
    int nhosts;
    const sqllock_url_host *hosts;
} sqllock_url;

/* What the core asks of a connection, from sqllock_options. The values
 * hold for the connection's life: when they change, the core connects
 * again. Fields are only ever appended. */
typedef struct sqllock_connect_params {
    int64_t busy_timeout_ms;
    int64_t connect_timeout_ms;     /* the whole connect */
    /* Added with sqllock_options version 2. A network driver bounds each
     * round trip on the client side by statement_timeout_ms +
     * lock_wait_ms: lock_wait_ms is the longest row-lock wait a statement
     * on this connection may be asked to make (the largest TXN_LOCK_TIMEOUT
     * the core may send on it), which the server ends by itself. When the
     * bound passes, the driver gives up on the connection and reports
     * SQLLOCK_ECONNECT, so that the core drops it. */
    int64_t statement_timeout_ms;
    int64_t lock_wait_ms;
} sqllock_connect_params;

/* What execute_txn() sends with the statement. */
#define SQLLOCK_EXEC_BEGIN  (1u << 0)   /* BEGIN before it */
#define SQLLOCK_EXEC_COMMIT (1u << 1)   /* COMMIT after it */

/* A database error as a driver reports it: the status it classified the
 * error as, the database's own code as text (SQLSTATE, MySQL error number,
 * SQLite result code) and its message. */
typedef struct sqllock_dberr {
    int status;
    char code[24];
    char msg[480];
} sqllock_dberr;

/* Fills `err` and returns `status`; for drivers. The message is formatted
 * like printf and cut to fit.
 * Added in 0.1.0. */
SQLLOCK_API int sqllock_dberr_set(sqllock_dberr *err, int status,
                                  const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

typedef struct sqllock_driver {
    int version;                  /* SQLLOCK_DRIVER_VERSION when built */
    const char *name;             /* "sqlite" */
    const char *const *schemes;   /* NULL-terminated, lower case */
    unsigned caps;                /* SQLLOCK_CAP_* */
    const sqllock_dialect *dialect;

    /* Connects to the one host in url->host and url->port (or, when the
     * URL names none, to the driver's default: a unix socket, a file),
     * bounded by p->connect_timeout_ms. On failure returns a status,
     * fills `err`, and sets *out to NULL; the message need not name the
     * host, which the core's message does. A malformed URL for this
     * driver is SQLLOCK_EURL. The status decides the failover
     * (core/failover.c): SQLLOCK_ECONNECT (unreachable, refused, timed
     * out, not ready) lets the core try the list's next host; any other
     * status -- refused credentials (SQLLOCK_EPERM) above all -- ends the
     * connect. */
    int (*connect)(const sqllock_url *url, const sqllock_connect_params *p,
                   sqllock_conn **out, sqllock_dberr *err);
    /* Closes and frees; accepts NULL. */
    void (*disconnect)(sqllock_conn *conn);

    /* Prepares `sql` once; the core keeps the statement for the
     * connection's lifetime. */
    int (*prepare)(sqllock_conn *conn, const char *sql, sqllock_stmt **out,
                   sqllock_dberr *err);
    /* Frees a statement; accepts NULL. Called before disconnect(). */
    void (*finalize)(sqllock_stmt *stmt);

    /* Binds `args` and executes. Rows, if any, are then read with fetch();
     * the core calls reset() when done with the result, before the next
     * execute(). */
    int (*execute)(sqllock_stmt *stmt, const sqllock_value *args, int nargs,
                   sqllock_dberr *err);
    /* Moves to the next row: *has_row is 1 when there is one, 0 at the
     * end. */
    int (*fetch)(sqllock_stmt *stmt, int *has_row, sqllock_dberr *err);
    /* The current row's columns, numbered from 0. A NULL text column is
     * returned as "" and a NULL integer as 0. Text is borrowed until the
     * next fetch() or reset(). */
    int64_t (*column_int64)(sqllock_stmt *stmt, int col);
    const char *(*column_text)(sqllock_stmt *stmt, int col);
    /* Rows changed by the last execute() of an INSERT, UPDATE or DELETE;
     * for an UPDATE the rows it matched, also those whose values it left
     * as they were (PostgreSQL and SQLite count them so; the MySQL driver
     * reads them from mysql_info(), whatever CLIENT_FOUND_ROWS says). */
    int64_t (*affected_rows)(sqllock_stmt *stmt);
    /* Ends the current result; the statement can be executed again. */
    void (*reset)(sqllock_stmt *stmt);

    /* Runs a script of several statements without arguments (the DDL),
     * atomically where the database allows. */
    int (*exec_script)(sqllock_conn *conn, const char *sql,
                       sqllock_dberr *err);

    /* The database's own connection handle. */
    void *(*native)(sqllock_conn *conn);

    /* Transactions: begin, commit, roll back on the connection. Required
     * by a driver without SQLLOCK_CAP_RETURNING (the core's acquire runs
     * in a transaction there). rollback() after a failure must not fail
     * loudly: the core ignores its status except for a lost connection. */
    int (*begin)(sqllock_conn *conn, sqllock_dberr *err);
    int (*commit)(sqllock_conn *conn, sqllock_dberr *err);
    int (*rollback)(sqllock_conn *conn, sqllock_dberr *err);
    /* The AUTO_INCREMENT value the last execute() of `stmt` generated.
     * Required without SQLLOCK_CAP_RETURNING. */
    int64_t (*insert_id)(sqllock_stmt *stmt);

    /* A binary column of the current row: its bytes (borrowed until the
     * next fetch() or reset()) and *len. A NULL column is returned as ""
     * with *len = 0; NULL means the driver ran out of memory decoding it. */
    const void *(*column_blob)(sqllock_stmt *stmt, int col, size_t *len);

    /* ---- the methods below may be NULL: the core does without ---- */

    /* With SQLLOCK_CAP_NOTIFY: starts (on = 1) or stops (on = 0)
     * listening on `channel` ([a-z0-9_], at most 63 bytes) on this
     * connection. Stopping also discards notifications already received. */
    int (*listen)(sqllock_conn *conn, const char *channel, int on,
                  sqllock_dberr *err);
    /* With SQLLOCK_CAP_NOTIFY: waits up to timeout_ms (>= 0) for a
     * notification on any channel this connection listens on, consuming
     * every one that has arrived; *woke = 1 if there was one, 0 when the
     * time ran out. A lost connection is an error (status
     * SQLLOCK_ECONNECT). */
    int (*wait_notify)(sqllock_conn *conn, int64_t timeout_ms, int *woke,
                       sqllock_dberr *err);

    /* Optional: what a row lock taken on this connection excludes, as
     * sqllock_row_lock_scope() reports it (*scope = one of
     * SQLLOCK_ROW_LOCKS_*). For a driver whose answer depends on the
     * server it reached (a MySQL-compatible server that may be a Galera
     * cluster node, where SELECT ... FOR UPDATE excludes only the
     * clients of the same node). It should answer from what the
     * connect learned, without a round trip. Without it, the core
     * answers SQLLOCK_ROW_LOCKS_DATABASE for a driver with
     * SQLLOCK_CAP_DB_LOCK and SQLLOCK_ROW_LOCKS_EXCLUSIVE otherwise. */
    int (*row_lock_scope)(sqllock_conn *conn, int *scope,
                          sqllock_dberr *err);

    /* Optional (sqllock_borrow()): wraps the application's own open
     * connection `native` (the type native() returns: sqlite3 *,
     * PGconn *, MYSQL *) in a sqllock_conn, without a round trip where
     * the driver can (MySQL asks whether the server is a Galera node).
     * The connection stays the application's: disconnect() frees only
     * the wrapper and what the driver made on the connection (prepared
     * statements), and never closes, resets or reconnects it; the driver
     * changes no session setting but the ones the core asks for
     * (TXN_LOCK_TIMEOUT), puts a mode it flips for a round trip
     * (libpq's nonblocking mode) back as it found it, prepares no
     * statement that outlives the call where the application could meet
     * it (PostgreSQL: unnamed statements only), and does not refuse or
     * roll back a statement because the application has a transaction
     * open (contract C2 does not apply: running inside the
     * application's transaction is the point). p->statement_timeout_ms
     * bounds a round trip where the driver bounds them itself (libpq);
     * elsewhere the application's own connection settings do. */
    int (*adopt)(void *native, const sqllock_connect_params *p,
                 sqllock_conn **out, sqllock_dberr *err);
    /* Optional: *in_txn = 1 when the connection is inside a transaction
     * (the application's, or one begin() opened) or will be at its next
     * statement (MySQL with autocommit off), else 0; from what the
     * client library knows, without a round trip. */
    int (*txn_status)(sqllock_conn *conn, int *in_txn, sqllock_dberr *err);

    /* Optional: run by sqllock_init() once the schema is current, every
     * time (the version row says nothing of it): installs what the
     * dialect can do without, such as the stored routine of
     * LEASE_ACQUIRE_ONE, when it is missing. Idempotent and safe from
     * several processes at once. A user without the privilege to install
     * it is not an error (SQLLOCK_OK: the core does without); a lost
     * connection or a broken schema is. */
    int (*upgrade)(sqllock_conn *conn, sqllock_dberr *err);

    /* Optional: *usable = 1 when the session-lock wake-ups of the
     * dialect's session-lock wake-up statements (LEASE_ACQUIRE_WAKE,
     * LEASE_RELEASE_WAKE, WAKE_WAIT) work on this connection, 0 when they
     * must not be sent (a Galera node, where a session lock is one
     * node's); from what the connect learned, without a round trip.
     * Without it, they are used wherever the dialect has them. */
    int (*session_wake)(sqllock_conn *conn, int *usable, sqllock_dberr *err);

    /* Optional: the statement, with BEGIN before it (`with` has
     * SQLLOCK_EXEC_BEGIN) and/or COMMIT after it (SQLLOCK_EXEC_COMMIT),
     * in ONE round trip (PostgreSQL: libpq's pipeline mode, the queries
     * before one Sync). The core uses it on the library's own connection
     * (never a borrowed one) for the first statement of a row-lock
     * transaction it began, and for sqllock_txn_commit_exec(). The
     * server runs them in order and stops at the first failure, whose
     * status and message are those the statement (or BEGIN, or COMMIT)
     * would have had on its own; a COMMIT that answers that it rolled
     * back is a failure, and so is one that execute() or commit() would
     * report as failed although it answered success (PostgreSQL: a
     * canceled wait for a synchronous standby). On success the statement's result is read as
     * after execute(); with COMMIT the transaction is over (committed).
     * *in_txn says, on success and on failure, whether a transaction is
     * open on the connection afterwards (the core rolls a failed one
     * back; 0 when BEGIN itself failed, or COMMIT ended the transaction
     * either way). The round trip is bounded as execute()'s, and the
     * connection is left as execute() leaves it (out of pipeline mode,
     * in its blocking mode) or given up (SQLLOCK_ECONNECT). */
    int (*execute_txn)(sqllock_stmt *stmt, const sqllock_value *args,
                       int nargs, unsigned with, int *in_txn,
                       sqllock_dberr *err);
} sqllock_driver;

/*
 * Registers a driver for each of its URL schemes. Thread-safe. Registering
 * the same driver again is harmless; registering a different driver for a
 * scheme replaces the earlier one for later opens. Returns SQLLOCK_EINVAL
 * for a NULL driver, one without a name, schemes, a required method or a
 * required statement (see sqllock_sql_id), and SQLLOCK_EUNSUPPORTED for
 * one built for a driver version before 14: its layout is not this one.
 * The schemes of a refused driver stay unregistered, and sqllock_open()
 * on them says which version the driver was built for.
 *
 * A driver of a newer version than this library's SQLLOCK_DRIVER_VERSION
 * is used as one of this version: the core reads no method appended
 * after it, and no statement beyond SQLLOCK_SQL_COUNT_.
 *
 * Added in 0.1.0.
 */
SQLLOCK_API int sqllock_driver_register(const sqllock_driver *drv);

/* The clock of a driver's deadlines, in ms: the core's own
 * (CLOCK_BOOTTIME where there is one, so that a suspended host's sleep
 * counts; else CLOCK_MONOTONIC).
 * Added in 0.2.0. */
SQLLOCK_API int64_t sqllock_driver_now_ms(void);

/* How long a wait that ends at `deadline_ms` (a sqllock_driver_now_ms()
 * time) may block in one piece now: the time left, rounded up, at most
 * one second; 0 once it has come. A poll() loop passes it as its timeout
 * and asks again after each return, so that a deadline that passed while
 * the host was suspended (poll() counts CLOCK_MONOTONIC time, which a
 * suspend stops) ends the wait soon after the resume (contract T1).
 * Added in 0.2.0. */
SQLLOCK_API int64_t sqllock_driver_wait_slice_ms(int64_t deadline_ms);

/* The driver registered for `scheme` (case-insensitive), or NULL.
 * Added in 0.1.0. */
SQLLOCK_API const sqllock_driver *sqllock_driver_find(const char *scheme);

#ifdef __cplusplus
}
#endif

#endif /* SQLLOCK_DRIVER_H */
