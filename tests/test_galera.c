/*
 * test_galera.c -- sqllock on a 3-node MariaDB Galera cluster (issue 8).
 *
 * A Galera cluster replicates every commit to all nodes before it is
 * acknowledged (certification: a transaction that wrote a row another
 * node's transaction, ordered first, also wrote, is rolled back at its
 * commit with error 1213, which the driver reports as SQLLOCK_EDEADLOCK).
 * Row locks, on the other hand, are local to a node.
 *
 *   a. L1, L5 across nodes: processes on all three nodes contend for a few
 *      names with sqllock_lease_acquire() (waiting) and
 *      sqllock_lease_try_acquire(), each running a read-sleep-write of a
 *      counter in shared memory under the lease and logging its hold.
 *      Counters exact, no two holds of a name overlap, tokens increase in
 *      grant order; certification failures are counted (the nodes'
 *      wsrep_local_cert_failures) and every status each call returned is
 *      checked and printed.
 *   b. E1, L1: a node is killed (SIGKILL) while clients hold leases
 *      through it; clients use a multi-host URL with the victim first (or
 *      a survivor first), hear SQLLOCK_ECONNECT, reconnect to a survivor
 *      on the next call. Leases granted before the kill are on the
 *      survivors with their owner and token, no lease is granted twice,
 *      the time clients need to resume is measured; the node rejoins and
 *      sees the rows.
 *   c. R1 on Galera: SELECT ... FOR UPDATE on the same row succeeds on two
 *      nodes at once (node-local locks); when both update and commit,
 *      exactly one commit succeeds and the other reports
 *      SQLLOCK_EDEADLOCK, so no update is lost. On one node the second
 *      locker waits and gets SQLLOCK_ELOCKED as usual.
 *   d. O1 across nodes: sqllock_record_update() and get + cas increments
 *      from all three nodes; no update is lost (a certification failure
 *      comes back as SQLLOCK_EDEADLOCK, which is retried).
 *   e. P1, P2: a reaper on every node at once over the same expired rows:
 *      all deleted, none left.
 *
 * The cluster is the one scripts/galera.sh started in
 * $SQLLOCK_TEST_GALERA_DIR; $SQLLOCK_TEST_GALERA_SCRIPT is that script,
 * which the test runs to kill and restart a node. The URLs come from
 * DIR/env (or the environment: SQLLOCK_TEST_GALERA_URL1..3,
 * SQLLOCK_TEST_GALERA_URLS). Without DIR and SCRIPT the test prints
 * SKIPPED and exits 0.
 *
 * Forked children are made before the parent opens any sqllock handle of
 * the test, and the parent keeps its state in static storage and shared
 * memory, so that a child inherits no heap block it would not free.
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

#define NODES 3
#define LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define NSTATUS SQLLOCK_STATUS_END_

static char g_dir[1024], g_script[1024];
static char g_url[NODES][512];       /* one node each */
static char g_urls[1024];            /* all three */
static char g_prefix[256];           /* "mysql://user:pw@" */
static char g_host[NODES][64];       /* "127.0.0.1:33101" */
static char g_path[128];             /* "/sqllock_test" */
static int g_port0;                  /* node 1's SQL port */
static int g_slow = 1;
static int g_down = -1;              /* a node this test killed, or -1 */
static int64_t g_start_ms;



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
static void multi_url(char *out, size_t size, int a, int b, int c)
{
    snprintf(out, size, "%s%s,%s,%s%s", g_prefix, g_host[a], g_host[b],
             g_host[c], g_path);
}

/* Reads the URLs: the environment first, else DIR/env. */
static int load_urls(void)
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
        multi_url(g_urls, sizeof g_urls, 0, 1, 2);
    return 0;
}

/* Runs `galera.sh CMD DIR NODE`; returns the ms it took, fails on error. */
static int64_t script(const char *cmd, int node)
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
static sqllock_db *open_checker(int node)
{
    sqllock_db *db = tu_open_or_fail(g_url[node]);

    TU_ASSERT_RC(sqllock__exec_sql(db, "SET SESSION wsrep_sync_wait = 1", NULL,
                                0, NULL, NULL, NULL), SQLLOCK_OK, db);
    return db;
}

static int64_t sql_int(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has = 0;

    TU_ASSERT_RC(sqllock__exec_sql(db, sql, NULL, 0, &has, &v, NULL),
              SQLLOCK_OK, db);
    return v;
}

/* A wsrep status counter, summed over the nodes that are up. */
static int64_t wsrep_sum(const char *var)
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
        sum += sql_int(db, sql);
        sqllock_close(db);
    }
    return sum;
}

/* The node a handle reached (0-based), by its SQL port. */
static int node_of(sqllock_db *db)
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

#define MAXP 8
#define NNAMES 3
#define MAXIV 20000

enum { API_OPEN, API_ACQ, API_TRY, API_REL, API_RENEW, API_N };
static const char *const api_name[API_N] = {
    "open", "acquire(wait)", "try_acquire", "release", "renew"
};

typedef struct hold_iv {
    int name, who;
    int64_t token, call_us, t0_us, t1_us;  /* call_us: the acquire began */
} hold_iv;

typedef struct client {
    int node;                       /* the node it reached first */
    int victim_first;               /* b: its URL names the victim first */
    int64_t calls[API_N][NSTATUS];
    int64_t busy_cert;              /* try BUSY that came from certification */
    int64_t rel_retries;
    int64_t lost_after_cut;         /* b: LOST when a release was retried
                                       after the kill cut its answer */
    int64_t holds, late_holds;      /* late: past the local deadline */
    int64_t longest_ms;
    char longest_what[32];
    /* b */
    int64_t econnect_ms;            /* first ECONNECT after the kill */
    int64_t resumed_ms;             /* first success after it */
    int node_after;                 /* the node it reached after it */
    char first_econnect[200];
    char sticky_owner[SQLLOCK_OWNER_LEN + 1];
    int64_t sticky_token;
    char bad[400];
} client;

typedef struct shared {
    int ready, go, stop, failed, killed;
    int64_t t_kill_ms, t_killed_ms;
    int64_t counter[NNAMES];
    int niv;
    hold_iv iv[MAXIV];
    client c[MAXP];
} shared;

static shared *g_sh;
static char g_names[NNAMES][96];
static char g_child_url[MAXP][1024];

