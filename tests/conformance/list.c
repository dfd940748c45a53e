/*
 * list.c -- test_conformance: sqllock_list, attach (L3) and
 * names as data (D3).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "conformance.h"
#include "internal.h"

/* ------------------------------------------------------------------ */
/* sqllock_list, attach, names                                        */
/* ------------------------------------------------------------------ */

typedef struct list_order {
    const char *n[3];
    int pos[3];                /* 1-based position of each name */
    int i;
} list_order;

static int list_order_cb(void *ctx, const sqllock_lease_info *info)
{
    list_order *o = ctx;
    int k;

    o->i++;
    for (k = 0; k < 3; k++)
        if (strcmp(info->name, o->n[k]) == 0)
            o->pos[k] = o->i;
    return 0;
}

static int list_stop_cb(void *ctx, const sqllock_lease_info *info)
{
    int *calls = ctx;
    (void)info;
    ++*calls;
    return 42;
}

/* sqllock_list shows the row: name, owner, holder, token, times. */
void test_conformance_list_shows_row(void **state)
{
    fixture *f = *state;
    char n1[300], n2[300], n3[300];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a = NULL, *b = NULL, *c = NULL;
    tu_row r;

    snprintf(n1, sizeof n1, "%s", cf_lock_name(f, "list", "a"));
    snprintf(n2, sizeof n2, "%s", cf_lock_name(f, "list", "b"));
    snprintf(n3, sizeof n3, "%s", cf_lock_name(f, "list", "c"));
    o.ttl_ms = 20000;
    o.holder = "conformance holder";
    ASSERT_RC(sqllock_lease_new(f->db, n2, &o, &b), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_new(f->db, n1, &o, &a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_new(f->db, n3, &o, &c), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(c), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);

    ASSERT_RC(tu_find(f->db, n2, &r), SQLLOCK_OK, f->db);
    assert_int_equal(r.found, 1);
    assert_string_equal(r.owner, sqllock_lease_owner(b));
    assert_int_equal(r.token, sqllock_lease_token(b));
    assert_string_equal(r.holder, "conformance holder");
    assert_true(r.remaining_ms > 0);
    assert_true(r.remaining_ms <= 20000);
    assert_true(r.expires_at_ms > r.acquired_at_ms);
    /* expires = acquired + ttl by the server clock (allow rounding). */
    assert_true(r.expires_at_ms - r.acquired_at_ms >= 19999);
    assert_true(r.expires_at_ms - r.acquired_at_ms <= 20001);
    /* Server times are ms since the epoch: after 2020. */
    assert_true(r.acquired_at_ms > INT64_C(1577836800000));

    /* Rows come in name order: a, b, c. */
    {
        list_order ord;
        memset(&ord, 0, sizeof ord);
        ord.n[0] = n1;
        ord.n[1] = n2;
        ord.n[2] = n3;
        ASSERT_RC(sqllock_list(f->db, list_order_cb, &ord), SQLLOCK_OK,
                  f->db);
        assert_true(ord.pos[0] > 0 && ord.pos[1] > 0 && ord.pos[2] > 0);
        assert_true(ord.pos[0] < ord.pos[1]);
        assert_true(ord.pos[1] < ord.pos[2]);
    }
    /* A non-zero return from the callback stops the walk and is returned. */
    {
        int calls = 0;
        assert_int_equal(sqllock_list(f->db, list_stop_cb, &calls), 42);
        assert_int_equal(calls, 1);
    }

    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_release(b), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_release(c), SQLLOCK_OK, f->db);
    cf_expect_no_row(f->db, n1);
    cf_expect_no_row(f->db, n2);
    cf_expect_no_row(f->db, n3);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_lease_free(c);
}

/* An expired row that nobody took over shows a negative remainder. */
void test_conformance_list_expired_row_negative(void **state)
{
    fixture *f = *state;
    const char *name = cf_lock_name(f, "listexpired", "a");
    sqllock_lease *a = cf_new_lease(f->db, name, 100);
    tu_row r;

    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    tu_sleep_ms(250);
    ASSERT_RC(tu_find(f->db, name, &r), SQLLOCK_OK, f->db);
    assert_int_equal(r.found, 1);
    assert_true(r.remaining_ms < 0);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    sqllock_lease_free(a);
}

