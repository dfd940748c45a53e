/*
 * test_multihost.c -- URLs that list several hosts, and what a row lock
 * excludes (issue 8, the driver and API part of MariaDB Galera support).
 *
 * `mysql://u:p@h1:p1,h2:p2,[::1]:p3/db`, and the same on PostgreSQL (with
 * target_session_attrs=read-write), is tried host by host, in order, by
 * the core's one failover policy (core/failover.c, docs/drivers.md): a host
 * that cannot be reached is passed over, refused credentials end the
 * connect, a malformed list is SQLLOCK_EURL (DESIGN E2), a failed connect
 * names every host tried and never the password (E1). A connection lost
 * later is reported once (SQLLOCK_ECONNECT), and the next call connects
 * again, to the next host that answers.
 *
 * sqllock_row_lock_scope(): EXCLUSIVE on PostgreSQL and on MariaDB
 * without Galera, DATABASE on SQLite (R5), and honest about it: a second
 * client's NOWAIT finds the row (or the database) locked. The Galera
 * case (NODE, and skipping a node that is not ready) needs a cluster and
 * is tested in test_galera.
 *
 * Real servers only: the URLs come from SQLLOCK_TEST_URLS (see
 * test_util.h); dead hosts are loopback ports with nothing listening, and
 * a host that dies mid-run is a loopback proxy (tu_proxy.h) that is
 * killed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_proxy.h"

static const char *g_url;

typedef struct fixture {
    const char *drv;           /* "sqlite", "postgres", "mysql" */
    char prefix[512];          /* "scheme://user:pass@" */
    char live[300];            /* the URL's own "host:port" */
    char live_host[256];
    int live_port;
    char rest[1024];           /* "/db?query" */
    char password[256];
    char name[300];
} fixture;

/* Splits g_url into the fixture's parts; network URLs only. */
static void split_url(fixture *f)
{
    tu_url_parts p;
    const char *colon;

    if (tu_url_split(g_url, &p) != 0)
        fail_msg("the test URL has no user:password@ part");
    snprintf(f->prefix, sizeof f->prefix, "%.*s", (int)p.host_at, g_url);
    snprintf(f->password, sizeof f->password, "%.*s",
             (int)(p.pass_end - p.pass_at), g_url + p.pass_at);
    snprintf(f->live, sizeof f->live, "%.*s", (int)(p.path_at - p.host_at),
             g_url + p.host_at);
    snprintf(f->rest, sizeof f->rest, "%s", g_url + p.path_at);
    colon = strrchr(f->live, ':');
    if (colon == NULL || strchr(f->live, ',') != NULL || f->live[0] == '[')
        fail_msg("the test URL's host must be host:port (got '%s')", f->live);
    snprintf(f->live_host, sizeof f->live_host, "%.*s",
             (int)(colon - f->live), f->live);
    f->live_port = atoi(colon + 1);
    assert_true(f->live_port > 0);
}
/* The test URL with `hosts` in place of its host:port, and `query`
 * (without '?' or '&'; may be NULL) added to its parameters. */
static void url_with_hosts(const fixture *f, const char *hosts,
                           const char *query, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s%s", f->prefix, hosts, f->rest,
             query == NULL ? "" : strchr(f->rest, '?') ? "&" : "?",
             query == NULL ? "" : query);
}


static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);

    if (f == NULL || tu_init_schema(g_url) != 0) {
        free(f);
        return -1;
    }
    f->drv = tu_url_driver(g_url);
    if (f->drv == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tu_proxy_stop_all();
    free(*state);
    return 0;
}

static const char *lock_name(fixture *f, const char *tag)
{
    snprintf(f->name, sizeof f->name, "multihost-%ld-%s", (long)getpid(),
             tag);
    return f->name;
}

/* The message on `db` must not show the password of the test URL. */
static void no_password(const fixture *f, const sqllock_db *db)
{
    if (f->password[0] != '\0' &&
        tu_contains_ci(sqllock_errmsg(db), f->password))
        fail_msg("the message shows the password: %s", sqllock_errmsg(db));
}

