/*
 * test_driver_abi.c -- the driver ABI of version 14 (issue 28 item 1;
 * DESIGN D1, D2): one counted statement table per dialect.
 *
 * A dialect declares how many statements its table holds
 * (sqllock_dialect.nstmts); a statement beyond that is absent, and the
 * core must never read it. Here the driver of the URL under test is
 * registered again under a scheme of its own ("abicut"), with its table
 * copied into a heap block of exactly the declared length, so that the
 * sanitizers' and valgrind's redzones sit right behind the last entry and
 * any read past it fails the run. On the real database, what the short
 * table has works, and what it lacks is refused (SQLLOCK_EUNSUPPORTED) or
 * done without (one statement after another instead of a batch, a
 * transaction instead of a routine), never read from beyond the table.
 * The registry refuses a driver of an older version, saying so when the
 * scheme is opened, and one without a required statement.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_env.h"

#define CUT_SCHEME "abicut"

static const char *g_url;

/* A copy of the URL's driver whose table holds `nstmts` entries. */
typedef struct cut_driver {
    sqllock_driver *drv;
    sqllock_dialect *dialect;
    sqllock_sql *stmts;           /* exactly nstmts entries */
    const char *schemes[2];
} cut_driver;

/* The one registered under CUT_SCHEME now, freed when replaced. */
static cut_driver g_cut;

static const sqllock_driver *url_driver(void)
{
    char scheme[32];
    size_t n = strcspn(g_url, ":");
    const sqllock_driver *d;

    assert_true(n < sizeof scheme);
    memcpy(scheme, g_url, n);
    scheme[n] = '\0';
    d = sqllock_driver_find(scheme);
    assert_non_null(d);
    return d;
}

static void cut_free(cut_driver *c)
{
    free(c->drv);
    free(c->dialect);
    free(c->stmts);
    memset(c, 0, sizeof *c);
}

/* Registers the URL's driver under CUT_SCHEME with the first `nstmts`
 * statements of its table (entries past the library's own count, when
 * nstmts is larger, hold text that is not SQL: never read). */
static void cut_register(size_t nstmts, int version)
{
    const sqllock_driver *base = url_driver();
    cut_driver c;
    size_t i;

    memset(&c, 0, sizeof c);
    c.drv = malloc(sizeof *c.drv);
    c.dialect = malloc(sizeof *c.dialect);
    c.stmts = malloc(nstmts * sizeof *c.stmts);
    assert_non_null(c.drv);
    assert_non_null(c.dialect);
    assert_non_null(c.stmts);
    *c.drv = *base;
    *c.dialect = *base->dialect;
    for (i = 0; i < nstmts; i++) {
        if (i < SQLLOCK_SQL_COUNT_) {
            c.stmts[i] = base->dialect->stmts[i];
        } else {
            c.stmts[i].text = "this is not SQL: a statement of a later "
                              "library";
            c.stmts[i].args = "9";
        }
    }
    c.dialect->stmts = c.stmts;
    c.dialect->nstmts = nstmts;
    c.schemes[0] = CUT_SCHEME;
    c.schemes[1] = NULL;
    c.drv->version = version;
    c.drv->dialect = c.dialect;
    c.drv->schemes = NULL;
    {
        cut_driver was = g_cut;

        /* The schemes array lives in the registered copy's slot. */
        g_cut = c;
        g_cut.drv->schemes = g_cut.schemes;
        assert_int_equal(sqllock_driver_register(g_cut.drv), SQLLOCK_OK);
        cut_free(&was);
    }
}

/* g_url with its scheme replaced by CUT_SCHEME. */
static void cut_url(char *out, size_t size)
{
    snprintf(out, size, "%s%s", CUT_SCHEME, g_url + strcspn(g_url, ":"));
}

