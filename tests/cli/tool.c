/*
 * tool.c -- test_cli: a command that names no database is refused, and
 * --local; the demo on the group's database; a copy of the tool built
 * without a driver says how to get it; -V and -h, and a command's own
 * --help; malformed URLs (64), a SQLite file the read-only commands do
 * not create, and what a failed connect says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "cli.h"

/* The refusal stderr shows when no database is named: it says how to
 * name one, and how to ask for a lock of this host only. */
static void expect_no_db_message(const fixture *f, const char *what)
{
    static const char *const words[] = {
        "--db", "--db-file", "SQLLOCK_DB", "SQLLOCK_DB_FILE", "--local",
    };
    size_t i;

    for (i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(f->err, words[i]) == NULL)
            fail_msg("%s without a database: stderr does not name %s:\n%s",
                     what, words[i], f->err);
}

/* Issue 15: a command that names no database (no --db, --db-file,
 * $SQLLOCK_DB or $SQLLOCK_DB_FILE, as under cron) is refused with a usage
 * error instead of locking in a file of this host, which would let every
 * host of a fleet run the job; --local asks for that file by name. The
 * demo still makes its temporary SQLite file. (Until this change, these
 * commands used /var/tmp/sqllock.db: the contract changed.) */
void test_cli_no_database_refused(void **state)
{
    fixture *f = *state;
    char file[4300], owner[SQLLOCK_OWNER_LEN + 1], tok[32];

    snprintf(file, sizeof file, "%s/ran", f->dir);
    unsetenv("SQLLOCK_DB");
    unsetenv("SQLLOCK_DB_FILE");
    EXPECT_BARE(f, 64, "run", cl_U(f, "nodb"), "--ttl", "5s", "--", "touch",
                file);
    expect_no_db_message(f, "run");
    assert_false(tt_file_exists(file));
    assert_string_equal(f->out, "");
    EXPECT_BARE(f, 64, "acquire", cl_U(f, "nodb"), "--ttl", "5s");
    expect_no_db_message(f, "acquire");
    assert_string_equal(f->out, "");
    EXPECT_BARE(f, 64, "release", cl_U(f, "nodb"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", "1");
    expect_no_db_message(f, "release");
    EXPECT_BARE(f, 64, "list");
    expect_no_db_message(f, "list");
    EXPECT_BARE(f, 64, "reap");
    expect_no_db_message(f, "reap");
    EXPECT_BARE(f, 64, "init");
    expect_no_db_message(f, "init");
    /* A variable set but empty counts as unset. */
    setenv("SQLLOCK_DB", "", 1);
    setenv("SQLLOCK_DB_FILE", "", 1);
    EXPECT_BARE(f, 64, "run", cl_U(f, "nodb"), "--ttl", "5s", "--", "touch",
                file);
    expect_no_db_message(f, "run with empty variables");
    assert_false(tt_file_exists(file));
    unsetenv("SQLLOCK_DB_FILE");

    /* --local goes with neither --db nor --db-file, wherever each is. */
    EXPECT_BARE(f, 64, "--local", "--db", f->url, "list");
    assert_non_null(strstr(f->err, "--local"));
    EXPECT_BARE(f, 64, "--local", "list", "--db", f->url);
    EXPECT_BARE(f, 64, "list", "--db-file", file, "--local");
    EXPECT_BARE(f, 64, "list", "--local=yes");

    /* --local: this host's file, before or after the command, also when
     * $SQLLOCK_DB names another database (the command line goes first). */
    setenv("SQLLOCK_DB", f->url, 1);
    EXPECT_BARE(f, 0, "--local", "run", cl_U(f, "local"), "--ttl", "5s", "--",
                "touch", file);
    assert_true(tt_file_exists(file));
    EXPECT_BARE(f, 0, "acquire", cl_U(f, "local"), "--ttl", "1m", "--local");
    assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
    assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
    EXPECT_BARE(f, 0, "list", "--local");
    assert_non_null(strstr(f->out, cl_U(f, "local")));
    /* Not in the database $SQLLOCK_DB names. */
    EXPECT_BARE(f, 0, "list");
    assert_null(strstr(f->out, cl_U(f, "local")));
    EXPECT_BARE(f, 75, "--local", "acquire", cl_U(f, "local"), "--ttl", "1m");
    EXPECT_BARE(f, 0, "--local", "release", cl_U(f, "local"), "--owner", owner,
                "--token", tok);
    unsetenv("SQLLOCK_DB");

    /* The demo, on its temporary file (SQLite must be built). */
    if (tu_url_driver(f->url) != NULL &&
        strcmp(tu_url_driver(f->url), "sqlite") == 0) {
        EXPECT_BARE(f, 0, "demo", "--workers", "2", "--stock", "3");
        assert_non_null(strstr(f->out, "temporary"));
    }
    EXPECT_BARE(f, 64, "demo", "--local");
}

/* Issue 16: the demo on the group's database, as `sqllock demo --db URL`
 * in the README: its own statements go through sqllock_db_exec() in
 * each database's dialect, and every mode but "no lock" sells exactly the
 * stock (exit 0); the URL is shown without a password. */
void test_cli_demo_on_database(void **state)
{
    fixture *f = *state;

    EXPECT_EXIT(f, 0, "demo", "--workers", "2", "--stock", "3");
    EXPECT_CONTAINS(f, "database: ");
    EXPECT_CONTAINS(f, "conditional UPDATE");
    /* The URL's password, if it has one (user:password@ after "//"); a
     * SQLite path may contain any text, such as the temporary directory's
     * "sqllock-test", so only the password itself is looked for. */
    {
        const char *a = strstr(f->url, "//"), *at, *colon;
        char pw[256];

        at = a != NULL ? strchr(a + 2, '@') : NULL;
        colon = at != NULL ? memchr(a + 2, ':', (size_t)(at - (a + 2)))
                           : NULL;
        if (colon != NULL && at - colon - 1 > 0 &&
            (size_t)(at - colon - 1) < sizeof pw) {
            memcpy(pw, colon + 1, (size_t)(at - colon - 1));
            pw[at - colon - 1] = '\0';
            if (strstr(f->out, pw) != NULL)
                fail_msg("the demo showed the password:\n%s", f->out);
        }
    }
}

/* Issue 29 item 5: the demo touches only tables it made. Beside an
 * application's `inventory` table with rows, and a table of its own name
 * (demo_stock) that it did not make, the demo stops before changing
 * anything and says why; the rows of both are as they were. With that
 * table gone it runs, leaves `inventory` as it was, and drops its own
 * tables; a table the demo left behind (its mark column) is taken back. */
static int64_t cl_first(fixture *f, const char *fmt, const char *table)
{
    int has_row = 0;
    int64_t first = -1;

    assert_int_equal(tu_exec_on(f->db, fmt, table, NULL, 0, &has_row, &first,
                                NULL), SQLLOCK_OK);
    assert_true(has_row);
    return first;
}

static int cl_table_exists(fixture *f, const char *table)
{
    int has_row = 0;

    return tu_exec_on(f->db, "SELECT COUNT(*) FROM %s", table, NULL, 0,
                      &has_row, NULL, NULL) == SQLLOCK_OK;
}

void test_cli_demo_touches_only_its_tables(void **state)
{
    fixture *f = *state;
    static const char *const sum = "SELECT SUM(qty * 100 + version) FROM %s";

    tu_exec_on(f->db, "DROP TABLE %s", "demo_stock", NULL, 0, NULL, NULL,
               NULL);
    tu_exec_on(f->db, "DROP TABLE %s", "demo_sale", NULL, 0, NULL, NULL,
               NULL);
    tu_exec_on(f->db, "DROP TABLE %s", "inventory", NULL, 0, NULL, NULL,
               NULL);
    tu_exec_ok(f->db, "CREATE TABLE %s (id INTEGER PRIMARY KEY, qty INTEGER "
               "NOT NULL, version INTEGER NOT NULL)", "inventory", NULL, 0);
    tu_exec_ok(f->db, "INSERT INTO %s VALUES (1, 7, 3), (2, 0, 1), "
               "(3, 12, 9)", "inventory", NULL, 0);
    tu_exec_ok(f->db, "CREATE TABLE %s (id INTEGER PRIMARY KEY, qty INTEGER "
               "NOT NULL)", "demo_stock", NULL, 0);
    tu_exec_ok(f->db, "INSERT INTO %s VALUES (1, 42)", "demo_stock", NULL, 0);
    assert_int_equal(cl_first(f, sum, "inventory"), 703 + 1 + 1209);

    /* A demo_stock the demo did not make: stop, touch nothing. */
    assert_int_not_equal(tt_run_tool(f, (const char *[]){ "demo",
                                     "--workers", "2", "--stock", "3",
                                     NULL }), 0);
    EXPECT_CONTAINS_ERR(f, "demo_stock");
    EXPECT_CONTAINS_ERR(f, "never touched");
    assert_int_equal(cl_first(f, "SELECT qty FROM %s WHERE id = 1",
                              "demo_stock"), 42);
    assert_int_equal(cl_first(f, "SELECT COUNT(*) FROM %s", "demo_stock"), 1);
    assert_false(cl_table_exists(f, "demo_sale"));
    assert_int_equal(cl_first(f, sum, "inventory"), 1913);
    assert_int_equal(cl_first(f, "SELECT COUNT(*) FROM %s", "inventory"), 3);

    /* That table gone: the demo runs and leaves only what it found. */
    tu_exec_ok(f->db, "DROP TABLE %s", "demo_stock", NULL, 0);
    EXPECT_EXIT(f, 0, "demo", "--workers", "2", "--stock", "3");
    assert_int_equal(cl_first(f, sum, "inventory"), 1913);
    assert_int_equal(cl_first(f, "SELECT COUNT(*) FROM %s", "inventory"), 3);
    assert_false(cl_table_exists(f, "demo_stock"));
    assert_false(cl_table_exists(f, "demo_sale"));

    /* A table an earlier demo left (killed before its end): taken back. */
    tu_exec_ok(f->db, "CREATE TABLE %s (id INTEGER, made_by_sqllock_demo "
               "INTEGER)", "demo_sale", NULL, 0);
    EXPECT_EXIT(f, 0, "demo", "--workers", "2", "--stock", "3");
    assert_false(cl_table_exists(f, "demo_sale"));
    assert_int_equal(cl_first(f, sum, "inventory"), 1913);
    tu_exec_ok(f->db, "DROP TABLE %s", "inventory", NULL, 0);
}

#ifdef SQLLOCK_CLI_SQLITE_ONLY_PATH
/* Issue 16 (item 10): a copy of the tool built with the SQLite driver
 * alone (tools/CMakeLists.txt), as on a machine that has only SQLite's
 * packages (the quick start's), refuses a PostgreSQL or MySQL URL with
 * exit 69, the library's "not built" message, the Debian package that
 * brings the driver's client library and the command that builds sqllock
 * again; never the password. SQLite still works in that copy. */
void test_cli_driver_not_built_says_how(void **state)
{
    static const struct {
        const char *url;
        const char *package;
    } cases[] = {
        { "postgres://u:Zq9secret@127.0.0.1:1/db", "libpq-dev" },
        { "postgresql://u:Zq9secret@127.0.0.1:1/db", "libpq-dev" },
        { "mysql://u:Zq9secret@127.0.0.1:1/db",
          "default-libmysqlclient-dev" },
        { "mariadb://u:Zq9secret@127.0.0.1:1/db",
          "default-libmysqlclient-dev" },
    };
    static const char *const cmds[] = { "init", "demo" };
    static const char *const words[] = {
        "was not built into this copy of sqllock", "apt-get install",
        "cmake -S ", "cmake --build ",
    };
    fixture *f = *state;
    char out_path[4300], err_path[4300], url[4300];
    size_t i, j, k;

    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (j = 0; j < sizeof cmds / sizeof cmds[0]; j++) {
            const char *argv[] = { SQLLOCK_CLI_SQLITE_ONLY_PATH, "--db",
                                   cases[i].url, cmds[j], NULL };
            int code = tu_wait(tu_spawn(argv, out_path, err_path, 0));

            tu_read_file(out_path, f->out, sizeof f->out);
            tu_read_file(err_path, f->err, sizeof f->err);
            if (code != 69)
                fail_msg("%s %s: exit %d, want 69\nstderr: %s",
                         cases[i].url, cmds[j], code, f->err);
            for (k = 0; k < sizeof words / sizeof words[0]; k++)
                EXPECT_CONTAINS_ERR(f, words[k]);
            EXPECT_CONTAINS_ERR(f, cases[i].package);
            if (strstr(f->err, "Zq9secret") != NULL
                || strstr(f->out, "Zq9secret") != NULL)
                fail_msg("%s %s showed the password:\n%s%s", cases[i].url,
                         cmds[j], f->out, f->err);
        }
    }
    snprintf(url, sizeof url, "sqlite://%s/only.db", f->dir);
    {
        const char *argv[] = { SQLLOCK_CLI_SQLITE_ONLY_PATH, "--db", url,
                               "init", NULL };
        int code = tu_wait(tu_spawn(argv, out_path, err_path, 0));

        tu_read_file(err_path, f->err, sizeof f->err);
        if (code != 0)
            fail_msg("init on SQLite in the SQLite-only copy: exit %d\n%s",
                     code, f->err);
    }
}
#endif

/* -V is --version, and -h --help; -V is no option of a command. */
void test_cli_version_and_help(void **state)
{
    fixture *f = *state;
    char want[64];

    snprintf(want, sizeof want, "sqllock %s\n", sqllock_version_string());
    EXPECT_BARE(f, 0, "-V");
    assert_string_equal(f->out, want);
    EXPECT_BARE(f, 0, "--version");
    assert_string_equal(f->out, want);
    EXPECT_BARE(f, 0, "-h");
    assert_non_null(strstr(f->out, "-V, --version"));
    assert_non_null(strstr(f->out, "--local"));
    EXPECT_BARE(f, 0, "--help");
    EXPECT_BARE(f, 64, "-V=1");
    EXPECT_BARE(f, 64, "-v");
    EXPECT_EXIT(f, 64, "list", "-V");
    assert_non_null(strstr(f->err, "'-V'"));
    EXPECT_EXIT(f, 64, "run", cl_U(f, "v"), "--ttl", "5s", "-V", "--", "true");
}

/* Issue 27 item 5: `sqllock COMMAND --help` (and -h) prints that
 * command's part of the help -- its entry under Commands and the options
 * it names -- and not the others'; `sqllock --help` stays whole. */
void test_cli_command_help(void **state)
{
    fixture *f = *state;

    EXPECT_BARE(f, 0, "run", "--help");
    assert_non_null(strstr(f->out, "  run NAME"));
    assert_non_null(strstr(f->out, "--hold-at-least DUR"));
    assert_non_null(strstr(f->out, "--kill-after DUR  run:"));
    assert_non_null(strstr(f->out, "--db-file PATH"));
    assert_null(strstr(f->out, "  reap [--older-than"));
    assert_null(strstr(f->out, "  list [--json]"));
    assert_null(strstr(f->out, "--batch N"));
    EXPECT_BARE(f, 0, "list", "-h");
    assert_non_null(strstr(f->out, "  list [--json]"));
    assert_null(strstr(f->out, "  run NAME"));
    assert_null(strstr(f->out, "--hold-at-least"));
    /* release has two entries. */
    EXPECT_EXIT(f, 0, "release", "--help");
    assert_non_null(strstr(f->out, "release NAME --owner ID --token N"));
    assert_non_null(strstr(f->out, "release NAME --force"));
    assert_non_null(strstr(f->out, "--owner ID"));
    assert_null(strstr(f->out, "  show NAME"));
    EXPECT_BARE(f, 0, "--help");
    assert_non_null(strstr(f->out, "  run NAME"));
    assert_non_null(strstr(f->out, "  reap [--older-than"));
    assert_non_null(strstr(f->out, "Exit status:"));
}

/* Issue 27 item 5: a malformed URL, or one that names no driver, is a
 * usage error (64), as a bad option is: no retry can help; a database
 * that cannot be reached stays 69. */
void test_cli_malformed_url_is_usage(void **state)
{
    static const struct {
        const char *url;
        const char *why;
    } bad[] = {
        { "postgres://u@127.0.0.1:99999/db", "port" },
        { "mysql://u@127.0.0.1:99999/db", "port" },
        { "nosuch://u@h/db", "nosuch" },
        { "127.0.0.1:5432:db:u:x", "scheme" },
        { "sqlite://somehost/x.db", "host" },
        { "sqlite:///tmp/a%zzb.db", "escape" },
        /* A file that exists: the read-only list looks for it first. */
        { "sqlite:///tmp?nosuchparam=1", "nosuchparam" },
    };
    static const char *const list[] = { "list", NULL };
    fixture *f = *state;
    const char *drv = tu_url_driver(f->url);
    char url[4400];
    size_t i;
    int rc;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = cl_run_with_url(f, bad[i].url, list);
        if (rc != 64 || strstr(f->err, bad[i].why) == NULL)
            fail_msg("sqllock --db %s list: exit %d, want 64 and \"%s\"; "
                     "stderr: %s", bad[i].url, rc, bad[i].why, f->err);
    }
    /* A driver's own check of a parameter: the same. */
    if (drv != NULL && strcmp(drv, "mysql") == 0) {
        snprintf(url, sizeof url, "%s%sssl_mode=sometimes", f->url,
                 strchr(f->url, '?') != NULL ? "&" : "?");
        rc = cl_run_with_url(f, url, list);
        if (rc != 64 || strstr(f->err, "ssl_mode") == NULL)
            fail_msg("ssl_mode=sometimes: exit %d, want 64; stderr: %s", rc,
                     f->err);
    }
}