/* A lease round trip on `db`: acquire, renew, release. */
static void lease_works(fixture *f, sqllock_db *db, const char *tag)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    TU_ASSERT_RC(sqllock_lease_new(db, lock_name(f, tag), &o, &l), SQLLOCK_OK,
              db);
    TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
    assert_true(sqllock_lease_token(l) > 0);
    TU_ASSERT_RC(sqllock_lease_renew(l), SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, db);
    sqllock_lease_free(l);
}


/* ------------------------------------------------------------------ */
/* sqllock_row_lock_scope()                                            */
/* ------------------------------------------------------------------ */

/* E2: NULL handle, NULL output, a handle whose open failed. */
static void test_multihost_E2_scope_bad_input(void **state)
{
    fixture *f = *state;
    sqllock_db *db = NULL, *bad = NULL;
    int scope = 42;

    (void)f;
    assert_int_equal(sqllock_row_lock_scope(NULL, &scope), SQLLOCK_EINVAL);
    assert_int_equal(scope, 0);
    assert_int_equal(sqllock_row_lock_scope(NULL, NULL), SQLLOCK_EINVAL);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &db), SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_row_lock_scope(db, NULL), SQLLOCK_EINVAL, db);
    assert_int_equal(sqllock_errcode(db), SQLLOCK_EINVAL);
    expect_msg_any(db, "NULL scope", "NULL");
    /* A handle whose open failed (no driver for the scheme) says so. */
    assert_int_equal(sqllock_open("nosuchdb://h/x", NULL, &bad),
                     SQLLOCK_ESCHEME);
    scope = 42;
    TU_ASSERT_RC(sqllock_row_lock_scope(bad, &scope), SQLLOCK_EMISUSE, bad);
    assert_int_equal(scope, 0);
    sqllock_close(bad);
    /* The names, and "?" for a stray value. */
    assert_string_equal(sqllock_row_lock_scope_name(
                            SQLLOCK_ROW_LOCKS_EXCLUSIVE), "exclusive");
    assert_string_equal(sqllock_row_lock_scope_name(SQLLOCK_ROW_LOCKS_NODE),
                        "node");
    assert_string_equal(sqllock_row_lock_scope_name(
                            SQLLOCK_ROW_LOCKS_DATABASE), "database");
    assert_string_equal(sqllock_row_lock_scope_name(0), "?");
    assert_string_equal(sqllock_row_lock_scope_name(99), "?");
    sqllock_close(db);
}

/*
 * R1/R5: EXCLUSIVE on PostgreSQL and MariaDB (the test servers are not
 * Galera nodes), DATABASE on SQLite; the answer connects a handle that
 * is not connected, costs no statement inside an open transaction, and
 * is true: while one handle holds a row lock, another handle's NOWAIT
 * fails with SQLLOCK_ELOCKED.
 */
