/*
 * test_badinput.c -- bad input gets a specific status and a message that
 * says what was wrong, and never harms a lock someone else holds
 * (DESIGN E1, E2, D3).
 *
 * Runs on every database URL in SQLLOCK_TEST_URLS (see test_util.h), or
 * on a fresh temporary SQLite file when that is unset. A "victim" lease is
 * held by its own handle for the whole group; after every bad input the
 * test checks through sqllock_list() that the victim's row still has the
 * same owner and token. Lock names carry the pid, so runs on a shared
 * server do not meet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

typedef struct fixture {
    char *dir;
    char url[4200];
    sqllock_db *victim_db;
    sqllock_lease *victim;
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    sqllock_db *db;            /* the handle bad input is fed to */
} fixture;

/* The URL the current group runs on, and the names made from the pid. */
static const char *g_url;
static char g_victim[64];
#define VICTIM g_victim

/* A lock name unique to this process: "bi<pid>-<tail>". */
static const char *uniq(char *buf, size_t size, const char *tail)
{
    snprintf(buf, size, "bi%ld-%s", (long)getpid(), tail);
    return buf;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;

    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp();
    if (f->dir == NULL)
        return -1;
    snprintf(f->url, sizeof f->url, "%s", g_url);
    snprintf(g_victim, sizeof g_victim, "badinput-victim-%ld",
             (long)getpid());
    o.ttl_ms = 600000;
    if (sqllock_open(f->url, NULL, &f->victim_db) != SQLLOCK_OK ||
        sqllock_init(f->victim_db) != SQLLOCK_OK ||
        sqllock_lease_new(f->victim_db, VICTIM, &o, &f->victim) !=
            SQLLOCK_OK ||
        sqllock_lease_try_acquire(f->victim) != SQLLOCK_OK ||
        sqllock_open(f->url, NULL, &f->db) != SQLLOCK_OK) {
        fprintf(stderr, "badinput setup: %s / %s\n",
                sqllock_errmsg(f->victim_db), sqllock_errmsg(f->db));
        return -1;
    }
    snprintf(f->owner, sizeof f->owner, "%s",
             sqllock_lease_owner(f->victim));
    f->token = sqllock_lease_token(f->victim);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    if (f == NULL)
        return 0;
    if (f->victim != NULL)
        sqllock_lease_release(f->victim);
    sqllock_lease_free(f->victim);
    sqllock_close(f->victim_db);
    sqllock_close(f->db);
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* The victim's row is exactly as it was, and its holder still holds. */
static void victim_untouched(fixture *f)
{
    tu_row r;
    int rc = tu_find(f->victim_db, VICTIM, &r);

    if (rc != SQLLOCK_OK)
        fail_msg("list after bad input: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(f->victim_db));
    assert_int_equal(r.found, 1);
    assert_string_equal(r.owner, f->owner);
    assert_int_equal(r.token, f->token);
    assert_true(r.remaining_ms > 0);
    assert_int_equal(sqllock_lease_held(f->victim), 1);
}

/* The message on `db` mentions every word in `all` (a "|"-separated list;
 * may be NULL) and at least one of `any` (the same; may be NULL). */
static void expect_msg(const sqllock_db *db, const char *what,
                       const char *all, const char *any)
{
    const char *msg = sqllock_errmsg(db);
    char buf[200];
    const char *p;
    int hit = 0;

    assert_non_null(msg);
    for (p = all; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, "|");
        snprintf(buf, sizeof buf, "%.*s", (int)n, p);
        if (!tu_contains_ci(msg, buf))
            fail_msg("%s: message \"%s\" does not mention \"%s\"", what, msg,
                     buf);
        p += n;
        if (*p == '|')
            p++;
    }
    if (any == NULL)
        return;
    for (p = any; *p != '\0';) {
        size_t n = strcspn(p, "|");
        snprintf(buf, sizeof buf, "%.*s", (int)n, p);
        if (tu_contains_ci(msg, buf))
            hit = 1;
        p += n;
        if (*p == '|')
            p++;
    }
    if (!hit)
        fail_msg("%s: message \"%s\" mentions none of \"%s\"", what, msg,
                 any);
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

typedef struct bad_name {
    const char *label;
    const char *name;          /* NULL, or see `len` */
    size_t len;                /* > 0: a name of this many 'n' bytes */
    const char *all;
    const char *any;
} bad_name;

/* E2: bad names are SQLLOCK_EINVAL from sqllock_lease_new() with a
 * message naming the problem, and no lease is made. */
static void test_badinput_E2_bad_names(void **state)
{
    static const bad_name cases[] = {
        { "NULL name", NULL, 0, "name", "NULL" },
        { "empty name", "", 0, "name|empty", NULL },
        { "256-byte name", NULL, 256, "name", "255|long" },
        { "10000-byte name", NULL, 10000, "name", "255|long" },
        { "\\xff\\xfe", "\xff\xfe", 0, "name", "UTF-8|UTF8" },
        { "\\xc3\\x28", "\xc3\x28", 0, "name", "UTF-8|UTF8" },
        { "overlong \\xc0\\xaf", "\xc0\xaf", 0, "name", "UTF-8|UTF8" },
        { "overlong 3-byte", "a\xe0\x80\xaf", 0, "name", "UTF-8|UTF8" },
        { "surrogate", "a\xed\xa0\x80z", 0, "name", "UTF-8|UTF8" },
        { "above U+10FFFF", "\xf4\x90\x80\x80", 0, "name", "UTF-8|UTF8" },
        { "truncated sequence", "abc\xe2\x82", 0, "name", "UTF-8|UTF8" },
        { "lone continuation", "a\x80", 0, "name", "UTF-8|UTF8" },
        { "newline", "a\nb", 0, "name", "control" },
        { "tab", "a\tb", 0, "name", "control" },
        { "escape", "a\x1b[0m", 0, "name", "control" },
        { "DEL", "a\x7f", 0, "name", "control" },
    };
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    size_t i;

    o.ttl_ms = 10000;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *big = NULL;
        const char *name = cases[i].name;
        sqllock_lease *l = (sqllock_lease *)(uintptr_t)1;
        int rc;

        if (cases[i].len > 0) {
            big = malloc(cases[i].len + 1);
            assert_non_null(big);
            memset(big, 'n', cases[i].len);
            big[cases[i].len] = '\0';
            name = big;
        }
        rc = sqllock_lease_new(f->db, name, &o, &l);
        if (rc != SQLLOCK_EINVAL)
            fail_msg("lease_new(%s) = %s, want SQLLOCK_EINVAL",
                     cases[i].label, sqllock_errname(rc));
        assert_null(l);
        assert_int_equal(sqllock_errcode(f->db), SQLLOCK_EINVAL);
        expect_msg(f->db, cases[i].label, cases[i].all, cases[i].any);
        /* attach checks the name the same way. */
        l = (sqllock_lease *)(uintptr_t)1;
        rc = sqllock_lease_attach(f->db, name, f->owner, f->token, &o, &l);
        if (rc != SQLLOCK_EINVAL)
            fail_msg("lease_attach(%s) = %s, want SQLLOCK_EINVAL",
                     cases[i].label, sqllock_errname(rc));
        assert_null(l);
        expect_msg(f->db, cases[i].label, cases[i].all, cases[i].any);
        free(big);
        victim_untouched(f);
    }
}

/* The limits themselves are fine: 255 bytes, and multi-byte UTF-8. */
static void test_badinput_E2_name_limits_accepted(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[SQLLOCK_NAME_MAX + 1], euro[SQLLOCK_NAME_MAX + 1];
    const char *names[3];
    size_t i, p;

    /* 255 bytes, starting with the pid so runs do not meet. */
    memset(name, 'x', SQLLOCK_NAME_MAX);
    name[SQLLOCK_NAME_MAX] = '\0';
    p = (size_t)snprintf(euro, sizeof euro, "bi%ld-", (long)getpid());
    memcpy(name, euro, p);
    /* Then U+20AC up to the limit: 255 bytes when the prefix's length
     * leaves a multiple of 3; the longest that fits otherwise. */
    for (i = p; i + 3 <= SQLLOCK_NAME_MAX; i += 3)
        memcpy(euro + i, "\xe2\x82\xac", 3);
    euro[i] = '\0';
    names[0] = name;
    names[1] = euro;
    names[2] = "a";
    o.ttl_ms = 10000;
    for (i = 0; i < 3; i++) {
        sqllock_lease *l = NULL;
        tu_row r;
        assert_int_equal(sqllock_lease_new(f->db, names[i], &o, &l),
                         SQLLOCK_OK);
        assert_int_equal(sqllock_lease_try_acquire(l), SQLLOCK_OK);
        assert_int_equal(tu_find(f->db, names[i], &r), SQLLOCK_OK);
        assert_int_equal(r.found, 1);
        assert_int_equal(r.token, sqllock_lease_token(l));
        assert_int_equal(sqllock_lease_release(l), SQLLOCK_OK);
        sqllock_lease_free(l);
    }
    victim_untouched(f);
}

/* D3: quotes, semicolons, format directives and SQL are valid names;
 * they round-trip exactly and do not harm other rows or the table. */
static void test_badinput_D3_hostile_names_round_trip(void **state)
{
    static const char *const tails[] = {
        "it's", "\"quoted\"", "semi;colon", "%s", "%s%s%s%n%n", "%99999d",
        "'; DROP TABLE sqllock_lease; --",
        "\"; DELETE FROM sqllock_lease; --",
        "_", "%", "\\", "\\'", "?", "$1", "NULL",
    };
    /* The first three end in the victim's name, or extend it with LIKE
     * wildcards and an always-true condition. */
    enum { NT = sizeof tails / sizeof tails[0], N = NT + 3 };
    char names[N][300];
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l[N];
    size_t i;

    snprintf(names[0], sizeof names[0], "%s' OR '1'='1", VICTIM);
    snprintf(names[1], sizeof names[1], "%s%%", VICTIM);
    snprintf(names[2], sizeof names[2], "%s_", VICTIM);
    for (i = 0; i < NT; i++)
        uniq(names[i + 3], sizeof names[i + 3], tails[i]);
    o.ttl_ms = 30000;
    for (i = 0; i < N; i++) {
        l[i] = NULL;
        assert_int_equal(sqllock_lease_new(f->db, names[i], &o, &l[i]),
                         SQLLOCK_OK);
        assert_string_equal(sqllock_lease_name(l[i]), names[i]);
        if (sqllock_lease_try_acquire(l[i]) != SQLLOCK_OK)
            fail_msg("try_acquire(\"%s\"): %s", names[i],
                     sqllock_errmsg(f->db));
        victim_untouched(f);
    }
    for (i = 0; i < N; i++) {
        tu_row r;
        assert_int_equal(tu_find(f->db, names[i], &r), SQLLOCK_OK);
        if (r.found != 1)
            fail_msg("name \"%s\" did not round-trip (%d rows)", names[i],
                     r.found);
        assert_string_equal(r.owner, sqllock_lease_owner(l[i]));
        assert_int_equal(r.token, sqllock_lease_token(l[i]));
    }
    for (i = 0; i < N; i++) {
        assert_int_equal(sqllock_lease_release(l[i]), SQLLOCK_OK);
        sqllock_lease_free(l[i]);
        victim_untouched(f);
    }
}

/* ------------------------------------------------------------------ */
/* Options, waits, owners, tokens                                      */
/* ------------------------------------------------------------------ */

typedef struct bad_opts {
    const char *label;
    int64_t ttl, margin, bmin, bmax;
    int holder_len;            /* > 0: a holder text of this many bytes */
    const char *holder;
    const char *all;
} bad_opts;

/* E2: non-positive ttls and other bad options are SQLLOCK_EINVAL. */
static void test_badinput_E2_bad_lease_options(void **state)
{
    static const bad_opts cases[] = {
        { "ttl 0", 0, 0, 0, 0, 0, NULL, "ttl" },
        { "ttl -1", -1, 0, 0, 0, 0, NULL, "ttl" },
        { "ttl INT64_MIN", INT64_MIN, 0, 0, 0, 0, NULL, "ttl" },
        { "margin = ttl", 1000, 1000, 0, 0, 0, NULL, "margin" },
        { "margin > ttl", 1000, 5000, 0, 0, 0, NULL, "margin" },
        { "margin < 0", 1000, -1, 0, 0, 0, NULL, "margin" },
        { "backoff < 0", 1000, 0, -5, 0, 0, NULL, "backoff" },
        { "holder too long", 1000, 0, 0, 0, SQLLOCK_HOLDER_MAX + 1, NULL,
          "holder" },
        { "holder bad UTF-8", 1000, 0, 0, 0, 0, "h\xff", "holder" },
        { "holder control", 1000, 0, 0, 0, 0, "h\nx", "holder" },
    };
    fixture *f = *state;
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_lease *l = (sqllock_lease *)(uintptr_t)1;
        char *h = NULL;
        int rc;

        o.ttl_ms = cases[i].ttl;
        o.safety_margin_ms = cases[i].margin;
        o.backoff_min_ms = cases[i].bmin;
        o.backoff_max_ms = cases[i].bmax;
        o.holder = cases[i].holder;
        if (cases[i].holder_len > 0) {
            h = malloc((size_t)cases[i].holder_len + 1);
            assert_non_null(h);
            memset(h, 'h', (size_t)cases[i].holder_len);
            h[cases[i].holder_len] = '\0';
            o.holder = h;
        }
        rc = sqllock_lease_new(f->db, VICTIM, &o, &l);
        if (rc != SQLLOCK_EINVAL)
            fail_msg("lease_new(%s) = %s, want SQLLOCK_EINVAL",
                     cases[i].label, sqllock_errname(rc));
        assert_null(l);
        expect_msg(f->db, cases[i].label, cases[i].all, NULL);
        free(h);
        victim_untouched(f);
    }
    /* No options at all: the ttl is required. */
    {
        sqllock_lease *l = (sqllock_lease *)(uintptr_t)1;
        assert_int_equal(sqllock_lease_new(f->db, VICTIM, NULL, &l),
                         SQLLOCK_EINVAL);
        assert_null(l);
        expect_msg(f->db, "NULL options", "ttl", NULL);
    }
    /* M3: a fair lease's name is at most SQLLOCK_PRIMITIVE_NAME_MAX bytes
     * (its queue rows are derived names); a flag beyond the known ones is
     * refused. */
    {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_lease *l = (sqllock_lease *)(uintptr_t)1;
        char name[SQLLOCK_PRIMITIVE_NAME_MAX + 2];

        memset(name, 'n', sizeof name - 1);
        name[sizeof name - 1] = '\0';
        o.ttl_ms = 1000;
        o.flags = SQLLOCK_LEASE_FAIR;
        assert_int_equal(sqllock_lease_new(f->db, name, &o, &l),
                         SQLLOCK_EINVAL);
        assert_null(l);
        expect_msg(f->db, "fair name too long",
                   "fair|SQLLOCK_PRIMITIVE_NAME_MAX", NULL);
        o.flags = SQLLOCK_LEASE_FAIR << 5;
        l = (sqllock_lease *)(uintptr_t)1;
        assert_int_equal(sqllock_lease_new(f->db, VICTIM, &o, &l),
                         SQLLOCK_EINVAL);
        assert_null(l);
        expect_msg(f->db, "unknown flag", "flags", NULL);
    }
    victim_untouched(f);
}