static sqllock_db *cut_open(void)
{
    char url[4200];
    sqllock_db *db = NULL;
    int rc;

    cut_url(url, sizeof url);
    rc = sqllock_open(url, NULL, &db);
    if (rc != SQLLOCK_OK)
        fail_msg("open (table of %zu): %s: %s", g_cut.dialect->nstmts,
                 sqllock_errname(rc), sqllock_errmsg(db));
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");
    return db;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.flags = flags;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 20;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* Rows whose name starts with `prefix`. */
typedef struct prefix_count {
    const char *prefix;
    int rows;
} prefix_count;

static int count_prefix(void *ctx, const sqllock_lease_info *info)
{
    prefix_count *p = ctx;

    if (strncmp(info->name, p->prefix, strlen(p->prefix)) == 0)
        p->rows++;
    return 0;
}

static int rows_under(sqllock_db *db, const char *prefix)
{
    prefix_count p = { prefix, 0 };

    EXPECT_RC(db, sqllock_list(db, count_prefix, &p), SQLLOCK_OK, "list");
    return p.rows;
}

/* L1/L4, O1, R1: what every table has: leases with tokens, records and
 * row locks. */
static void expect_basics(sqllock_db *a, sqllock_db *b, const char *name)
{
    sqllock_lease *la = new_lease(a, name, 30000, 0);
    sqllock_lease *lb = new_lease(b, name, 30000, 0);
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    const char *keys[1];
    char key[96];
    sqllock_txn *txn = NULL;
    int64_t t1, v = 0;
    int got = 0, rc;

    EXPECT_RC(a, sqllock_lease_try_acquire(la), SQLLOCK_OK, "acquire");
    t1 = sqllock_lease_token(la);
    assert_true(t1 > 0);
    EXPECT_RC(b, sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, "busy");
    EXPECT_RC(a, sqllock_lease_renew(la), SQLLOCK_OK, "renew");
    EXPECT_RC(a, sqllock_lease_release(la), SQLLOCK_OK, "release");
    EXPECT_RC(b, sqllock_lease_acquire(lb, tu_scaled_ms(2000)), SQLLOCK_OK,
              "acquire after the release");
    assert_true(sqllock_lease_token(lb) > t1);
    EXPECT_RC(b, sqllock_lease_release(lb), SQLLOCK_OK, "release");
    sqllock_lease_free(la);
    sqllock_lease_free(lb);

    snprintf(key, sizeof key, "%s-rec", name);
    /* A run stopped before its delete below leaves the record. */
    rc = sqllock_record_create(a, key, "1", 1);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_CONFLICT)
        fail_msg("record create: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(a));
    EXPECT_RC(a, sqllock_record_get(a, key, NULL, NULL, &v), SQLLOCK_OK,
              "record get");
    EXPECT_RC(a, sqllock_record_cas(a, key, v, "2", 1, &v), SQLLOCK_OK,
              "record cas");
    EXPECT_RC(a, sqllock_record_cas(a, key, v - 1, "3", 1, NULL),
              SQLLOCK_CONFLICT, "record cas on an old version");
    EXPECT_RC(a, sqllock_record_delete(a, key, v), SQLLOCK_OK,
              "record delete");

    snprintf(key, sizeof key, "%s-row", name);
    keys[0] = key;
    to.lock_timeout_ms = 2000;
    EXPECT_RC(a, sqllock_txn_begin(a, &to, &txn), SQLLOCK_OK, "txn begin");
    EXPECT_RC(a, sqllock_txn_lock(txn, keys, 1, SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "txn lock");
    assert_int_equal(got, 1);
    EXPECT_RC(a, sqllock_txn_commit(txn), SQLLOCK_OK, "txn commit");
    sqllock_txn_free(txn);
}

/* L12: two names at once, however the table lets the core take them. */
static void expect_many(sqllock_db *a, sqllock_db *b, const char *name)
{
    sqllock_lease *m[2], *other;
    char n0[96], n1[96];

    snprintf(n0, sizeof n0, "%s-m2", name);
    snprintf(n1, sizeof n1, "%s-m1", name);
    m[0] = new_lease(a, n0, 30000, 0);
    m[1] = new_lease(a, n1, 30000, 0);
    other = new_lease(b, n1, 30000, 0);
    EXPECT_RC(a, sqllock_lease_acquire_many(a, m, 2, 0), SQLLOCK_OK,
              "acquire_many");
    assert_true(sqllock_lease_token(m[0]) > 0);
    assert_true(sqllock_lease_token(m[1]) > 0);
    EXPECT_RC(b, sqllock_lease_try_acquire(other), SQLLOCK_BUSY,
              "one of the names, held");
    EXPECT_RC(a, sqllock_lease_release_many(a, m, 2), SQLLOCK_OK,
              "release_many");
    EXPECT_RC(b, sqllock_lease_try_acquire(other), SQLLOCK_OK,
              "the name, released");
    EXPECT_RC(b, sqllock_lease_release(other), SQLLOCK_OK, "release");
    sqllock_lease_free(m[0]);
    sqllock_lease_free(m[1]);
    sqllock_lease_free(other);
}

/* G1: the guard, from both entry points: present or SQLLOCK_EUNSUPPORTED. */
static void expect_guard(sqllock_db *db, const char *name, int want)
{
    static const sqllock_table t = { "abi_table", "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 1 };
    sqllock_lease *l = new_lease(db, name, 30000, 0);
    char buf[SQLLOCK_GUARD_SQL_MAX];

    EXPECT_RC(db, sqllock_guard_sql(db, name, 1, SQLLOCK_PARAM_QMARK, 1, buf,
                                    sizeof buf, NULL),
              want, "guard_sql");
    if (want == SQLLOCK_EUNSUPPORTED) {
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
        EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, NULL,
                                                   &set, 1, NULL, 0),
                  SQLLOCK_EUNSUPPORTED, "guarded update");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    }
    sqllock_lease_free(l);
}

/* L7 without the batch statements: the watchdog renews each lease with
 * its own LEASE_RENEW. Waits on state: every row's expiry moves on. */
static void expect_watch_renews(sqllock_db *db, const char *name)
{
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_lease *l[3];
    int64_t first[3], deadline;
    char n[96];
    int i, renewed = 0;

    w.interval_ms = 200;
    for (i = 0; i < 3; i++) {
        tu_row r;

        snprintf(n, sizeof n, "%s-w%d", name, i);
        l[i] = new_lease(db, n, 6000, 0);
        EXPECT_RC(db, sqllock_lease_try_acquire(l[i]), SQLLOCK_OK, "acquire");
        EXPECT_RC(db, tu_find(db, n, &r), SQLLOCK_OK, "list");
        assert_true(r.found);
        first[i] = r.expires_at_ms;
        EXPECT_RC(db, sqllock_lease_watch(l[i], &w), SQLLOCK_OK, "watch");
    }
    deadline = tu_now_ms() + tu_scaled_ms(20000);
    while (renewed < 3 && tu_now_ms() < deadline) {
        renewed = 0;
        for (i = 0; i < 3; i++) {
            tu_row r;

            snprintf(n, sizeof n, "%s-w%d", name, i);
            EXPECT_RC(db, tu_find(db, n, &r), SQLLOCK_OK, "list");
            if (r.found && r.expires_at_ms > first[i])
                renewed++;
        }
        if (renewed < 3)
            tu_sleep_ms(50);
    }
    assert_int_equal(renewed, 3);
    for (i = 0; i < 3; i++) {
        assert_int_equal(sqllock_lease_state(l[i]), SQLLOCK_STATE_HELD);
        EXPECT_RC(db, sqllock_lease_release(l[i]), SQLLOCK_OK, "release");
        sqllock_lease_free(l[i]);
    }
}

/* D1: the table of the required statements only (LEASE_ACQUIRE to
 * TXN_LOCK_TIMEOUT): leases, tokens, records and row locks work; several
 * names go through the core's transaction; the watchdog renews one by
 * one; the reaper, fast mode, the guard, semaphores (their N1 check reads
 * LEASE_RANGE) and shared holds are refused, with nothing left behind. */
static void test_driver_abi_D1_table_of_the_required_statements(void **state)
{
    sqllock_lease_options fo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *fast = NULL;
    sqllock_sem *s = NULL;
    sqllock_rw *rw = NULL;
    sqllock_db *a, *b;
    int64_t deleted = -1;
    (void)state;

    cut_register(SQLLOCK_SQL_TXN_LOCK_TIMEOUT + 1, SQLLOCK_DRIVER_VERSION);
    a = cut_open();
    b = cut_open();
    expect_basics(a, b, "abi-req");
    expect_many(a, b, "abi-req");
    expect_watch_renews(a, "abi-req");
    EXPECT_RC(a, sqllock_reap(a, 0, 10, &deleted), SQLLOCK_EUNSUPPORTED,
              "reap without LEASE_REAP");
    fo.ttl_ms = 30000;
    fo.flags = SQLLOCK_LEASE_FAST;
    assert_int_not_equal(sqllock_lease_new(a, "abi-req-fast", &fo, &fast),
                         SQLLOCK_OK);
    sqllock_lease_free(fast);
    expect_guard(a, "abi-req-guard", SQLLOCK_EUNSUPPORTED);

    o.ttl_ms = 5000;
    EXPECT_RC(a, sqllock_sem_new(a, "abi-req-sem", 2, &o, &s), SQLLOCK_OK,
              "sem_new");
    EXPECT_RC(a, sqllock_sem_try_acquire(s), SQLLOCK_EUNSUPPORTED,
              "a semaphore without LEASE_RANGE");
    assert_non_null(strstr(sqllock_errmsg(a), "LEASE_RANGE"));
    assert_int_equal(sqllock_sem_permit(s), -1);
    sqllock_sem_free(s);
    assert_int_equal(rows_under(a, "abi-req-sem"), 0);

    EXPECT_RC(a, sqllock_rw_new(a, "abi-req-rw", 0, &o, &rw), SQLLOCK_OK,
              "rw_new");
    EXPECT_RC(a, sqllock_rw_try_acquire(rw), SQLLOCK_EUNSUPPORTED,
              "a shared/exclusive lock without RW_EXPIRE");
    assert_non_null(strstr(sqllock_errmsg(a), "RW_EXPIRE"));
    sqllock_rw_free(rw);
    assert_int_equal(rows_under(a, "abi-req-rw"), 0);
    sqllock_close(a);
    sqllock_close(b);
}

/* D1: a table cut before the shared holds' statements (a driver built
 * before they were added): the reaper, the guard and semaphores work;
 * shared holds are refused, and the writer's row is not left behind. */
static void test_driver_abi_D1_table_cut_before_shared_holds(void **state)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l;
    sqllock_sem *s = NULL;
    sqllock_rw *rw = NULL;
    sqllock_db *a;
    int64_t deleted = 0, total = 0, deadline;
    (void)state;

    cut_register(SQLLOCK_SQL_RW_READ_ACQUIRE, SQLLOCK_DRIVER_VERSION);
    a = cut_open();
    /* P1: a lease of 1 ms, reaped once the server sees it expired. */
    o.ttl_ms = 1;
    o.safety_margin_ms = 0;
    l = NULL;
    EXPECT_RC(a, sqllock_lease_new(a, "abi-cut-expired", &o, &l), SQLLOCK_OK,
              "lease_new");
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    deadline = tu_now_ms() + tu_scaled_ms(10000);
    while (rows_under(a, "abi-cut-expired") > 0 && tu_now_ms() < deadline) {
        EXPECT_RC(a, sqllock_reap(a, 0, 100, &deleted), SQLLOCK_OK, "reap");
        total += deleted;
        if (deleted == 0)
            tu_sleep_ms(20);
    }
    assert_int_equal(rows_under(a, "abi-cut-expired"), 0);
    assert_true(total >= 1);
    sqllock_lease_free(l);

    expect_guard(a, "abi-cut-guard", SQLLOCK_OK);

    o.ttl_ms = 5000;
    EXPECT_RC(a, sqllock_sem_new(a, "abi-cut-sem", 2, &o, &s), SQLLOCK_OK,
              "sem_new");
    EXPECT_RC(a, sqllock_sem_try_acquire(s), SQLLOCK_OK, "sem acquire");
    EXPECT_RC(a, sqllock_sem_release(s), SQLLOCK_OK, "sem release");
    sqllock_sem_free(s);

    EXPECT_RC(a, sqllock_rw_new(a, "abi-cut-rw", 0, &o, &rw), SQLLOCK_OK,
              "rw_new");
    EXPECT_RC(a, sqllock_rw_acquire(rw, 100), SQLLOCK_EUNSUPPORTED,
              "a writer without RW_EXPIRE");
    sqllock_rw_free(rw);
    EXPECT_RC(a, sqllock_rw_new(a, "abi-cut-rw", 1, &o, &rw), SQLLOCK_OK,
              "rw_new");
    EXPECT_RC(a, sqllock_rw_try_acquire(rw), SQLLOCK_EUNSUPPORTED,
              "a reader without RW_EXPIRE");
    sqllock_rw_free(rw);
    assert_int_equal(rows_under(a, "abi-cut-rw"), 0);
    sqllock_close(a);
}