static void test_multihost_R5_scope_is_honest(void **state)
{
    fixture *f = *state;
    const char *names[1];
    sqllock_db *a = NULL, *b = NULL;
    sqllock_txn *ta = NULL, *tb = NULL;
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    int scope = 0, want, got = 0;

    want = strcmp(f->drv, "sqlite") == 0 ? SQLLOCK_ROW_LOCKS_DATABASE
                                         : SQLLOCK_ROW_LOCKS_EXCLUSIVE;
    names[0] = lock_name(f, "scope");
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &a), SQLLOCK_OK, a);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &b), SQLLOCK_OK, b);
    TU_ASSERT_RC(sqllock_row_lock_scope(a, &scope), SQLLOCK_OK, a);
    if (scope != want)
        fail_msg("scope on %s = %s, want %s", f->drv,
                 sqllock_row_lock_scope_name(scope),
                 sqllock_row_lock_scope_name(want));
    assert_int_equal(sqllock_errcode(a), SQLLOCK_OK);

    to.lock_timeout_ms = 1000;
    TU_ASSERT_RC(sqllock_txn_begin(a, &to, &ta), SQLLOCK_OK, a);
    TU_ASSERT_RC(sqllock_txn_lock(ta, names, 1, SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, a);
    assert_int_equal(got, 1);
    /* Asked inside the transaction: the same answer, the lock kept. */
    scope = 0;
    TU_ASSERT_RC(sqllock_row_lock_scope(a, &scope), SQLLOCK_OK, a);
    assert_int_equal(scope, want);
    TU_ASSERT_RC(sqllock_txn_begin(b, &to, &tb), SQLLOCK_OK, b);
    TU_ASSERT_RC(sqllock_txn_lock(tb, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
              SQLLOCK_ELOCKED, b);
    sqllock_txn_free(tb);
    TU_ASSERT_RC(sqllock_txn_commit(ta), SQLLOCK_OK, a);
    sqllock_txn_free(ta);
    sqllock_close(a);
    sqllock_close(b);
}

/* ------------------------------------------------------------------ */
/* Several hosts                                                       */
/* ------------------------------------------------------------------ */

/*
 * D2/E1: a dead host first, then the live one: the open connects to the
 * live one, and leases and row locks work. The same through PostgreSQL's
 * libpq host list, with target_session_attrs=read-write.
 */
static void test_multihost_E1_dead_first_host_then_live(void **state)
{
    fixture *f = *state;
    char hosts[700], url[4096];
    sqllock_db *db = NULL;
    sqllock_txn *t = NULL;
    const char *names[1];
    int scope = 0, got = 0;

    split_url(f);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d,%s",
             tu_dead_port(), tu_dead_port(), f->live);
    url_with_hosts(f, hosts, strcmp(f->drv, "postgres") == 0
                                 ? "target_session_attrs=read-write" : NULL,
                   url, sizeof url);
    TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_init(db), SQLLOCK_OK, db);
    lease_works(f, db, "deadfirst");
    names[0] = lock_name(f, "deadfirst-row");
    TU_ASSERT_RC(sqllock_txn_begin(db, NULL, &t), SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
              SQLLOCK_OK, db);
    assert_int_equal(got, 1);
    TU_ASSERT_RC(sqllock_txn_commit(t), SQLLOCK_OK, db);
    sqllock_txn_free(t);
    TU_ASSERT_RC(sqllock_row_lock_scope(db, &scope), SQLLOCK_OK, db);
    assert_int_equal(scope, SQLLOCK_ROW_LOCKS_EXCLUSIVE);
    sqllock_close(db);

    /* The live host first: the hosts after it are never needed. */
    snprintf(hosts, sizeof hosts, "%s,127.0.0.1:%d", f->live, tu_dead_port());
    url_with_hosts(f, hosts, NULL, url, sizeof url);
    db = NULL;
    TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    lease_works(f, db, "livefirst");
    sqllock_close(db);
}

/*
 * E1: a first host that accepts the TCP connection and then never
 * answers (a hung server, or a machine behind a dead link: the case a
 * refused port does not show). The connect timeout applies to each host
 * in turn, so the open gives up on it after connect_timeout_ms and
 * connects to the live host next; it must not spend the whole bound on
 * the first host and fail. The proxy is frozen: it keeps accepting at
 * the kernel level but forwards nothing.
 */
static void test_multihost_E1_hung_first_host_then_live(void **state)
{
    fixture *f = *state;
    /* Static: a failed test's teardown stops it (tu_proxy_stop_all). */
    static tu_proxy hung;
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    char hosts[600], url[4096];
    sqllock_db *db = NULL;
    int64_t t0, took, bound = tu_scaled_connect_ms(1000);

    split_url(f);
    assert_int_equal(tu_proxy_start(&hung, f->live_host, f->live_port), 0);
    assert_int_equal(tu_proxy_freeze(&hung), 0);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d,%s", hung.port, f->live);
    url_with_hosts(f, hosts, strcmp(f->drv, "postgres") == 0
                                 ? "target_session_attrs=read-write" : NULL,
                   url, sizeof url);
    /* Scaled: the live host's connect (SCRAM, TLS off) must end within
     * the bound, which under valgrind or on a loaded machine it does
     * not in 1000 ms; the entry runs beside the others (the sanitizers
     * slow a connect little: tu_scaled_connect_ms). */
    o.connect_timeout_ms = bound;
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_open(url, &o, &db), SQLLOCK_OK, db);
    took = tu_now_ms() - t0;
    printf("    %s: hung first host passed over, connected to the second "
           "in %lld ms (connect timeout %lld ms per host)\n", f->drv,
           (long long)took, (long long)bound);
    /* At least the first host's bound, and not much more than the two. */
    assert_true(took >= bound - 100);
    assert_true(took < 4 * bound);
    lease_works(f, db, "hungfirst");
    sqllock_close(db);

    /* Both hosts hung: ECONNECT after about two bounds, each named. */
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d", hung.port,
             hung.port);
    url_with_hosts(f, hosts, NULL, url, sizeof url);
    db = NULL;
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_open(url, &o, &db), SQLLOCK_ECONNECT, db);
    took = tu_now_ms() - t0;
    printf("    %s: two hung hosts: ECONNECT in %lld ms: %s\n", f->drv,
           (long long)took, sqllock_errmsg(db));
    assert_true(took >= 2 * bound - 200);
    assert_true(took < 6 * bound);
    no_password(f, db);
    sqllock_close(db);
    tu_proxy_stop(&hung);
}

