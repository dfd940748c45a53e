/*
 * urls.c -- test_secrets on a database: hostile URLs through the API and
 * the tool, and a password that is part of the host name (C4).
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

/* The hostile URLs of the current database; n returned. Every secret in
 * them is built from "Kp7w", "Vx9q" and "C4zz" (hostile_forms()). */
#define H_MAX 16

static int hostile_urls(fixture *f, char urls[H_MAX][4600],
                        const char *labels[H_MAX])
{
    const char *s = strcmp(f->drv, "postgres") == 0 ? "postgres" : "mysql";
    char hp[300];
    int n = 0, closed = closed_port();

    if (strcmp(f->drv, "sqlite") == 0) {
        labels[n] = "user info on sqlite";
        snprintf(urls[n++], 4600, "sqlite://u:Kp7w@Vx9q@/%s/x.db", f->dir);
        labels[n] = "?pwd= on sqlite";
        snprintf(urls[n++], 4600, "sqlite://%s/x.db?pwd=Kp7wVx9qC4zz",
                 f->dir);
        labels[n] = "?password= on sqlite";
        snprintf(urls[n++], 4600, "sqlite://%s/x.db?password=Kp7wVx9qC4zz",
                 f->dir);
        return n;
    }
    snprintf(hp, sizeof hp, "%s:%d", f->host, f->port);
    labels[n] = "unescaped @, closed port";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@127.0.0.1:%d/%s", s,
             f->user, closed, f->db);
    labels[n] = "unescaped @, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@%s/%s%s", s, f->user, hp,
             f->db, f->query);
    labels[n] = "unescaped @ twice, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@C4zz@%s/%s%s", s, f->user,
             hp, f->db, f->query);
    labels[n] = "%40, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w%%40Vx9q@%s/%s%s", s, f->user, hp,
             f->db, f->query);
    labels[n] = "':' and %2F, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w:Vx9q%%2FC4zz@%s/%s%s", s,
             f->user, hp, f->db, f->query);
    labels[n] = "':' and unescaped '/'";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w:Vx9q/C4zz@%s/%s%s", s, f->user,
             hp, f->db, f->query);
    labels[n] = "bad port";
    snprintf(urls[n++], 4600, "%s://%s:Kp7wVx9qC4zz@%s:99999/%s", s,
             f->user, f->host, f->db);
    labels[n] = "?pwd=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?pwd=Kp7wVx9qC4zz", s, f->user,
             hp, f->db);
    labels[n] = "?passwd=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?passwd=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?secret=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?secret=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?password=, wrong";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?password=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?password= with '@', closed port";
    snprintf(urls[n++], 4600, "%s://%s@127.0.0.1:%d/%s?password=Kp7w@Vx9q",
             s, f->user, closed, f->db);
    return n;
}

/* The secrets of the hostile URLs, whole and in pieces. */
static void hostile_forms(forms *fm)
{
    static const char *const s[] = {
        "Kp7w@Vx9q", "Kp7w%40Vx9q", "Kp7w@Vx9q@C4zz", "Kp7w:Vx9q/C4zz",
        "Kp7w:Vx9q%2FC4zz", "Kp7wVx9qC4zz", "Vx9q@C4zz", NULL
    };
    int i;

    memset(fm, 0, sizeof *fm);
    for (i = 0; s[i] != NULL; i++)
        se_forms_of(fm, s[i], 0);
}

/* C4: hostile URLs through the API: the open fails, and its message has
 * no piece of the secret. */
void test_secrets_C4_hostile_urls_api(void **state)
{
    fixture *f = *state;
    char urls[H_MAX][4600];
    const char *labels[H_MAX];
    forms fm;
    int i, n = hostile_urls(f, urls, labels), rc;

    hostile_forms(&fm);
    for (i = 0; i < n; i++) {
        sqllock_db *db = NULL;
        char what[300];

        rc = sqllock_open(urls[i], NULL, &db);
        snprintf(what, sizeof what, "[%s] %s: sqllock_errmsg()", f->drv,
                 labels[i]);
        if (rc == SQLLOCK_OK)
            fail_msg("%s: the open succeeded", what);
        se_expect_clean(what, sqllock_errmsg(db), strlen(sqllock_errmsg(db)),
                     &fm);
        printf("  %s: %s: %s\n", what, sqllock_errname(rc),
               sqllock_errmsg(db));
        sqllock_close(db);
    }
}

