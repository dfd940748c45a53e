/*
 * tu_fixture.c -- helpers of the tests that drive servers, proxies and
 * child processes or run statements on application tables
 * (tu_fixture.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "test_spawn.h"

int64_t tu_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int tu_url_split(const char *url, tu_url_parts *p)
{
    const char *auth = strstr(url, "://");
    const char *at = NULL, *colon, *slash, *q;

    memset(p, 0, sizeof *p);
    if (auth == NULL)
        return -1;
    auth += 3;
    slash = auth + strcspn(auth, "/?");
    for (q = auth; q < slash; q++)
        if (*q == '@')
            at = q;
    if (at == NULL)
        return -1;
    colon = memchr(auth, ':', (size_t)(at - auth));
    p->pass_at = p->pass_end = (size_t)(at - url);
    if (colon != NULL)
        p->pass_at = (size_t)(colon + 1 - url);
    p->host_at = (size_t)(at + 1 - url);
    p->path_at = (size_t)(slash - url);
    p->db_end = p->path_at + strcspn(url + p->path_at, "?");
    return 0;
}

int tu_dead_port(void)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    assert_true(fd >= 0);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}

int64_t tu_backend_id(sqllock_db *db)
{
    int64_t id = 0;
    int has_row = 0;

    TU_ASSERT_RC(sqllock__exec_sql(db, strcmp(sqllock_db_driver(db),
                                           "postgres") == 0
                                        ? "SELECT pg_catalog.pg_backend_pid()"
                                        : "SELECT CONNECTION_ID()",
                                NULL, 0, &has_row, &id, NULL),
              SQLLOCK_OK, db);
    assert_true(has_row && id > 0);
    return id;
}

sqllock_db *tu_open_or_fail(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("open: %s: %s", sqllock_errname(rc), msg);
    }
    return db;
}

int tu_exec_on(sqllock_db *db, const char *fmt, const char *table,
               const sqllock_value *args, int nargs, int *has_row,
               int64_t *first, int64_t *affected)
{
    char sql[512];

    snprintf(sql, sizeof sql, fmt, table);
    return sqllock__exec_sql(db, sql, args, nargs, has_row, first, affected);
}

void tu_exec_ok(sqllock_db *db, const char *fmt, const char *table,
                const sqllock_value *args, int nargs)
{
    int rc = tu_exec_on(db, fmt, table, args, nargs, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("statement \"%s\" on %s: %s: %s", fmt, table,
                 sqllock_errname(rc), sqllock_errmsg(db));
}

int tu_run_script(const char *script, const char *cmd, const char *dir,
                  const char *arg)
{
    char buf[9000];

    snprintf(buf, sizeof buf, "bash '%s' %s '%s' %s >&2", script, cmd, dir,
             arg != NULL ? arg : "");
    fflush(stdout);
    fflush(stderr);
    return system(buf);
}

pid_t tu_fork_child(int (*fn)(void *), void *arg, unsigned alarm_s)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int rc;
        alarm(alarm_s);
        srand((unsigned)getpid());
        rc = fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    if (pid < 0)
        printf("    fork: %s\n", strerror(errno));
    return pid;
}

/* The children tu_fork_n() started, for tu_end_children(). */
#define TU_FORKED_MAX 256
static pid_t tu_forked[TU_FORKED_MAX];
static int tu_nforked;

void tu_fork_n(pid_t *pids, int n, int (*fn)(void *arg, int i), void *arg)
{
    int i;

    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            fail_msg("fork: %s", strerror(errno));
        if (pids[i] == 0)
            _exit(fn(arg, i));
        if (tu_nforked < TU_FORKED_MAX)
            tu_forked[tu_nforked++] = pids[i];
    }
}

pid_t tu_fork(int (*fn)(void *arg, int i), void *arg)
{
    pid_t pid;

    tu_fork_n(&pid, 1, fn, arg);
    return pid;
}

int tu_wait_all(const pid_t *pids, int n)
{
    int i, bad = 0;

    for (i = 0; i < n; i++)
        if (tu_wait(pids[i]) != 0)
            bad++;
    return bad;
}

int tu_end_children(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < tu_nforked; i++) {
        pid_t p = tu_forked[i];

        if (p > 0 && waitpid(p, NULL, WNOHANG) == 0) {
            kill(p, SIGCONT);
            kill(p, SIGKILL);
            waitpid(p, NULL, 0);
        }
    }
    tu_nforked = 0;
    return 0;
}

int tu_reap_children(pid_t *pids, int n, int64_t ms, void (*on_hang)(void))
{
    int64_t end = tu_now_ms() + ms;
    int i, bad = 0;

    for (i = 0; i < n; i++) {
        int64_t left = end - tu_now_ms();
        int code;
        if (pids[i] <= 0)
            continue;
        code = tu_wait_for(pids[i], left > 0 ? left : 0);
        if (code == -1) {
            if (on_hang != NULL)
                on_hang();
            printf("    child %d (pid %ld) did not finish in time: killed\n",
                   i, (long)pids[i]);
            tu_kill_wait(pids[i]);
            bad++;
        } else if (code != 0) {
            printf("    child %d (pid %ld) ended with %s %d\n", i,
                   (long)pids[i], code >= 1000 ? "signal" : "status",
                   code >= 1000 ? code - 1000 : code);
            bad++;
        }
    }
    return bad;
}

void tu_print_statuses(const char *label, int width, const int64_t *by,
                       int n)
{
    char buf[600];
    size_t len = 0;
    int s;

    buf[0] = '\0';
    for (s = 0; s < n; s++)
        if (by[s] > 0 && len < sizeof buf - 60)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %lld",
                                    len ? ", " : "", sqllock_errname(s) + 8,
                                    (long long)by[s]);
    if (len > 0)
        printf("    %-*s %s\n", width, label, buf);
}

void tu_barrier(int *arrived, int n)
{
    int64_t deadline = tu_now_ms() + 30000;

    __atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < n &&
           tu_now_ms() < deadline)
        tu_sleep_us(100);
}

void tu_close_for_fork(sqllock_db **db)
{
    sqllock_close(*db);
    *db = NULL;
    fflush(stdout);
    fflush(stderr);
}

void tu_reopen(sqllock_db **db, const char *url)
{
    int rc = sqllock_open(url, NULL, db);

    if (rc != SQLLOCK_OK)
        fail_msg("reopening the group's handle: %s: %s",
                 sqllock_errname(rc), sqllock_errmsg(*db));
}
