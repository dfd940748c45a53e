/*
 * common.c -- test_galera's cluster, its URLs and
 * scripts, the shared state and helpers of the lease tests (a, b), and
 * the group setup (galera.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "galera.h"
#include "tu_history.h"

char g_dir[1024], g_script[1024];
char g_url[NODES][512];       /* one node each */
char g_urls[1024];            /* all three */
static char g_prefix[256];           /* "mysql://user:pw@" */
static char g_host[NODES][64];       /* "127.0.0.1:6101" */
static char g_path[128];             /* "/sqllock_test" */
static int g_port0;                  /* node 1's SQL port */
int g_slow = 1;
int g_down = -1;              /* a node this test killed, or -1 */
int64_t g_start_ms;



/* ------------------------------------------------------------------ */
/* The cluster                                                         */
/* ------------------------------------------------------------------ */

/* Splits mysql://user:pw@host:port/db into the globals. */
static int split_url(int n, const char *url)
{
    tu_url_parts p;

    if (tu_url_split(url, &p) != 0 ||
        p.path_at - p.host_at >= sizeof g_host[n])
        return -1;
    snprintf(g_prefix, sizeof g_prefix, "%.*s", (int)p.host_at, url);
    snprintf(g_host[n], sizeof g_host[n], "%.*s",
             (int)(p.path_at - p.host_at), url + p.host_at);
    snprintf(g_path, sizeof g_path, "%s", url + p.path_at);
    if (n == 0) {
        const char *colon = strrchr(g_host[0], ':');
        g_port0 = colon != NULL ? atoi(colon + 1) : 0;
    }
    return 0;
}

/* A URL with the nodes in the order given (0-based). */
void gl_multi_url(char *out, size_t size, int a, int b, int c)
{
    snprintf(out, size, "%s%s,%s,%s%s", g_prefix, g_host[a], g_host[b],
             g_host[c], g_path);
}

/* Reads the URLs: the environment first, else DIR/env. */
int gl_load_urls(void)
{
    static char envfile[8192];
    char path[1200], key[64];
    int n;

    snprintf(path, sizeof path, "%s/env", g_dir);
    tu_read_file(path, envfile, sizeof envfile);
    for (n = 0; n < NODES; n++) {
        const char *e;
        snprintf(key, sizeof key, "SQLLOCK_TEST_GALERA_URL%d", n + 1);
        e = getenv(key);
        if (e != NULL && *e != '\0')
            snprintf(g_url[n], sizeof g_url[n], "%s", e);
        else if (!tu_get_var(envfile, key, g_url[n], sizeof g_url[n]))
            return -1;
        if (split_url(n, g_url[n]) != 0)
            return -1;
    }
    if (getenv("SQLLOCK_TEST_GALERA_URLS") != NULL)
        snprintf(g_urls, sizeof g_urls, "%s",
                 getenv("SQLLOCK_TEST_GALERA_URLS"));
    else if (!tu_get_var(envfile, "SQLLOCK_TEST_GALERA_URLS", g_urls,
                         sizeof g_urls))
        gl_multi_url(g_urls, sizeof g_urls, 0, 1, 2);
    return 0;
}

/* Runs `galera.sh CMD DIR NODE`; returns the ms it took, fails on error. */
int64_t gl_script(const char *cmd, int node)
{
    char arg[16];
    int64_t t0 = tu_now_ms();
    int rc;

    snprintf(arg, sizeof arg, "%d", node + 1);
    rc = tu_run_script(g_script, cmd, g_dir, arg);
    if (rc != 0)
        fail_msg("galera.sh %s %s %s failed (status %d)", cmd, g_dir, arg,
                 rc);
    return tu_now_ms() - t0;
}


/* A handle whose reads wait until the node has applied every write the
 * cluster committed before them (wsrep_sync_wait): for checks. */
sqllock_db *gl_open_checker(int node)
{
    sqllock_db *db = tu_open_or_fail(g_url[node]);

    TU_ASSERT_RC(sqllock__exec_sql(db, "SET SESSION wsrep_sync_wait = 1", NULL,
                                0, NULL, NULL, NULL), SQLLOCK_OK, db);
    return db;
}

