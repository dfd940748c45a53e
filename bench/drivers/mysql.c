/*
 * drivers/mysql.c -- bench_drivers' MySQL / MariaDB part: the floor, the
 * library's SQL (in its transaction, as core/lease.c runs it there) and
 * the native lock sent by hand as prepared statements of the client
 * library, and the FOR UPDATE read and write of --optimistic. The
 * statements of this program's own are stated once, at the top.
 */
#include <stdio.h>
#include <string.h>

#include "drivers/drivers.h"

/* ------------------------------------------------------------------------ */
/* MySQL / MariaDB                                                          */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_MYSQL)
/* drivers/mysql/mysql.c mysql_begin_() (not a dialect statement);
 * mysql_commit_() is mysql_commit(). */
static const char MY_BEGIN[] = "START TRANSACTION";
/* MySQL's own named session lock, for the native lock scenario (the
 * name; a 10 s wait that never happens, the name being the client's
 * own). */
static const char MY_NATIVE_LOCK[] = "SELECT GET_LOCK(?, 10)";
static const char MY_NATIVE_UNLOCK[] = "SELECT RELEASE_LOCK(?)";

static int my_stmt(worker *w, MYSQL_STMT **st, const char *sql)
{
    *st = mysql_stmt_init(w->native);
    if (*st == NULL)
        return wfail(w, "mysql_stmt_init: %s", mysql_error(w->native));
    if (mysql_stmt_prepare(*st, sql, (unsigned long)strlen(sql)) != 0)
        return wfail(w, "prepare '%.40s...': %s", sql, mysql_stmt_error(*st));
    return 0;
}

static void my_text(MYSQL_BIND *b, char *buf, unsigned long *len)
{
    memset(b, 0, sizeof *b);
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = buf;
    b->buffer_length = *len;
    b->length = len;
}

static void my_int(MYSQL_BIND *b, long long *v)
{
    memset(b, 0, sizeof *b);
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
}

/* The parameters point into the worker, so they are bound once; each
 * execute sends the values the buffers hold then. */
static int my_setup(worker *w)
{
    w->name_len = (unsigned long)strlen(w->name);
    w->owner_len = SQLLOCK_OWNER_LEN;
    w->holder_len = (unsigned long)strlen(w->holder);
    if (my_stmt(w, &w->my_floor, "SELECT 1") != 0 ||
        my_stmt(w, &w->my_acq, g_sql_acquire) != 0 ||
        my_stmt(w, &w->my_tok, g_sql_token_next) != 0 ||
        my_stmt(w, &w->my_set, g_sql_set_token) != 0 ||
        my_stmt(w, &w->my_rel, g_sql_release) != 0 ||
        my_stmt(w, &w->my_nlock, MY_NATIVE_LOCK) != 0 ||
        my_stmt(w, &w->my_nunlock, MY_NATIVE_UNLOCK) != 0)
        return -1;
    my_int(&w->my_floor_res[0], &w->my_floor_val);
    my_text(&w->my_acq_p[0], w->name, &w->name_len);
    my_text(&w->my_acq_p[1], w->owner, &w->owner_len);
    my_text(&w->my_acq_p[2], w->holder, &w->holder_len);
    my_int(&w->my_acq_p[3], &w->ttl);
    my_text(&w->my_tok_p[0], w->name, &w->name_len);
    my_int(&w->my_set_p[0], &w->token);
    my_text(&w->my_set_p[1], w->name, &w->name_len);
    my_text(&w->my_set_p[2], w->owner, &w->owner_len);
    my_text(&w->my_rel_p[0], w->name, &w->name_len);
    my_text(&w->my_rel_p[1], w->owner, &w->owner_len);
    my_int(&w->my_rel_p[2], &w->token);
    my_text(&w->my_native_p[0], w->name, &w->name_len);
    my_int(&w->my_native_res[0], &w->my_native_val);
    w->my_native_res[0].is_null = &w->my_native_null;
    if (mysql_stmt_bind_result(w->my_floor, w->my_floor_res) != 0 ||
        mysql_stmt_bind_param(w->my_acq, w->my_acq_p) != 0 ||
        mysql_stmt_bind_param(w->my_tok, w->my_tok_p) != 0 ||
        mysql_stmt_bind_param(w->my_set, w->my_set_p) != 0 ||
        mysql_stmt_bind_param(w->my_rel, w->my_rel_p) != 0 ||
        mysql_stmt_bind_param(w->my_nlock, w->my_native_p) != 0 ||
        mysql_stmt_bind_result(w->my_nlock, w->my_native_res) != 0 ||
        mysql_stmt_bind_param(w->my_nunlock, w->my_native_p) != 0 ||
        mysql_stmt_bind_result(w->my_nunlock, w->my_native_res) != 0)
        return wfail(w, "binding: %s", mysql_error(w->native));
    return 0;
}