/* E2: a negative wait is EINVAL, and does not touch the lock. */
static void test_badinput_E2_negative_wait(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL, *m = NULL;
    char free_name[100];

    o.ttl_ms = 10000;
    assert_int_equal(sqllock_lease_new(f->db, VICTIM, &o, &l), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_acquire(l, -1), SQLLOCK_EINVAL);
    expect_msg(f->db, "wait -1", "wait", NULL);
    assert_int_equal(sqllock_lease_acquire(l, INT64_MIN), SQLLOCK_EINVAL);
    expect_msg(f->db, "wait INT64_MIN", "wait", NULL);
    assert_int_equal(sqllock_lease_held(l), 0);
    /* Also on a free name: nothing is acquired. */
    assert_int_equal(sqllock_lease_new(f->db, uniq(free_name,
                                                   sizeof free_name, "free"),
                                       &o, &m),
                     SQLLOCK_OK);
    assert_int_equal(sqllock_lease_acquire(m, -1), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_held(m), 0);
    {
        tu_row r;
        assert_int_equal(tu_find(f->db, free_name, &r), SQLLOCK_OK);
        assert_int_equal(r.found, 0);
    }
    sqllock_lease_free(l);
    sqllock_lease_free(m);
    victim_untouched(f);
}

/* E2 for L12: the arrays of sqllock_lease_acquire_many() and
 * sqllock_lease_release_many() -- NULL, empty, too long, a NULL entry, a
 * name twice, a negative wait, a NULL handle -- are refused with a
 * message, and nothing is taken (the victim's lease and the free names
 * stay as they were). */