/* L3: attach makes a handle for a lease acquired elsewhere (as the CLI
 * does); it can renew and release it, and the first holder then has lost
 * it. */
void test_conformance_L3_attach_renew_release(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    const char *name = cf_lock_name(f, "attach", "a");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a = cf_new_lease(f->db, name, 30000);
    sqllock_lease *x = NULL;

    o.ttl_ms = 30000;
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_attach(db2, name, sqllock_lease_owner(a),
                                   sqllock_lease_token(a), &o, &x),
              SQLLOCK_OK, db2);
    /* Attached: one hold, but not trusted until a renew (L6). */
    assert_int_equal(sqllock_lease_held(x), 0);
    assert_int_equal(sqllock_lease_count(x), 1);
    assert_int_equal(sqllock_lease_token(x), sqllock_lease_token(a));
    assert_string_equal(sqllock_lease_owner(x), sqllock_lease_owner(a));
    assert_string_equal(sqllock_lease_name(x), name);
    assert_int_equal(sqllock_lease_remaining_ms(x), 0);
    ASSERT_RC(sqllock_lease_renew(x), SQLLOCK_OK, db2);
    assert_int_equal(sqllock_lease_held(x), 1);
    assert_true(sqllock_lease_remaining_ms(x) > 0);
    assert_true(sqllock_lease_remaining_ms(x) <= 27000);
    cf_expect_row(f->db, name, sqllock_lease_owner(a), sqllock_lease_token(a));
    ASSERT_RC(sqllock_lease_release(x), SQLLOCK_OK, db2);
    assert_int_equal(sqllock_lease_held(x), 0);
    cf_expect_no_row(f->db, name);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_LOST, f->db);
    sqllock_lease_free(x);
    x = NULL;

    /* Attaching to a row that does not exist: nothing to release. */
    ASSERT_RC(sqllock_lease_attach(db2, name,
                                   "0123456789abcdef0123456789abcdef", 1, &o,
                                   &x),
              SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_lease_release(x), SQLLOCK_LOST, db2);
    sqllock_lease_free(x);
    sqllock_lease_free(a);
    sqllock_close(db2);
}

/* D3: names with quotes, semicolons and format directives are data: they
 * round-trip exactly and harm no other row. */
void test_conformance_D3_names_round_trip(void **state)
{
    fixture *f = *state;
    static const char *const tails[] = {
        "it's", "say \"hi\"", "semi;colon", "%s%n%d%%", "back\\slash",
        "'; DROP TABLE sqllock_lease; --", "x' OR '1'='1",
        "\xc3\xa9t\xc3\xa9 \xe5\x90\x8d\xe5\x89\x8d \xf0\x9f\x94\x92",
        "$1 ? :name @v", "  spaces  ",
    };
    enum { N = sizeof tails / sizeof tails[0] };
    sqllock_lease *l[N];
    char names[N][300];
    sqllock_lease *guard =
        cf_new_lease(f->db, cf_lock_name(f, "names", "guard"), 30000);
    size_t i;

    ASSERT_RC(sqllock_lease_try_acquire(guard), SQLLOCK_OK, f->db);
    for (i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "conf-%ld-names-%s",
                 (long)getpid(), tails[i]);
        l[i] = cf_new_lease(f->db, names[i], 30000);
        assert_string_equal(sqllock_lease_name(l[i]), names[i]);
        ASSERT_RC(sqllock_lease_try_acquire(l[i]), SQLLOCK_OK, f->db);
    }
    for (i = 0; i < N; i++)
        cf_expect_row(f->db, names[i], sqllock_lease_owner(l[i]),
                      sqllock_lease_token(l[i]));
    cf_expect_row(f->db, sqllock_lease_name(guard), sqllock_lease_owner(guard),
                  sqllock_lease_token(guard));
    for (i = 0; i < N; i++) {
        ASSERT_RC(sqllock_lease_release(l[i]), SQLLOCK_OK, f->db);
        cf_expect_no_row(f->db, names[i]);
        sqllock_lease_free(l[i]);
    }
    cf_expect_row(f->db, sqllock_lease_name(guard), sqllock_lease_owner(guard),
                  sqllock_lease_token(guard));
    ASSERT_RC(sqllock_lease_release(guard), SQLLOCK_OK, f->db);
    sqllock_lease_free(guard);
}

