/*
 * test_util.h -- helpers shared by the sqllock tests: temporary
 * directories, the list of database URLs the driver-neutral tests run on,
 * the few statements of the tests' own that differ per driver, and a
 * lookup of one row through sqllock_list().
 *
 * The harness library (tests/harness, sqllock_test_harness) holds the
 * code; this header declares it. Include <cmocka.h> (with its
 * prerequisites) first.
 */
#ifndef SQLLOCK_TEST_UTIL_H
#define SQLLOCK_TEST_UTIL_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sqllock.h"
#include "tu_env.h"
#include "tu_fixture.h"

/* ------------------------------------------------------------------ */
/* Temporary directories                                               */
/* ------------------------------------------------------------------ */

/* Makes a fresh directory under $TMPDIR (or /tmp); returns a malloc'd
 * path or NULL. */
char *tu_mkdtemp(void);

/* Removes the files in `dir` (not recursive: the tests make only files
 * there) and the directory itself. */
void tu_rmdir(const char *dir);

/* ------------------------------------------------------------------ */
/* URLs to test against                                                */
/* ------------------------------------------------------------------ */

#define TU_MAX_URLS 16

typedef struct tu_urls {
    int n;
    char *url[TU_MAX_URLS];
    char *tmpdir;              /* made when SQLLOCK_TEST_URLS is unset */
    int filtered;              /* URLs SQLLOCK_TEST_DRIVER left out */
} tu_urls;

char *tu_strdup(const char *s);


/*
 * Isolation for parallel runs (ctest -j; scripts/test.sh). Three
 * variables, all optional:
 *
 *   SQLLOCK_TEST_DRIVER=D      only the URLs of driver D (sqlite, postgres,
 *                              mysql) are tested: ctest has one entry per
 *                              unit and driver, test_<unit>_<driver>
 *                              (tests/CMakeLists.txt sets it)
 *   SQLLOCK_TEST_DB_PER_UNIT=TAG
 *                              every unit gets its own database on each
 *                              server: a URL's database DB becomes
 *                              TAG_UNIT_DB (u_UNIT_DB when TAG is 1),
 *                              created when missing -- the user needs
 *                              CREATEDB on PostgreSQL, and on MySQL all
 *                              rights on `%\_DB` (scripts/servers.sh grants
 *                              both; the name ends with DB so that no name
 *                              with more after it is granted, which
 *                              test_hostile relies on) -- and a SQLite
 *                              file F.db becomes F-TAG-UNIT.db.
 *                              Unset, empty or 0: the URLs as given.
 *                              Units (and builds, by their TAG) that share
 *                              no database can run at the same time;
 *                              what is server-wide stays serial in ctest.
 *   SQLLOCK_TEST_UNIT=U        the unit's name in those database names
 *                              (ctest sets it; default: the program's name
 *                              without "test_")
 */

/* The unit's name: lower-case letters, digits and '_', at most 31. */
const char *tu_unit_name(void);

/* SQLLOCK_TEST_DB_PER_UNIT: NULL when off, "" for 1, else the tag
 * (letters and digits only; anything else turns it off with a
 * message). */
const char *tu_db_tag(void);

/* Rewrites `url` into out[] for its unit's own database (see above).
 * Returns 0, or -1 with the reason in why[]. */
int tu_url_per_unit(const char *url, const char *tag,
                                  const char *unit, char *out, size_t size,
                                  char *why, size_t why_size);

/* The database name of a server URL (PostgreSQL, MySQL) into out[]. */
void tu_url_dbname(const char *url, char *out, size_t size);

/* Creates the database of `unit_url` when missing, connecting with
 * `base_url` (the URL as given, whose database exists). 0, or -1 with
 * the reason in why[]. */
int tu_unit_db_create(const char *base_url, const char *unit_url,
                                    char *why, size_t why_size);

/* Fills `u` from SQLLOCK_TEST_URLS (space-separated), or, when that is
 * unset or blank, with one fresh temporary SQLite file; then applies
 * SQLLOCK_TEST_DRIVER and SQLLOCK_TEST_DB_PER_UNIT (above). Returns 0, or
 * -1 (saying why on stderr, with `u` emptied) when a temporary directory
 * or a unit's database cannot be made. */