/* Issue 27 item 5: list, show and history open a SQLite file only if it
 * exists: a missing one is not created (a typo in the path must not show
 * an empty database), and they say so (69). A lock command creates it,
 * as before. */
void test_cli_read_commands_do_not_create(void **state)
{
    static const char *const cmds[][3] = {
        { "list", NULL, NULL }, { "list", "--json", NULL },
        { "show", "x", NULL }, { "history", "x", NULL },
    };
    fixture *f = *state;
    char path[4300], url[4400];
    size_t i;
    int rc;

    snprintf(path, sizeof path, "%s/missing.db", f->dir);
    snprintf(url, sizeof url, "sqlite://%s", path);
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        rc = cl_run_with_url(f, url, cmds[i]);
        if (rc != 69 || strstr(f->err, "does not exist") == NULL ||
            strstr(f->err, path) == NULL)
            fail_msg("%s on a missing SQLite file: exit %d, want 69 and "
                     "\"does not exist\"; stderr: %s", cmds[i][0], rc,
                     f->err);
        if (tt_file_exists(path))
            fail_msg("%s created the SQLite file %s", cmds[i][0], path);
    }
    {
        static const char *const init[] = { "init", NULL };

        rc = cl_run_with_url(f, url, init);
        assert_int_equal(rc, 0);
        assert_true(tt_file_exists(path));
        rc = cl_run_with_url(f, url, cmds[0]);
        assert_int_equal(rc, 0);
    }
}