/* The rows a semaphore, shared lock, fair queue or election keeps under
 * one name (derived names, core/internal.h; LEASE_RANGE, driver version
 * 11): the range of NAME holds exactly NAME's derived rows -- not NAME
 * itself, not "NAME2" or "NAME!" (bytes just above the range) -- ordered
 * by name, and reading one name finds that row alone. Derived rows are
 * ordinary leases (L1: a second handle is BUSY). */
typedef struct range_seen {
    char names[8][SQLLOCK_NAME_MAX + 1];
    int n;
} range_seen;

static int range_cb(void *ctx, const sqllock_lease_info *info)
{
    range_seen *rs = ctx;

    if (rs->n < 8)
        snprintf(rs->names[rs->n], sizeof rs->names[0], "%s", info->name);
    rs->n++;
    return 0;
}

void test_conformance_D1_derived_rows_range(void **state)
{
    fixture *f = *state;
    char base[128], other[160], da[SQLLOCK_NAME_MAX + 1],
        db_[SQLLOCK_NAME_MAX + 1], lo[SQLLOCK_NAME_MAX + 1],
        hi[SQLLOCK_NAME_MAX + 1], buf[SQLLOCK__LEASE_GET_BUF];
    sqllock_lease *l[5], *busy = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease_info info;
    range_seen rs;
    int i, found;

    snprintf(base, sizeof base, "%s", cf_lock_name(f, "range", "base"));
    o.ttl_ms = 30000;
    ASSERT_RC(sqllock__derived_name(f->db, da, base, "p1", "semaphore name"),
              SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock__derived_name(f->db, db_, base, "p0", "semaphore name"),
              SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock__lease_new_derived(f->db, da, &o, &l[0]), SQLLOCK_OK,
              f->db);
    ASSERT_RC(sqllock__lease_new_derived(f->db, db_, &o, &l[1]), SQLLOCK_OK,
              f->db);
    l[2] = cf_new_lease(f->db, base, 30000);
    snprintf(other, sizeof other, "%s2", base);
    l[3] = cf_new_lease(f->db, other, 30000);
    snprintf(other, sizeof other, "%s!", base);
    l[4] = cf_new_lease(f->db, other, 30000);
    /* The derived rows through the primitives' own try: the public one
     * refuses a handle over a primitive's row (issue 26 item 8b). */
    for (i = 0; i < 5; i++)
        ASSERT_RC(i < 2 ? sqllock__lease_try(l[i])
                        : sqllock_lease_try_acquire(l[i]), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock__lease_new_derived(f->db, da, &o, &busy), SQLLOCK_OK,
              f->db);
    ASSERT_RC(sqllock__lease_try(busy), SQLLOCK_BUSY, f->db);
    sqllock_lease_free(busy);

    sqllock__derived_range(base, lo, hi);
    memset(&rs, 0, sizeof rs);
    ASSERT_RC(sqllock__lease_range(f->db, lo, hi, range_cb, &rs, "range"),
              SQLLOCK_OK, f->db);
    assert_int_equal(rs.n, 2);
    assert_string_equal(rs.names[0], db_);     /* "p0" before "p1" */
    assert_string_equal(rs.names[1], da);

    ASSERT_RC(sqllock__lease_get(f->db, base, &info, buf, &found, "get"),
              SQLLOCK_OK, f->db);
    assert_int_equal(found, 1);
    assert_string_equal(info.owner, sqllock_lease_owner(l[2]));
    assert_int_equal(info.token, sqllock_lease_token(l[2]));
    assert_true(info.remaining_ms > 0);
    ASSERT_RC(sqllock__lease_get(f->db, da, &info, buf, &found, "get"),
              SQLLOCK_OK, f->db);
    assert_int_equal(found, 1);
    assert_string_equal(info.owner, sqllock_lease_owner(l[0]));
    for (i = 0; i < 5; i++) {
        ASSERT_RC(sqllock_lease_release(l[i]), SQLLOCK_OK, f->db);
        sqllock_lease_free(l[i]);
    }
    ASSERT_RC(sqllock__lease_get(f->db, base, &info, buf, &found, "get"),
              SQLLOCK_OK, f->db);
    assert_int_equal(found, 0);

    /* Bad bases: over SQLLOCK_PRIMITIVE_NAME_MAX, a control character. */
    memset(lo, 'x', SQLLOCK_PRIMITIVE_NAME_MAX + 1);
    lo[SQLLOCK_PRIMITIVE_NAME_MAX + 1] = '\0';
    ASSERT_RC(sqllock__derived_name(f->db, da, lo, "p0", "semaphore name"),
              SQLLOCK_EINVAL, f->db);
    assert_non_null(strstr(sqllock_errmsg(f->db), "SQLLOCK_PRIMITIVE_NAME_MAX"));
    ASSERT_RC(sqllock__derived_name(f->db, da, "a\x1f" "b", "p0",
                                    "semaphore name"),
              SQLLOCK_EINVAL, f->db);
}