/* E1: every host dead: SQLLOCK_ECONNECT, quickly, naming each host and
 * never the password. */
static void test_multihost_E1_all_hosts_dead(void **state)
{
    fixture *f = *state;
    char hosts[300], url[4096], label[64];
    int ports[3], i;
    sqllock_db *db = NULL;
    sqllock_options so = SQLLOCK_OPTIONS_INIT;
    int64_t t0, took;

    split_url(f);
    for (i = 0; i < 3; i++)
        ports[i] = tu_dead_port();
    if (strcmp(f->drv, "mysql") == 0)
        snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d,[::1]:%d",
                 ports[0], ports[1], ports[2]);
    else
        snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d,"
                 "127.0.0.1:%d", ports[0], ports[1], ports[2]);
    url_with_hosts(f, hosts, NULL, url, sizeof url);
    so.connect_timeout_ms = 3000;
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_open(url, &so, &db), SQLLOCK_ECONNECT, db);
    took = tu_now_ms() - t0;
    if (took > 9000)
        fail_msg("the open of three dead hosts took %lld ms",
                 (long long)took);
    for (i = 0; i < 3; i++) {
        if (strcmp(f->drv, "mysql") == 0)
            snprintf(label, sizeof label, i < 2 ? "127.0.0.1:%d" : "[::1]:%d",
                     ports[i]);
        else
            snprintf(label, sizeof label, "%d", ports[i]);
        if (!tu_contains_ci(sqllock_errmsg(db), label))
            fail_msg("the message does not name host %d (%s): %s", i + 1,
                     label, sqllock_errmsg(db));
    }
    no_password(f, db);
    /* Every later call tries the list again and fails the same way. */
    {
        int scope = 7;
        TU_ASSERT_RC(sqllock_row_lock_scope(db, &scope), SQLLOCK_ECONNECT, db);
        assert_int_equal(scope, 0);
        no_password(f, db);
    }
    sqllock_close(db);
}

typedef struct bad_list {
    const char *hosts;         /* "%d" is replaced by the live port */
    const char *query;
    const char *words;         /* "|"-separated, one must be in the message */
} bad_list;

/* E2: malformed host lists are SQLLOCK_EURL, each with its own words,
 * before anything is sent; the password stays hidden. */