/* C4: a password that is part of the host name is left in the host name
 * (the message is not made into "lo***ost"), and a short one is not
 * scrubbed at all. */
void test_secrets_C4_password_in_host_name(void **state)
{
    fixture *f = *state;
    static const char *const pws[] = { "calh", "local", "pw", "x" };
    int i, closed = closed_port(), rc;

    if (strcmp(f->drv, "sqlite") == 0) {
        printf("secrets [sqlite]: no host name\n");
        return;
    }
    for (i = 0; i < 4; i++) {
        char url[600];
        const char *msg;
        sqllock_db *db = NULL;

        snprintf(url, sizeof url, "%s://%s:%s@localhost:%d/%s",
                 strcmp(f->drv, "postgres") == 0 ? "postgres" : "mysql",
                 f->user, pws[i], closed, f->db);
        rc = sqllock_open(url, NULL, &db);
        assert_int_not_equal(rc, SQLLOCK_OK);
        msg = sqllock_errmsg(db);
        printf("  [%s] password '%s' on localhost: %s\n", f->drv, pws[i],
               msg);
        if (strstr(msg, "***") != NULL)
            fail_msg("[%s] password '%s', host localhost: the message has "
                     "asterisks: %s", f->drv, pws[i], msg);
        sqllock_close(db);
    }
}

/* C4: the same hostile URLs through the tool, given by --db, --db-file
 * and $SQLLOCK_DB, to list, init and run: exit 64 for a URL the library
 * finds malformed (SQLLOCK_EURL, issue 27), 69 for the others, and no
 * piece of the secret on stdout or stderr. */
void test_secrets_C4_hostile_urls_cli(void **state)
{
    fixture *f = *state;
    char urls[H_MAX][4600], file[4300], label[300];
    const char *labels[H_MAX];
    forms fm;
    tool_run t;
    int i, how, n = hostile_urls(f, urls, labels), code;

    hostile_forms(&fm);
    /* The SQLite URLs' file exists (empty), so that `list`, which does
     * not create a missing one, gets to the URL's parameters too. */
    snprintf(file, sizeof file, "%s/x.db", f->dir);
    if (strcmp(f->drv, "sqlite") == 0)
        se_write_file(file, "", 0);
    snprintf(file, sizeof file, "%s/hostile.url", f->dir);
    for (i = 0; i < n; i++) {
        sqllock_db *db = NULL;
        int want;

        /* What the library makes of the URL decides the exit code. */
        want = sqllock_open(urls[i], NULL, &db) == SQLLOCK_EURL ? 64 : 69;
        sqllock_close(db);
        se_write_file(file, urls[i], strlen(urls[i]));
        for (how = 0; how < 3; how++) {
            const char *const list_db[] = { "--db", urls[i], "list", NULL };
            const char *const init_file[] = { "--db-file", file, "init",
                                              NULL };
            const char *const run_var[] = { "run", "x", "--ttl", "5s", "--",
                                            "true", NULL };

            se_clear_db_env();
            if (how == 2)
                setenv("SQLLOCK_DB", urls[i], 1);
            code = se_run_tool(&t, f->dir, how == 0 ? list_db
                                      : how == 1 ? init_file : run_var);
            se_clear_db_env();
            snprintf(label, sizeof label, "[%s] %s, %s", f->drv, labels[i],
                     how == 0 ? "--db list" : how == 1 ? "--db-file init"
                                                       : "$SQLLOCK_DB run");
            if (code != want)
                fail_msg("%s: exit %d, want %d; stderr: %s", label, code,
                         want, t.err);
            se_expect_clean(label, t.out, strlen(t.out), &fm);
            se_expect_clean(label, t.err, strlen(t.err), &fm);
        }
    }
}


/* Issue 27 item 6: a password pasted into another parameter of a MySQL
 * URL -- ssl_mode=, option_file=, socket= --, of a PostgreSQL URL --
 * libpq's sslmode=, target_session_attrs=, port=, the keepalives, ...,
 * whose messages quote the value -- or of a SQLite URL --
 * busy_timeout= -- is not echoed when the
 * driver refuses the value: the message names the parameter (and what
 * it takes), and the URL it quotes hides the values of its parameters.
 * Through the API and the tool (exit 64, a malformed URL). */
