/*
 * test_dbmetrics.c -- the database's view in OpenMetrics text
 * (sqllock_metrics_db_text(), `sqllock metrics`; issue 31), per driver.
 *
 * Each case works in an empty target of its own (tu_empty_target(): a
 * fresh SQLite file, PostgreSQL's schema sqllock_empty, MySQL's
 * database), so that the lease table holds exactly what the case put
 * there. The known state: plain leases held by another handle, a
 * semaphore with two permits taken (M1), a shared and an exclusive hold
 * (M2), an election's leadership (M4), a fair lock held with two
 * waiters queued behind it (M3, real threads blocked in their acquire),
 * expired rows that no one reaped (L2: by the database's clock), their
 * kind markers (N1: not holds), and histories: runs that failed, ended
 * ok and still run, and a forced release's audit line (C5). The text is
 * parsed back by the small OpenMetrics parser below and each value
 * checked against what the case did; the format too: every family has
 * TYPE and HELP before its samples, which come together; names match
 * [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total; a unit ends its
 * family's name; no series twice; "# EOF" last. The same through the
 * tool. A scrape that cannot read (a database without the tables) gives
 * a status and no text (E1), and the tool exits 69 with nothing on
 * stdout.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_tool.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The tool's exit status for a database that failed (cli.h). */
#define EXIT_DB 69

static const char *g_url;

/* ---- a small OpenMetrics parser ---- */

#define OM_SAMPLES 160
#define OM_FAMILIES 40
#define OM_LABELS 3

typedef struct om_sample {
    char name[96];
    int nlabels;
    char key[OM_LABELS][32];
    char val[OM_LABELS][320];
    double value;
} om_sample;

typedef struct om_family {
    char name[96];
    char type[16];
    char unit[16];
    int help;
    int samples;
} om_family;

typedef struct om {
    int n, nf;
    om_sample s[OM_SAMPLES];
    om_family f[OM_FAMILIES];
} om;

static int om_name_ok(const char *p, size_t n)
{
    size_t i;

    if (n == 0 || !(isalpha((unsigned char)p[0]) || p[0] == '_' ||
                    p[0] == ':'))
        return 0;
    for (i = 1; i < n; i++)
        if (!(isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == ':'))
            return 0;
    return 1;
}

static om_family *om_family_of(om *m, const char *name)
{
    int i;

    for (i = 0; i < m->nf; i++)
        if (strcmp(m->f[i].name, name) == 0)
            return &m->f[i];
    return NULL;
}

/* A metadata line: "# TYPE|HELP|UNIT name rest". */
static void om_meta(om *m, const char *line, om_family **cur)
{
    char what[8], name[96];
    const char *rest;
    int n = 0;
    om_family *f;

    if (sscanf(line, "# %7s %95s %n", what, name, &n) < 2 || n == 0)
        fail_msg("OpenMetrics: bad comment line '%s'", line);
    rest = line + n;
    if (!om_name_ok(name, strlen(name)))
        fail_msg("OpenMetrics: bad family name '%s'", name);
    f = om_family_of(m, name);
    if (strcmp(what, "TYPE") == 0) {
        if (f != NULL)
            fail_msg("OpenMetrics: family %s declared twice (its samples "
                     "must come together)", name);
        assert_true(m->nf < OM_FAMILIES);
        f = &m->f[m->nf++];
        memset(f, 0, sizeof *f);
        snprintf(f->name, sizeof f->name, "%s", name);
        snprintf(f->type, sizeof f->type, "%s", rest);
        if (strcmp(rest, "gauge") != 0 && strcmp(rest, "counter") != 0)
            fail_msg("OpenMetrics: family %s of unexpected type '%s'", name,
                     rest);
        *cur = f;
        return;
    }
    if (f == NULL || f != *cur)
        fail_msg("OpenMetrics: %s of %s before its TYPE, or after another "
                 "family began", what, name);
    if (f->samples > 0)
        fail_msg("OpenMetrics: %s of %s after its samples", what, name);
    if (strcmp(what, "HELP") == 0) {
        if (rest[0] == '\0')
            fail_msg("OpenMetrics: %s has an empty HELP", name);
        f->help = 1;
    } else if (strcmp(what, "UNIT") == 0) {
        size_t nl = strlen(name), ul = strlen(rest);

        snprintf(f->unit, sizeof f->unit, "%s", rest);
        if (ul == 0 || nl <= ul + 1 || name[nl - ul - 1] != '_' ||
            strcmp(name + nl - ul, rest) != 0)
            fail_msg("OpenMetrics: family %s does not end in its unit %s",
                     name, rest);
    } else {
        fail_msg("OpenMetrics: unknown metadata '%s'", line);
    }
}