static void bad(client *c, const char *fmt, ...)
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
static void count(client *c, int api, int rc, int64_t t0_ms)
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
static void after_kill(client *c, sqllock_db *db, int rc, int64_t began_ms)
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
static void critical(client *c, int who, int k, sqllock_lease *l,
                     long sleep_us, int64_t call_us)
{
    int64_t t0 = tu_now_us(), v;
    int i;

    v = g_sh->counter[k];
    tu_sleep_us(sleep_us);
    g_sh->counter[k] = v + 1;
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
static int release_hold(client *c, sqllock_db *db, sqllock_lease *l,
                        int lost_ok)
{
    int tries, rc = SQLLOCK_OK, cut = 0;

    for (tries = 0; tries < 50; tries++) {
        int64_t t0 = tu_now_ms();
        rc = sqllock_lease_release(l);
        count(c, API_REL, rc, t0);
        after_kill(c, db, rc, t0);
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
            bad(c, "release of %s: %s (%s)", sqllock_lease_name(l),
                sqllock_errname(rc), sqllock_errmsg(db));
            return rc;
        }
        if (rc == SQLLOCK_ECONNECT && !LD(&g_sh->killed)) {
            bad(c, "release of %s: ECONNECT with every node up (%s)",
                sqllock_lease_name(l), sqllock_errmsg(db));
            return rc;
        }
        c->rel_retries++;
        tu_sleep_ms(5 + rand() % 20);
    }
    bad(c, "release of %s did not get through in 50 tries (%s: %s)",
        sqllock_lease_name(l), sqllock_errname(rc), sqllock_errmsg(db));
    return rc;
}

/*
 * One contending client: until told to stop, takes a name (in turn),
 * with acquire(wait) or try_acquire, runs the critical section, releases.
 * `in_kill`: test b, where ECONNECT is expected (after the kill only).
 */