/* sqllock_lease_lookup(): the row of exactly one name, in one round
 * trip -- a held lease's owner, token and holder; an expired row not yet
 * taken over (remaining_ms <= 0); a primitive's derived row by its raw
 * name; SQLLOCK_NOTFOUND for no row (nor for "NAME2" beside NAME); and
 * bad input (E2). */
typedef struct lookup_seen {
    int calls;
    tu_row r;
} lookup_seen;

static int lookup_cb(void *ctx, const sqllock_lease_info *info)
{
    lookup_seen *s = ctx;

    s->calls++;
    snprintf(s->r.owner, sizeof s->r.owner, "%s", info->owner);
    snprintf(s->r.holder, sizeof s->r.holder, "%s", info->holder);
    s->r.token = info->token;
    s->r.remaining_ms = info->remaining_ms;
    s->r.acquired_at_ms = info->acquired_at_ms;
    s->r.expires_at_ms = info->expires_at_ms;
    return 0;
}

void test_conformance_lookup_one_row(void **state)
{
    fixture *f = *state;
    char name[300], other[320], row[SQLLOCK_NAME_MAX + 1];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a = NULL, *d = NULL, *e = NULL;
    lookup_seen s;

    snprintf(name, sizeof name, "%s", cf_lock_name(f, "lookup", "a"));
    snprintf(other, sizeof other, "%s2", name);
    o.ttl_ms = 20000;
    o.holder = "lookup holder";
    memset(&s, 0, sizeof s);
    ASSERT_RC(sqllock_lease_lookup(f->db, name, lookup_cb, &s),
              SQLLOCK_NOTFOUND, f->db);
    assert_int_equal(s.calls, 0);
    assert_non_null(strstr(sqllock_errmsg(f->db), name));

    ASSERT_RC(sqllock_lease_new(f->db, name, &o, &a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_lookup(f->db, name, lookup_cb, &s), SQLLOCK_OK,
              f->db);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.r.owner, sqllock_lease_owner(a));
    assert_int_equal(s.r.token, sqllock_lease_token(a));
    assert_string_equal(s.r.holder, "lookup holder");
    assert_true(s.r.remaining_ms > 0 && s.r.remaining_ms <= 20000);
    assert_true(s.r.expires_at_ms - s.r.acquired_at_ms >= 19999);
    memset(&s, 0, sizeof s);
    ASSERT_RC(sqllock_lease_lookup(f->db, other, lookup_cb, &s),
              SQLLOCK_NOTFOUND, f->db);
    assert_int_equal(s.calls, 0);

    /* A derived row, by its raw name (BASE 0x1f TAG). */
    ASSERT_RC(sqllock__derived_name(f->db, row, name, "p0",
                                    "semaphore name"), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock__lease_new_derived(f->db, row, &o, &d), SQLLOCK_OK,
              f->db);
    ASSERT_RC(sqllock__lease_try(d), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_lookup(f->db, row, lookup_cb, &s), SQLLOCK_OK,
              f->db);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.r.owner, sqllock_lease_owner(d));

    /* An expired row is found, with nothing left. */
    e = cf_new_lease(f->db, other, 100);
    ASSERT_RC(sqllock_lease_try_acquire(e), SQLLOCK_OK, f->db);
    tu_sleep_ms(250);
    memset(&s, 0, sizeof s);
    ASSERT_RC(sqllock_lease_lookup(f->db, other, lookup_cb, &s), SQLLOCK_OK,
              f->db);
    assert_int_equal(s.calls, 1);
    assert_true(s.r.remaining_ms <= 0);

    /* E2. */
    assert_int_equal(sqllock_lease_lookup(NULL, name, lookup_cb, &s),
                     SQLLOCK_EINVAL);
    ASSERT_RC(sqllock_lease_lookup(f->db, NULL, lookup_cb, &s),
              SQLLOCK_EINVAL, f->db);
    assert_non_null(strstr(sqllock_errmsg(f->db), "NULL"));
    ASSERT_RC(sqllock_lease_lookup(f->db, "", lookup_cb, &s),
              SQLLOCK_EINVAL, f->db);
    assert_non_null(strstr(sqllock_errmsg(f->db), "empty"));
    ASSERT_RC(sqllock_lease_lookup(f->db, name, NULL, NULL),
              SQLLOCK_EINVAL, f->db);
    assert_non_null(strstr(sqllock_errmsg(f->db), "callback"));
    {
        char big[SQLLOCK_NAME_MAX + 40];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        ASSERT_RC(sqllock_lease_lookup(f->db, big, lookup_cb, &s),
                  SQLLOCK_EINVAL, f->db);
        assert_non_null(strstr(sqllock_errmsg(f->db), "too long"));
    }

    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, f->db);
    sqllock_lease_release(e);
    sqllock_lease_free(a);
    sqllock_lease_free(d);
    sqllock_lease_free(e);
}

