/*
 * common.c -- test_patroni's cluster (scripts/patroni.sh, started once
 * for the group), its URLs, the accounting every client does in shared
 * memory (statuses by phase and route, the first grant on the new leader
 * after each fault), and the group setup and teardown (patroni.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "patroni.h"

/* Static, not malloc'd: forked children must inherit no heap blocks. */
char g_dir[1024], g_script[1024];
char g_haproxy[512], g_hosts[512], g_node[3][512];
int g_node_port[3];
int g_slow = 1;
pid_t g_parent;
pt_shared *g_sh;
tu_hist *g_hist;
int64_t g_ttl_ms, g_stmt_ms;
/* Why the cluster could not start here (the case then skips, or under
 * CI fails: tu_cannot_run). */
char g_cannot[300];

const char *pt_route_name(int route)
{
    return route == R_HAPROXY ? "haproxy" : "hosts";
}

const char *pt_url(int route)
{
    return route == R_HAPROXY ? g_haproxy : g_hosts;
}

const char *pt_phase_name(int phase)
{
    static const char *const names[PH_N] = {
        "warm-up", "switchover", "kill-postgres", "isolate+heal",
        "kill-patroni+start-node", "after"
    };
    return phase >= 0 && phase < PH_N ? names[phase] : "?";
}

/* Runs `bash patroni.sh CMD DIR [ARG]`: its stdout into out[size] (the
 * ms a command prints, the leader's name), its stderr to ours. Returns
 * its exit status (-1 when it could not run); *ms the time it took. */
int pt_script(const char *cmd, const char *arg, char *out, size_t size,
              int64_t *ms)
{
    char buf[4096], line[512];
    int64_t t = tu_now_ms();
    size_t n = 0;
    FILE *p;
    int st;

    snprintf(buf, sizeof buf, "bash '%s' %s '%s' %s", g_script, cmd, g_dir,
             arg != NULL ? arg : "");
    fflush(stdout);
    fflush(stderr);
    if (out != NULL && size > 0)
        out[0] = '\0';
    p = popen(buf, "r");
    if (p == NULL)
        return -1;
    while (fgets(line, sizeof line, p) != NULL) {
        /* The script's own lines ("patroni: ...") go on to the log. */
        if (strncmp(line, "patroni: ", 9) == 0 || out == NULL)
            printf("    %s", line);
        else if (n + strlen(line) < size) {
            memcpy(out + n, line, strlen(line) + 1);
            n += strlen(line);
        }
    }
    st = pclose(p);
    if (ms != NULL)
        *ms = tu_now_ms() - t;
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The port of a one-host URL (…@host:port/…), or 0. */
int pt_port_of(const char *url)
{
    const char *at = strrchr(url, '@'), *colon;

    if (at == NULL)
        return 0;
    colon = strchr(at, ':');
    return colon != NULL ? atoi(colon + 1) : 0;
}

/* 0, 1, 2 for pg1..pg3's port, -1 for another. */
int pt_node_of_port(int port)
{
    int i;

    for (i = 0; i < 3; i++)
        if (g_node_port[i] == port)
            return i;
    return -1;
}

/* The hosts URL with node `node` (0-based) first and the others after
 * it in their order: what a client whose list names the old leader first
 * reaches after kill-patroni. */
void pt_old_first_url(char *out, size_t size, int node)
{
    const char *at = strrchr(g_hosts, '@'), *path;
    char host[3][64];
    int i, k = 0;

    if (at == NULL || (path = strchr(at, '/')) == NULL || node < 0) {
        snprintf(out, size, "%s", g_hosts);
        return;
    }
    for (i = 0; i < 3; i++)
        snprintf(host[i], sizeof host[i], "127.0.0.1:%d", g_node_port[i]);
    k = snprintf(out, size, "%.*s%s", (int)(at + 1 - g_hosts), g_hosts,
                 host[node]);
    for (i = 0; i < 3 && k > 0 && (size_t)k < size; i++)
        if (i != node)
            k += snprintf(out + k, size - (size_t)k, ",%s", host[i]);
    if (k > 0 && (size_t)k < size)
        snprintf(out + k, size - (size_t)k, "%s", path);
}

/* DIR/env: the URLs. 0, or -1 after saying what is missing. */
int pt_load_env(void)
{
    static char env[8192];
    char path[1200], key[64];
    int i;

    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, env, sizeof env);
    if (!tu_get_var(env, "SQLLOCK_TEST_PATRONI_HAPROXY_URL", g_haproxy,
                    sizeof g_haproxy) ||
        !tu_get_var(env, "SQLLOCK_TEST_PATRONI_HOSTS_URL", g_hosts,
                    sizeof g_hosts)) {
        printf("    %s has no SQLLOCK_TEST_PATRONI_HAPROXY_URL or _HOSTS_URL\n",
               path);
        return -1;
    }
    for (i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "SQLLOCK_TEST_PATRONI_URL%d", i + 1);
        if (!tu_get_var(env, key, g_node[i], sizeof g_node[i]) ||
            (g_node_port[i] = pt_port_of(g_node[i])) <= 0) {
            printf("    %s has no %s\n", path, key);
            return -1;
        }
    }
    return 0;
}