/* A label set: {k="v",...}, values unescaped. Returns the end. */
static const char *om_labels(om_sample *s, const char *p, const char *line)
{
    size_t k, v;

    p++;                                        /* '{' */
    while (*p != '}') {
        if (s->nlabels == OM_LABELS)
            fail_msg("OpenMetrics: too many labels in '%s'", line);
        k = strcspn(p, "=");
        if (!om_name_ok(p, k) || k >= sizeof s->key[0] || p[k + 1] != '"')
            fail_msg("OpenMetrics: bad label in '%s'", line);
        memcpy(s->key[s->nlabels], p, k);
        s->key[s->nlabels][k] = '\0';
        p += k + 2;
        for (v = 0; *p != '"'; p++) {
            if (*p == '\0')
                fail_msg("OpenMetrics: unterminated label in '%s'", line);
            if (*p == '\\') {
                p++;
                if (*p != '\\' && *p != '"' && *p != 'n')
                    fail_msg("OpenMetrics: bad escape in '%s'", line);
            }
            if (v + 1 < sizeof s->val[0])
                s->val[s->nlabels][v++] = *p == 'n' && p[-1] == '\\' ? '\n'
                                                                     : *p;
        }
        s->val[s->nlabels][v] = '\0';
        s->nlabels++;
        p++;
        if (*p == ',')
            p++;
        else if (*p != '}')
            fail_msg("OpenMetrics: bad label list in '%s'", line);
    }
    return p + 1;
}

static void om_sample_line(om *m, const char *line, om_family *cur)
{
    om_sample *s;
    const char *p;
    char *end;
    size_t n = strcspn(line, "{ "), fl;
    int i, j;

    assert_true(m->n < OM_SAMPLES);
    s = &m->s[m->n];
    memset(s, 0, sizeof *s);
    if (!om_name_ok(line, n) || n >= sizeof s->name)
        fail_msg("OpenMetrics: bad metric name in '%s'", line);
    memcpy(s->name, line, n);
    p = line + n;
    if (*p == '{')
        p = om_labels(s, p, line);
    if (*p != ' ')
        fail_msg("OpenMetrics: no value in '%s'", line);
    s->value = strtod(p + 1, &end);
    if (end == p + 1 || *end != '\0')
        fail_msg("OpenMetrics: bad value in '%s'", line);
    if (cur == NULL)
        fail_msg("OpenMetrics: sample '%s' before any TYPE", line);
    fl = strlen(cur->name);
    if (strcmp(cur->type, "counter") == 0 ?
            strncmp(s->name, cur->name, fl) != 0 ||
            strcmp(s->name + fl, "_total") != 0 :
            strcmp(s->name, cur->name) != 0)
        fail_msg("OpenMetrics: sample %s is not of the family %s (%s) "
                 "that its place says", s->name, cur->name, cur->type);
    if (!cur->help)
        fail_msg("OpenMetrics: family %s has no HELP", cur->name);
    for (i = 0; i < m->n; i++) {
        if (strcmp(m->s[i].name, s->name) != 0 ||
            m->s[i].nlabels != s->nlabels)
            continue;
        for (j = 0; j < s->nlabels; j++)
            if (strcmp(m->s[i].key[j], s->key[j]) != 0 ||
                strcmp(m->s[i].val[j], s->val[j]) != 0)
                break;
        if (j == s->nlabels)
            fail_msg("OpenMetrics: the series '%s' twice", line);
    }
    cur->samples++;
    m->n++;
}

/* Parses `text` into *m, failing the test on anything OpenMetrics (and
 * Prometheus' naming conventions) does not allow. */
static void om_parse(om *m, const char *text)
{
    char line[2048];
    const char *p = text;
    om_family *cur = NULL;
    size_t n;
    int eof = 0, i;

    memset(m, 0, sizeof *m);
    while (*p != '\0') {
        n = strcspn(p, "\n");
        if (p[n] != '\n')
            fail_msg("OpenMetrics: the text does not end with a line feed");
        if (eof)
            fail_msg("OpenMetrics: text after # EOF");
        if (n >= sizeof line)
            fail_msg("OpenMetrics: a line of %zu bytes", n);
        memcpy(line, p, n);
        line[n] = '\0';
        p += n + 1;
        if (strcmp(line, "# EOF") == 0)
            eof = 1;
        else if (line[0] == '#')
            om_meta(m, line, &cur);
        else
            om_sample_line(m, line, cur);
    }
    if (!eof)
        fail_msg("OpenMetrics: no # EOF at the end");
    for (i = 0; i < m->nf; i++)
        if (!m->f[i].help)
            fail_msg("OpenMetrics: family %s has no HELP", m->f[i].name);
}

/* The value of series name{key="val"} (key NULL: no labels); -1 and
 * *found 0 when absent. */
static double om_get(const om *m, const char *name, const char *key,
                     const char *val, int *found)
{
    int i;

    *found = 0;
    for (i = 0; i < m->n; i++) {
        const om_sample *s = &m->s[i];

        if (strcmp(s->name, name) != 0)
            continue;
        if (key == NULL ? s->nlabels == 0
                        : s->nlabels >= 1 && strcmp(s->key[0], key) == 0 &&
                              strcmp(s->val[0], val) == 0) {
            *found = 1;
            return s->value;
        }
    }
    return -1;
}