int64_t gl_sql_int(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has = 0;

    TU_ASSERT_RC(sqllock__exec_sql(db, sql, NULL, 0, &has, &v, NULL),
              SQLLOCK_OK, db);
    return v;
}

/* A wsrep status counter, summed over the nodes that are up. */
int64_t gl_wsrep_sum(const char *var)
{
    char sql[300];
    int64_t sum = 0;
    int n;

    snprintf(sql, sizeof sql, "SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM "
             "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '%s'",
             var);
    for (n = 0; n < NODES; n++) {
        sqllock_db *db;
        if (n == g_down)
            continue;
        db = tu_open_or_fail(g_url[n]);
        sum += gl_sql_int(db, sql);
        sqllock_close(db);
    }
    return sum;
}

/* The node a handle reached (0-based), by its SQL port. */
int gl_node_of(sqllock_db *db)
{
    int64_t port = 0;
    int has = 0;

    if (sqllock__exec_sql(db, "SELECT @@port", NULL, 0, &has, &port,
                          NULL) != SQLLOCK_OK)
        return -1;
    return (int)(port - g_port0);
}

/* ------------------------------------------------------------------ */
/* Shared state of the lease tests (a, b)                              */
/* ------------------------------------------------------------------ */

static const char *const api_name[API_N] = {
    "open", "acquire(wait)", "try_acquire", "release", "renew"
};
shared *g_sh;
char g_names[NNAMES][96];
char g_child_url[MAXP][1024];

void gl_bad(client *c, const char *fmt, ...)
{
    va_list ap;

    if (c->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->bad, sizeof c->bad, fmt, ap);
    va_end(ap);
    ADD(&g_sh->failed, 1);
}

/* Counts a call's status and its duration. */
void gl_count(client *c, int api, int rc, int64_t t0_ms)
{
    int64_t d = tu_now_ms() - t0_ms;

    if (rc >= 0 && rc < NSTATUS)
        c->calls[api][rc]++;
    if (d > c->longest_ms) {
        c->longest_ms = d;
        snprintf(c->longest_what, sizeof c->longest_what, "%s %s",
                 api_name[api], sqllock_errname(rc) + 8);
    }
}

/* b: notes the first ECONNECT after the kill. A client on the victim
 * need not hear one: a call whose outcome the lost connection did not
 * change (a busy acquire whose rollback found the connection gone)
 * reports its own outcome, and the next call connects again. */
void gl_after_kill(client *c, sqllock_db *db, int rc, int64_t began_ms)
{
    (void)began_ms;
    if (LD(&g_sh->killed) && rc == SQLLOCK_ECONNECT && c->econnect_ms == 0) {
        c->econnect_ms = tu_now_ms();
        snprintf(c->first_econnect, sizeof c->first_econnect, "%s",
                 sqllock_errmsg(db));
    }
}

/* The critical section: read, sleep, write the name's counter; the hold
 * goes to the log. */
tu_hist *g_hist;

void gl_hist_open(const char *what)
{
    char path[1200];

    snprintf(path, sizeof path, "%s/history-%s.txt", g_dir, what);
    (void)unlink(path);
    g_hist = tu_hist_open(path);
    if (g_hist == NULL)
        fail_msg("history %s: %s", path, strerror(errno));
}

static const char *who_am_i(char *buf, size_t size, int who)
{
    snprintf(buf, size, "c%d", who);
    return buf;
}