int tu_urls_load(tu_urls *u);

int tu_urls_load_(tu_urls *u);

/* 1 when `url` goes through a connection pooler (pooler= other than
 * none, tests/pooled.sh): the server connection is the pooler's, so
 * backend ids, startup options and application names are not the
 * client's own. */
int tu_url_pooled(const char *url);

void tu_urls_free(tu_urls *u);

/* The driver a URL's scheme names ("sqlite", "postgres", "mysql"), or
 * NULL for a scheme sqllock does not ship. Used only to check
 * SQLLOCK_TEST_REQUIRE before anything is opened. */
const char *tu_url_driver(const char *url);

/* 1 when the driver name `p` (len bytes; "postgresql" and "mariadb" are
 * aliases) is `driver`. */
int tu_driver_is(const char *p, size_t len, const char *driver);

/* Checks SQLLOCK_TEST_REQUIRE (comma-separated driver names) against the
 * URL list. Returns 0 when every required driver has a URL; otherwise
 * writes the first missing driver into missing[] and returns -1. A
 * driver that is required but not tested is a failed run, never a skip.
 * With SQLLOCK_TEST_DRIVER only that driver is checked (the entries of
 * the other drivers check theirs). */
int tu_check_required(const tu_urls *u, char *missing,
                                    size_t missing_size);

/* ------------------------------------------------------------------ */
/* The tests' own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

/* The placeholders and DDL differ per database; lock logic never lives
 * here, only the few statements the tests run to set up or to sabotage
 * (delete a lease row by hand). */
typedef struct tu_sql {
    const char *driver;
    const char *delete_lease;     /* 1 name */
    const char *counter_ddl;
    const char *counter_insert;   /* 1 id */
    const char *counter_read;     /* 1 id -> value */
    const char *counter_write;    /* 1 value, 2 id */
    const char *counter_delete;   /* 1 id */
} tu_sql;

const tu_sql *tu_sql_for(const char *driver);

/* The application table of the fenced-write tests (test_faults,
 * test_soak): the row keeps the largest token that wrote it. The same
 * DDL runs on all three; its name is not test_reaper's sqllock_test_fenced,
 * which has other columns. */
#define TU_FENCED_TABLE "sqllock_test_fenced_write"
static const char TU_FENCED_DDL[] =
    "CREATE TABLE IF NOT EXISTS " TU_FENCED_TABLE " ("
    "id BIGINT PRIMARY KEY, val BIGINT NOT NULL, fence BIGINT, "
    "ver BIGINT NOT NULL DEFAULT 0)";

/* INSERT of a new row (1 id; val 0, no fence yet) in `driver`'s
 * placeholders. */
const char *tu_fenced_insert(const char *driver);

/* The fenced table's rows, for the tests that write them (test_faults,
 * test_rw, test_leader), kept once here:
 *   tu_fenced_new_row()  inserts row `id` (val 0, no fence yet); fails
 *                        the test when it cannot;
 *   tu_fenced_set()      one fenced write, val = `val`, with `token`
 *                        (sqllock_table_fenced_update(), fence column
 *                        "fence"): its status, SQLLOCK_LOST when refused;
 *   tu_fenced_add()      the same, val + 1;
 *   tu_fenced_read()     val and fence of row `id`; fails the test when it
 *                        cannot read them. */
void tu_fenced_new_row(sqllock_db *db, int64_t id);
int tu_fenced_set(sqllock_db *db, int64_t id, int64_t token, int64_t val);
int tu_fenced_add(sqllock_db *db, int64_t id, int64_t token);
void tu_fenced_read(sqllock_db *db, int64_t id, int64_t *val,
                    int64_t *fence);

/* ------------------------------------------------------------------ */
/* Looking at the lease table                                          */
/* ------------------------------------------------------------------ */