/* D1: the table cut at every length from the required statements to the
 * whole: each call answers from what the table holds -- done, or
 * SQLLOCK_EUNSUPPORTED -- and nothing reads past its end (the redzone). */
static void test_driver_abi_D1_table_cut_at_every_length(void **state)
{
    size_t n;
    (void)state;

    for (n = SQLLOCK_SQL_TXN_LOCK_TIMEOUT + 1; n <= SQLLOCK_SQL_COUNT_; n++) {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_sem *s = NULL;
        sqllock_rw *rw = NULL;
        sqllock_db *a, *b;
        char name[64];
        int64_t deleted;
        int rc;

        cut_register(n, SQLLOCK_DRIVER_VERSION);
        a = cut_open();
        b = cut_open();
        snprintf(name, sizeof name, "abi-len%zu", n);
        expect_basics(a, b, name);
        expect_many(a, b, name);
        rc = sqllock_reap(a, 3600000, 10, &deleted);
        assert_true(rc == SQLLOCK_OK || rc == SQLLOCK_EUNSUPPORTED);
        o.ttl_ms = 5000;
        snprintf(name, sizeof name, "abi-len%zu-sem", n);
        EXPECT_RC(a, sqllock_sem_new(a, name, 2, &o, &s), SQLLOCK_OK,
                  "sem_new");
        rc = sqllock_sem_try_acquire(s);
        if (rc == SQLLOCK_OK)
            EXPECT_RC(a, sqllock_sem_release(s), SQLLOCK_OK, "sem release");
        else
            EXPECT_RC(a, rc, SQLLOCK_EUNSUPPORTED, "sem acquire");
        sqllock_sem_free(s);
        snprintf(name, sizeof name, "abi-len%zu-rw", n);
        EXPECT_RC(a, sqllock_rw_new(a, name, 1, &o, &rw), SQLLOCK_OK,
                  "rw_new");
        rc = sqllock_rw_try_acquire(rw);
        if (rc == SQLLOCK_OK)
            EXPECT_RC(a, sqllock_rw_release(rw), SQLLOCK_OK, "rw release");
        else
            EXPECT_RC(a, rc, SQLLOCK_EUNSUPPORTED, "rw acquire");
        sqllock_rw_free(rw);
        /* The whole table: every primitive is there. */
        if (n == SQLLOCK_SQL_COUNT_)
            assert_int_equal(rc, SQLLOCK_OK);
        sqllock_close(a);
        sqllock_close(b);
    }
}