void gl_critical(client *c, int who, int k, sqllock_lease *l,
                     long sleep_us, int64_t call_us)
{
    int64_t t0 = tu_now_us(), v, seq, token = sqllock_lease_token(l);
    char me[16];
    int i;

    who_am_i(me, sizeof me, who);
    tu_hist_section(g_hist, me, g_names[k], token, 0);
    seq = tu_hist_invoke(g_hist, me, "write", g_names[k], token, 0);
    v = g_sh->counter[k];
    tu_sleep_us(sleep_us);
    g_sh->counter[k] = v + 1;
    tu_hist_complete(g_hist, me, seq, "ok", token);
    tu_hist_section_end(g_hist, me, g_names[k], token);
    if (!sqllock_lease_held(l))
        c->late_holds++;
    i = ADD(&g_sh->niv, 1);
    if (i < MAXIV) {
        g_sh->iv[i].name = k;
        g_sh->iv[i].who = who;
        g_sh->iv[i].token = sqllock_lease_token(l);
        g_sh->iv[i].call_us = call_us;
        g_sh->iv[i].t0_us = t0;
        g_sh->iv[i].t1_us = tu_now_us();
    }
    c->holds++;
}

/* Releases until the database answers: a lost connection or a rolled
 * back statement keeps the hold, and the release is tried again. */
int gl_release_hold(client *c, sqllock_db *db, sqllock_lease *l,
                        int lost_ok)
{
    int tries, rc = SQLLOCK_OK, cut = 0;

    for (tries = 0; tries < 50; tries++) {
        int64_t t0 = tu_now_ms(), token = sqllock_lease_token(l), seq;
        char me[16];

        snprintf(me, sizeof me, "c%d", (int)(c - g_sh->c));
        seq = tu_hist_invoke(g_hist, me, "release", sqllock_lease_name(l),
                             token, 0);
        rc = sqllock_lease_release(l);
        tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc), token);
        gl_count(c, API_REL, rc, t0);
        gl_after_kill(c, db, rc, t0);
        if (rc == SQLLOCK_OK)
            return rc;
        if (rc == SQLLOCK_LOST && lost_ok)
            return rc;
        if (rc == SQLLOCK_LOST && cut) {
            /* The release whose answer the kill cut had committed (the
             * cluster has it): the retry finds the row gone. */
            c->lost_after_cut++;
            return rc;
        }
        if (rc == SQLLOCK_ECONNECT)
            cut = 1;
        if (rc != SQLLOCK_ECONNECT && rc != SQLLOCK_EDEADLOCK) {
            gl_bad(c, "release of %s: %s (%s)", sqllock_lease_name(l),
                sqllock_errname(rc), sqllock_errmsg(db));
            return rc;
        }
        if (rc == SQLLOCK_ECONNECT && !LD(&g_sh->killed)) {
            gl_bad(c, "release of %s: ECONNECT with every node up (%s)",
                sqllock_lease_name(l), sqllock_errmsg(db));
            return rc;
        }
        c->rel_retries++;
        tu_sleep_ms(5 + rand() % 20);
    }
    gl_bad(c, "release of %s did not get through in 50 tries (%s: %s)",
        sqllock_lease_name(l), sqllock_errname(rc), sqllock_errmsg(db));
    return rc;
}

/*
 * One contending client: until told to stop, takes a name (in turn),
 * with acquire(wait) or try_acquire, runs the critical section, releases.
 * `in_kill`: test b, where ECONNECT is expected (after the kill only).
 */