static void test_multihost_E2_malformed_host_lists(void **state)
{
    static const bad_list cases[] = {
        { "127.0.0.1:%d,,127.0.0.1:1", NULL, "host 2 of the host list is "
                                             "empty" },
        { "127.0.0.1:%d,", NULL, "host 2 of the host list is empty" },
        { ",127.0.0.1:%d", NULL, "host 1 of the host list is empty" },
        { "127.0.0.1:%d,h2:99999", NULL, "'99999'|1 to 65535" },
        { "127.0.0.1:%d,h2:0", NULL, "1 to 65535" },
        { "127.0.0.1:%d,h2:33o6", NULL, "'33o6'" },
        { "127.0.0.1:%d,h2:", NULL, "1 to 65535" },
        { "127.0.0.1:%d,:3306", NULL, "no host name" },
        { "127.0.0.1:%d,[]:3306", NULL, "no host name" },
        { "127.0.0.1:%d,[::1", NULL, "unclosed '['" },
        { "127.0.0.1:%d,[::1]x", NULL, "junk after ']'" },
        { "127.0.0.1:%d,::1:3306", NULL, "brackets" },
        { "localhost,h2", "socket=/tmp/sqllock-no.sock", "socket" },
        { "127.0.0.1:%d,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11,h12,h13,h14,h15,h16,"
          "h17", NULL, "more than 16 hosts" },
    };
    fixture *f = *state;
    char hosts[600], url[4096];
    size_t i;

    split_url(f);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sqllock_db *db = NULL;
        int rc;

        /* socket= is the MySQL driver's parameter. */
        if (cases[i].query != NULL && strcmp(f->drv, "mysql") != 0)
            continue;
        snprintf(hosts, sizeof hosts, cases[i].hosts, f->live_port);
        url_with_hosts(f, hosts, cases[i].query, url, sizeof url);
        rc = sqllock_open(url, NULL, &db);
        if (rc != SQLLOCK_EURL)
            fail_msg("case %zu '%s': open = %s, want SQLLOCK_EURL (%s)", i,
                     hosts, sqllock_errname(rc), sqllock_errmsg(db));
        expect_msg_any(db, hosts, cases[i].words);
        no_password(f, db);
        sqllock_close(db);
    }
    /* Sixteen hosts are allowed: fifteen dead ones, then the live one. */
    {
        sqllock_db *db = NULL;
        char *p = hosts;
        sqllock_options so = SQLLOCK_OPTIONS_INIT;

        for (i = 0; i < 15; i++)
            p += sprintf(p, "127.0.0.1:%d,", tu_dead_port());
        sprintf(p, "%s", f->live);
        url_with_hosts(f, hosts, NULL, url, sizeof url);
        so.connect_timeout_ms = tu_scaled_connect_ms(2000);
        TU_ASSERT_RC(sqllock_open(url, &so, &db), SQLLOCK_OK, db);
        sqllock_close(db);
    }
}

/*
 * E1: refused credentials end the connect at the host that refused them:
 * every host gets the same ones, so the hosts after it are not tried
 * (a listening socket after it sees no connection). The message names
 * the host that refused, and the dead one tried before it.
 */
static void test_multihost_E1_auth_error_stops_the_list(void **state)
{
    fixture *f = *state;
    static const char wrong[] = "Wr0ng-Pa55-multihost";
    char hosts[600], url[4096], dead[32], prefix[512];
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    sqllock_db *db = NULL;
    int lfd, port, cfd;
    char *colon;

    split_url(f);
    /* A listener that would see a connection if the list went on. */
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof sin), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
    port = ntohs(sin.sin_port);
    fcntl(lfd, F_SETFL, O_NONBLOCK);

    snprintf(dead, sizeof dead, "127.0.0.1:%d", tu_dead_port());
    snprintf(hosts, sizeof hosts, "%s,%s,127.0.0.1:%d", dead, f->live, port);
    /* The same URL with a wrong password. */
    snprintf(prefix, sizeof prefix, "%s", f->prefix);
    colon = strchr(strstr(prefix, "://") + 3, ':');
    assert_non_null(colon);
    snprintf(colon + 1, sizeof prefix - (size_t)(colon + 1 - prefix), "%s@",
             wrong);
    snprintf(url, sizeof url, "%s%s%s", prefix, hosts, f->rest);
    TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_EPERM, db);
    expect_msg_any(db, "wrong password",
                   "Access denied|password authentication failed");
    expect_msg_any(db, "the host that refused", f->live);
    expect_msg_any(db, "the dead host before it", dead);
    if (tu_contains_ci(sqllock_errmsg(db), wrong))
        fail_msg("the message shows the password: %s", sqllock_errmsg(db));
    no_password(f, db);
    cfd = accept(lfd, NULL, NULL);
    if (cfd >= 0) {
        close(cfd);
        fail_msg("the host after the one that refused the credentials was "
                 "tried");
    }
    close(lfd);
    sqllock_close(db);
}