/* D2: a driver of a later version, whose table is longer than this
 * library's count: used as one of this version, its extra statements
 * never read (their text is not SQL). */
static void test_driver_abi_D2_newer_driver_longer_table(void **state)
{
    sqllock_db *a, *b;
    (void)state;

    cut_register(SQLLOCK_SQL_COUNT_ + 4, SQLLOCK_DRIVER_VERSION + 1);
    a = cut_open();
    b = cut_open();
    expect_basics(a, b, "abi-newer");
    expect_many(a, b, "abi-newer");
    sqllock_close(a);
    sqllock_close(b);
}

/* D2: the registry refuses a driver built for a version before 14 --
 * reading nothing of it past `schemes` (a block cut right there) -- and
 * an open of its scheme says so; a driver without a required statement;
 * and what was refused before; a good driver for the scheme later is
 * taken. */
static void test_driver_abi_D2_registration(void **state)
{
    const sqllock_driver *base = url_driver();
    size_t head = offsetof(sqllock_driver, schemes) + sizeof(void *);
    static const char *const old_schemes[] = { CUT_SCHEME "old", NULL };
    unsigned char *old = malloc(head);
    sqllock_driver *bad = malloc(sizeof *bad);
    sqllock_dialect *bad_dialect = malloc(sizeof *bad_dialect);
    sqllock_sql *bad_stmts = malloc(SQLLOCK_SQL_COUNT_ * sizeof *bad_stmts);
    static sqllock_driver good;
    const char *name = "olddriver";
    int v13 = 13, zero = 0, i;
    char url[4200];
    sqllock_db *db = NULL;
    (void)state;

    assert_non_null(old);
    assert_non_null(bad);
    assert_non_null(bad_dialect);
    assert_non_null(bad_stmts);
    memcpy(old + offsetof(sqllock_driver, version), &v13, sizeof v13);
    memcpy(old + offsetof(sqllock_driver, name), &name, sizeof name);
    {
        const char *const *sp = old_schemes;
        memcpy(old + offsetof(sqllock_driver, schemes), &sp, sizeof sp);
    }
    assert_int_equal(sqllock_driver_register((sqllock_driver *)old),
                     SQLLOCK_EUNSUPPORTED);
    assert_null(sqllock_driver_find(CUT_SCHEME "old"));
    snprintf(url, sizeof url, "%sold%s", CUT_SCHEME,
             g_url + strcspn(g_url, ":"));
    assert_int_equal(sqllock_open(url, NULL, &db), SQLLOCK_EUNSUPPORTED);
    assert_non_null(strstr(sqllock_errmsg(db), "olddriver"));
    assert_non_null(strstr(sqllock_errmsg(db), "driver version 13"));
    assert_non_null(strstr(sqllock_errmsg(db), "14"));
    sqllock_close(db);
    db = NULL;
    /* Version 0 and NULL: not a driver at all. */
    memcpy(old + offsetof(sqllock_driver, version), &zero, sizeof zero);
    assert_int_equal(sqllock_driver_register((sqllock_driver *)old),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_driver_register(NULL), SQLLOCK_EINVAL);
    free(old);

    /* A required statement missing, or a table too short for them. */
    *bad = *base;
    *bad_dialect = *base->dialect;
    for (i = 0; i < SQLLOCK_SQL_COUNT_; i++)
        bad_stmts[i] = base->dialect->stmts[i];
    bad_stmts[SQLLOCK_SQL_LEASE_RENEW].text = NULL;
    bad_dialect->stmts = bad_stmts;
    bad_dialect->nstmts = SQLLOCK_SQL_COUNT_;
    bad->dialect = bad_dialect;
    bad->schemes = old_schemes;
    assert_int_equal(sqllock_driver_register(bad), SQLLOCK_EINVAL);
    bad_stmts[SQLLOCK_SQL_LEASE_RENEW] =
        base->dialect->stmts[SQLLOCK_SQL_LEASE_RENEW];
    bad_dialect->nstmts = SQLLOCK_SQL_TXN_LOCK_TIMEOUT;
    assert_int_equal(sqllock_driver_register(bad), SQLLOCK_EINVAL);
    bad_dialect->stmts = NULL;
    bad_dialect->nstmts = SQLLOCK_SQL_COUNT_;
    assert_int_equal(sqllock_driver_register(bad), SQLLOCK_EINVAL);
    assert_null(sqllock_driver_find(CUT_SCHEME "old"));

    /* A driver of this version for the scheme: taken, and opened. */
    good = *base;
    good.schemes = old_schemes;
    assert_int_equal(sqllock_driver_register(&good), SQLLOCK_OK);
    assert_int_equal(sqllock_driver_register(&good), SQLLOCK_OK);
    assert_ptr_equal(sqllock_driver_find("ABICUTOLD"), &good);
    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK)
        fail_msg("open after a good driver: %s", sqllock_errmsg(db));
    sqllock_close(db);
    free(bad);
    free(bad_dialect);
    free(bad_stmts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_abi_D1_table_of_the_required_statements),
        cmocka_unit_test(test_driver_abi_D1_table_cut_before_shared_holds),
        cmocka_unit_test(test_driver_abi_D1_table_cut_at_every_length),
        cmocka_unit_test(test_driver_abi_D2_newer_driver_longer_table),
        cmocka_unit_test(test_driver_abi_D2_registration),
    };
    int rc = TU_RUN_PER_URL("driver_abi", &g_url, tests, tu_group_schema,
                            NULL);

    /* The registry keeps the last copy to the end of the process. */
    return rc;
}