static void om_expect(const om *m, const char *name, const char *key,
                      const char *val, double want)
{
    int found;
    double got = om_get(m, name, key, val, &found);

    if (!found)
        fail_msg("no series %s{%s=\"%s\"}", name, key ? key : "",
                 val ? val : "");
    if (got != want)
        fail_msg("%s{%s=\"%s\"} = %g, want %g", name, key ? key : "",
                 val ? val : "", got, want);
}

static int om_count(const om *m, const char *name)
{
    int i, n = 0;

    for (i = 0; i < m->n; i++)
        n += strcmp(m->s[i].name, name) == 0;
    return n;
}

/* The value of series name{k1="v1",k2="v2"}; -1 and *found 0 when
 * absent. */
static double om_get2(const om *m, const char *name, const char *k1,
                      const char *v1, const char *k2, const char *v2,
                      int *found)
{
    int i;

    *found = 0;
    for (i = 0; i < m->n; i++) {
        const om_sample *s = &m->s[i];

        if (strcmp(s->name, name) == 0 && s->nlabels == 2 &&
            strcmp(s->key[0], k1) == 0 && strcmp(s->val[0], v1) == 0 &&
            strcmp(s->key[1], k2) == 0 && strcmp(s->val[1], v2) == 0) {
            *found = 1;
            return s->value;
        }
    }
    return -1;
}

/* The samples of family `name` whose first label is name="val". */
static int om_count_of(const om *m, const char *name, const char *val)
{
    int i, n = 0;

    for (i = 0; i < m->n; i++)
        n += strcmp(m->s[i].name, name) == 0 && m->s[i].nlabels >= 1 &&
             strcmp(m->s[i].key[0], "name") == 0 &&
             strcmp(m->s[i].val[0], val) == 0;
    return n;
}

/* ---- the known state ---- */

#define NKINDS 7
static const char *const kinds[NKINDS] = {
    "lease", "shared", "exclusive", "semaphore", "leader", "fair_waiter",
    "other"
};

typedef struct waiter {
    sqllock_db *db;
    char name[64];
    int rc;
    pthread_t t;
} waiter;

/* A fair waiter: waits for the lock, then gives it back. */
static void *waiter_main(void *arg)
{
    waiter *w = arg;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    o.flags = SQLLOCK_LEASE_FAIR;
    w->rc = sqllock_lease_new(w->db, w->name, &o, &l);
    if (w->rc == SQLLOCK_OK)
        w->rc = sqllock_lease_acquire(l, tu_scaled_ms(30000));
    if (w->rc == SQLLOCK_OK)
        w->rc = sqllock_lease_release(l);
    sqllock_lease_free(l);
    return NULL;
}

static sqllock_lease *hold(sqllock_db *db, const char *name, int64_t ttl,
                           unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl;
    o.flags = flags;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, name);
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, name);
    return l;
}

/* Counts the live queue rows of fair lock `name` (the test's own
 * reading of the table). */
typedef struct qcount {
    const char *prefix;
    int live;
} qcount;