static void test_badinput_E2_bad_many(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l[3] = { NULL, NULL, NULL }, *v = NULL, *arr[3];
    char n0[100], n1[100];
    tu_row r;

    o.ttl_ms = 10000;
    assert_int_equal(sqllock_lease_new(f->db, uniq(n0, sizeof n0, "many0"),
                                       &o, &l[0]), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_new(f->db, uniq(n1, sizeof n1, "many1"),
                                       &o, &l[1]), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_new(f->db, n0, &o, &l[2]), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_new(f->db, VICTIM, &o, &v), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_acquire_many(NULL, l, 2, 0),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_acquire_many(f->db, NULL, 2, 0),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL array", "NULL", NULL);
    assert_int_equal(sqllock_lease_acquire_many(f->db, l, 0, 0),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "n 0", "no lease", NULL);
    assert_int_equal(sqllock_lease_acquire_many(f->db, l,
                                                SQLLOCK_LEASE_MANY_MAX + 1, 0),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "n 65", "limit", NULL);
    arr[0] = l[0];
    arr[1] = NULL;
    assert_int_equal(sqllock_lease_acquire_many(f->db, arr, 2, 0),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL entry", "NULL", NULL);
    arr[0] = l[1];
    arr[1] = l[0];
    arr[2] = l[2];
    assert_int_equal(sqllock_lease_acquire_many(f->db, arr, 3, 0),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "twice", "twice", NULL);
    assert_int_equal(sqllock_lease_acquire_many(f->db, l, 2, -1),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "wait -1", "wait", NULL);
    /* The victim is held by the fixture's other owner: busy, nothing. */
    arr[0] = l[0];
    arr[1] = v;
    assert_int_equal(sqllock_lease_acquire_many(f->db, arr, 2, 0),
                     SQLLOCK_BUSY);
    assert_int_equal(sqllock_lease_release_many(f->db, NULL, 1),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_release_many(f->db, l, 0),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_release_many(NULL, l, 1), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_held(l[0]), 0);
    assert_int_equal(sqllock_lease_held(l[1]), 0);
    assert_int_equal(tu_find(f->db, n0, &r), SQLLOCK_OK);
    assert_int_equal(r.found, 0);
    assert_int_equal(tu_find(f->db, n1, &r), SQLLOCK_OK);
    assert_int_equal(r.found, 0);
    sqllock_lease_free(l[0]);
    sqllock_lease_free(l[1]);
    sqllock_lease_free(l[2]);
    sqllock_lease_free(v);
    victim_untouched(f);
}

/* E2 for M2: a shared/exclusive handle refuses a NULL handle or output,
 * a NULL, empty, oversized (above SQLLOCK_PRIMITIVE_NAME_MAX) or
 * control-character name, missing options and a ttl <= 0, a negative
 * wait, and a release of nothing -- each with a message -- and *out
 * stays NULL; nothing is sent. */
static void test_badinput_E2_bad_rw(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_rw *rw = (sqllock_rw *)&o;
    char name[100], big[SQLLOCK_PRIMITIVE_NAME_MAX + 2];

    o.ttl_ms = 10000;
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    uniq(name, sizeof name, "rw");
    assert_int_equal(sqllock_rw_new(NULL, name, 1, &o, &rw), SQLLOCK_EINVAL);
    assert_null(rw);
    assert_int_equal(sqllock_rw_new(f->db, name, 1, &o, NULL),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "rw NULL out", "NULL", NULL);
    assert_int_equal(sqllock_rw_new(f->db, NULL, 1, &o, &rw), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw NULL name", "name|NULL", NULL);
    assert_int_equal(sqllock_rw_new(f->db, "", 0, &o, &rw), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw empty name", "name|empty", NULL);
    assert_int_equal(sqllock_rw_new(f->db, big, 1, &o, &rw), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw long name", "name|limit", NULL);
    assert_int_equal(sqllock_rw_new(f->db, "a\x1f" "w", 1, &o, &rw),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "rw control name", "control", NULL);
    assert_int_equal(sqllock_rw_new(f->db, name, 1, NULL, &rw),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "rw no options", "ttl", NULL);
    o.ttl_ms = 0;
    assert_int_equal(sqllock_rw_new(f->db, name, 0, &o, &rw), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw ttl 0", "ttl|positive", NULL);
    o.ttl_ms = -5;
    assert_int_equal(sqllock_rw_new(f->db, name, 1, &o, &rw), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw ttl -5", "ttl", NULL);
    assert_null(rw);
    o.ttl_ms = 10000;
    assert_int_equal(sqllock_rw_new(f->db, name, 1, &o, &rw), SQLLOCK_OK);
    assert_int_equal(sqllock_rw_acquire(rw, -1), SQLLOCK_EINVAL);
    expect_msg(f->db, "rw wait -1", "wait", NULL);
    assert_int_equal(sqllock_rw_release(rw), SQLLOCK_ENOTHELD);
    expect_msg(f->db, "rw release idle", "does not hold", NULL);
    assert_int_equal(sqllock_rw_try_acquire(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_rw_acquire(NULL, 0), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_rw_release(NULL), SQLLOCK_EINVAL);
    assert_null(sqllock_rw_lease(NULL));
    assert_int_equal(sqllock_rw_shared(NULL), 0);
    sqllock_rw_free(NULL);
    sqllock_rw_free(rw);
    victim_untouched(f);
}

/* E2: attach checks the owner id and the token. */
static void test_badinput_E2_bad_attach(void **state)
{
    static const struct {
        const char *label, *owner;
        int64_t token;
        const char *all;
    } cases[] = {
        { "NULL owner", NULL, 1, "owner" },
        { "empty owner", "", 1, "owner" },
        { "short owner", "0123456789abcdef", 1, "owner" },
        { "long owner", "0123456789abcdef0123456789abcdef0", 1, "owner" },
        { "non-hex owner", "0123456789abcdef0123456789abcdeg", 1, "owner" },
        { "owner with quote", "0123456789abcdef0123456789abcde'", 1, "owner" },
        { "token 0", "0123456789abcdef0123456789abcdef", 0, "token" },
        { "token -1", "0123456789abcdef0123456789abcdef", -1, "token" },
    };
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    size_t i;

    o.ttl_ms = 10000;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sqllock_lease *l = NULL;
        int rc = sqllock_lease_attach(f->db, VICTIM, cases[i].owner,
                                      cases[i].token, &o, &l);
        if (rc != SQLLOCK_EINVAL)
            fail_msg("lease_attach(%s) = %s, want SQLLOCK_EINVAL",
                     cases[i].label, sqllock_errname(rc));
        assert_null(l);
        expect_msg(f->db, cases[i].label, cases[i].all, NULL);
        victim_untouched(f);
    }
    /* A well-formed but wrong owner is not bad input: it is LOST, and
     * the victim keeps its lock (L3). */
    {
        sqllock_lease *l = NULL;
        assert_int_equal(sqllock_lease_attach(f->db, VICTIM,
                                              "0123456789abcdef0123456789abcdef",
                                              f->token, &o, &l),
                         SQLLOCK_OK);
        assert_int_equal(sqllock_lease_release(l), SQLLOCK_LOST);
        expect_msg(f->db, "wrong owner release", NULL,
                   "lost|another owner|taken|expired|removed");
        sqllock_lease_free(l);
        victim_untouched(f);
    }
}

/* E2: a failed attach leaves *out NULL, as a failed sqllock_lease_new()
 * does, so that a cleanup path may call sqllock_lease_free() on it. */
static void test_badinput_E2_failed_attach_clears_out(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l;

    o.ttl_ms = 10000;
    l = (sqllock_lease *)(uintptr_t)1;
    assert_int_equal(sqllock_lease_attach(f->db, VICTIM, "not-hex", 1, &o,
                                          &l),
                     SQLLOCK_EINVAL);
    if (l != NULL)
        fail_msg("attach with a bad owner id left *out = %p, not NULL",
                 (void *)l);
    l = (sqllock_lease *)(uintptr_t)1;
    assert_int_equal(sqllock_lease_attach(f->db, VICTIM,
                                          "0123456789abcdef0123456789abcdef",
                                          0, &o, &l),
                     SQLLOCK_EINVAL);
    if (l != NULL)
        fail_msg("attach with token 0 left *out = %p, not NULL", (void *)l);
    victim_untouched(f);
}

/* E2: NULL handles are EINVAL; every free and close accepts NULL. */
static void test_badinput_E2_null_handles(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = (sqllock_lease *)(uintptr_t)1;

    o.ttl_ms = 10000;
    assert_int_equal(sqllock_lease_new(NULL, "x", &o, &l), SQLLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(sqllock_lease_new(f->db, "x", &o, NULL), SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL out", NULL, "NULL|output|pointer");
    l = (sqllock_lease *)(uintptr_t)1;
    assert_int_equal(sqllock_lease_attach(NULL, "x",
                                          "0123456789abcdef0123456789abcdef",
                                          1, &o, &l),
                     SQLLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(sqllock_lease_try_acquire(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_acquire(NULL, 0), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_renew(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_release(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_init(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_list(NULL, tu_row_cb, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_list(f->db, NULL, NULL), SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL callback", "callback", NULL);
    assert_int_equal(sqllock_open("sqlite:x.db", NULL, NULL), SQLLOCK_EINVAL);
    assert_non_null(sqllock_errmsg(NULL));
    assert_true(tu_contains_ci(sqllock_errmsg(NULL), "no database handle"));
    sqllock_lease_free(NULL);
    sqllock_close(NULL);
    sqllock__url_free(NULL);
    victim_untouched(f);
}

/* E2 for leader elections (M4): sqllock_leader_start(),
 * sqllock_leader_get() and sqllock_leader_lease_new() refuse NULL, empty,
 * oversized (> SQLLOCK_PRIMITIVE_NAME_MAX) and control-character names,
 * a ttl <= 0, negative times, an interval too long for the ttl, NULL
 * options, URL and out, each with a message that says what; a name of
 * exactly the limit is accepted; the NULL handles are harmless. */
static void test_badinput_E2_bad_leader(void **state)
{
    static const struct {
        const char *label;
        const char *name;
        size_t len;
        const char *any;
    } names[] = {
        { "NULL name", NULL, 0, "NULL" },
        { "empty name", "", 0, "empty" },
        { "201-byte name", NULL, 201, "200|long|PRIMITIVE" },
        { "256-byte name", NULL, 256, "200|255|long" },
        { "control character", "a\x1f" "leader", 0, "control" },
        { "not UTF-8", "\xff\xfe", 0, "UTF-8" },
    };
    fixture *f = *state;
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_leader_info info;
    sqllock_leader *ld;
    sqllock_lease *l;
    char why[700], ok[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    size_t i;
    int rc;

    o.ttl_ms = 10000;
    lo.ttl_ms = 10000;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *big = NULL;
        const char *name = names[i].name;

        if (names[i].len > 0) {
            big = malloc(names[i].len + 1);
            assert_non_null(big);
            memset(big, 'e', names[i].len);
            big[names[i].len] = '\0';
            name = big;
        }
        ld = (sqllock_leader *)(uintptr_t)1;
        rc = sqllock_leader_start(f->url, name, &o, &ld, why, sizeof why);
        if (rc != SQLLOCK_EINVAL || ld != NULL)
            fail_msg("leader_start(%s) = %s, want SQLLOCK_EINVAL",
                     names[i].label, sqllock_errname(rc));
        if (!tu_contains_ci(why, "election name"))
            fail_msg("leader_start(%s): the message '%s' does not name the "
                     "election name", names[i].label, why);
        {
            char any[64], *w, *save = NULL;
            int hit = 0;

            snprintf(any, sizeof any, "%s", names[i].any);
            for (w = strtok_r(any, "|", &save); w != NULL;
                 w = strtok_r(NULL, "|", &save))
                hit |= tu_contains_ci(why, w);
            if (!hit)
                fail_msg("leader_start(%s): '%s' mentions none of %s",
                         names[i].label, why, names[i].any);
        }
        EXPECT_RC(f->db, sqllock_leader_get(f->db, name, &info),
                  SQLLOCK_EINVAL, names[i].label);
        expect_msg(f->db, names[i].label, "election name", names[i].any);
        l = (sqllock_lease *)(uintptr_t)1;
        EXPECT_RC(f->db, sqllock_leader_lease_new(f->db, name, &lo, &l),
                  SQLLOCK_EINVAL, names[i].label);
        assert_null(l);
        expect_msg(f->db, names[i].label, "election name", names[i].any);
        free(big);
    }
    /* Options. */
    o.ttl_ms = 0;
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_null(ld);
    assert_true(tu_contains_ci(why, "ttl"));
    o.ttl_ms = -5;
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "ttl"));
    o.ttl_ms = 1000;
    o.resign_hold_ms = -1;
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "negative"));
    o.resign_hold_ms = 0;
    o.renew_interval_ms = 950;
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "interval"));
    o.renew_interval_ms = 0;
    o.safety_margin_ms = 1000;
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "margin"));
    o.safety_margin_ms = 0;
    assert_int_equal(sqllock_leader_start(f->url, "e", NULL, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "ttl"));
    assert_int_equal(sqllock_leader_start(NULL, "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "URL"));
    assert_int_equal(sqllock_leader_start(f->url, "e", &o, NULL, why,
                                          sizeof why), SQLLOCK_EINVAL);
    assert_true(tu_contains_ci(why, "output"));
    assert_int_equal(sqllock_leader_start("nosuch://x", "e", &o, &ld, why,
                                          sizeof why), SQLLOCK_ESCHEME);
    assert_null(ld);
    EXPECT_RC(f->db, sqllock_leader_get(f->db, "e", NULL), SQLLOCK_EINVAL,
              "leader_get NULL out");
    expect_msg(f->db, "NULL out", NULL, "output|NULL");
    assert_int_equal(sqllock_leader_get(NULL, "e", &info), SQLLOCK_EINVAL);
    lo.ttl_ms = 0;
    EXPECT_RC(f->db, sqllock_leader_lease_new(f->db, "e", &lo, &l),
              SQLLOCK_EINVAL, "leader_lease_new ttl 0");
    expect_msg(f->db, "ttl 0", "ttl", NULL);
    /* A name of exactly the limit: fine, and nobody leads it. */
    memset(ok, 'e', SQLLOCK_PRIMITIVE_NAME_MAX);
    ok[SQLLOCK_PRIMITIVE_NAME_MAX] = '\0';
    EXPECT_RC(f->db, sqllock_leader_get(f->db, ok, &info), SQLLOCK_NOTFOUND,
              "leader_get at the limit");
    /* NULL handles. */
    assert_int_equal(sqllock_leader_is_leader(NULL), 0);
    assert_int_equal(sqllock_leader_token(NULL), 0);
    assert_int_equal(sqllock_leader_remaining_ms(NULL), 0);
    assert_int_equal(sqllock_leader_resign(NULL), SQLLOCK_EINVAL);
    assert_string_equal(sqllock_leader_name(NULL), "");
    sqllock_leader_error(NULL, why, sizeof why);
    assert_string_equal(why, "");
    sqllock_leader_stop(NULL);
}

/* E2 for M1: semaphores -- a NULL, empty, too long or control-character
 * name, permits < 1 or > SQLLOCK_SEM_PERMITS_MAX, a ttl <= 0, no options,
 * a negative wait, a release with nothing held, a second acquire on one
 * handle, NULL handles -- get EINVAL, EMISUSE or ENOTHELD with a message,
 * and take nothing. */
static void test_badinput_E2_bad_semaphores(void **state)
{
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_sem *s = (sqllock_sem *)(uintptr_t)1;
    char name[100], big[SQLLOCK_PRIMITIVE_NAME_MAX + 2];
    int live = -1;

    o.ttl_ms = 10000;
    uniq(name, sizeof name, "sem");
    assert_int_equal(sqllock_sem_new(NULL, name, 3, &o, &s), SQLLOCK_EINVAL);
    assert_null(s);
    assert_int_equal(sqllock_sem_new(f->db, name, 3, &o, NULL),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL out", NULL, "NULL|output|pointer");
    s = (sqllock_sem *)(uintptr_t)1;
    assert_int_equal(sqllock_sem_new(f->db, NULL, 3, &o, &s), SQLLOCK_EINVAL);
    assert_null(s);
    expect_msg(f->db, "NULL name", "semaphore name", "NULL");
    assert_int_equal(sqllock_sem_new(f->db, "", 3, &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "empty name", "semaphore name", "empty");
    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(sqllock_sem_new(f->db, big, 3, &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "long name", "semaphore name", "200");
    big[SQLLOCK_PRIMITIVE_NAME_MAX] = '\0';            /* 200 bytes: fine */
    assert_int_equal(sqllock_sem_new(f->db, big, 3, &o, &s), SQLLOCK_OK);
    sqllock_sem_free(s);
    assert_int_equal(sqllock_sem_new(f->db, "a\x1f" "p0", 3, &o, &s),
                     SQLLOCK_EINVAL);
    expect_msg(f->db, "control name", "semaphore name", "control");
    assert_int_equal(sqllock_sem_new(f->db, name, 0, &o, &s), SQLLOCK_EINVAL);
    assert_null(s);
    expect_msg(f->db, "0 permits", "permits", "0");
    assert_int_equal(sqllock_sem_new(f->db, name, -1, &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "-1 permits", "permits", "-1");
    assert_int_equal(sqllock_sem_new(f->db, name, SQLLOCK_SEM_PERMITS_MAX + 1,
                                     &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "1001 permits", "permits", "1000");
    assert_int_equal(sqllock_sem_new(f->db, name, 3, NULL, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "NULL options", "ttl", NULL);
    o.ttl_ms = 0;
    assert_int_equal(sqllock_sem_new(f->db, name, 3, &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "ttl 0", "ttl", NULL);
    o.ttl_ms = -5;
    assert_int_equal(sqllock_sem_new(f->db, name, 3, &o, &s), SQLLOCK_EINVAL);
    expect_msg(f->db, "ttl -5", "ttl", NULL);
    assert_null(s);
    o.ttl_ms = 10000;
    assert_int_equal(sqllock_sem_new(f->db, name, 3, &o, &s), SQLLOCK_OK);
    assert_int_equal(sqllock_sem_release(s), SQLLOCK_ENOTHELD);
    expect_msg(f->db, "release unheld", "semaphore", "permit|hold");
    assert_int_equal(sqllock_sem_acquire(s, -1), SQLLOCK_EINVAL);
    expect_msg(f->db, "wait -1", "wait", NULL);
    assert_int_equal(sqllock_sem_count(f->db, name, &live), SQLLOCK_OK);
    assert_int_equal(live, 0);
    assert_int_equal(sqllock_sem_try_acquire(s), SQLLOCK_OK);
    /* L8: a second acquire counts the same permit up (since 0.10.0). */
    assert_int_equal(sqllock_sem_try_acquire(s), SQLLOCK_OK);
    assert_int_equal(sqllock_sem_acquire(s, 0), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_count(sqllock_sem_lease(s)), 3);
    assert_int_equal(sqllock_sem_count(f->db, name, &live), SQLLOCK_OK);
    assert_int_equal(live, 1);
    assert_int_equal(sqllock_sem_release(s), SQLLOCK_OK);
    assert_int_equal(sqllock_sem_release(s), SQLLOCK_OK);
    assert_int_equal(sqllock_sem_release(s), SQLLOCK_OK);
    assert_int_equal(sqllock_sem_release(s), SQLLOCK_ENOTHELD);
    sqllock_sem_free(s);
    assert_int_equal(sqllock_sem_count(f->db, "", &live), SQLLOCK_EINVAL);
    expect_msg(f->db, "count empty name", "semaphore name", "empty");
    assert_int_equal(sqllock_sem_count(f->db, name, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_sem_count(NULL, name, &live), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_sem_try_acquire(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_sem_acquire(NULL, 0), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_sem_release(NULL), SQLLOCK_EINVAL);
    assert_null(sqllock_sem_lease(NULL));
    assert_int_equal(sqllock_sem_permit(NULL), -1);
    sqllock_sem_free(NULL);
    victim_untouched(f);
}

/* ------------------------------------------------------------------ */
/* URLs and connections                                                */
/* ------------------------------------------------------------------ */

typedef struct bad_open {
    const char *url;
    int status;
    const char *any;           /* the message mentions one of these */
} bad_open;

static const bad_open bad_open_cases[] = {
    { "sqlite:", SQLLOCK_EURL, "path|empty|file" },
    { "sqlite://", SQLLOCK_EURL, "path|empty|file" },
    { "sqlite::memory:", SQLLOCK_EURL, "memory" },
    { "sqlite://host/path", SQLLOCK_EURL, "host" },
    { "", SQLLOCK_EURL, "empty" },
    { "nosuch://x", SQLLOCK_ESCHEME, "nosuch" },
    { "NoSuch://x", SQLLOCK_ESCHEME, "nosuch" },
    { "no scheme at all", SQLLOCK_EURL, "scheme" },
    { "sqlite:///proc/nonexistent/x.db", SQLLOCK_ECONNECT,
      "nonexistent|x.db" },
};

/* E2: malformed URLs, unknown schemes, and places that cannot hold a
 * database. sqllock_open() still returns a handle to read the reason. */
static void test_badinput_E2_bad_urls(void **state)
{
    const bad_open *cases = bad_open_cases;
    fixture *f = *state;
    size_t i;

    for (i = 0; i < sizeof bad_open_cases / sizeof bad_open_cases[0]; i++) {
        sqllock_db *db = NULL;
        int rc = sqllock_open(cases[i].url, NULL, &db);
        if (rc != cases[i].status) {
            char msg[700];
            snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
            sqllock_close(db);
            fail_msg("open(\"%s\") = %s, want %s (%s)", cases[i].url,
                     sqllock_errname(rc), sqllock_errname(cases[i].status),
                     msg);
        }
        assert_non_null(db);
        assert_int_equal(sqllock_errcode(db), cases[i].status);
        expect_msg(db, cases[i].url, NULL, cases[i].any);
        /* A failed handle refuses sqllock_init() and lock work. */
        assert_int_not_equal(sqllock_init(db), SQLLOCK_OK);
        {
            sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
            sqllock_lease *l = NULL;
            o.ttl_ms = 1000;
            if (sqllock_lease_new(db, "x", &o, &l) == SQLLOCK_OK) {
                rc = sqllock_lease_try_acquire(l);
                assert_int_not_equal(rc, SQLLOCK_OK);
                assert_int_not_equal(rc, SQLLOCK_BUSY);
                sqllock_lease_free(l);
            }
        }
        sqllock_close(db);
        victim_untouched(f);
    }
    /* NULL: EINVAL, and the handle is still set to say so. */
    {
        sqllock_db *db = NULL;
        assert_int_equal(sqllock_open(NULL, NULL, &db), SQLLOCK_EINVAL);
        assert_non_null(db);
        expect_msg(db, "NULL URL", "URL", NULL);
        sqllock_close(db);
    }
    /* Known schemes whose driver was not built say so. */
    {
        static const char *const notbuilt[] = { "postgres", "mysql" };
        size_t k;
        for (k = 0; k < 2; k++) {
            char url[100];
            sqllock_db *db = NULL;
            if (sqllock_driver_find(notbuilt[k]) != NULL)
                continue;
            snprintf(url, sizeof url, "%s://u:pw@localhost/db", notbuilt[k]);
            assert_int_equal(sqllock_open(url, NULL, &db),
                             SQLLOCK_ENOTBUILT);
            assert_non_null(db);
            expect_msg(db, url, notbuilt[k], NULL);
            sqllock_close(db);
        }
    }
    /* MySQL's innodb_flush= takes 1 or any (L10: the server's
     * innodb_flush_log_at_trx_commit must be 1 unless the URL accepts
     * another); on a MySQL handle's own URL, both connect (the test
     * servers flush at each commit). test_galnet has a server whose
     * setting is 0. */
    if (sqllock_driver_find("mysql") != NULL) {
        static const char *const good[] = { "innodb_flush=1",
                                            "innodb_flush=any" };
        sqllock_db *db = NULL;
        size_t k;

        assert_int_equal(sqllock_open("mysql://u:pw@localhost/db?"
                                      "innodb_flush=2", NULL, &db),
                         SQLLOCK_EURL);
        expect_msg(db, "innodb_flush=2", "innodb_flush", NULL);
        sqllock_close(db);
        for (k = 0; k < 2 && strcmp(tu_url_driver(f->url), "mysql") == 0;
             k++) {
            char url[4400];

            snprintf(url, sizeof url, "%s%s%s", f->url,
                     strchr(f->url, '?') != NULL ? "&" : "?", good[k]);
            db = NULL;
            EXPECT_RC(db, sqllock_open(url, NULL, &db), SQLLOCK_OK, good[k]);
            EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, good[k]);
            sqllock_close(db);
        }
    }
    /* A negative timeout in the options. */
    {
        sqllock_options so = SQLLOCK_OPTIONS_INIT;
        sqllock_db *db = NULL;
        so.busy_timeout_ms = -1;
        assert_int_equal(sqllock_open(f->url, &so, &db), SQLLOCK_EINVAL);
        expect_msg(db, "busy timeout -1", "timeout", NULL);
        sqllock_close(db);
    }
    victim_untouched(f);
}

/* E1: sqllock_init() on a handle whose open failed refuses, and its
 * message still says why the open failed. */
static void test_badinput_E1_init_after_failed_open_keeps_reason(void **state)
{
    fixture *f = *state;
    size_t i;

    for (i = 0; i < sizeof bad_open_cases / sizeof bad_open_cases[0]; i++) {
        const bad_open *c = &bad_open_cases[i];
        sqllock_db *db = NULL;
        char msg[700], words[100];
        const char *w;
        int rc, hit = 0;

        assert_int_equal(sqllock_open(c->url, NULL, &db), c->status);
        rc = sqllock_init(db);
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        assert_int_not_equal(rc, SQLLOCK_OK);
        snprintf(words, sizeof words, "%s", c->any);
        for (w = strtok(words, "|"); w != NULL; w = strtok(NULL, "|"))
            if (tu_contains_ci(msg, w))
                hit = 1;
        if (!hit)
            fail_msg("open(\"%s\") then init: message \"%s\" no longer "
                     "says why the open failed (%s)", c->url, msg, c->any);
    }
    victim_untouched(f);
}

/* S1/E1: a database without the tables says ENOSCHEMA, naming the
 * remedy, for acquire, list and release alike, and sqllock_init() fixes
 * it. On PostgreSQL and MySQL the empty target is the one scripts/
 * servers.sh makes (see tu_empty_target()). */
static void test_badinput_S1_missing_schema(void **state)
{
    fixture *f = *state;
    char url[4400], why[1000];
    sqllock_db *db = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    tu_row r;

    if (!tu_empty_target(f->db, f->url, f->dir, url, sizeof url, why,
                         sizeof why)) {
        tu_cannot_run("S1_missing_schema on %s: %s",
                      sqllock_db_driver(f->db), why);
    }
    assert_int_equal(sqllock_open(url, NULL, &db), SQLLOCK_OK);
    o.ttl_ms = 10000;
    assert_int_equal(sqllock_lease_new(db, VICTIM, &o, &l), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_try_acquire(l), SQLLOCK_ENOSCHEMA);
    expect_msg(db, "no schema", "init", "schema|table|relation|exist");
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(tu_find(db, VICTIM, &r), SQLLOCK_ENOSCHEMA);
    expect_msg(db, "no schema (list)", "init", "schema|table|relation|exist");
    {
        sqllock_lease *x = NULL;
        assert_int_equal(sqllock_lease_attach(db, VICTIM, f->owner, f->token,
                                              &o, &x),
                         SQLLOCK_OK);
        assert_int_equal(sqllock_lease_release(x), SQLLOCK_ENOSCHEMA);
        expect_msg(db, "no schema (release)", "init", NULL);
        sqllock_lease_free(x);
    }
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_try_acquire(l), SQLLOCK_OK);
    assert_int_equal(sqllock_lease_release(l), SQLLOCK_OK);
    sqllock_lease_free(l);
    sqllock_close(db);
    assert_int_equal(tu_empty_target_reset(f->db), SQLLOCK_OK);
    victim_untouched(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_badinput_E2_bad_names),
        cmocka_unit_test(test_badinput_E2_name_limits_accepted),
        cmocka_unit_test(test_badinput_D3_hostile_names_round_trip),
        cmocka_unit_test(test_badinput_E2_bad_lease_options),
        cmocka_unit_test(test_badinput_E2_negative_wait),
        cmocka_unit_test(test_badinput_E2_bad_many),
        cmocka_unit_test(test_badinput_E2_bad_rw),
        cmocka_unit_test(test_badinput_E2_bad_attach),
        cmocka_unit_test(test_badinput_E2_failed_attach_clears_out),
        cmocka_unit_test(test_badinput_E2_null_handles),
        cmocka_unit_test(test_badinput_E2_bad_leader),
        cmocka_unit_test(test_badinput_E2_bad_semaphores),
        cmocka_unit_test(test_badinput_E2_bad_urls),
        cmocka_unit_test(test_badinput_E1_init_after_failed_open_keeps_reason),
        cmocka_unit_test(test_badinput_S1_missing_schema),
    };
    return TU_RUN_PER_URL("badinput", &g_url, tests, setup, teardown);
}