void gl_contend(client *c, int who, sqllock_db *db, int use_try,
                    int64_t ttl_ms, long sleep_us, int in_kill)
{
    sqllock_lease *l[NNAMES];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int k, i;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 40;
    for (k = 0; k < NNAMES; k++) {
        l[k] = NULL;
        if (sqllock_lease_new(db, g_names[k], &o, &l[k]) != SQLLOCK_OK)
            gl_bad(c, "lease_new: %s", sqllock_errmsg(db));
    }
    for (i = 0; !LD(&g_sh->stop) && c->bad[0] == '\0'; i++) {
        int64_t t0 = tu_now_ms(), call_us = tu_now_us(), seq;
        char me[16];
        int rc;

        k = (who + i) % NNAMES;
        seq = tu_hist_invoke(g_hist, who_am_i(me, sizeof me, who), "acquire",
                             g_names[k], 0, ttl_ms);
        if (use_try) {
            rc = sqllock_lease_try_acquire(l[k]);
            gl_count(c, API_TRY, rc, t0);
        } else {
            rc = sqllock_lease_acquire(l[k], 20000);
            gl_count(c, API_ACQ, rc, t0);
        }
        tu_hist_complete(g_hist, me, seq, tu_hist_outcome(rc),
                         sqllock_lease_token(l[k]));
        if (in_kill)
            gl_after_kill(c, db, rc, t0);
        if (rc == SQLLOCK_OK) {
            gl_critical(c, who, k, l[k], sleep_us, call_us);
            gl_release_hold(c, db, l[k], 0);
            continue;
        }
        if (rc == SQLLOCK_BUSY && use_try) {
            if (tu_contains_ci(sqllock_errmsg(db), "deadlock"))
                c->busy_cert++;
            tu_sleep_us(500 + rand() % 3000);
            continue;
        }
        if (rc == SQLLOCK_ECONNECT && in_kill && LD(&g_sh->killed))
            continue;
        if (rc == SQLLOCK_TIMEOUT && in_kill)
            continue;     /* a grant whose answer the kill cut blocks it */
        gl_bad(c, "%s of %s: %s (%s)", use_try ? "try_acquire" : "acquire",
            g_names[k], sqllock_errname(rc), sqllock_errmsg(db));
    }
    for (k = 0; k < NNAMES; k++)
        sqllock_lease_free(l[k]);
}

typedef struct child_job {
    void (*fn)(int);
    int who;
} child_job;

static int child_main(void *arg)
{
    child_job *j = arg;

    j->fn(j->who);
    return g_sh->c[j->who].bad[0] != '\0' ? 1 : 0;
}

pid_t gl_fork_child(void (*fn)(int), int who, unsigned alarm_s)
{
    child_job j = { fn, who };
    pid_t pid = tu_fork_child(child_main, &j, alarm_s);

    if (pid < 0)
        ADD(&g_sh->failed, 1);
    return pid;
}


static int iv_cmp(const void *a, const void *b)
{
    const hold_iv *x = a, *y = b;

    if (x->name != y->name)
        return x->name - y->name;
    return x->t0_us < y->t0_us ? -1 : x->t0_us > y->t0_us;
}

/* The exclusion checks: counters exact, no overlap, tokens up.
 * Returns the number of holds. */