static int count_queue(void *ctx, const sqllock_lease_info *info)
{
    qcount *q = ctx;

    if (strncmp(info->name, q->prefix, strlen(q->prefix)) == 0 &&
        info->remaining_ms > 0)
        q->live++;
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An empty target for the case (a SQLite file in the fixture's
 * directory), or the case cannot run here. */
static void empty_target(tt_fixture *f, sqllock_db *db, char *url,
                         size_t size)
{
    char why[512];

    if (!tu_empty_target(db, g_url, f->dir, url, size, why, sizeof why))
        tu_cannot_run("%s", why);
}

/*
 * L2, N1, M1-M4, C5: the state above, scraped through the API and
 * through `sqllock metrics`, parsed back and checked value by value.
 */
static void test_dbmetrics_L2_N1_M3_known_state_scraped(void **state)
{
    tt_fixture *f = *state;
    const char *weird = "dbm \"quoted\" \\back";
    sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *plain[7], *exp[3], *fair, *el;
    sqllock_rw *rsh = NULL, *rex = NULL;
    sqllock_sem *sem[2] = { NULL, NULL };
    sqllock_db *base, *db, *hdb;
    waiter w[2];
    char eu[1024], prefix[64], *text = NULL;
    int64_t t_old, now, end, age_max;
    static om m, mt;
    tu_row r;
    qcount q;
    int i, found;
    double v, oldest;

    base = tu_open_or_fail(g_url);
    empty_target(f, base, eu, sizeof eu);
    db = tu_open_or_fail(eu);
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");
    hdb = tu_open_or_fail(eu);

    /* The oldest holds first, then the rows that will expire. */
    t_old = tu_now_ms();
    plain[0] = hold(hdb, "dbm-old", 60000, 0);
    plain[1] = hold(hdb, weird, 60000, 0);
    for (i = 0; i < 3; i++) {
        char n[32];

        snprintf(n, sizeof n, "dbm-exp%d", i);
        exp[i] = hold(hdb, n, 300, 0);
    }
    tu_sleep_ms(500);
    plain[2] = hold(hdb, "dbm-p1", 60000, 0);
    plain[3] = hold(hdb, "dbm-p2", 60000, 0);
    plain[4] = hold(hdb, "dbm-p3", 60000, 0);
    o.ttl_ms = 60000;
    EXPECT_RC(hdb, sqllock_rw_new(hdb, "dbm-rsh", 1, &o, &rsh), SQLLOCK_OK,
              "rw shared");
    EXPECT_RC(hdb, sqllock_rw_try_acquire(rsh), SQLLOCK_OK, "shared hold");
    EXPECT_RC(hdb, sqllock_rw_new(hdb, "dbm-rex", 0, &o, &rex), SQLLOCK_OK,
              "rw exclusive");
    EXPECT_RC(hdb, sqllock_rw_try_acquire(rex), SQLLOCK_OK, "exclusive hold");
    for (i = 0; i < 2; i++) {
        EXPECT_RC(hdb, sqllock_sem_new(hdb, "dbm-sem", 5, &o, &sem[i]),
                  SQLLOCK_OK, "sem");
        EXPECT_RC(hdb, sqllock_sem_try_acquire(sem[i]), SQLLOCK_OK, "permit");
    }
    EXPECT_RC(hdb, sqllock_leader_lease_new(hdb, "dbm-el", &o, &el),
              SQLLOCK_OK, "leader lease");
    EXPECT_RC(hdb, sqllock_lease_try_acquire(el), SQLLOCK_OK, "leadership");
    fair = hold(hdb, "dbm-fair", 60000, SQLLOCK_LEASE_FAIR);
    for (i = 0; i < 2; i++) {
        w[i].db = tu_open_or_fail(eu);
        snprintf(w[i].name, sizeof w[i].name, "dbm-fair");
        w[i].rc = -1;
        assert_int_equal(pthread_create(&w[i].t, NULL, waiter_main, &w[i]),
                         0);
    }
    /* Both waiters queued (M3): read here, not through the metrics. */
    snprintf(prefix, sizeof prefix, "dbm-fair%cq", SQLLOCK__SEP);
    end = tu_now_ms() + tu_scaled_ms(10000);
    do {
        q.prefix = prefix;
        q.live = 0;
        EXPECT_RC(db, sqllock_list(db, count_queue, &q), SQLLOCK_OK, "list");
        if (q.live < 2)
            tu_sleep_ms(10);
    } while (q.live < 2 && tu_now_ms() < end);
    assert_int_equal(q.live, 2);

    /* Histories: runs that failed (exit 3; exit 0 but lost), one ok,
     * one still running; a forced release of an expired row (C5). */
    now = wall_ms();
    EXPECT_RC(db, sqllock_history_note(db, "dbm-job", 1, "t", now - 9000,
                                       now - 8000, 0, "ok"), SQLLOCK_OK,
              "note");
    EXPECT_RC(db, sqllock_history_note(db, "dbm-job", 2, "t", now - 7000,
                                       now - 5000, 0, "lost"), SQLLOCK_OK,
              "note");
    EXPECT_RC(db, sqllock_history_note(db, "dbm-job", 3, "t", now - 6000,
                                       now - 4000, 3, "failed"), SQLLOCK_OK,
              "note");
    EXPECT_RC(db, sqllock_history_note(db, "dbm-job", 4, "t", now - 1000, 0,
                                       0, "running"), SQLLOCK_OK, "note");
    /* L2: expired by the database's clock. */
    end = tu_now_ms() + tu_scaled_ms(10000);
    for (;;) {
        EXPECT_RC(db, tu_find(db, "dbm-exp2", &r), SQLLOCK_OK, "find");
        if (r.remaining_ms <= 0 || tu_now_ms() > end)
            break;
        tu_sleep_ms(20);
    }
    assert_int_equal(r.found, 1);
    assert_true(r.remaining_ms <= 0);
    fo.who = "dbm-test";
    EXPECT_RC(db, sqllock_force_release(db, "dbm-exp2", &fo, NULL, NULL),
              SQLLOCK_OK, "forced release");
    /* Younger than the ten others: not among the oldest shown. */
    tu_sleep_ms(300);
    plain[5] = hold(hdb, "dbm-young", 60000, 0);

    EXPECT_RC(db, sqllock_metrics_db_text(db, &text), SQLLOCK_OK, "scrape");
    age_max = tu_now_ms() - t_old;
    om_parse(&m, text);
    printf("# %s: %zu bytes, %d series, %d families\n",
           sqllock_db_driver(db), strlen(text), m.n, m.nf);
    {
        static const double want[NKINDS] = { 7, 1, 1, 2, 1, 2, 0 };

        for (i = 0; i < NKINDS; i++)
            om_expect(&m, "sqllock_db_locks_held", "kind", kinds[i], want[i]);
    }
    om_expect(&m, "sqllock_db_waiters_queued", NULL, NULL, 2);
    om_expect(&m, "sqllock_db_expired_rows", NULL, NULL, 2);
    om_expect(&m, "sqllock_db_kind_markers", NULL, NULL, 4);
    om_expect(&m, "sqllock_db_lease_rows", NULL, NULL, 7 + 7 + 2 + 4);
    om_expect(&m, "sqllock_db_up", NULL, NULL, 1);
    /* The oldest hold: dbm-old, by the database's clock at least the
     * 0.5 s the case waited before the others, at most its time. */
    oldest = om_get(&m, "sqllock_db_oldest_hold_seconds", NULL, NULL,
                    &found);
    assert_true(found);
    if (oldest < 0.45 || oldest * 1000 > (double)age_max + 1000)
        fail_msg("oldest hold %.3f s; the case held dbm-old for %lld ms",
                 oldest, (long long)age_max);
    om_expect(&m, "sqllock_db_hold_age_seconds", "name", "dbm-old", oldest);
    /* Eleven names hold: the ten oldest are shown, dbm-young not; the
     * label value with a quote and a backslash comes back whole. */
    assert_int_equal(om_count(&m, "sqllock_db_hold_age_seconds"),
                     SQLLOCK_METRICS_DB_OLDEST);
    om_get(&m, "sqllock_db_hold_age_seconds", "name", "dbm-young", &found);
    assert_false(found);
    v = om_get(&m, "sqllock_db_hold_age_seconds", "name", weird, &found);
    assert_true(found);
    assert_true(v <= oldest);
    for (i = 0; i < m.n; i++)
        if (strcmp(m.s[i].name, "sqllock_db_hold_age_seconds") == 0 &&
            strcmp(m.s[i].val[0], "dbm-sem") == 0 &&
            strcmp(m.s[i].val[1], "semaphore") != 0)
            fail_msg("dbm-sem's hold is of kind %s", m.s[i].val[1]);
    /* The histories. */
    om_expect(&m, "sqllock_db_run_histories", NULL, NULL, 2);
    om_expect(&m, "sqllock_db_run_failures", "name", "dbm-job", 2);
    om_expect(&m, "sqllock_db_run_last_exit_code", "name", "dbm-job", 3);
    v = om_get(&m, "sqllock_db_run_last_end_timestamp_seconds", "name",
               "dbm-job", &found);
    assert_true(found);
    if (v * 1000 < (double)(now - 4000) - 1 ||
        v * 1000 > (double)(now - 4000) + 1)
        fail_msg("last end %.3f, want %.3f", v, (double)(now - 4000) / 1000);
    om_expect(&m, "sqllock_db_forced_releases", "name", "dbm-job", 0);
    om_expect(&m, "sqllock_db_forced_releases", "name", "dbm-exp2", 1);
    om_expect(&m, "sqllock_db_run_failures", "name", "dbm-exp2", 0);
    om_get(&m, "sqllock_db_run_last_end_timestamp_seconds", "name",
           "dbm-exp2", &found);
    assert_false(found);

    /* The tool prints the same state. */
    {
        const char *const args[] = { "--db", eu, "metrics", NULL };
        int rc = tt_run_bare(f, args);

        if (rc != 0)
            fail_msg("sqllock metrics: exit %d\n%s", rc, f->err);
        om_parse(&mt, f->out);
        for (i = 0; i < NKINDS; i++)
            om_expect(&mt, "sqllock_db_locks_held", "kind", kinds[i],
                      om_get(&m, "sqllock_db_locks_held", "kind", kinds[i],
                             &found));
        om_expect(&mt, "sqllock_db_expired_rows", NULL, NULL, 2);
        om_expect(&mt, "sqllock_db_run_failures", "name", "dbm-job", 2);
        om_expect(&mt, "sqllock_db_forced_releases", "name", "dbm-exp2", 1);
        assert_int_equal(mt.n, m.n);
    }
    sqllock_free(text);

    /* The fair holder's release hands over to the waiters in turn. */
    EXPECT_RC(hdb, sqllock_lease_release(fair), SQLLOCK_OK, "fair release");
    for (i = 0; i < 2; i++) {
        pthread_join(w[i].t, NULL);
        if (w[i].rc != SQLLOCK_OK)
            fail_msg("fair waiter %d: %s", i, sqllock_errname(w[i].rc));
        sqllock_close(w[i].db);
    }
    sqllock_lease_free(fair);
    for (i = 0; i < 6; i++) {
        sqllock_lease_release(plain[i]);
        sqllock_lease_free(plain[i]);
    }
    for (i = 0; i < 3; i++)
        sqllock_lease_free(exp[i]);
    sqllock_lease_release(el);
    sqllock_lease_free(el);
    sqllock_rw_release(rsh);
    sqllock_rw_release(rex);
    sqllock_rw_free(rsh);
    sqllock_rw_free(rex);
    for (i = 0; i < 2; i++) {
        sqllock_sem_release(sem[i]);
        sqllock_sem_free(sem[i]);
    }
    sqllock_close(hdb);
    sqllock_close(db);
    sqllock_close(base);
}

/* ---- the schedule slots ---- */

#define NSTATES 5
static const char *const slot_states[NSTATES] = {
    "running", "ok", "failed", "timeout", "lost"
};

/* One slot record the case writes, and what the scrape should say. */
typedef struct slot_case {
    const char *name;
    const char *schedule;
    int64_t dur_ms;             /* the length of the schedule's slots */
    int64_t slot_ms;            /* the start of the slot recorded */
    const char *state;
    int exit_code;
} slot_case;

/* Writes the record of `c` as a run does: claims the slot and, unless
 * the run is still going, notes its end. */
static void slot_write(sqllock_db *db, const slot_case *c, int64_t token)
{
    sqllock_slot_options so = SQLLOCK_SLOT_OPTIONS_INIT;

    so.schedule = c->schedule;
    so.slot_ms = c->slot_ms;
    so.token = token;
    so.who = "dbm-test";
    EXPECT_RC(db, sqllock_slot_claim(db, c->name, &so, NULL, NULL),
              SQLLOCK_OK, c->name);
    if (strcmp(c->state, "running") != 0)
        EXPECT_RC(db, sqllock_slot_finish(db, c->name, token, c->state,
                                          c->exit_code, 0), SQLLOCK_OK,
                  c->name);
}

/* The slots of a schedule of `dur` ms slots that begin after `slot` and
 * before the slot of `now` (the current one, which may still get its
 * run): what a scrape at `now` counts as missed. Worked out here by
 * hand, not by the library's schedule code. */
static int64_t missed_at(int64_t dur, int64_t slot, int64_t now)
{
    int64_t cur = now - now % dur;

    return cur > slot ? (cur - slot) / dur - 1 : 0;
}

/* What the scrape `m` taken between t0 and t1 (the wall clock) says of
 * the record of `c`, checked value by value. */
static void expect_slot(const om *m, const slot_case *c, int64_t t0,
                        int64_t t1)
{
    int64_t lo = missed_at(c->dur_ms, c->slot_ms, t0);
    int64_t hi = missed_at(c->dur_ms, c->slot_ms, t1);
    double v;
    int j, found;

    om_expect(m, "sqllock_db_slot_last_start_timestamp_seconds", "name",
              c->name, (double)c->slot_ms / 1000);
    /* The state set: exactly the record's state is 1. */
    for (j = 0; j < NSTATES; j++) {
        v = om_get2(m, "sqllock_db_slot_last_state", "name", c->name,
                    "state", slot_states[j], &found);
        if (!found || v != (strcmp(c->state, slot_states[j]) == 0))
            fail_msg("sqllock_db_slot_last_state{name=\"%s\",state=\"%s\"}"
                     " = %g (found %d); the record's state is %s", c->name,
                     slot_states[j], v, found, c->state);
    }
    assert_int_equal(om_count_of(m, "sqllock_db_slot_last_state", c->name),
                     NSTATES);
    /* No exit code while the run goes on. */
    v = om_get(m, "sqllock_db_slot_last_exit_code", "name", c->name, &found);
    if (strcmp(c->state, "running") == 0 ? found
                                         : !found || v != c->exit_code)
        fail_msg("sqllock_db_slot_last_exit_code{name=\"%s\"} = %g (found "
                 "%d); the run %s, exit %d", c->name, v, found, c->state,
                 c->exit_code);
    v = om_get(m, "sqllock_db_slots_missed", "name", c->name, &found);
    if (!found || v < (double)lo || v > (double)hi)
        fail_msg("sqllock_db_slots_missed{name=\"%s\"} = %g (found %d), "
                 "want %lld to %lld", c->name, v, found, (long long)lo,
                 (long long)hi);
    printf("# %s (%s, %s): %g missed\n", c->name, c->schedule, c->state, v);
}

/*
 * O1's slot records (`run --once-per`, core/slot.c), one per name, in
 * the scrape: the start of the last slot run, its run's state as a
 * state set (exactly one 1), its exit code once it ended, and the slots
 * missed since by the scraping host's clock, for a record in each state:
 * one whose last slot is ten 2 s slots back, one five hours back, a
 * cron one seven minutes back, one in a later slot (a runner's clock
 * ahead: none missed), one the tool wrote (`run --once-per 2s`, a
 * command that exits 5), and a record under the prefix that is not a
 * slot's (counted, no series). The same through `sqllock metrics`.
 */
static void test_dbmetrics_O1_slot_records_scraped(void **state)
{
    tt_fixture *f = *state;
    const char *weird = "dbs \"timeout\" \\back";
    const char *junk = SQLLOCK_SLOT_KEY_PREFIX "dbs-junk";
    sqllock_db *base, *db;
    slot_case c[7];
    char eu[1024], *text = NULL;
    int64_t now, h, t0, t1, tool0, tool1;
    static om m, mt;
    int i, j, found;
    double v;

    base = tu_open_or_fail(g_url);
    empty_target(f, base, eu, sizeof eu);
    db = tu_open_or_fail(eu);
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");

    now = wall_ms();
    h = now - now % 3600000;
    {
        const slot_case known[6] = {
            { "dbs-running", "1h", 3600000, h, "running", 0 },
            { "dbs-ok", "1h", 3600000, h, "ok", 0 },
            { "dbs-failed", "2s", 2000, now - now % 2000 - 10 * 2000,
              "failed", 3 },
            { weird, "1h", 3600000, h - 5 * INT64_C(3600000), "timeout",
              124 },
            { "dbs-lost", "* * * * *", 60000, now - now % 60000 - 7 * 60000,
              "lost", 0 },
            { "dbs-future", "1h", 3600000, h + 2 * INT64_C(3600000), "ok",
              0 },
        };

        for (i = 0; i < 6; i++) {
            c[i] = known[i];
            slot_write(db, &c[i], 100 + i);
        }
    }
    EXPECT_RC(db, sqllock_record_create(db, junk, "not a slot", 10),
              SQLLOCK_OK, "junk record");
    /* Through the tool: a run in its 2 s slot that exits 5. */
    tool0 = wall_ms();
    {
        const char *const args[] = { "--db", eu, "run", "dbs-tool",
                                     "--once-per", "2s", "--", "sh", "-c",
                                     "exit 5", NULL };
        int rc = tt_run_bare(f, args);

        if (rc != 5)
            fail_msg("sqllock run --once-per 2s: exit %d, want 5\n%s", rc,
                     f->err);
    }
    tool1 = wall_ms();

    t0 = wall_ms();
    EXPECT_RC(db, sqllock_metrics_db_text(db, &text), SQLLOCK_OK, "scrape");
    t1 = wall_ms();
    om_parse(&m, text);
    sqllock_free(text);
    printf("# %s: %d series, %d families\n", sqllock_db_driver(db), m.n,
           m.nf);
    om_expect(&m, "sqllock_db_slot_records", NULL, NULL, 8);
    /* The tool's slot: the one it began in, a 2 s slot start. */
    v = om_get(&m, "sqllock_db_slot_last_start_timestamp_seconds", "name",
               "dbs-tool", &found);
    assert_true(found);
    c[6] = (slot_case){ "dbs-tool", "2s", 2000, (int64_t)(v * 1000 + 0.5),
                        "failed", 5 };
    if (c[6].slot_ms % 2000 != 0 || c[6].slot_ms < tool0 - tool0 % 2000 ||
        c[6].slot_ms > tool1)
        fail_msg("the tool's slot starts at %lld; it ran from %lld to %lld",
                 (long long)c[6].slot_ms, (long long)tool0,
                 (long long)tool1);
    for (i = 0; i < 7; i++)
        expect_slot(&m, &c[i], t0, t1);
    /* Several slots back: at least the slots between (nine, four and
     * six; more once a slot ended since the record was written). */
    v = om_get(&m, "sqllock_db_slots_missed", "name", "dbs-failed", &found);
    assert_true(v >= 9);
    v = om_get(&m, "sqllock_db_slots_missed", "name", weird, &found);
    assert_true(v >= 4 && v <= 5);
    v = om_get(&m, "sqllock_db_slots_missed", "name", "dbs-lost", &found);
    assert_true(v >= 6);
    om_expect(&m, "sqllock_db_slots_missed", "name", "dbs-future", 0);
    /* Seven names have series, the record that is not a slot's none. */
    assert_int_equal(om_count(&m, "sqllock_db_slot_last_state"),
                     7 * NSTATES);
    assert_int_equal(om_count(&m, "sqllock_db_slot_last_exit_code"), 6);
    assert_int_equal(om_count(&m, "sqllock_db_slots_missed"), 7);
    assert_int_equal(om_count(&m,
                              "sqllock_db_slot_last_start_timestamp_seconds"),
                     7);
    assert_int_equal(om_count_of(&m, "sqllock_db_slot_last_state",
                                 "dbs-junk"), 0);
    /* The tool's run is in the history too. */
    om_expect(&m, "sqllock_db_run_histories", NULL, NULL, 1);
    om_expect(&m, "sqllock_db_run_last_exit_code", "name", "dbs-tool", 5);

    /* `sqllock metrics` prints the same. */
    {
        const char *const args[] = { "--db", eu, "metrics", NULL };
        int rc = tt_run_bare(f, args);

        if (rc != 0)
            fail_msg("sqllock metrics: exit %d\n%s", rc, f->err);
        om_parse(&mt, f->out);
        assert_int_equal(mt.n, m.n);
        om_expect(&mt, "sqllock_db_slot_records", NULL, NULL, 8);
        for (i = 0; i < 7; i++)
            for (j = 0; j < NSTATES; j++)
                if (om_get2(&mt, "sqllock_db_slot_last_state", "name",
                            c[i].name, "state", slot_states[j], &found) !=
                        (strcmp(c[i].state, slot_states[j]) == 0) ||
                    !found)
                    fail_msg("sqllock metrics: %s's state %s", c[i].name,
                             slot_states[j]);
        om_expect(&mt, "sqllock_db_slots_missed", "name", "dbs-future", 0);
    }
    sqllock_close(db);
    sqllock_close(base);
}

/*
 * The bound on the series: of SQLLOCK_METRICS_DB_NAMES_MAX + 1 slot
 * records all are counted, and the first SQLLOCK_METRICS_DB_NAMES_MAX
 * in name order have series, the last none (read in the text itself:
 * the parser above keeps fewer samples).
 */
static void test_dbmetrics_slot_series_bounded(void **state)
{
    tt_fixture *f = *state;
    sqllock_db *base, *db;
    char eu[1024], name[64], want[128], *text = NULL;
    const char *p;
    int64_t now = wall_ms(), t0;
    int i, n;

    base = tu_open_or_fail(g_url);
    empty_target(f, base, eu, sizeof eu);
    db = tu_open_or_fail(eu);
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");
    t0 = tu_now_ms();
    for (i = 0; i <= SQLLOCK_METRICS_DB_NAMES_MAX; i++) {
        slot_case c = { name, "1h", 3600000, now - now % 3600000, "running",
                        0 };

        snprintf(name, sizeof name, "dbs-cap-%04d", i);
        slot_write(db, &c, i + 1);
    }
    printf("# %s: %d records written in %lld ms\n", sqllock_db_driver(db),
           i, (long long)(tu_now_ms() - t0));
    EXPECT_RC(db, sqllock_metrics_db_text(db, &text), SQLLOCK_OK, "scrape");
    snprintf(want, sizeof want, "\nsqllock_db_slot_records %d\n",
             SQLLOCK_METRICS_DB_NAMES_MAX + 1);
    if (strstr(text, want) == NULL)
        fail_msg("the scrape does not say%s", want);
    for (n = 0, p = text; (p = strstr(p, "\nsqllock_db_slots_missed{")) != NULL;
         p++)
        n++;
    assert_int_equal(n, SQLLOCK_METRICS_DB_NAMES_MAX);
    snprintf(want, sizeof want, "{name=\"dbs-cap-%04d\"",
             SQLLOCK_METRICS_DB_NAMES_MAX - 1);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof want, "{name=\"dbs-cap-%04d\"",
             SQLLOCK_METRICS_DB_NAMES_MAX);
    assert_null(strstr(text, want));
    sqllock_free(text);
    sqllock_close(db);
    sqllock_close(base);
}