static void contend(client *c, int who, sqllock_db *db, int use_try,
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
            bad(c, "lease_new: %s", sqllock_errmsg(db));
    }
    for (i = 0; !LD(&g_sh->stop) && c->bad[0] == '\0'; i++) {
        int64_t t0 = tu_now_ms(), call_us = tu_now_us();
        int rc;

        k = (who + i) % NNAMES;
        if (use_try) {
            rc = sqllock_lease_try_acquire(l[k]);
            count(c, API_TRY, rc, t0);
        } else {
            rc = sqllock_lease_acquire(l[k], 20000);
            count(c, API_ACQ, rc, t0);
        }
        if (in_kill)
            after_kill(c, db, rc, t0);
        if (rc == SQLLOCK_OK) {
            critical(c, who, k, l[k], sleep_us, call_us);
            release_hold(c, db, l[k], 0);
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
        bad(c, "%s of %s: %s (%s)", use_try ? "try_acquire" : "acquire",
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

static pid_t fork_child(void (*fn)(int), int who, unsigned alarm_s)
{
    child_job j = { fn, who };
    pid_t pid = tu_fork_child(child_main, &j, alarm_s);

    if (pid < 0)
        ADD(&g_sh->failed, 1);
    return pid;
}


/* One line of statuses: "OK 120, ECONNECT 4, ...". */
#define print_statuses(label, by) tu_print_statuses((label), 16, (by), NSTATUS)

static int iv_cmp(const void *a, const void *b)
{
    const hold_iv *x = a, *y = b;

    if (x->name != y->name)
        return x->name - y->name;
    return x->t0_us < y->t0_us ? -1 : x->t0_us > y->t0_us;
}

/* The exclusion checks: counters exact, no overlap, tokens up.
 * Returns the number of holds. */
static int check_holds(int nclients, const char *what)
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
    return n;
}

/* ------------------------------------------------------------------ */
/* a. Exclusion across nodes                                           */
/* ------------------------------------------------------------------ */

#define A_PROCS 6

static int64_t g_a_ms;   /* how long the clients contend */

static void a_child(int who)
{
    client *c = &g_sh->c[who];
    sqllock_db *db = NULL;
    int rc, use_try = who >= 3;
    int64_t t0;

    t0 = (int)tu_now_ms();
    rc = sqllock_open(g_url[who % NODES], NULL, &db);
    count(c, API_OPEN, rc, t0);
    if (rc != SQLLOCK_OK) {
        bad(c, "open: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return;
    }
    c->node = node_of(db);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    contend(c, who, db, use_try, 10000, 500 + rand() % 1500, 0);
    sqllock_close(db);
}

static void test_galera_a_L1_L5_exclusion_across_nodes(void **state)
{
    pid_t pids[A_PROCS];
    int64_t cert0, cert1, bf0, bf1, t, busy_cert = 0, holds = 0, rel_retry = 0;
    int i, n, failed, late = 0, per_node[NODES] = { 0 };

    (void)state;
    g_sh = tu_shared_map(sizeof *g_sh);
    for (i = 0; i < NNAMES; i++)
        snprintf(g_names[i], sizeof g_names[i], "galera-%ld-a-%d",
                 (long)getpid(), i);
    for (i = 0; i < A_PROCS; i++)
        pids[i] = fork_child(a_child, i, 120 * (unsigned)g_slow);
    /* The parent's handles come after the forks. */
    cert0 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    bf0 = wsrep_sum("WSREP_LOCAL_BF_ABORTS");
    t = tu_now_ms();
    while (LD(&g_sh->ready) < A_PROCS && !LD(&g_sh->failed) &&
           tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(5);
    ST(&g_sh->go, 1);
    t = tu_now_ms();
    while (tu_now_ms() - t < g_a_ms && !LD(&g_sh->failed))
        tu_sleep_ms(20);
    ST(&g_sh->stop, 1);
    failed = tu_reap_children(pids, A_PROCS, 60000 * (int64_t)g_slow, NULL);
    cert1 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    bf1 = wsrep_sum("WSREP_LOCAL_BF_ABORTS");
    n = check_holds(A_PROCS, "a");
    for (i = 0; i < A_PROCS; i++) {
        client *c = &g_sh->c[i];
        busy_cert += c->busy_cert;
        holds += c->holds;
        late += (int)c->late_holds;
        rel_retry += c->rel_retries;
        if (c->node >= 0 && c->node < NODES && c->holds > 0)
            per_node[c->node]++;
        if (c->calls[API_ACQ][SQLLOCK_EDEADLOCK] > 0 ||
            c->calls[API_TRY][SQLLOCK_EDEADLOCK] > 0)
            fail_msg("client %d: an acquire returned EDEADLOCK", i);
    }
    printf("  a: %d holds (%lld by the clients) in %lld ms by %d processes "
           "on 3 nodes (%d/%d/%d with holds); certification failures "
           "(wsrep_local_cert_failures) %lld, brute-force aborts %lld; "
           "try_acquire BUSY caused by a certification failure %lld; "
           "release retried after EDEADLOCK %lld; holds past the local "
           "deadline %d; double grants 0\n", n, (long long)holds,
           (long long)g_a_ms, A_PROCS, per_node[0], per_node[1], per_node[2],
           (long long)(cert1 - cert0), (long long)(bf1 - bf0),
           (long long)busy_cert, (long long)rel_retry, late);
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d child(ren) failed or hung, %d failure(s) recorded",
                 failed, LD(&g_sh->failed));
    for (i = 0; i < NODES; i++)
        if (per_node[i] == 0)
            fail_msg("no client on node %d got a lease", i + 1);
    assert_int_equal(late, 0);
    munmap(g_sh, sizeof *g_sh);
    g_sh = NULL;
}

/* ------------------------------------------------------------------ */
/* b. A node killed while clients hold leases on it                    */
/* ------------------------------------------------------------------ */

#define B_PROCS 6
#define VICTIM 2            /* node 3 */

static void b_child(int who)
{
    client *c = &g_sh->c[who];
    sqllock_db *db = NULL;
    sqllock_lease *sticky = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[128];
    int64_t t0 = tu_now_ms(), last_renew, call_us;
    int rc, i;

    rc = sqllock_open(g_child_url[who], NULL, &db);
    count(c, API_OPEN, rc, t0);
    if (rc != SQLLOCK_OK) {
        bad(c, "open: %s", sqllock_errmsg(db));
        sqllock_close(db);
        return;
    }
    c->node = node_of(db);
    /* A lease held across the kill; its row must be on the survivors. */
    snprintf(name, sizeof name, "%s-sticky-%d", g_names[0], who);
    o.ttl_ms = 60000;
    if (sqllock_lease_new(db, name, &o, &sticky) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(sticky) != SQLLOCK_OK) {
        bad(c, "sticky lease: %s", sqllock_errmsg(db));
        sqllock_lease_free(sticky);
        sqllock_close(db);
        return;
    }
    snprintf(c->sticky_owner, sizeof c->sticky_owner, "%s",
             sqllock_lease_owner(sticky));
    c->sticky_token = sqllock_lease_token(sticky);
    ADD(&g_sh->ready, 1);
    while (!LD(&g_sh->go) && !LD(&g_sh->stop))
        tu_sleep_ms(2);
    /* Contend, and renew the sticky lease every few holds. */
    last_renew = tu_now_ms();
    for (i = 0; !LD(&g_sh->stop) && c->bad[0] == '\0'; i++) {
        /* One round: the renewal when it is due, then one hold of a
         * contended name, through a lease handle of its own. */
        sqllock_lease *l = NULL;
        sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
        int k = (who + i) % NNAMES;
        int64_t killed_at = LD(&g_sh->t_killed_ms);
        int probe = killed_at != 0 && c->resumed_ms == 0;

        /* The renewal of the sticky lease, every 300 ms; the first one
         * that begins once the victim is dead is the probe: when it
         * succeeds, the client works again (on a survivor) and still
         * holds the lease it was granted before the kill. */
        if (probe || tu_now_ms() - last_renew > 300) {
            int tries;
            for (tries = 0; tries < 200; tries++) {
                t0 = tu_now_ms();
                rc = sqllock_lease_renew(sticky);
                count(c, API_RENEW, rc, t0);
                after_kill(c, db, rc, t0);
                if (rc == SQLLOCK_OK)
                    break;
                if (rc != SQLLOCK_ECONNECT || !LD(&g_sh->killed)) {
                    bad(c, "renew of the sticky lease: %s (%s)",
                        sqllock_errname(rc), sqllock_errmsg(db));
                    break;
                }
                tu_sleep_ms(20);
            }
            if (rc != SQLLOCK_OK && c->bad[0] == '\0')
                bad(c, "the sticky lease could not be renewed after the "
                    "kill: %s (%s)", sqllock_errname(rc), sqllock_errmsg(db));
            if (probe && rc == SQLLOCK_OK) {
                c->resumed_ms = tu_now_ms();
                c->node_after = node_of(db);
            }
            last_renew = tu_now_ms();
            if (c->bad[0] != '\0')
                break;
        }
        lo.ttl_ms = 6000;
        lo.backoff_min_ms = 2;
        lo.backoff_max_ms = 40;
        if (sqllock_lease_new(db, g_names[k], &lo, &l) != SQLLOCK_OK) {
            bad(c, "lease_new: %s", sqllock_errmsg(db));
            break;
        }
        t0 = tu_now_ms();
        call_us = tu_now_us();
        rc = sqllock_lease_acquire(l, 20000);
        count(c, API_ACQ, rc, t0);
        after_kill(c, db, rc, t0);
        if (rc == SQLLOCK_OK) {
            critical(c, who, k, l, 20000 + rand() % 30000, call_us);
            release_hold(c, db, l, 0);
        } else if (!(rc == SQLLOCK_ECONNECT && LD(&g_sh->killed)) &&
                   rc != SQLLOCK_TIMEOUT) {
            bad(c, "acquire of %s: %s (%s)", g_names[k],
                sqllock_errname(rc), sqllock_errmsg(db));
        }
        sqllock_lease_free(l);
    }
    if (c->bad[0] == '\0')
        release_hold(c, db, sticky, 0);
    sqllock_lease_free(sticky);
    sqllock_close(db);
}

/* The sticky leases' rows, on a survivor. */
static void check_sticky(sqllock_db *db, int node)
{
    int j;

    for (j = 0; j < B_PROCS; j++) {
        char name[128];
        tu_row r;
        snprintf(name, sizeof name, "%s-sticky-%d", g_names[0], j);
        TU_ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
        if (r.found != 1 || strcmp(r.owner, g_sh->c[j].sticky_owner) != 0 ||
            r.token != g_sh->c[j].sticky_token)
            fail_msg("E1/L1: after the kill, node %d has %d row(s) of %s "
                     "(owner %s token %lld), want the one granted before it "
                     "through node %d (owner %s token %lld)", node + 1,
                     r.found, name, r.owner, (long long)r.token,
                     g_sh->c[j].node + 1, g_sh->c[j].sticky_owner,
                     (long long)g_sh->c[j].sticky_token);
    }
}

static void test_galera_b_E1_L1_node_killed_while_holding(void **state)
{
    pid_t pids[B_PROCS];
    sqllock_db *probe = NULL, *s1, *s2, *v;
    sqllock_lease *marker = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char marker_name[128];
    int64_t t, kill_ms, rejoin_ms, first_check_ms, worst = 0, surv_worst = 0,
        tok1, tok3;
    int i, rc, failed, n, on_victim = 0, heard = 0, worst_c = -1;
    tu_row r;

    (void)state;
    /* Does the driver take a URL with several hosts yet? */
    rc = sqllock_open(g_urls, NULL, &probe);
    if (rc != SQLLOCK_OK) {
        printf("  b: PENDING: the mysql driver does not take the multi-host "
               "URL yet (%s: %s); this case needs it\n",
               sqllock_errname(rc), sqllock_errmsg(probe));
        sqllock_close(probe);
        tu_cannot_run("b: the mysql driver does not open the multi-host "
                      "URL %s", g_urls);
    }
    sqllock_close(probe);

    g_sh = tu_shared_map(sizeof *g_sh);
    for (i = 0; i < NNAMES; i++)
        snprintf(g_names[i], sizeof g_names[i], "galera-%ld-b-%d",
                 (long)getpid(), i);
    /* 4 clients name the victim first (two orders of the survivors),
     * 2 name a survivor first. */
    for (i = 0; i < B_PROCS; i++) {
        if (i < 4)
            multi_url(g_child_url[i], sizeof g_child_url[i], VICTIM,
                      i % 2 ? 1 : 0, i % 2 ? 0 : 1);
        else
            multi_url(g_child_url[i], sizeof g_child_url[i], i - 4,
                      VICTIM, 5 - i);
        g_sh->c[i].victim_first = i < 4;
    }
    for (i = 0; i < B_PROCS; i++)
        pids[i] = fork_child(b_child, i, 150 * (unsigned)g_slow);
    t = tu_now_ms();
    while (LD(&g_sh->ready) < B_PROCS && !LD(&g_sh->failed) &&
           tu_now_ms() - t < 30000 * g_slow)
        tu_sleep_ms(5);
    if (LD(&g_sh->ready) < B_PROCS) {
        ST(&g_sh->stop, 1);
        tu_reap_children(pids, B_PROCS, 30000, NULL);
        fail_msg("only %d of %d clients got ready", LD(&g_sh->ready),
                 B_PROCS);
    }
    for (i = 0; i < B_PROCS; i++)
        if (g_sh->c[i].victim_first && g_sh->c[i].node != VICTIM)
            fail_msg("client %d names node %d first but reached node %d",
                     i, VICTIM + 1, g_sh->c[i].node + 1);
    ST(&g_sh->go, 1);
    tu_sleep_ms(1500 * g_slow);

    /* The kill. */
    g_sh->t_kill_ms = tu_now_ms();
    ST(&g_sh->killed, 1);
    g_down = VICTIM;
    kill_ms = script("kill-node", VICTIM);
    g_sh->t_killed_ms = tu_now_ms();

    /* The leases granted before it are on both survivors. */
    t = tu_now_ms();
    s1 = open_checker(0);
    s2 = open_checker(1);
    check_sticky(s1, 0);
    check_sticky(s2, 1);
    first_check_ms = tu_now_ms() - t;
    /* A lease granted while the victim is down, for the rejoin check. */
    snprintf(marker_name, sizeof marker_name, "%s-marker", g_names[0]);
    o.ttl_ms = 120000;
    TU_ASSERT_RC(sqllock_lease_new(s1, marker_name, &o, &marker), SQLLOCK_OK,
              s1);
    TU_ASSERT_RC(sqllock_lease_try_acquire(marker), SQLLOCK_OK, s1);

    /* Let the clients resume, and a grant whose answer the kill cut
     * expire (ttl 6 s). */
    while (tu_now_ms() - g_sh->t_killed_ms < (g_slow > 1 ? 12000 : 8000) &&
           !LD(&g_sh->failed))
        tu_sleep_ms(20);
    ST(&g_sh->stop, 1);
    failed = tu_reap_children(pids, B_PROCS, 60000 * (int64_t)g_slow, NULL);
    n = check_holds(B_PROCS, "b");
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        printf("    client %d: node %d first%s, %lld holds, longest call "
               "%lld ms (%s)", i, c->node + 1,
               c->victim_first ? " (victim first)" : "",
               (long long)c->holds, (long long)c->longest_ms,
               c->longest_what);
        if (c->econnect_ms != 0)
            printf("; ECONNECT %lld ms after the kill",
                   (long long)(c->econnect_ms - g_sh->t_kill_ms));
        if (c->lost_after_cut != 0)
            printf("; %lld release(s) retried after ECONNECT found the row "
                   "gone (the first one had committed)",
                   (long long)c->lost_after_cut);
        if (c->resumed_ms != 0)
            printf("; its first renewal begun after the kill succeeded, on "
                   "node %d, %lld ms after the kill", c->node_after + 1,
                   (long long)(c->resumed_ms - g_sh->t_kill_ms));
        printf("\n");
    }
    if (failed > 0 || LD(&g_sh->failed) > 0)
        fail_msg("%d child(ren) failed or hung, %d failure(s) recorded",
                 failed, LD(&g_sh->failed));
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        if (c->node != VICTIM)
            continue;
        on_victim++;
        if (c->econnect_ms != 0)
            heard++;
        if (c->resumed_ms == 0)
            fail_msg("E1: client %d, on the killed node, did not renew its "
                     "lease after the kill", i);
        if (c->node_after == VICTIM || c->node_after < 0)
            fail_msg("E1: client %d resumed on node %d", i,
                     c->node_after + 1);
        if (c->resumed_ms - g_sh->t_kill_ms > worst) {
            worst = c->resumed_ms - g_sh->t_kill_ms;
            worst_c = i;
        }
    }
    assert_true(on_victim >= 4);
    for (i = 0; i < B_PROCS; i++) {
        client *c = &g_sh->c[i];
        if (c->resumed_ms == 0)
            fail_msg("client %d never renewed its lease after the kill", i);
        if (c->node != VICTIM && c->resumed_ms - g_sh->t_kill_ms > surv_worst)
            surv_worst = c->resumed_ms - g_sh->t_kill_ms;
    }
    for (i = 0; i < B_PROCS; i++)
        if (g_sh->c[i].node != VICTIM && g_sh->c[i].econnect_ms != 0)
            fail_msg("E1: client %d on surviving node %d heard ECONNECT: %s",
                     i, g_sh->c[i].node + 1, g_sh->c[i].first_econnect);

    /* The rejoin: the node comes back and sees what was granted while it
     * was down. */
    rejoin_ms = script("start-node", VICTIM);
    g_down = -1;
    v = open_checker(VICTIM);
    TU_ASSERT_RC(tu_find(v, marker_name, &r), SQLLOCK_OK, v);
    if (r.found != 1 || strcmp(r.owner, sqllock_lease_owner(marker)) != 0 ||
        r.token != sqllock_lease_token(marker))
        fail_msg("the rejoined node has %d row(s) of %s (owner %s), want the "
                 "lease granted while it was down", r.found, marker_name,
                 r.owner);
    tok1 = sql_int(s1, "SELECT MAX(token) FROM sqllock_token");
    tok3 = sql_int(v, "SELECT MAX(token) FROM sqllock_token");
    assert_int_equal(tok1, tok3);
    {
        sqllock_lease *again = NULL;
        TU_ASSERT_RC(sqllock_lease_new(v, marker_name, &o, &again), SQLLOCK_OK,
                  v);
        TU_ASSERT_RC(sqllock_lease_try_acquire(again), SQLLOCK_BUSY, v);
        sqllock_lease_free(again);
    }
    TU_ASSERT_RC(sqllock_lease_release(marker), SQLLOCK_OK, s1);
    sqllock_lease_free(marker);
    printf("  b: %d holds, double grants 0; kill-node took %lld ms; the "
           "survivors answered the parent's first check %lld ms after it; "
           "%d clients were on the killed node (%d heard ECONNECT, the "
           "others' next call simply connected again): each renewed its "
           "lease on a survivor, the slowest (client %d) %lld ms after the "
           "kill; the clients of the survivors within %lld ms; leases granted "
           "before the kill were on both survivors; start-node (rejoin) "
           "took %lld ms and the node saw the lease granted while it was "
           "down (max token %lld on both)\n", n, (long long)kill_ms,
           (long long)first_check_ms, on_victim, heard, worst_c,
           (long long)worst, (long long)surv_worst, (long long)rejoin_ms,
           (long long)tok1);
    sqllock_close(v);
    sqllock_close(s1);
    sqllock_close(s2);
    munmap(g_sh, sizeof *g_sh);
    g_sh = NULL;
}

/* Whatever happened in b, the cluster is whole again afterwards. */
static int b_teardown(void **state)
{
    (void)state;
    if (g_sh != NULL) {
        ST(&g_sh->stop, 1);
        munmap(g_sh, sizeof *g_sh);
        g_sh = NULL;
    }
    if (g_down >= 0) {
        char buf[3000];
        snprintf(buf, sizeof buf, "bash '%s' start-node '%s' %d >&2",
                 g_script, g_dir, g_down + 1);
        if (system(buf) == 0)
            g_down = -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* c. Row locks on Galera                                              */
/* ------------------------------------------------------------------ */

#define C_TABLE "sqllock_test_galera_acct"

static void c_set(sqllock_db *db, int64_t id, int64_t bal)
{
    sqllock_value a[2];

    a[0] = sqllock__int(bal);
    a[1] = sqllock__int(id);
    TU_ASSERT_RC(sqllock__exec_sql(db, "UPDATE " C_TABLE " SET bal = ? WHERE "
                                "id = ?", a, 2, NULL, NULL, NULL),
              SQLLOCK_OK, db);
}

static int64_t c_get(sqllock_db *db, int64_t id)
{
    sqllock_value a = sqllock__int(id);
    int64_t v = -1;
    int has = 0;

    TU_ASSERT_RC(sqllock__exec_sql(db, "SELECT bal FROM " C_TABLE " WHERE id = "
                                "?", &a, 1, &has, &v, NULL), SQLLOCK_OK, db);
    assert_true(has);
    return v;
}

static void test_galera_c_R1_row_locks_are_node_local(void **state)
{
    static const sqllock_table acct = { C_TABLE, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(0);
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_db *d1, *d2, *d1b, *chk;
    sqllock_txn *t1 = NULL, *t2 = NULL, *t3 = NULL;
    sqllock_value idv;
    int64_t id = (int64_t)getpid(), b1, b2, t0, waited;
    int got = 0, rc1, rc2, wins = 0, i;

    (void)state;
    key.number = id;
    idv = sqllock__int(id);
    d1 = tu_open_or_fail(g_url[0]);
    d2 = tu_open_or_fail(g_url[1]);
    d1b = tu_open_or_fail(g_url[0]);
    chk = open_checker(1);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "CREATE TABLE IF NOT EXISTS " C_TABLE
                                " (id BIGINT PRIMARY KEY, bal BIGINT NOT "
                                "NULL) ENGINE = InnoDB", NULL, 0, NULL, NULL,
                                NULL), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "INSERT INTO " C_TABLE " (id, bal) "
                                "VALUES (?, 100)", &idv, 1, NULL, NULL, NULL),
              SQLLOCK_OK, d1);
    /* Node 2 has the row (a causal read waits for it). */
    assert_int_equal(c_get(chk, id), 100);
    to.lock_timeout_ms = 1000;
#ifdef SQLLOCK_ROW_LOCKS_NODE
    {
        /* The scope the library reports for a Galera node. */
        int scope = 0;
        TU_ASSERT_RC(sqllock_row_lock_scope(d1, &scope), SQLLOCK_OK, d1);
        assert_int_equal(scope, SQLLOCK_ROW_LOCKS_NODE);
        TU_ASSERT_RC(sqllock_row_lock_scope(d2, &scope), SQLLOCK_OK, d2);
        assert_int_equal(scope, SQLLOCK_ROW_LOCKS_NODE);
        printf("  c: sqllock_row_lock_scope() on nodes 1 and 2: %s\n",
               sqllock_row_lock_scope_name(scope));
    }
#endif

    /* Two nodes: both lock the row at once. */
    TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock_txn_begin(d2, &to, &t2), SQLLOCK_OK, d2);
    TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_OK, d1);
    assert_int_equal(got, 1);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t2, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_OK, d2);
    assert_int_equal(got, 1);
    waited = tu_now_ms() - t0;
    /* Both read 100 under their lock and write 100 + 1: the classic lost
     * update, if both commits went through. */
    b1 = c_get(d1, id);
    b2 = c_get(d2, id);
    assert_int_equal(b1, 100);
    assert_int_equal(b2, 100);
    c_set(d1, id, b1 + 1);
    c_set(d2, id, b2 + 1);
    rc1 = sqllock_txn_commit(t1);
    rc2 = sqllock_txn_commit(t2);
    printf("  c: FOR UPDATE NOWAIT on the same row: node 1 OK, node 2 OK "
           "%lld ms later (both held it at once); commits: node 1 %s, node "
           "2 %s (%s)\n", (long long)waited, sqllock_errname(rc1),
           sqllock_errname(rc2), rc2 != SQLLOCK_OK ? sqllock_errmsg(d2) : "");
    wins = (rc1 == SQLLOCK_OK) + (rc2 == SQLLOCK_OK);
    if (wins != 1)
        fail_msg("R1 on Galera: %d of the 2 conflicting commits succeeded, "
                 "want exactly 1", wins);
    if ((rc1 != SQLLOCK_OK && rc1 != SQLLOCK_EDEADLOCK) ||
        (rc2 != SQLLOCK_OK && rc2 != SQLLOCK_EDEADLOCK))
        fail_msg("the losing commit reported %s, want SQLLOCK_EDEADLOCK "
                 "(certification failure)",
                 sqllock_errname(rc1 != SQLLOCK_OK ? rc1 : rc2));
    assert_true(sqllock_retryable(SQLLOCK_EDEADLOCK));
    sqllock_txn_free(t1);
    sqllock_txn_free(t2);
    t1 = t2 = NULL;
    /* No lost update: 101 everywhere; the loser retries and makes 102. */
    assert_int_equal(c_get(chk, id), 101);
    for (i = 0; i < 5; i++) {
        sqllock_db *loser = rc1 != SQLLOCK_OK ? d1 : d2;
        int rc;
        TU_ASSERT_RC(sqllock_txn_begin(loser, &to, &t1), SQLLOCK_OK, loser);
        rc = sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                   &got);
        if (rc == SQLLOCK_OK) {
            c_set(loser, id, c_get(loser, id) + 1);
            rc = sqllock_txn_commit(t1);
        }
        sqllock_txn_free(t1);
        t1 = NULL;
        if (rc == SQLLOCK_OK)
            break;
        assert_true(sqllock_retryable(rc));
    }
    assert_int_equal(c_get(chk, id), 102);

    /* A lock held on node 1 does not keep a writer on node 2 out: node
     * 2's update commits at once, and node 1's transaction is aborted
     * (brute force) by the replicated write; its commit says EDEADLOCK. */
    {
        sqllock_db *chk1 = open_checker(0);
        int rc;
        assert_int_equal(c_get(chk1, id), 102);
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1,
                                        SQLLOCK_LOCK_WAIT, &got),
                  SQLLOCK_OK, d1);
        t0 = tu_now_ms();
        c_set(d2, id, 200);
        waited = tu_now_ms() - t0;
        /* Node 1 applies it (a causal read there waits for that). */
        assert_int_equal(c_get(chk1, id), 200);
        rc = sqllock__exec_sql(d1, "UPDATE " C_TABLE " SET bal = 300 WHERE "
                               "id = ?", &idv, 1, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_commit(t1);
        printf("  c: node 1 holds the row lock; an update through node 2 "
               "committed in %lld ms without waiting; node 1's transaction "
               "then got %s (%s)\n", (long long)waited, sqllock_errname(rc),
               sqllock_errmsg(d1));
        if (rc != SQLLOCK_EDEADLOCK)
            fail_msg("node 1's transaction, whose row lock a write through "
                     "node 2 overrode, ended with %s, want SQLLOCK_EDEADLOCK",
                     sqllock_errname(rc));
        sqllock_txn_free(t1);
        t1 = NULL;
        assert_int_equal(c_get(chk1, id), 200);
        sqllock_close(chk1);
    }

    /* One node: the second locker waits and gets ELOCKED. */
    TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock_txn_begin(d1b, &to, &t3), SQLLOCK_OK, d1b);
    TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                    &got), SQLLOCK_OK, d1);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t3, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_ELOCKED, d1b);
    sqllock_txn_free(t3);
    t3 = NULL;
    TU_ASSERT_RC(sqllock_txn_begin(d1b, &to, &t3), SQLLOCK_OK, d1b);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t3, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                    &got), SQLLOCK_ELOCKED, d1b);
    waited = tu_now_ms() - t0;
    assert_true(waited >= 900);
    sqllock_txn_free(t3);
    /* The library's own lock rows behave the same (R1 via txn_lock). */
    {
        char name[96];
        const char *names[1];
        sqllock_txn *u1 = NULL, *u2 = NULL;
        snprintf(name, sizeof name, "galera-%ld-c-row", (long)getpid());
        names[0] = name;
        TU_ASSERT_RC(sqllock_txn_commit(t1), SQLLOCK_OK, d1);
        sqllock_txn_free(t1);
        t1 = NULL;
        /* Create the row once, then lock it on two nodes at once. */
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock(u1, names, 1, SQLLOCK_LOCK_WAIT, &got),
                  SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_commit(u1), SQLLOCK_OK, d1);
        sqllock_txn_free(u1);
        u1 = NULL;
        {
            sqllock_value nv = sqllock__text(name);
            int64_t cnt = 0;
            int has = 0;
            TU_ASSERT_RC(sqllock__exec_sql(chk, "SELECT COUNT(*) FROM sqllock_row "
                                        "WHERE name = ?", &nv, 1, &has, &cnt,
                                        NULL), SQLLOCK_OK, chk);
            assert_int_equal(cnt, 1);
        }
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_begin(d2, &to, &u2), SQLLOCK_OK, d2);
        TU_ASSERT_RC(sqllock_txn_lock(u1, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
                  SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock(u2, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
                  SQLLOCK_OK, d2);
        printf("  c: sqllock_txn_lock of one name on node 1 and node 2: both "
               "OK at once (row locks are node-local)\n");
        TU_ASSERT_RC(sqllock_txn_commit(u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_commit(u2), SQLLOCK_OK, d2);
        sqllock_txn_free(u1);
        sqllock_txn_free(u2);
    }
    printf("  c: same node: NOWAIT ELOCKED at once, WAIT ELOCKED after %lld "
           "ms (lock timeout 1000 ms)\n", (long long)waited);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "DELETE FROM " C_TABLE " WHERE id = ?",
                                &idv, 1, NULL, NULL, NULL), SQLLOCK_OK, d1);
    sqllock_close(chk);
    sqllock_close(d1b);
    sqllock_close(d2);
    sqllock_close(d1);
}