void test_secrets_C4_parameter_values_not_echoed(void **state)
{
    static const char *const my_params[] = {
        "ssl_mode", "option_file", "socket", NULL
    };
    /* libpq's own messages quote the value of each of these. */
    static const char *const pg_params[] = {
        "sslmode", "gssencmode", "channel_binding", "target_session_attrs",
        "port", "connect_timeout", "keepalives", "keepalives_idle",
        "keepalives_interval", "keepalives_count", "tcp_user_timeout", NULL
    };
    const char *const *params;
    int pg;
    fixture *f = *state;
    char url[4600], label[300];
    forms fm;
    tool_run t;
    size_t i;
    int rc, code;

    memset(&fm, 0, sizeof fm);
    se_forms_of(&fm, "Kp7wVx9qC4zz", 0);
    if (strcmp(f->drv, "sqlite") == 0) {
        /* SQLite's one parameter, busy_timeout (acquire: list does not
         * open a file that is not there). */
        const char *const args[] = { "--db", url, "acquire", "c4-busy",
                                     "--ttl", "5s", NULL };
        char *path = tu_mkdtemp();
        sqllock_db *db = NULL;
        const char *msg;

        assert_non_null(path);
        snprintf(url, sizeof url, "sqlite://%s/x.db?busy_timeout=Kp7wVx9qC4zz",
                 path);
        rc = sqllock_open(url, NULL, &db);
        msg = sqllock_errmsg(db);
        printf("  [sqlite] busy_timeout=<secret>: %s: %s\n",
               sqllock_errname(rc), msg);
        if (rc != SQLLOCK_EURL || strstr(msg, "busy_timeout") == NULL)
            fail_msg("[sqlite] busy_timeout=<secret>: %s, want SQLLOCK_EURL "
                     "naming busy_timeout: %s", sqllock_errname(rc), msg);
        se_expect_clean("[sqlite] busy_timeout=<secret>: errmsg", msg,
                        strlen(msg), &fm);
        sqllock_close(db);
        se_clear_db_env();
        code = se_run_tool(&t, f->dir, args);
        se_expect_clean("[sqlite] busy_timeout=<secret>: acquire", t.err,
                        strlen(t.err), &fm);
        if (code != 64 || strstr(t.err, "busy_timeout") == NULL)
            fail_msg("[sqlite] busy_timeout=<secret>: exit %d, want 64 "
                     "naming busy_timeout; stderr: %s", code, t.err);
        tu_rmdir(path);
        free(path);
        return;
    }
    pg = strcmp(f->drv, "postgres") == 0;
    params = pg ? pg_params : my_params;
    for (i = 0; params[i] != NULL; i++) {
        const char *const args[] = { "--db", url, "list", NULL };
        sqllock_db *db = NULL;
        const char *msg;

        snprintf(url, sizeof url, "%s://%s@%s:%d/%s?%s=Kp7wVx9qC4zz",
                 pg ? "postgres" : "mysql", f->user, f->host, f->port,
                 f->db, params[i]);
        rc = sqllock_open(url, NULL, &db);
        msg = sqllock_errmsg(db);
        snprintf(label, sizeof label, "[%s] %s=<secret>: errmsg", f->drv,
                 params[i]);
        printf("  %s: %s: %s\n", label, sqllock_errname(rc), msg);
        if (rc != SQLLOCK_EURL || strstr(msg, params[i]) == NULL)
            fail_msg("%s: %s, want SQLLOCK_EURL naming %s: %s", label,
                     sqllock_errname(rc), params[i], msg);
        se_expect_clean(label, msg, strlen(msg), &fm);
        sqllock_close(db);
        se_clear_db_env();
        code = se_run_tool(&t, f->dir, args);
        snprintf(label, sizeof label, "[%s] %s=<secret>: --db list",
                 f->drv, params[i]);
        se_expect_clean(label, t.out, strlen(t.out), &fm);
        se_expect_clean(label, t.err, strlen(t.err), &fm);
        if (code != 64 || strstr(t.err, params[i]) == NULL)
            fail_msg("%s: exit %d, want 64 naming %s; stderr: %s", label,
                     code, params[i], t.err);
        /* What ssl_mode (sslmode) takes is said. */
        if (i == 0 && strstr(t.err, pg ? "verify-full" : "VERIFY_IDENTITY")
                          == NULL)
            fail_msg("%s: the modes ssl_mode takes are not named: %s",
                     label, t.err);
    }
}