/* A port nothing listens on (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* Issue 27 item 5: what a failed connect says. A wrong password says
 * "wrong user or password" first -- on MariaDB before the hint that the
 * account may require TLS, which the server's refusal cannot tell apart
 * -- and a port nothing listens on says that the server refused the
 * connection (MariaDB's client shows only "(115)" or "(111)"). Both exit
 * 69, without the password. */
void test_cli_connect_failure_messages(void **state)
{
    static const char *const list[] = { "list", NULL };
    fixture *f = *state;
    const char *drv = tu_url_driver(f->url), *a, *at, *colon, *slash;
    char url[4400], db[300];
    int rc;

    if (drv == NULL || strcmp(drv, "sqlite") == 0) {
        printf("cli: no server to connect to on %s\n", drv ? drv : "?");
        return;
    }
    /* The group's URL with another password. */
    a = strstr(f->url, "://");
    assert_non_null(a);
    a += 3;
    slash = a + strcspn(a, "/?");
    for (at = NULL, colon = a; colon < slash; colon++)
        if (*colon == '@')
            at = colon;
    colon = at != NULL ? memchr(a, ':', (size_t)(at - a)) : NULL;
    if (colon == NULL) {
        printf("cli [%s]: the test URL has no password\n", drv);
        return;
    }
    snprintf(url, sizeof url, "%.*s:Wr0ng-Pw9%s", (int)(colon - f->url),
             f->url, at);
    rc = cl_run_with_url(f, url, list);
    if (rc != 69 || strstr(f->err, "Wr0ng-Pw9") != NULL)
        fail_msg("a wrong password: exit %d, want 69, no password; "
                 "stderr: %s", rc, f->err);
    if (strcmp(drv, "mysql") == 0) {
        const char *w = strstr(f->err, "wrong user or password");
        const char *t = strstr(f->err, "TLS");

        if (w == NULL || (t != NULL && t < w))
            fail_msg("MariaDB's access denied must say \"wrong user or "
                     "password\" before any TLS hint: %s", f->err);
    } else if (!tu_contains_ci(f->err, "password")) {
        fail_msg("a wrong password: no \"password\" in: %s", f->err);
    }
    /* A port nothing listens on. */
    tu_url_dbname(f->url, db, sizeof db);
    snprintf(url, sizeof url, "%s://u:x@127.0.0.1:%d/%s",
             strcmp(drv, "mysql") == 0 ? "mysql" : "postgres",
             closed_port(), db);
    rc = cl_run_with_url(f, url, list);
    if (rc != 69 || !tu_contains_ci(f->err, "refused"))
        fail_msg("a closed port: exit %d, want 69 and \"refused\"; "
                 "stderr: %s", rc, f->err);
}