/* C5 in the library (sqllock_force_release()): a live lease is freed
 * only when asked to (BUSY otherwise, the row reported), an expired one
 * at once, a given token must be the row's; the audit line goes into the
 * name's history in the same transaction (a primitive's row, named as
 * `sqllock list` shows it, into its base's, the tag beside the status);
 * the holder then hears LOST; a kind marker is never freed (N1); bad
 * input is refused (E2). */
static int force_cb(void *ctx, const sqllock_lease_info *info)
{
    tu_row *r = ctx;

    r->found++;
    snprintf(r->owner, sizeof r->owner, "%s", info->owner);
    snprintf(r->holder, sizeof r->holder, "%s", info->holder);
    r->token = info->token;
    r->remaining_ms = info->remaining_ms;
    return 0;
}

/* The newest line of `name`'s history, "" without one. */
static void history_top(sqllock_db *db, const char *name, char *line,
                        size_t size)
{
    char key[SQLLOCK_NAME_MAX + 1];
    void *value = NULL;
    size_t len = 0;
    int64_t version;
    const char *nl;

    sqllock_history_key(name, key, sizeof key);
    line[0] = '\0';
    if (sqllock_record_get(db, key, &value, &len, &version) == SQLLOCK_OK &&
        value != NULL) {
        nl = memchr(value, '\n', len);
        snprintf(line, size, "%.*s",
                 (int)(nl != NULL ? (size_t)(nl - (char *)value) : len),
                 (char *)value);
    }
    sqllock_free(value);
}