typedef struct tu_row {
    const char *want;          /* the name looked for */
    int found;
    int rows;                  /* all rows seen */
    char owner[SQLLOCK_OWNER_LEN + 8];
    char holder[SQLLOCK_HOLDER_MAX + 8];
    int64_t token;
    int64_t acquired_at_ms;
    int64_t expires_at_ms;
    int64_t remaining_ms;
} tu_row;

int tu_row_cb(void *ctx, const sqllock_lease_info *info);

/* A record counter for sqllock_record_update(): the value is a decimal
 * number (none or "" is 0), written back one higher. `ctx` is a
 * tu_counter that holds the new value's text. */
typedef struct tu_counter {
    char buf[32];
} tu_counter;
int tu_counter_inc(void *ctx, const void *old, size_t old_len,
                   const void **out, size_t *out_len);

/* Looks `name` up through sqllock_list(); returns sqllock_list's status.
 * r->found counts rows with exactly that name (so 0 or 1). */
int tu_find(sqllock_db *db, const char *name, tu_row *r);

/* ------------------------------------------------------------------ */
/* Small things                                                        */
/* ------------------------------------------------------------------ */

int64_t tu_now_ms(void);

void tu_sleep_ms(int64_t ms);

void tu_sleep_us(long us);

/* 1 if `hay` contains `needle`, ignoring ASCII case. */
int tu_contains_ci(const char *hay, const char *needle);

/* 1 if `s` is exactly SQLLOCK_OWNER_LEN hexadecimal digits. */
int tu_is_owner_id(const char *s);

/* ------------------------------------------------------------------ */
/* Which drivers ran                                                   */
/* ------------------------------------------------------------------ */

/* Appends "ENTRY DRIVER" to the file named by SQLLOCK_TEST_REPORT, if
 * set, where ENTRY is the ctest entry's SQLLOCK_TEST_UNIT as given
 * (conformance, reaper_P2, conformance_vg, pooled_conformance...), else
 * tu_unit_name() (the program's name without "test_") -- whatever `unit`
 * the caller passes. A test calls it once a driver's group has passed with
 * no case skipped, so that scripts/test.sh can check that every ctest
 * entry really tested each of its drivers (check_report) and fail a run
 * that left one out. */
void tu_report_driver(const char *unit, const char *driver);

/* ------------------------------------------------------------------ */
/* An empty target: a database without the sqllock tables              */
/* ------------------------------------------------------------------ */

/* The empty targets: on PostgreSQL the schema sqllock_empty in the test
 * database (reached with search_path), on MySQL/MariaDB the database
 * sqllock_empty (with SQLLOCK_TEST_DB_PER_UNIT, the unit's database name
 * followed by _empty); scripts/servers.sh makes both or lets the sqllock
 * user create them, and that user may drop and re-create them. On SQLite,
 * a fresh file in `dir`. */
#define TU_EMPTY_NAME "sqllock_empty"

/* The MySQL database that tu_empty_target() last chose: sqllock_empty, or
 * with SQLLOCK_TEST_DB_PER_UNIT the unit's own, TAG_UNIT_sqllock_empty
 * (a database is server-wide on MySQL, so units running at once each
 * need their own). */
extern char tu_empty_mysql[72];

/* Empties the empty target again (drops it and creates it afresh) through
 * `db`, a handle on the test database itself (not on the empty target).
 * Returns the status of the failing statement, or SQLLOCK_OK. */
int tu_empty_target_reset(sqllock_db *db);

/* Makes the URL of an empty target next to `url` (whose open handle is
 * `db`) in out[], emptied and ready. Returns 1 when it is ready; 0 when
 * this database offers none (the user may not create the schema or
 * database), with the reason in why[] for a clear skip message. */
int tu_empty_target(sqllock_db *db, const char *url,
                                  const char *dir, char *out, size_t size,
                                  char *why, size_t why_size);

/* In the output of `sqllock acquire`: finds "KEY=value" at the start of a
 * line of `text` and copies the value, without surrounding single or
 * double quotes, into val. */
int tu_get_var(const char *text, const char *key, char *val,
                             size_t size);

#endif /* SQLLOCK_TEST_UTIL_H */