/* Executes a statement without a result; returns the affected rows, or
 * -1 on failure. */
static long long my_exec(worker *w, MYSQL_STMT *st, const char *what)
{
    if (mysql_stmt_execute(st) != 0) {
        wfail(w, "%s: %s (%u)", what, mysql_stmt_error(st),
              mysql_stmt_errno(st));
        return -1;
    }
    return (long long)mysql_stmt_affected_rows(st);
}

static int my_floor_pair(worker *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        /* As the driver reads a result: all of it at once, then free. */
        if (mysql_stmt_execute(w->my_floor) != 0 ||
            mysql_stmt_store_result(w->my_floor) != 0)
            return wfail(w, "SELECT 1: %s", mysql_stmt_error(w->my_floor));
        if (mysql_stmt_fetch(w->my_floor) != 0)
            return wfail(w, "SELECT 1 returned no row: %s",
                         mysql_stmt_error(w->my_floor));
        mysql_stmt_free_result(w->my_floor);
    }
    return 0;
}

static int my_hand_pair(worker *w)
{
    MYSQL *my = w->native;
    long long n;

    if (new_owner(w) != 0)
        return -1;
    if (mysql_real_query(my, MY_BEGIN, sizeof MY_BEGIN - 1) != 0)
        return wfail(w, "START TRANSACTION: %s", mysql_error(my));
    n = my_exec(w, w->my_acq, "acquire");
    if (n <= 0) {
        mysql_rollback(my);
        return n == 0 ? wfail(w, "acquire by hand of '%s': busy", w->name)
                      : -1;
    }
    if (my_exec(w, w->my_tok, "token") < 0) {
        mysql_rollback(my);
        return -1;
    }
    w->token = (long long)mysql_stmt_insert_id(w->my_tok);
    n = my_exec(w, w->my_set, "set token");
    if (n != 1) {
        mysql_rollback(my);
        return n < 0 ? -1 : wfail(w, "set token matched %lld rows", n);
    }
    if (mysql_commit(my) != 0)
        return wfail(w, "COMMIT: %s", mysql_error(my));
    n = my_exec(w, w->my_rel, "release");
    if (n != 1)
        return n < 0 ? -1 : wfail(w, "release by hand deleted %lld rows", n);
    return 0;
}

/* Runs GET_LOCK or RELEASE_LOCK on the client's name; 0 when it
 * returned 1 (0 is a timeout or "not yours", NULL an error or "no such
 * lock"). */
static int my_native_call(worker *w, MYSQL_STMT *st, const char *what)
{
    int rc;

    w->my_native_val = -1;
    w->my_native_null = 0;
    if (mysql_stmt_execute(st) != 0 || mysql_stmt_store_result(st) != 0)
        return wfail(w, "%s('%s'): %s (%u)", what, w->name,
                     mysql_stmt_error(st), mysql_stmt_errno(st));
    rc = mysql_stmt_fetch(st);
    if (rc != 0) {
        wfail(w, "%s('%s') returned no value (%d): %s", what, w->name, rc,
              mysql_stmt_error(st));
        mysql_stmt_free_result(st);
        return -1;
    }
    mysql_stmt_free_result(st);
    if (w->my_native_null)
        return wfail(w, "%s('%s') returned NULL", what, w->name);
    if (w->my_native_val != 1)
        return wfail(w, "%s('%s') returned %lld, not 1", what, w->name,
                     w->my_native_val);
    return 0;
}