int64_t pt_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* While the case runs and the test process lives. */
int pt_running(void)
{
    return !LD(&g_sh->stop) && getppid() == g_parent;
}

/* A handle on `url` with the test's bounds: a connect of 2 s and a round
 * trip of g_stmt_ms (scaled), so that a commit waiting for a standby
 * that follows someone else ends. Tried again while the cluster has no
 * primary on that route; NULL when the case ended first. */
sqllock_db *pt_open(const char *url)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    o.connect_timeout_ms = 2000 * g_slow;
    o.statement_timeout_ms = g_stmt_ms;
    for (;;) {
        rc = sqllock_open(url, &o, &db);
        if (rc == SQLLOCK_OK)
            return db;
        sqllock_close(db);
        db = NULL;
        if (!pt_running())
            return NULL;
        tu_sleep_ms(50);
    }
}

void pt_bad(pt_client *c, const char *fmt, ...)
{
    va_list ap;

    ADD(&g_sh->failed, 1);
    if (c->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->bad, sizeof c->bad, fmt, ap);
    va_end(ap);
}

/* A status that says the test or the library is wrong, not the cluster:
 * nothing a fault may cause. */
static int pt_fatal(int rc)
{
    switch (rc) {
    case SQLLOCK_EINVAL: case SQLLOCK_ENOMEM: case SQLLOCK_EURL:
    case SQLLOCK_ESCHEME: case SQLLOCK_ENOTBUILT: case SQLLOCK_ENOSCHEMA:
    case SQLLOCK_ESCHEMAVER: case SQLLOCK_ENOTHELD: case SQLLOCK_EMISUSE:
    case SQLLOCK_EUNSUPPORTED: case SQLLOCK_EEXISTS: case SQLLOCK_EPROXY:
    case SQLLOCK_EKIND:
        return 1;
    default:
        return 0;
    }
}

/* One call's status: counted for the phase and route, its time checked
 * against a bound (E1: every call ends), the first error after the fault
 * kept with its message. */
