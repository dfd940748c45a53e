/*
 * nodb.c -- test_secrets without a database: the redaction of hostile
 * URLs and the scrubbing of messages (C4), --db-file and
 * $SQLLOCK_DB_FILE, their precedence and their errors, a file that holds
 * no URL and one that others may read (issue 27).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "secrets.h"

/* ------------------------------------------------------------------ */
/* Without a database: redaction and scrubbing                         */
/* ------------------------------------------------------------------ */

/* C4: what a message may quote of a URL. Every secret is "***", every
 * public part stays. */
void test_secrets_C4_redact_hostile_urls(void **state)
{
    static const struct {
        const char *url, *want;
    } cases[] = {
        /* An unescaped '@' or ':' in the password: the last '@' ends the
         * user info, as the parser reads it. */
        { "postgres://u:p@ss@host/db", "postgres://u:***@host/db" },
        { "mysql://u:p@ss@host:3306/db", "mysql://u:***@host:3306/db" },
        { "postgres://u:a:b@c@h/db", "postgres://u:***@h/db" },
        { "postgres://u:p%40ss@h/db", "postgres://u:***@h/db" },
        /* An unescaped '/' makes the URL malformed; still hidden. */
        { "postgres://u:ab/cd@h:5432/db", "postgres://u:***@h:5432/db" },
        /* Unknown parameters: the value hidden, the name shown. */
        { "postgres://u@h/db?pwd=Sec7et", "postgres://u@h/db?pwd=***" },
        { "mysql://u@h/db?passwd=Sec7et", "mysql://u@h/db?passwd=***" },
        { "postgres://u@h/db?secret=Sec7et&sslmode=require",
          "postgres://u@h/db?secret=***&sslmode=require" },
        { "postgres://u@h/db?password=Sec7et", "postgres://u@h/db?password=***" },
        { "postgres://u@h/db?pass%77ord=Sec7et",
          "postgres://u@h/db?pass%77ord=***" },
        { "postgres://u@h/db?Sec7et", "postgres://u@h/db?***" },
        /* Public parameters stay. */
        { "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write"
          "&application_name=job%201&connect_timeout=2",
          "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write"
          "&application_name=job%201&connect_timeout=2" },
        { "mysql://u@h/db?socket=/run/mysqld/mysqld.sock&ssl_mode=REQUIRED",
          "mysql://u@h/db?socket=/run/mysqld/mysqld.sock&ssl_mode=REQUIRED" },
        { "sqlite:///var/tmp/x.db?busy_timeout=2s",
          "sqlite:///var/tmp/x.db?busy_timeout=2s" },
        /* A URL missing its "//" or its scheme. */
        { "u:Sec7et@host/db", "u:***@host/db" },
        { "postgres:u:Sec7et@h/db", "postgres:***@h/db" },
        /* libpq's "name = value" form, which the parser refuses. */
        { "host=h password=Sec7et dbname=d", "host=h password=*** dbname=d" },
        { "host=h password = 'Sec 7et' pwd=x", "host=h password = *** pwd=***" },
        /* No password: unchanged. */
        { "postgres://alice@db/app", "postgres://alice@db/app" },
        { "sqlite:rel/a@b.db", "sqlite:rel/a@b.db" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = sqllock__url_redact(cases[i].url);

        assert_non_null(r);
        if (strcmp(r, cases[i].want) != 0)
            fail_msg("redact(\"%s\") = \"%s\", want \"%s\"", cases[i].url, r,
                     cases[i].want);
        free(r);
    }
}

/* C4, defence in depth: what the handle's one message writer does with
 * a message that quotes a secret of its URL (as libpq does with the rest
 * of a password after an unescaped '@'). */
void test_secrets_C4_scrub_messages(void **state)
{
    static const struct {
        const char *url, *msg, *want;
    } cases[] = {
        /* libpq reads the user info up to the first '@'. */
        { "postgres://u:p@ssW0rdXy@127.0.0.1:5432/db",
          "could not translate host name \"ssW0rdXy@127.0.0.1\" to address",
          "could not translate host name \"***@127.0.0.1\" to address" },
        /* A tail of 2 bytes, before its '@' only. */
        { "postgres://u:p@ss@127.0.0.1/db",
          "host name \"ss@127.0.0.1\"; ss stays", 
          "host name \"***@127.0.0.1\"; ss stays" },
        /* Decoded, as written, and the pieces around the '@'. */
        { "mysql://u:Kp7w%40Vx9q@h/db", "a Kp7w@Vx9q b Kp7w%40Vx9q c Vx9q d",
          "a *** b *** c *** d" },
        { "postgres://u:Kp7w:Vx/9q@h/db", "x Kp7w:Vx/9q y", "x *** y" },
        /* An unknown parameter's value, and the password as one. */
        { "postgres://u@h/db?pwd=Zz9Secret", "bad value Zz9Secret",
          "bad value ***" },
        { "postgres://u@h/db?password=Zz9Secret", "got Zz9Secret",
          "got ***" },
        /* A password inside the host name stays there, not elsewhere. */
        { "postgres://u:db01@db01.example.com/app",
          "connection to \"db01.example.com\" failed (db01)",
          "connection to \"db01.example.com\" failed (***)" },
        { "postgres://u:calh@localhost:1/app",
          "connection to server at \"localhost\" (127.0.0.1), port 1 failed",
          "connection to server at \"localhost\" (127.0.0.1), port 1 failed" },
        /* Shorter than 4 bytes: left alone, not a message of asterisks. */
        { "postgres://u:pw@h/db", "pw is short: pwpw", "pw is short: pwpw" },
        /* A word of the messages. */
        { "postgres://u:password@h/db",
          "FATAL: password authentication failed for user \"u\"",
          "FATAL: password authentication failed for user \"u\"" },
        /* No "//": the parser takes the user info for a path, which is
         * then no public part. */
        { "postgres:u:Sec7et@h/db",
          "missing \"=\" after \"postgres:u:Sec7et@h/db\"",
          "missing \"=\" after \"postgres:***@h/db\"" },
        /* A public parameter's value is no secret. */
        { "postgres://u@h/db?sslmode=require", "sslmode require", 
          "sslmode require" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *sec = sqllock__url_secrets(cases[i].url);
        char msg[SQLLOCK__ERRMSG_MAX];

        assert_non_null(sec);
        snprintf(msg, sizeof msg, "%s", cases[i].msg);
        sqllock__scrub(msg, sizeof msg, sec);
        sqllock__secrets_free(sec);
        if (strcmp(msg, cases[i].want) != 0)
            fail_msg("URL \"%s\": scrub(\"%s\") = \"%s\", want \"%s\"",
                     cases[i].url, cases[i].msg, msg, cases[i].want);
    }
}

/* C4: a message cut to fit still ends well when "***" is longer than the
 * tail it hides, and a handle's message goes through the scrubber (here
 * a URL the core refuses before any driver sees it). */
void test_secrets_C4_scrub_long_message_and_handle(void **state)
{
    char *sec = sqllock__url_secrets("postgres://u:a@xy@h/db");
    char msg[SQLLOCK__ERRMSG_MAX];
    sqllock_db *db = NULL;
    size_t i;
    int rc;

    (void)state;
    assert_non_null(sec);
    for (i = 0; i + 3 < sizeof msg - 1; i += 3)
        memcpy(msg + i, "xy@", 3);
    msg[i] = '\0';
    sqllock__scrub(msg, sizeof msg, sec);
    sqllock__secrets_free(sec);
    assert_true(strlen(msg) < sizeof msg);
    assert_null(strstr(msg, "xy@"));
    assert_int_equal(strncmp(msg, "***@***@", 8), 0);

    rc = sqllock_open("host=h password=Kp7wVx9qC4 dbname=d", NULL, &db);
    assert_int_equal(rc, SQLLOCK_EURL);
    assert_null(strstr(sqllock_errmsg(db), "Kp7wVx9qC4"));
    assert_non_null(strstr(sqllock_errmsg(db), "password=***"));
    sqllock_close(db);
}

/* ------------------------------------------------------------------ */
/* --db-file and $SQLLOCK_DB_FILE                                      */
/* ------------------------------------------------------------------ */

/* Runs `sqllock [a1 [a2]] init` (NULL ends the options early); fails
 * unless it exits 0 and says it used the database `want`. */
static void init_uses(const char *dir, const char *want, const char *a1,
                      const char *a2)
{
    const char *args[4];
    tool_run t;
    int n = 0, code;

    if (a1 != NULL)
        args[n++] = a1;
    if (a1 != NULL && a2 != NULL)
        args[n++] = a2;
    args[n++] = "init";
    args[n] = NULL;
    code = se_run_tool(&t, dir, args);
    if (code != 0 || strstr(t.out, want) == NULL)
        fail_msg("sqllock %s %s init: exit %d, want 0 and %s; stdout: %s "
                 "stderr: %s", a1 ? a1 : "", a2 ? a2 : "", code, want, t.out,
                 t.err);
}

/* Runs `sqllock [a1 a2 [a3 a4]] list`; fails unless it exits `want` and
 * says `text` on stderr, without the file content's mark "Zq8". */
static void list_fails(const char *dir, int want, const char *text,
                       const char *a1, const char *a2, const char *a3,
                       const char *a4)
{
    const char *args[6];
    tool_run t;
    int n = 0, code;

    if (a1 != NULL) {
        args[n++] = a1;
        args[n++] = a2;
    }
    if (a3 != NULL) {
        args[n++] = a3;
        args[n++] = a4;
    }
    args[n++] = "list";
    args[n] = NULL;
    code = se_run_tool(&t, dir, args);
    if (code != want || strstr(t.err, text) == NULL)
        fail_msg("sqllock %s %s list: exit %d, want %d and \"%s\"; "
                 "stderr: %s", a1 ? a1 : "", a2 ? a2 : "", code, want, text,
                 t.err);
    if (strstr(t.err, "Zq8") != NULL || strstr(t.out, "Zq8") != NULL)
        fail_msg("the file's content was printed: %s%s", t.out, t.err);
}

/* The tool reads the URL from a file: the first line that is not blank,
 * trimmed; --db, --db-file, $SQLLOCK_DB, $SQLLOCK_DB_FILE in that order
 * (init says which database it used); and each way a file can be wrong
 * exits 69 (64 for --db with --db-file), naming the file, never its
 * content. */
void test_secrets_C4_db_file_precedence_and_errors(void **state)
{
    /* Larger than the tool's limit (CLI_DB_FILE_MAX, 16384 bytes). */
    static char big[16400];
    char *dir = tu_mkdtemp();
    char path[4300], b[4300], d[4300], text[9000];
    char url_a[4400], url_b[4400], url_c[4400], url_d[4400];
    tool_run t;
    int code;

    (void)state;
    assert_non_null(dir);
    se_clear_db_env();
    snprintf(url_a, sizeof url_a, "sqlite://%s/a.db", dir);
    snprintf(url_b, sizeof url_b, "sqlite://%s/b.db", dir);
    snprintf(url_c, sizeof url_c, "sqlite://%s/c.db", dir);
    snprintf(url_d, sizeof url_d, "sqlite://%s/d.db", dir);
    snprintf(b, sizeof b, "%s/b.url", dir);
    snprintf(d, sizeof d, "%s/d.url", dir);
    /* Blank lines, white space around the URL, CRLF, a second line. */
    snprintf(text, sizeof text, "\n  \t\r\n\t %s \r\nsqlite:///nowhere.db\n",
             url_b);
    se_write_file(b, text, strlen(text));
    snprintf(text, sizeof text, "%s", url_d);     /* no newline at all */
    se_write_file(d, text, strlen(text));

    /* Each source alone, then each above the ones after it; a variable
     * set but empty counts as unset. */
    init_uses(dir, url_b, "--db-file", b);
    snprintf(text, sizeof text, "--db-file=%s", b);
    init_uses(dir, url_b, text, NULL);
    setenv("SQLLOCK_DB_FILE", d, 1);
    init_uses(dir, url_d, NULL, NULL);
    setenv("SQLLOCK_DB", url_c, 1);
    init_uses(dir, url_c, NULL, NULL);
    init_uses(dir, url_b, "--db-file", b);
    init_uses(dir, url_a, "--db", url_a);
    setenv("SQLLOCK_DB", "", 1);
    init_uses(dir, url_d, NULL, NULL);
    se_clear_db_env();

    snprintf(path, sizeof path, "%s/missing.url", dir);
    list_fails(dir, 69, "No such file", "--db-file", path, NULL, NULL);
    list_fails(dir, 69, "missing.url", "--db-file", path, NULL, NULL);
    setenv("SQLLOCK_DB_FILE", path, 1);
    list_fails(dir, 69, "$SQLLOCK_DB_FILE", NULL, NULL, NULL, NULL);
    se_clear_db_env();
    /* A directory cannot be read. */
    list_fails(dir, 69, "directory", "--db-file", dir, NULL, NULL);
    /* Unreadable: only when the test does not run as root. */
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/locked.url", dir);
        se_write_file(path, "sqlite:///x.db?Zq8\n", 19);
        chmod(path, 0);
        list_fails(dir, 69, "Permission denied", "--db-file", path, NULL,
                   NULL);
    } else {
        printf("secrets: as root, no file is unreadable; a directory "
               "stands in for one\n");
    }
    snprintf(path, sizeof path, "%s/empty.url", dir);
    se_write_file(path, "", 0);
    list_fails(dir, 69, "empty", "--db-file", path, NULL, NULL);
    se_write_file(path, " \n\t\r\n\n", 6);
    list_fails(dir, 69, "empty", "--db-file", path, NULL, NULL);
    snprintf(path, sizeof path, "%s/big.url", dir);
    memset(big, 'Z', sizeof big);
    memcpy(big, "Zq8", 3);
    se_write_file(path, big, sizeof big);
    list_fails(dir, 69, "larger than", "--db-file", path, NULL, NULL);
    snprintf(path, sizeof path, "%s/nul.url", dir);
    se_write_file(path, "sqlite:///x.db\0Zq8\n", 19);
    list_fails(dir, 69, "NUL", "--db-file", path, NULL, NULL);
    /* --db with --db-file, wherever each is. */
    list_fails(dir, 64, "together", "--db", url_a, "--db-file", b);
    {
        const char *const args[] = { "--db", url_a, "list", "--db-file", b,
                                     NULL };
        code = se_run_tool(&t, dir, args);
        if (code != 64)
            fail_msg("--db before list, --db-file after: exit %d, want 64",
                     code);
    }
    tu_rmdir(dir);
    free(dir);
}


/* Issue 27 item 6: a --db-file (or $SQLLOCK_DB_FILE) whose line is not a
 * database URL -- a ~/.pgpass line, a password alone, a password with a
 * ':' that reads as a scheme -- is refused as a usage error (64) that
 * names the file and says it holds no URL, never what it holds. (The
 * library, given such a text, quoted it whole: it finds no password in
 * what is not a URL.) */
void test_secrets_C4_db_file_not_a_url(void **state)
{
    static const char *const texts[] = {
        "127.0.0.1:5432:sqllock_test:app:Zq8-S3cret-Pw\n",
        "Zq8-S3cret-Pw\n",
        "\n  Zq8-S3cret-Pw  \n",
        "Zq8:S3cret-Pw\n",
        "redis://u:Zq8-S3cret-Pw@h/0\n",
    };
    char *dir = tu_mkdtemp();
    char path[4300];
    size_t i;

    (void)state;
    assert_non_null(dir);
    se_clear_db_env();
    snprintf(path, sizeof path, "%s/creds.url", dir);
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        se_write_file(path, texts[i], strlen(texts[i]));
        list_fails(dir, 64, "is not a database URL", "--db-file", path, NULL,
                   NULL);
        list_fails(dir, 64, "creds.url", "--db-file", path, NULL, NULL);
        setenv("SQLLOCK_DB_FILE", path, 1);
        list_fails(dir, 64, "$SQLLOCK_DB_FILE", NULL, NULL, NULL, NULL);
        se_clear_db_env();
    }
    tu_rmdir(dir);
    free(dir);
}