static int my_native_pair(worker *w)
{
    if (my_native_call(w, w->my_nlock, "GET_LOCK") != 0 ||
        my_native_call(w, w->my_nunlock, "RELEASE_LOCK") != 0)
        return -1;
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there (w->fu_qty is the bound buffer of both). */
static int my_fu_rmw(worker *w)
{
    char read[160], write[160];
    long long n;
    int rc;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 0);
        if (my_stmt(w, &w->my_fu_read, read) != 0 ||
            my_stmt(w, &w->my_fu_write, write) != 0)
            return -1;
        my_int(&w->my_fu_read_p[0], &w->fu_id);
        my_int(&w->my_fu_read_res[0], &w->fu_qty);
        my_int(&w->my_fu_write_p[0], &w->fu_qty);
        my_int(&w->my_fu_write_p[1], &w->fu_id);
        if (mysql_stmt_bind_param(w->my_fu_read, w->my_fu_read_p) != 0 ||
            mysql_stmt_bind_result(w->my_fu_read, w->my_fu_read_res) != 0 ||
            mysql_stmt_bind_param(w->my_fu_write, w->my_fu_write_p) != 0)
            return wfail(w, "binding: %s", mysql_error(w->native));
        w->fu_ready = 1;
    }
    if (mysql_stmt_execute(w->my_fu_read) != 0 ||
        mysql_stmt_store_result(w->my_fu_read) != 0)
        return wfail(w, "SELECT qty: %s", mysql_stmt_error(w->my_fu_read));
    rc = mysql_stmt_fetch(w->my_fu_read);
    mysql_stmt_free_result(w->my_fu_read);
    if (rc != 0)
        return wfail(w, "row %lld: no such row", w->fu_id);
    w->fu_qty--;
    n = my_exec(w, w->my_fu_write, "UPDATE qty");
    if (n != 1)
        return n < 0 ? -1 : wfail(w, "row %lld: UPDATE matched %lld rows",
                                  w->fu_id, n);
    return 0;
}

static void my_teardown(worker *w)
{
    MYSQL_STMT **sts[] = { &w->my_floor, &w->my_acq, &w->my_tok, &w->my_set,
                           &w->my_rel, &w->my_fu_read, &w->my_fu_write,
                           &w->my_nlock, &w->my_nunlock };
    size_t i;

    for (i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        if (*sts[i] != NULL)
            mysql_stmt_close(*sts[i]);
        *sts[i] = NULL;
    }
}

static void my_describe(worker *w, char *buf, size_t n)
{
    const char *v = mysql_get_server_info(w->native);
    const char *host = mysql_get_host_info(w->native);
    int maria = v != NULL && strstr(v, "MariaDB") != NULL;

    if (v == NULL)
        v = "?";
    if (host == NULL)
        host = "?";
    snprintf(buf, n, "%s %.*s, %.*s", maria ? "MariaDB" : "MySQL",
             (int)strcspn(v, "-"), v, (int)strcspn(host, " "), host);
}

static long my_cleanup(worker *w, const char *pattern)
{
    static const char *const sqls[] = {
        "DELETE FROM sqllock_lease WHERE name LIKE ?",
        "DELETE FROM sqllock_token WHERE name LIKE ?",
    };
    unsigned long len = (unsigned long)strlen(pattern);
    char buf[128];
    MYSQL_BIND b;
    long total = 0;
    size_t i;

    snprintf(buf, sizeof buf, "%s", pattern);
    for (i = 0; i < 2; i++) {
        MYSQL_STMT *st = NULL;
        long long n;
        if (my_stmt(w, &st, sqls[i]) != 0)
            bu_die("cleanup: %s", w->bc.err);
        my_text(&b, buf, &len);
        if (mysql_stmt_bind_param(st, &b) != 0)
            bu_die("cleanup: %s", mysql_stmt_error(st));
        n = my_exec(w, st, "cleanup");
        if (n < 0)
            bu_die("cleanup: %s", w->bc.err);
        if (i == 0)
            total = (long)n;   /* token rows are expected: one per name */
        mysql_stmt_close(st);
    }
    return total;
}

static void my_exec_sql(void *native, const char *sql)
{
    if (mysql_real_query(native, sql, (unsigned long)strlen(sql)) != 0)
        bu_die("%.60s...: %s", sql, mysql_error(native));
}

const bench_driver mysql_part = {
    .name = "mysql", .floor_label = "floor: SELECT 1 x2",
    .setup = my_setup, .floor_pair = my_floor_pair,
    .hand_pair = my_hand_pair, .teardown = my_teardown,
    .describe = my_describe, .cleanup = my_cleanup,
    .uses = {
        { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
        { SQLLOCK_SQL_TOKEN_NEXT, "1", &g_sql_token_next },
        { SQLLOCK_SQL_LEASE_SET_TOKEN, "312", &g_sql_set_token },
        { SQLLOCK_SQL_LEASE_RELEASE, "123", &g_sql_release } },
    .exec = my_exec_sql, .fu_rmw = my_fu_rmw,
    .native_pair = my_native_pair,
    .native_label = "native lock: GET_LOCK",
    .native_note = "native lock: SELECT GET_LOCK(?, 10) + SELECT "
        "RELEASE_LOCK(?), prepared,\n  a name per client, on the same "
        "connection",
};
#endif