void pt_count(pt_client *c, sqllock_db *db, int rc, int64_t t0_us,
              const char *what)
{
    int p = LD(&g_sh->phase), r = c->route;
    pt_phase *ph = &g_sh->ph[p];
    int64_t now = tu_now_us(), took = (now - t0_us) / 1000;
    /* A wait, connects to three hosts, two round trips and a release's
     * retries, with room for a loaded machine. */
    int64_t bound = 30000 * (int64_t)g_slow;

    if (rc < 0 || rc >= NST)
        rc = SQLLOCK_EDB;
    c->st[rc]++;
    ADD(&ph->st[r][rc], 1);
    if (took > c->longest_ms) {
        c->longest_ms = took;
        snprintf(c->longest_what, sizeof c->longest_what, "%s", what);
    }
    if (took > bound)
        pt_bad(c, "E1: %s took %lld ms (bound %lld ms): a call hung", what,
               (long long)took, (long long)bound);
    switch (rc) {
    case SQLLOCK_OK: case SQLLOCK_BUSY: case SQLLOCK_TIMEOUT:
    case SQLLOCK_LOST: case SQLLOCK_CONFLICT: case SQLLOCK_NOTFOUND:
        return;
    default:
        break;
    }
    if (p != PH_WARM && p != PH_AFTER && now > ph->t_fault_us) {
        int64_t zero = 0;

        if (__atomic_compare_exchange_n(&ph->first_err_us[r], &zero, now, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            snprintf(ph->first_msg[r], sizeof ph->first_msg[r], "%s (%s): %s",
                     sqllock_errname(rc), what, sqllock_errmsg(db));
    }
    if (pt_fatal(rc))
        pt_bad(c, "%s: %s, which no fault explains: %s", what,
               sqllock_errname(rc), sqllock_errmsg(db));
}

/* An acknowledged grant (or write) invoked at t_inv_us. The first one of
 * the route after the fault that the new leader gave -- a server on
 * another port than the old leader's, or one whose postmaster started
 * after the fault (kill-postgres restarts the same node) -- is the
 * route's figure for the fault; `db` is asked which server it is on (its
 * connection is the grant's). */
void pt_granted(pt_client *c, sqllock_db *db, int64_t t_inv_us,
                const char *what)
{
    int p = LD(&g_sh->phase), r = c->route, has = 0, rc;
    pt_phase *ph = &g_sh->ph[p];
    int64_t now = tu_now_us(), v = 0, zero = 0;
    sqllock_cell a[2];

    c->ok++;
    c->ok_phase[p]++;
    if (p == PH_WARM || p == PH_AFTER || db == NULL ||
        LD(&ph->first_new_us[r]) != 0 || t_inv_us < LD(&ph->t_fault_us))
        return;
    a[0] = (sqllock_cell)SQLLOCK_NUMBER(ph->old_port);
    a[1] = (sqllock_cell)SQLLOCK_NUMBER(ph->t_fault_wall_ms);
    rc = sqllock_db_exec(db, "SELECT CASE WHEN inet_server_port() <> $1 OR "
                         "pg_postmaster_start_time() > "
                         "to_timestamp($2::float8 / 1000) THEN 1 ELSE 0 END",
                         a, 2, &has, &v, NULL);
    if (rc == SQLLOCK_OK && has && v == 1 &&
        __atomic_compare_exchange_n(&ph->first_new_us[r], &zero, now, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        snprintf(ph->first_new_what[r], sizeof ph->first_new_what[r], "%s",
                 what);
}

/* After a status that is not contention: a short jittered pause, so that
 * a client facing a cluster without a primary does not spin. */
void pt_pause_after(int rc, unsigned *seed)
{
    if (rc != SQLLOCK_OK && rc != SQLLOCK_BUSY && rc != SQLLOCK_TIMEOUT &&
        rc != SQLLOCK_CONFLICT && rc != SQLLOCK_LOST)
        tu_sleep_ms(20 + (int64_t)(rand_r(seed) % 40));
}

/* ------------------------------------------------------------------ */
/* The group: one cluster for the case                                 */
/* ------------------------------------------------------------------ */

/* A signal that ends the test process (ctest's timeout, ^C) stops the
 * cluster first: fork and exec are async-signal-safe. */
static void on_signal(int sig)
{
    pid_t p;

    if (getpid() == g_parent && g_dir[0] != '\0') {
        p = fork();
        if (p == 0) {
            execl("/bin/bash", "bash", g_script, "stop", g_dir, (char *)NULL);
            _exit(127);
        }
        if (p > 0)
            waitpid(p, NULL, 0);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A base port P for patroni.sh (SQLLOCK_PATRONI_PORT) whose ports
 * P..P+63 are all free on 127.0.0.1, from 7800, 7900, ... 9800 (below
 * the other fixtures' ranges, scripts/patroni.sh): another build's run
 * beside this one takes another. Left as it is when set. */
static void pick_base_port(void)
{
    int base, i, ok;

    if (getenv("SQLLOCK_PATRONI_PORT") != NULL)
        return;
    for (base = 7800; base <= 9800; base += 100) {
        for (i = 0, ok = 1; i < 64 && ok; i++) {
            struct sockaddr_in a;
            int fd = socket(AF_INET, SOCK_STREAM, 0);

            memset(&a, 0, sizeof a);
            a.sin_family = AF_INET;
            a.sin_port = htons((uint16_t)(base + i));
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
            if (fd >= 0)
                close(fd);
        }
        if (ok) {
            char v[16];

            snprintf(v, sizeof v, "%d", base);
            setenv("SQLLOCK_PATRONI_PORT", v, 1);
            return;
        }
    }
}

static int packages_present(void)
{
    return system("command -v patroni >/dev/null 2>&1 && "
                  "command -v etcd >/dev/null 2>&1 && "
                  "command -v haproxy >/dev/null 2>&1 && "
                  "test -x /usr/lib/postgresql/15/bin/postgres") == 0;
}

/* The application's tables, on the leader. */
static const char *const setup_sql[] = {
    "CREATE TABLE IF NOT EXISTS " T_ROW " (id BIGINT PRIMARY KEY, "
    "n BIGINT NOT NULL)",
    "INSERT INTO " T_ROW " (id, n) VALUES (1, 0), (2, 0) "
    "ON CONFLICT (id) DO NOTHING",
    "CREATE TABLE IF NOT EXISTS " T_GUARD " (id BIGINT PRIMARY KEY, "
    "n BIGINT NOT NULL)",
    "INSERT INTO " T_GUARD " (id, n) VALUES (1, 0) "
    "ON CONFLICT (id) DO NOTHING",
};

int pt_group_setup(void **state)
{
    char *d = tu_mkdtemp(), path[1200], ms[32];
    const char *mode;
    sqllock_db *db = NULL;
    int64_t t;
    int rc;
    size_t i;

    (void)state;
    if (d == NULL) {
        printf("    setup: cannot make a work directory: %s\n",
               strerror(errno));
        return -1;
    }
    snprintf(g_dir, sizeof g_dir, "%s", d);
    free(d);
    g_parent = getpid();
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, on_signal);
    pick_base_port();
    /* The CI runs the default configuration (synchronous_mode, one etcd
     * member); SQLLOCK_TEST_PATRONI_MODE="--strict", "--etcd 3" or both
     * runs the rest of the matrix (README, docs/testing.md). */
    mode = getenv("SQLLOCK_TEST_PATRONI_MODE");
    if (mode != NULL && strspn(mode, "-abcdefghijklmnopqrstuvwxyz0123456789 ")
                        != strlen(mode)) {
        printf("    setup: SQLLOCK_TEST_PATRONI_MODE may hold only the "
               "script's start options (--strict, --etcd 1|3)\n");
        return -1;
    }
    if (mode != NULL && *mode != '\0')
        printf("    the cluster's start options: %s\n", mode);
    rc = pt_script("start", mode, NULL, 0, &t);
    if (rc != 0) {
        if (!packages_present()) {
            snprintf(g_cannot, sizeof g_cannot, "scripts/patroni.sh start "
                     "failed (status %d) and patroni, etcd, haproxy or "
                     "PostgreSQL 15 is not installed (the script installs "
                     "them as root with apt-get)", rc);
            return 0;
        }
        printf("    setup: scripts/patroni.sh start %s failed (status %d); "
               "its logs are kept there\n", g_dir, rc);
        return -1;
    }
    snprintf(path, sizeof path, "%s/start_ms", g_dir);
    tu_read_file(path, ms, sizeof ms);
    printf("    cluster started in %lld ms (the script says %s ms) in %s\n",
           (long long)t, ms[0] ? strtok(ms, "\n") : "?", g_dir);
    if (pt_load_env() != 0)
        return -1;
    rc = sqllock_open(g_haproxy, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    for (i = 0; rc == SQLLOCK_OK && i < sizeof setup_sql / sizeof *setup_sql;
         i++)
        rc = sqllock_db_exec(db, setup_sql[i], NULL, 0, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK) {
        printf("    setup: the schema through HAProxy: %s: %s\n",
               sqllock_errname(rc), sqllock_errmsg(db));
        sqllock_close(db);
        return -1;
    }
    sqllock_close(db);
    return 0;
}

int pt_group_teardown(void **state)
{
    char cmd[3000];
    int i;

    (void)state;
    if (!g_passed && g_sh != NULL) {
        /* A failed case: the clients stop (their sections end), then the
         * history is judged as far as it goes, for the report. */
        char path[1200];
        FILE *fp;

        ST(&g_sh->stop, 1);
        snprintf(path, sizeof path, "%s/stop", g_dir);
        if ((fp = fopen(path, "w")) != NULL)
            fclose(fp);
        tu_reap_children(g_pids, g_npids, 20000 * (int64_t)g_slow, NULL);
        g_npids = 0;
        tu_hist_close(g_hist);
        g_hist = NULL;
        snprintf(path, sizeof path, "%s/history", g_dir);
        printf("    the history so far:\n");
        tu_hist_check(path, stdout, NULL);
    }
    for (i = 0; i < g_npids; i++)
        if (g_pids[i] > 0)
            tu_kill_wait(g_pids[i]);
    g_npids = 0;
    if (g_dir[0] == '\0')
        return 0;
    pt_script("stop", NULL, NULL, 0, NULL);
    if (g_passed) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    } else {
        /* The logs and the history stay; the data directories go. */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/pg[123]/data '%s'/etcd[123]/data",
                 g_dir, g_dir);
        printf("    kept %s (history: %s/history; the cluster's logs: "
               "%s/pg*/patroni.log, %s/haproxy.log)\n", g_dir, g_dir, g_dir,
               g_dir);
    }
    if (system(cmd) != 0)
        printf("    teardown: %s failed\n", cmd);
    g_dir[0] = '\0';
    return 0;
}