int gl_check_holds(int nclients, const char *what)
{
    shared *sh = g_sh;
    int64_t per[NNAMES] = { 0 }, all[API_N][NSTATUS];
    int n = sh->niv < MAXIV ? sh->niv : MAXIV, i, j, k, a, overlaps = 0,
        back = 0;

    memset(all, 0, sizeof all);
    for (j = 0; j < nclients; j++)
        for (a = 0; a < API_N; a++)
            for (k = 0; k < NSTATUS; k++)
                all[a][k] += sh->c[j].calls[a][k];
    printf("  %s: statuses per call, all clients:\n", what);
    for (a = 0; a < API_N; a++)
        print_statuses(api_name[a], all[a]);
    for (j = 0; j < nclients; j++)
        if (sh->c[j].bad[0] != '\0')
            printf("    client %d (node %d) FAILED: %s\n", j,
                   sh->c[j].node + 1, sh->c[j].bad);
    if (sh->niv > MAXIV)
        fail_msg("the hold log overflowed (%d holds)", sh->niv);
    {
        /* Across names (not a contract of L5, which is per name): a grant
         * whose acquire began after another grant was made, with a
         * smaller token. Galera's nodes draw AUTO_INCREMENT values with
         * their own offset and apply each other's writes a moment after
         * the commit, so this can happen there. */
        int64_t inv = 0, pairs = 0;
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++)
                if (sh->iv[j].call_us > sh->iv[i].t0_us &&
                    sh->iv[j].name != sh->iv[i].name) {
                    pairs++;
                    if (sh->iv[j].token < sh->iv[i].token)
                        inv++;
                }
        printf("    across names: %lld of %lld ordered pairs of grants "
               "(the second acquire began after the first was granted) "
               "have a smaller token for the later grant\n",
               (long long)inv, (long long)pairs);
    }
    qsort(sh->iv, (size_t)n, sizeof sh->iv[0], iv_cmp);
    for (i = 0; i < n; i++) {
        per[sh->iv[i].name]++;
        if (i == 0 || sh->iv[i].name != sh->iv[i - 1].name)
            continue;
        if (sh->iv[i].t0_us < sh->iv[i - 1].t1_us) {
            if (overlaps++ == 0)
                printf("    L1: %s held by client %d (token %lld) from %lld "
                       "us, while client %d (token %lld) held it until %lld "
                       "us\n", g_names[sh->iv[i].name], sh->iv[i].who,
                       (long long)sh->iv[i].token, (long long)sh->iv[i].t0_us,
                       sh->iv[i - 1].who, (long long)sh->iv[i - 1].token,
                       (long long)sh->iv[i - 1].t1_us);
        }
        if (sh->iv[i].token <= sh->iv[i - 1].token) {
            if (back++ == 0)
                printf("    L5: %s: token %lld granted after token %lld\n",
                       g_names[sh->iv[i].name], (long long)sh->iv[i].token,
                       (long long)sh->iv[i - 1].token);
        }
    }
    for (k = 0; k < NNAMES; k++)
        if (sh->counter[k] != per[k])
            fail_msg("L1: the counter of %s is %lld after %lld holds (lost "
                     "updates: two holders at once)", g_names[k],
                     (long long)sh->counter[k], (long long)per[k]);
    if (overlaps > 0 || back > 0)
        fail_msg("L1/L5: %d overlapping holds (double grants), %d tokens "
                 "that did not increase", overlaps, back);
    /* The whole history against the lease model (tu_history.h). */
    if (g_hist != NULL) {
        char path[1200];
        int bad;

        for (k = 0; k < NNAMES; k++)
            tu_hist_final(g_hist, g_names[k], sh->counter[k]);
        snprintf(path, sizeof path, "%s", tu_hist_path(g_hist));
        tu_hist_close(g_hist);
        g_hist = NULL;
        bad = tu_hist_check(path, stdout, NULL);
        if (bad != 0)
            fail_msg("the history checker found %d violations in %s", bad,
                     path);
    }
    return n;
}

/* ------------------------------------------------------------------ */

int group_setup(void **state)
{
    sqllock_db *db = NULL;
    int rc, n;

    (void)state;
    rc = sqllock_open(g_url[0], NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "galera: init on node 1: %s: %s\n",
                sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_close(db);
    if (rc != SQLLOCK_OK)
        return -1;
    /* Every node is up, ready and sees 3 members. */
    for (n = 0; n < NODES; n++) {
        int64_t size = 0, ready = 0;
        int has = 0;
        db = NULL;
        rc = sqllock_open(g_url[n], NULL, &db);
        if (rc == SQLLOCK_OK)
            rc = sqllock__exec_sql(db, "SELECT CAST(VARIABLE_VALUE AS SIGNED) "
                                   "FROM information_schema.GLOBAL_STATUS "
                                   "WHERE VARIABLE_NAME = "
                                   "'WSREP_CLUSTER_SIZE'", NULL, 0, &has,
                                   &size, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock__exec_sql(db, "SELECT VARIABLE_VALUE = 'ON' "
                                   "FROM information_schema.GLOBAL_STATUS "
                                   "WHERE VARIABLE_NAME = 'WSREP_READY'",
                                   NULL, 0, &has, &ready, NULL);
        if (rc != SQLLOCK_OK || size != 3 || ready != 1) {
            fprintf(stderr, "galera: node %d: %s, cluster size %lld, ready "
                    "%lld: %s\n", n + 1, sqllock_errname(rc),
                    (long long)size, (long long)ready, sqllock_errmsg(db));
            sqllock_close(db);
            return -1;
        }
        sqllock_close(db);
    }
    return 0;
}