/*
 * E1: a scrape that cannot read (a database without the sqllock tables)
 * returns the status and no text; `sqllock metrics` exits 69 and prints
 * nothing on stdout, so that a textfile collector's `&& mv` keeps the
 * last good file. An empty database otherwise scrapes to zeros.
 */
static void test_dbmetrics_E1_failed_scrape_prints_nothing(void **state)
{
    tt_fixture *f = *state;
    sqllock_db *base, *db;
    char eu[1024], *text = (char *)"x";
    static om m;
    int rc, i;

    base = tu_open_or_fail(g_url);
    empty_target(f, base, eu, sizeof eu);
    db = tu_open_or_fail(eu);
    rc = sqllock_metrics_db_text(db, &text);
    if (rc == SQLLOCK_OK)
        fail_msg("a scrape of a database without the tables: SQLLOCK_OK");
    assert_null(text);
    printf("# %s: %s: %s\n", sqllock_db_driver(db), sqllock_errname(rc),
           sqllock_errmsg(db));
    expect_msg_any(db, "the message", "sqllock_metrics_db_text");
    {
        const char *const args[] = { "--db", eu, "metrics", NULL };

        rc = tt_run_bare(f, args);
        if (rc != EXIT_DB || f->out[0] != '\0')
            fail_msg("sqllock metrics on a database without the tables: "
                     "exit %d (want 69), stdout '%s'", rc, f->out);
        if (strstr(f->err, "sqllock: ") == NULL)
            fail_msg("sqllock metrics said nothing on stderr");
    }
    EXPECT_RC(db, sqllock_metrics_db_text(NULL, &text), SQLLOCK_EINVAL,
              "NULL db");
    EXPECT_RC(db, sqllock_metrics_db_text(db, NULL), SQLLOCK_EINVAL,
              "NULL out");
    /* With the tables, an empty database: zeros, no per-name series. */
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");
    EXPECT_RC(db, sqllock_metrics_db_text(db, &text), SQLLOCK_OK, "scrape");
    om_parse(&m, text);
    sqllock_free(text);
    for (i = 0; i < NKINDS; i++)
        om_expect(&m, "sqllock_db_locks_held", "kind", kinds[i], 0);
    om_expect(&m, "sqllock_db_oldest_hold_seconds", NULL, NULL, 0);
    om_expect(&m, "sqllock_db_run_histories", NULL, NULL, 0);
    assert_int_equal(om_count(&m, "sqllock_db_hold_age_seconds"), 0);
    assert_int_equal(om_count(&m, "sqllock_db_run_failures"), 0);
    om_expect(&m, "sqllock_db_slot_records", NULL, NULL, 0);
    assert_int_equal(om_count(&m, "sqllock_db_slot_last_state"), 0);
    assert_int_equal(om_count(&m, "sqllock_db_slots_missed"), 0);
    sqllock_close(db);
    sqllock_close(base);
}

static int setup(void **state)
{
    tt_fixture *f = tt_setup(SQLLOCK_CLI_PATH, g_url, "dbmetrics");

    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tt_teardown(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dbmetrics_E1_failed_scrape_prints_nothing),
        cmocka_unit_test(test_dbmetrics_L2_N1_M3_known_state_scraped),
        cmocka_unit_test(test_dbmetrics_O1_slot_records_scraped),
        cmocka_unit_test(test_dbmetrics_slot_series_bounded),
    };
    return TU_RUN_PER_URL("dbmetrics", &g_url, tests, setup, teardown);
}