/*
 * E1/L3/C3: the host in use dies mid-run (a proxy in front of it is
 * killed: its connections close and its port refuses). The next renewal
 * finds its connection gone and is sent once more on a fresh connection
 * (DESIGN C3), which passes over the dead first host to the second: it
 * succeeds, the hold and its token intact, on another backend. Cutting
 * the second host's proxy then shows that the handle was on it: the
 * release's retry connects again (the first host still dead) and
 * releases. On PostgreSQL through libpq's host list with
 * target_session_attrs=read-write.
 */
static void test_multihost_E1_host_dies_then_next_host(void **state)
{
    fixture *f = *state;
    /* Static: a failed test's teardown stops them (tu_proxy_stop_all). */
    static tu_proxy p1, p2;
    char hosts[300], url[4096];
    sqllock_db *db = NULL, *other = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL, *lo = NULL;
    int64_t token, id1, id2;

    split_url(f);
    assert_int_equal(tu_proxy_start(&p1, f->live_host, f->live_port), 0);
    assert_int_equal(tu_proxy_start(&p2, f->live_host, f->live_port), 0);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d", p1.port,
             p2.port);
    url_with_hosts(f, hosts, strcmp(f->drv, "postgres") == 0
                                 ? "target_session_attrs=read-write" : NULL,
                   url, sizeof url);
    TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &other), SQLLOCK_OK, other);
    o.ttl_ms = 60000;
    TU_ASSERT_RC(sqllock_lease_new(db, lock_name(f, "dies"), &o, &l),
              SQLLOCK_OK, db);
    TU_ASSERT_RC(sqllock_lease_new(other, lock_name(f, "dies"), &o, &lo),
              SQLLOCK_OK, other);
    TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, db);
    token = sqllock_lease_token(l);
    id1 = tu_backend_id(db);

    /* The first host dies: the renewal goes on on the second. */
    tu_proxy_stop(&p1);
    TU_ASSERT_RC(sqllock_lease_renew(l), SQLLOCK_OK, db);
    assert_true(sqllock_lease_held(l));
    assert_int_equal(sqllock_lease_count(l), 1);
    assert_int_equal(sqllock_lease_token(l), token);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lo), SQLLOCK_BUSY, other);
    id2 = tu_backend_id(db);
    assert_true(id2 != id1);

    /* It is on the second host: cutting that one's connections is seen
     * by the release, whose retry connects again (the first host still
     * dead) and releases. */
    assert_int_equal(tu_proxy_cut(&p2), 0);
    TU_ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, db);
    assert_int_equal(sqllock_lease_count(l), 0);
    assert_true(tu_backend_id(db) != id2);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lo), SQLLOCK_OK, other);
    assert_true(sqllock_lease_token(lo) > token);
    TU_ASSERT_RC(sqllock_lease_release(lo), SQLLOCK_OK, other);

    sqllock_lease_free(l);
    sqllock_lease_free(lo);
    sqllock_close(other);

    /* With every host dead, a call fails and names them. */
    tu_proxy_stop(&p2);
    {
        int scope = 0;
        sqllock_close(db);
        db = NULL;
        TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_ECONNECT, db);
        TU_ASSERT_RC(sqllock_row_lock_scope(db, &scope), SQLLOCK_ECONNECT, db);
        no_password(f, db);
    }
    sqllock_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multihost_E2_scope_bad_input),
        cmocka_unit_test(test_multihost_R5_scope_is_honest),
        cmocka_unit_test(test_multihost_E1_hung_first_host_then_live),
        cmocka_unit_test(test_multihost_E1_dead_first_host_then_live),
        cmocka_unit_test(test_multihost_E1_all_hosts_dead),
        cmocka_unit_test(test_multihost_E2_malformed_host_lists),
        cmocka_unit_test(test_multihost_E1_auth_error_stops_the_list),
        cmocka_unit_test(test_multihost_E1_host_dies_then_next_host),
    };
    tu_not_on("sqlite", "test_multihost_E1_*", "SQLite has no hosts");
    tu_not_on("sqlite", "test_multihost_E2_malformed_host_lists",
              "SQLite has no hosts");
    return TU_RUN_PER_URL("multihost", &g_url, tests, setup, teardown);
}