/* ------------------------------------------------------------------ */
/* d. Optimistic updates across nodes                                  */
/* ------------------------------------------------------------------ */

#define D_PROCS 3
#define D_UPDATES 30

typedef struct d_shared {
    int64_t ok[D_PROCS], attempts[D_PROCS], st[D_PROCS][NSTATUS];
    int64_t cas_ok[D_PROCS], cas_st[D_PROCS][NSTATUS],
        get_st[D_PROCS][NSTATUS];
    char bad[D_PROCS][300];
} d_shared;

static d_shared *g_d;
static char g_d_key[96];

typedef struct d_ctx {
    char buf[32];
} d_ctx;

static int d_inc(void *ctx, const void *old, size_t old_len,
                 const void **out, size_t *out_len)
{
    d_ctx *c = ctx;
    char tmp[32];
    long long v = 0;

    if (old != NULL && old_len > 0 && old_len < sizeof tmp) {
        memcpy(tmp, old, old_len);
        tmp[old_len] = '\0';
        v = atoll(tmp);
    }
    snprintf(c->buf, sizeof c->buf, "%lld", v + 1);
    *out = c->buf;
    *out_len = strlen(c->buf);
    return SQLLOCK_OK;
}

static void d_child(int who)
{
    sqllock_db *db = tu_child_open(g_url[who], "d");
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    d_ctx ctx;
    int i, done = 0, tries = 0;

    if (db == NULL) {
        snprintf(g_d->bad[who], sizeof g_d->bad[who], "open failed");
        return;
    }
    ro.max_attempts = 50;
    while (done < D_UPDATES && tries < D_UPDATES * 20) {
        int attempts = 0, rc;
        tries++;
        rc = sqllock_record_update(db, g_d_key, d_inc, &ctx, &ro, &attempts);
        g_d->attempts[who] += attempts;
        if (rc >= 0 && rc < NSTATUS)
            g_d->st[who][rc]++;
        if (rc == SQLLOCK_OK) {
            g_d->ok[who]++;
            done++;
        } else if (!sqllock_retryable(rc)) {
            snprintf(g_d->bad[who], sizeof g_d->bad[who], "update: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
            break;
        }
    }
    /* The same by hand: get, then compare-and-set, counting what each
     * call returns. */
    for (i = 0, tries = 0; i < D_UPDATES && tries < D_UPDATES * 40 &&
                           g_d->bad[who][0] == '\0'; tries++) {
        void *val = NULL;
        size_t len = 0;
        int64_t ver = 0;
        const void *out;
        size_t out_len;
        int rc = sqllock_record_get(db, g_d_key, &val, &len, &ver);
        if (rc >= 0 && rc < NSTATUS)
            g_d->get_st[who][rc]++;
        if (rc != SQLLOCK_OK) {
            sqllock_free(val);
            if (!sqllock_retryable(rc))
                snprintf(g_d->bad[who], sizeof g_d->bad[who], "get: %s (%s)",
                         sqllock_errname(rc), sqllock_errmsg(db));
            continue;
        }
        d_inc(&ctx, val, len, &out, &out_len);
        sqllock_free(val);
        rc = sqllock_record_cas(db, g_d_key, ver, out, out_len, NULL);
        if (rc >= 0 && rc < NSTATUS)
            g_d->cas_st[who][rc]++;
        if (rc == SQLLOCK_OK) {
            g_d->cas_ok[who]++;
            i++;
        } else if (!sqllock_retryable(rc)) {
            snprintf(g_d->bad[who], sizeof g_d->bad[who], "cas: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
        } else {
            tu_sleep_us(rand() % 2000);
        }
    }
    sqllock_close(db);
}

static pid_t d_fork(int who)
{
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        alarm(120 * (unsigned)g_slow);
        srand((unsigned)getpid());
        d_child(who);
        _exit(g_d->bad[who][0] != '\0');
    }
    return pid;
}

static void test_galera_d_O1_record_updates_across_nodes(void **state)
{
    pid_t pids[D_PROCS];
    int64_t ok = 0, att = 0, st[NSTATUS], cas[NSTATUS], get[NSTATUS],
        cas_ok = 0, cert0, cert1, t0;
    sqllock_db *db;
    void *val = NULL;
    size_t len = 0;
    int64_t ver = 0;
    int i, s, failed = 0;

    (void)state;
    g_d = tu_shared_map(sizeof *g_d);
    snprintf(g_d_key, sizeof g_d_key, "galera-%ld-d", (long)getpid());
    t0 = tu_now_ms();
    for (i = 0; i < D_PROCS; i++)
        pids[i] = d_fork(i);
    cert0 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    for (i = 0; i < D_PROCS; i++) {
        int code = tu_wait_for(pids[i], 120000 * (int64_t)g_slow);
        if (code != 0) {
            if (code == -1)
                tu_kill_wait(pids[i]);
            printf("    d: child %d: %s\n", i, g_d->bad[i]);
            failed++;
        }
    }
    cert1 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    memset(st, 0, sizeof st);
    memset(cas, 0, sizeof cas);
    memset(get, 0, sizeof get);
    for (i = 0; i < D_PROCS; i++) {
        ok += g_d->ok[i];
        cas_ok += g_d->cas_ok[i];
        att += g_d->attempts[i];
        for (s = 0; s < NSTATUS; s++) {
            st[s] += g_d->st[i][s];
            cas[s] += g_d->cas_st[i][s];
            get[s] += g_d->get_st[i][s];
        }
    }
    printf("  d: statuses per call, all clients:\n");
    print_statuses("record_update", st);
    print_statuses("record_get", get);
    print_statuses("record_cas", cas);
    ok += cas_ok;
    if (failed)
        fail_msg("%d update client(s) failed", failed);
    db = open_checker(2);
    TU_ASSERT_RC(sqllock_record_get(db, g_d_key, &val, &len, &ver), SQLLOCK_OK,
              db);
    printf("  d: %lld increments from 3 nodes (%lld by record_update in %lld "
           "attempts, %lld by get + cas) in %lld ms, certification failures "
           "%lld; the record reads %s (version %lld)\n", (long long)ok,
           (long long)(ok - cas_ok), (long long)att, (long long)cas_ok,
           (long long)(tu_now_ms() - t0), (long long)(cert1 - cert0), (char *)val,
           (long long)ver);
    if (atoll(val) != ok || ver != ok)
        fail_msg("O1: %lld successful increments, the record reads %s "
                 "(version %lld): an update was lost", (long long)ok,
                 (char *)val, (long long)ver);
    sqllock_free(val);
    TU_ASSERT_RC(sqllock_record_delete(db, g_d_key, ver), SQLLOCK_OK, db);
    sqllock_close(db);
    munmap(g_d, sizeof *g_d);
    g_d = NULL;
}

/* ------------------------------------------------------------------ */
/* e. Reapers on every node at once (P1, P2)                           */
/* ------------------------------------------------------------------ */

#define E_ROWS 300

typedef struct e_shared {
    int go;
    int64_t deleted[NODES], passes[NODES], st[NODES][NSTATUS];
    char bad[NODES][300];
} e_shared;

static e_shared *g_e;

static void e_child(int who)
{
    sqllock_db *db = tu_child_open(g_url[who], "e");
    int idle = 0;

    if (db == NULL) {
        snprintf(g_e->bad[who], sizeof g_e->bad[who], "open failed");
        return;
    }
    while (!LD(&g_e->go))
        tu_sleep_ms(1);
    /* Small batches, so that the three reapers meet on the same rows. */
    while (idle < 3) {
        int64_t deleted = 0;
        int rc = sqllock_reap(db, 0, 10, &deleted);
        if (rc >= 0 && rc < NSTATUS)
            g_e->st[who][rc]++;
        g_e->passes[who]++;
        g_e->deleted[who] += deleted;
        if (rc != SQLLOCK_OK && !sqllock_retryable(rc)) {
            snprintf(g_e->bad[who], sizeof g_e->bad[who], "reap: %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db));
            break;
        }
        idle = rc == SQLLOCK_OK && deleted == 0 ? idle + 1 : 0;
    }
    sqllock_close(db);
}

static void test_galera_e_P1_P2_reapers_on_every_node(void **state)
{
    pid_t pids[NODES];
    int64_t st[NSTATUS], deleted = 0, passes = 0, left = -1, cert0, cert1,
        t0;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db, *chk;
    char prefix[96], name[128];
    sqllock_value like;
    int i, s, failed = 0, has = 0;

    (void)state;
    g_e = tu_shared_map(sizeof *g_e);
    for (i = 0; i < NODES; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            alarm(120 * (unsigned)g_slow);
            e_child(i);
            _exit(g_e->bad[i][0] != '\0');
        }
    }
    /* E_ROWS leases that expire at once, left behind unreleased. */
    db = tu_open_or_fail(g_url[0]);
    snprintf(prefix, sizeof prefix, "galera-%ld-e-", (long)getpid());
    o.ttl_ms = 1;
    for (i = 0; i < E_ROWS; i++) {
        sqllock_lease *l = NULL;
        snprintf(name, sizeof name, "%s%03d", prefix, i);
        TU_ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
        TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
        sqllock_lease_free(l);
    }
    sqllock_close(db);
    cert0 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    tu_sleep_ms(50);
    t0 = tu_now_ms();
    ST(&g_e->go, 1);
    for (i = 0; i < NODES; i++) {
        int code = tu_wait_for(pids[i], 120000 * (int64_t)g_slow);
        if (code != 0) {
            if (code == -1)
                tu_kill_wait(pids[i]);
            printf("    e: reaper on node %d: %s\n", i + 1, g_e->bad[i]);
            failed++;
        }
    }
    t0 = tu_now_ms() - t0;
    cert1 = wsrep_sum("WSREP_LOCAL_CERT_FAILURES");
    memset(st, 0, sizeof st);
    for (i = 0; i < NODES; i++) {
        deleted += g_e->deleted[i];
        passes += g_e->passes[i];
        for (s = 0; s < NSTATUS; s++)
            st[s] += g_e->st[i][s];
    }
    printf("  e: statuses per call, all reapers:\n");
    print_statuses("reap", st);
    chk = open_checker(1);
    snprintf(name, sizeof name, "%s%%", prefix);
    like = sqllock__text(name);
    TU_ASSERT_RC(sqllock__exec_sql(chk, "SELECT COUNT(*) FROM sqllock_lease "
                                "WHERE name LIKE ?", &like, 1, &has, &left,
                                NULL), SQLLOCK_OK, chk);
    sqllock_close(chk);
    printf("  e: 3 reapers (one per node, batches of 10) deleted %lld rows "
           "(%lld/%lld/%lld) of the %d expired ones in %lld passes, %lld ms; "
           "certification failures %lld; %lld left\n", (long long)deleted,
           (long long)g_e->deleted[0], (long long)g_e->deleted[1],
           (long long)g_e->deleted[2], E_ROWS, (long long)passes,
           (long long)t0, (long long)(cert1 - cert0), (long long)left);
    if (failed)
        fail_msg("%d reaper(s) failed", failed);
    assert_int_equal(left, 0);
    /* Each row is deleted once: the reapers' counts add up to at least
     * E_ROWS (other expired rows of earlier runs may go too), and a row
     * deleted on two nodes at once would be counted twice only if both
     * deletes had committed, which certification refuses. */
    assert_true(deleted >= E_ROWS);
    munmap(g_e, sizeof *g_e);
    g_e = NULL;
}

/* ------------------------------------------------------------------ */

static int group_setup(void **state)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_galera_a_L1_L5_exclusion_across_nodes),
        cmocka_unit_test_teardown(
            test_galera_b_E1_L1_node_killed_while_holding, b_teardown),
        cmocka_unit_test(test_galera_c_R1_row_locks_are_node_local),
        cmocka_unit_test(test_galera_d_O1_record_updates_across_nodes),
        cmocka_unit_test(test_galera_e_P1_P2_reapers_on_every_node),
    };
    const char *dir = getenv("SQLLOCK_TEST_GALERA_DIR");
    const char *scr = getenv("SQLLOCK_TEST_GALERA_SCRIPT");
    int failed;

    if (dir == NULL || *dir == '\0' || scr == NULL || *scr == '\0' ||
        strchr(dir, '\'') || strchr(scr, '\''))
        return tu_unit_cannot_run("galera", "SQLLOCK_TEST_GALERA_DIR and "
                                  "SQLLOCK_TEST_GALERA_SCRIPT name no cluster "
                                  "(scripts/galera.sh start DIR makes one)");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", scr);
    if (load_urls() != 0) {
        printf("galera: FAILED: no node URLs in the environment or in "
               "%s/env\n", g_dir);
        return 1;
    }
    if (sqllock_driver_find("mysql") == NULL) {
        printf("galera: FAILED: this build has no mysql driver\n");
        return 1;
    }
    g_slow = tu_slowdown();
    g_a_ms = 6000;
    g_start_ms = tu_now_ms();
    {
        char path[1200], ms[32];
        snprintf(path, sizeof path, "%s/start_ms", g_dir);
        if (tu_read_file(path, ms, sizeof ms) > 0)
            printf("galera: the cluster (scripts/galera.sh start) took %lld "
                   "ms to start\n", atoll(ms));
    }
    failed = cmocka_run_group_tests_name("galera [mysql]", tests,
                                         group_setup, NULL);
    printf("galera: %lld ms in all\n", (long long)(tu_now_ms() - g_start_ms));
    return tu_unit_result("galera", "mysql", failed);
}