/* Issue 27 item 6: a --db-file (or $SQLLOCK_DB_FILE) that its group or
 * others may read is refused (64), naming the file and `chmod 600`, as
 * libpq refuses such a ~/.pgpass -- and before anything of it is read;
 * mode 0600 and 0400 are taken, and so is a pipe. */
void test_secrets_C4_db_file_mode(void **state)
{
    static const mode_t refused[] = { 0644, 0640, 0604, 0660, 0666, 0610 };
    static const mode_t taken[] = { 0600, 0400 };
    char *dir = tu_mkdtemp();
    char path[4300], url[4400], text[4600];
    size_t i;

    (void)state;
    assert_non_null(dir);
    se_clear_db_env();
    snprintf(path, sizeof path, "%s/db.url", dir);
    /* "Zq8" in the query marks the content, which must not show. */
    snprintf(url, sizeof url, "sqlite://%s?Zq8=1", dir);
    snprintf(text, sizeof text, "%s\n", url);
    se_write_file(path, text, strlen(text));
    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char mode[16];

        assert_int_equal(chmod(path, refused[i]), 0);
        snprintf(mode, sizeof mode, "mode %04o", (unsigned)refused[i]);
        list_fails(dir, 64, "chmod 600", "--db-file", path, NULL, NULL);
        list_fails(dir, 64, mode, "--db-file", path, NULL, NULL);
        list_fails(dir, 64, "db.url", "--db-file", path, NULL, NULL);
        setenv("SQLLOCK_DB_FILE", path, 1);
        list_fails(dir, 64, "$SQLLOCK_DB_FILE", NULL, NULL, NULL, NULL);
        se_clear_db_env();
    }
    /* Modes the owner alone may read: the URL is used (its unknown
     * parameter makes the open fail later, with a message that names
     * the parameter, not the file's mode). */
    for (i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        const char *const args[] = { "--db-file", path, "list", NULL };
        tool_run t;
        int code;

        assert_int_equal(chmod(path, taken[i]), 0);
        code = se_run_tool(&t, dir, args);
        if (strstr(t.err, "chmod") != NULL || strstr(t.err, "Zq8") == NULL)
            fail_msg("mode %04o: the file must be used (the URL's unknown "
                     "parameter named); exit %d, stderr: %s",
                     (unsigned)taken[i], code, t.err);
    }
    tu_rmdir(dir);
    free(dir);
}