void test_conformance_C5_force_release(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    char name[300], sname[300], row[320], line[700], want[400];
    sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a, *e;
    sqllock_sem *sem = NULL;
    tu_row r;

    snprintf(name, sizeof name, "%s", cf_lock_name(f, "force", "a"));
    snprintf(sname, sizeof sname, "%s", cf_lock_name(f, "force", "s"));
    a = cf_new_lease(db2, name, 60000);
    memset(&r, 0, sizeof r);
    ASSERT_RC(sqllock_force_release(f->db, name, NULL, force_cb, &r),
              SQLLOCK_NOTFOUND, f->db);
    assert_int_equal(r.found, 0);

    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_force_release(f->db, name, NULL, force_cb, &r),
              SQLLOCK_BUSY, f->db);
    assert_int_equal(r.found, 1);
    assert_int_equal(r.token, sqllock_lease_token(a));
    assert_non_null(strstr(sqllock_errmsg(f->db), "alive"));
    fo.token = sqllock_lease_token(a) + 1000;
    fo.live = 1;
    ASSERT_RC(sqllock_force_release(f->db, name, &fo, NULL, NULL),
              SQLLOCK_CONFLICT, f->db);
    fo.token = sqllock_lease_token(a);
    fo.who = "operator-7";
    memset(&r, 0, sizeof r);
    ASSERT_RC(sqllock_force_release(f->db, name, &fo, force_cb, &r),
              SQLLOCK_OK, f->db);
    assert_int_equal(r.token, sqllock_lease_token(a));
    assert_string_equal(r.owner, sqllock_lease_owner(a));
    cf_expect_no_row(f->db, name);
    history_top(f->db, name, line, sizeof line);
    snprintf(want, sizeof want, "force\t%lld\t",
             (long long)sqllock_lease_token(a));
    assert_true(strncmp(line, want, strlen(want)) == 0);
    assert_non_null(strstr(line, "\tlive\toperator-7"));
    ASSERT_RC(sqllock_lease_renew(a), SQLLOCK_LOST, db2);

    /* Expired: freed without asking, "expired" in the line, the default
     * who ("user@host", and the database user where it has users). */
    e = cf_new_lease(db2, name, 100);
    ASSERT_RC(sqllock_lease_try_acquire(e), SQLLOCK_OK, db2);
    tu_sleep_ms(250);
    ASSERT_RC(sqllock_force_release(f->db, name, NULL, NULL, NULL),
              SQLLOCK_OK, f->db);
    history_top(f->db, name, line, sizeof line);
    assert_non_null(strstr(line, "\texpired\t"));
    assert_non_null(strstr(line, "@"));
    if (strcmp(sqllock_db_driver(f->db), "sqlite") != 0)
        assert_non_null(strstr(line, " as "));
    assert_null(strchr(line, '\001'));         /* the role put in */

    /* A semaphore's permit by its row as `sqllock list` shows it; the
     * name itself is the kind marker (N1). */
    o.ttl_ms = 60000;
    ASSERT_RC(sqllock_sem_new(db2, sname, 1, &o, &sem), SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_sem_try_acquire(sem), SQLLOCK_OK, db2);
    snprintf(row, sizeof row, "%s [p0]", sname);
    fo = (sqllock_force_options)SQLLOCK_FORCE_OPTIONS_INIT;
    fo.live = 1;
    ASSERT_RC(sqllock_force_release(f->db, row, &fo, NULL, NULL), SQLLOCK_OK,
              f->db);
    history_top(f->db, sname, line, sizeof line);
    assert_non_null(strstr(line, "\tlive [p0]\t"));
    ASSERT_RC(sqllock_sem_release(sem), SQLLOCK_LOST, db2);
    ASSERT_RC(sqllock_force_release(f->db, sname, &fo, NULL, NULL),
              SQLLOCK_EKIND, f->db);

    /* E2. */
    assert_int_equal(sqllock_force_release(NULL, name, NULL, NULL, NULL),
                     SQLLOCK_EINVAL);
    ASSERT_RC(sqllock_force_release(f->db, NULL, NULL, NULL, NULL),
              SQLLOCK_EINVAL, f->db);
    fo.struct_version = 0;
    ASSERT_RC(sqllock_force_release(f->db, name, &fo, NULL, NULL),
              SQLLOCK_EINVAL, f->db);
    fo = (sqllock_force_options)SQLLOCK_FORCE_OPTIONS_INIT;
    fo.token = -1;
    ASSERT_RC(sqllock_force_release(f->db, name, &fo, NULL, NULL),
              SQLLOCK_EINVAL, f->db);

    sqllock_sem_free(sem);
    sqllock_lease_free(a);
    sqllock_lease_free(e);
    sqllock_close(db2);
}
