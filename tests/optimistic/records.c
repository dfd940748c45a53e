/*
 * records.c -- test_optimistic: versioned records (O1); the retry helper
 * under contention (O2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "optimistic.h"

/* ------------------------------------------------------------------ */
/* O1: versioned records                                               */
/* ------------------------------------------------------------------ */

void test_optimistic_O1_get_missing_notfound(void **state)
{
    fixture *f = *state;
    char key[128];

    rkey(key, sizeof key, "missing");
    rec_expect_missing(f->db, key, "get of a key never written");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_NOTFOUND,
              "errcode after NOTFOUND");
    /* Every output pointer may be NULL. */
    EXPECT_RC(f->db, sqllock_record_get(f->db, key, NULL, NULL, NULL),
              SQLLOCK_NOTFOUND, "get with NULL outputs");
}

void test_optimistic_O1_create_conflict(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t ver = 0;

    rkey(key, sizeof key, "create");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "first", 5),
              SQLLOCK_OK, "create");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_OK, "errcode after OK");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "second!", 7),
              SQLLOCK_CONFLICT, "create of an existing key");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_CONFLICT,
              "errcode after CONFLICT");
    rec_expect(f->db, key, "first", 5, 1, "after the second create");
    /* Outputs may be NULL on success too. */
    EXPECT_RC(f->db, sqllock_record_get(f->db, key, NULL, NULL, &ver),
              SQLLOCK_OK, "get with only a version");
    assert_int_equal(ver, 1);
    rec_remove(f->db, key);
}

void test_optimistic_O1_binary_and_empty_values(void **state)
{
    fixture *f = *state;
    static const char bin[] = { 'a', '\0', 'b', '\0', '\0', '\xff', '\x80',
                                'z', '\0' };
    char key[128], ekey[128];
    int64_t nv = 0;

    rkey(key, sizeof key, "binary");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, bin, sizeof bin),
              SQLLOCK_OK, "create with NUL bytes");
    rec_expect(f->db, key, bin, sizeof bin, 1, "value with NUL bytes");
    /* Replace with 0 bytes, then back. */
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "", 0, &nv),
              SQLLOCK_OK, "cas to a 0-byte value");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, "", 0, 2, "0-byte value after cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 2, bin, sizeof bin, &nv),
              SQLLOCK_OK, "cas back to bytes");
    rec_expect(f->db, key, bin, sizeof bin, 3, "bytes after cas");

    rkey(ekey, sizeof ekey, "empty");
    EXPECT_RC(f->db, sqllock_record_create(f->db, ekey, "", 0), SQLLOCK_OK,
              "create with a 0-byte value");
    rec_expect(f->db, ekey, "", 0, 1, "0-byte value");
    rec_remove(f->db, key);
    rec_remove(f->db, ekey);
}

void test_optimistic_O1_cas_versions(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t nv = -1;

    rkey(key, sizeof key, "cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "x", 1, &nv),
              SQLLOCK_CONFLICT, "cas on a missing record");
    rec_expect_missing(f->db, key, "cas on a missing record creates nothing");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "v1", 2), SQLLOCK_OK,
              "create");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "v2-longer", 9, &nv),
              SQLLOCK_OK, "cas with the right version");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, "v2-longer", 9, 2, "after cas");
    nv = -1;
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "stale", 5, &nv),
              SQLLOCK_CONFLICT, "cas with the stale version 1");
    rec_expect(f->db, key, "v2-longer", 9, 2, "after a stale cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 3, "ahead", 5, NULL),
              SQLLOCK_CONFLICT, "cas with a version from the future");
    {
        int rc = sqllock_record_cas(f->db, key, 0, "zero", 4, NULL);
        if (rc != SQLLOCK_CONFLICT && rc != SQLLOCK_EINVAL)
            fail_msg("cas with expected version 0: got %s, want CONFLICT "
                     "or EINVAL (%s)", sqllock_errname(rc),
                     sqllock_errmsg(f->db));
    }
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 2, "v3", 2, NULL),
              SQLLOCK_OK, "cas with NULL new_version");
    rec_expect(f->db, key, "v3", 2, 3, "after the third write");
    rec_remove(f->db, key);
}

void test_optimistic_O1_delete_versions(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t nv = 0;

    rkey(key, sizeof key, "delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 1), SQLLOCK_CONFLICT,
              "delete of a missing record");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "d", 1), SQLLOCK_OK,
              "create");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "dd", 2, &nv),
              SQLLOCK_OK, "cas to version 2");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 1), SQLLOCK_CONFLICT,
              "delete with the wrong version");
    rec_expect(f->db, key, "dd", 2, 2, "after a refused delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 2), SQLLOCK_OK,
              "delete with the right version");
    rec_expect_missing(f->db, key, "after delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 2), SQLLOCK_CONFLICT,
              "second delete");
    /* A new record under the key starts again at version 1. */
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "again", 5),
              SQLLOCK_OK, "create after delete");
    rec_expect(f->db, key, "again", 5, 1, "re-created");
    rec_remove(f->db, key);
}

void test_optimistic_O1_value_max(void **state)
{
    fixture *f = *state;
    char key[128], key2[128];
    unsigned char *big = malloc(SQLLOCK_VALUE_MAX + 1);
    unsigned seed = 12345;
    size_t i;
    int64_t nv = 0;

    assert_non_null(big);
    for (i = 0; i < (size_t)SQLLOCK_VALUE_MAX + 1; i++)
        big[i] = (i % 97 == 0) ? 0 : (unsigned char)(rand_r(&seed) & 0xff);
    rkey(key, sizeof key, "max");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, big,
                                           SQLLOCK_VALUE_MAX),
              SQLLOCK_OK, "create with SQLLOCK_VALUE_MAX bytes");
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 1, "1 MiB value");
    /* Over the limit: EINVAL, nothing written. */
    expect_einval(f->db, sqllock_record_cas(f->db, key, 1, big,
                                            SQLLOCK_VALUE_MAX + 1, &nv),
                  "cas with SQLLOCK_VALUE_MAX + 1 bytes",
                  "value|size|large|long|1048576");
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 1,
               "after an oversized cas");
    rkey(key2, sizeof key2, "max2");
    expect_einval(f->db, sqllock_record_create(f->db, key2, big,
                                               SQLLOCK_VALUE_MAX + 1),
                  "create with SQLLOCK_VALUE_MAX + 1 bytes",
                  "value|size|large|long|1048576");
    rec_expect_missing(f->db, key2, "after an oversized create");
    expect_einval(f->db, sqllock_record_create(f->db, key2, NULL, 5),
                  "create with a NULL value of 5 bytes", "value|null");
    rec_expect_missing(f->db, key2, "after a NULL-value create");
    /* A 1 MiB cas round-trips too. */
    big[0] ^= 0x55;
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, big,
                                        SQLLOCK_VALUE_MAX, &nv),
              SQLLOCK_OK, "cas with SQLLOCK_VALUE_MAX bytes");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 2, "1 MiB value by cas");
    free(big);
    rec_remove(f->db, key);
}

void test_optimistic_O1_free_null(void **state)
{
    (void)state;
    sqllock_free(NULL);
}

void test_optimistic_O1_bad_keys(void **state)
{
    fixture *f = *state;
    char long_key[300], max_key[300], good[128];
    const char *bad[5];
    const char *why[5] = { "NULL key", "empty key", "256-byte key",
                           "key with invalid UTF-8",
                           "key with a control character" };
    int64_t ver = 0;
    int i, attempts = -1;

    memset(long_key, 'k', 256);
    long_key[256] = '\0';
    bad[0] = NULL;
    bad[1] = "";
    bad[2] = long_key;
    bad[3] = "opt-\xff\xfe-bad";
    bad[4] = "opt-a\nb";
    rkey(good, sizeof good, "badkeys-guard");
    EXPECT_RC(f->db, sqllock_record_create(f->db, good, "g", 1), SQLLOCK_OK,
              "create the guard record");
    for (i = 0; i < 5; i++) {
        char what[128];
        void *v = NULL;
        snprintf(what, sizeof what, "get: %s", why[i]);
        expect_einval(f->db, sqllock_record_get(f->db, bad[i], &v, NULL,
                                                &ver), what, "key");
        assert_null(v);
        snprintf(what, sizeof what, "create: %s", why[i]);
        expect_einval(f->db, sqllock_record_create(f->db, bad[i], "x", 1),
                      what, "key");
        snprintf(what, sizeof what, "cas: %s", why[i]);
        expect_einval(f->db, sqllock_record_cas(f->db, bad[i], 1, "x", 1,
                                                NULL), what, "key");
        snprintf(what, sizeof what, "delete: %s", why[i]);
        expect_einval(f->db, sqllock_record_delete(f->db, bad[i], 1), what,
                      "key");
        snprintf(what, sizeof what, "update: %s", why[i]);
        expect_einval(f->db, sqllock_record_update(f->db, bad[i], NULL, NULL,
                                                   NULL, &attempts),
                      what, NULL);
    }
    /* NULL db. */
    expect_einval(NULL, sqllock_record_get(NULL, good, NULL, NULL, NULL),
                  "get on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_create(NULL, good, "x", 1),
                  "create on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_cas(NULL, good, 1, "x", 1, NULL),
                  "cas on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_delete(NULL, good, 1),
                  "delete on a NULL db", NULL);
    /* A NULL update function. */
    expect_einval(f->db, sqllock_record_update(f->db, good, NULL, NULL, NULL,
                                               &attempts),
                  "update with a NULL function", "function|fn|callback");
    /* The longest key (255 bytes) is fine. */
    memset(max_key, 'm', 255);
    max_key[255] = '\0';
    memcpy(max_key, good, strlen(good));
    EXPECT_RC(f->db, sqllock_record_create(f->db, max_key, "m", 1),
              SQLLOCK_OK, "create with a 255-byte key");
    rec_expect(f->db, max_key, "m", 1, 1, "255-byte key");
    rec_remove(f->db, max_key);
    /* Nothing changed. */
    rec_expect(f->db, good, "g", 1, 1, "guard record after bad keys");
    rec_remove(f->db, good);
}

/* A record whose version is INT64_MAX cannot be written again: the new
 * version would overflow. The library must refuse (EINVAL) or report a
 * conflict, never succeed, and the record must be unchanged. */
void test_optimistic_O1_version_overflow(void **state)
{
    fixture *f = *state;
    char key[128];
    sqllock_value v[2];
    int64_t nv = 0;
    int rc;

    rkey(key, sizeof key, "overflow");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "o", 1), SQLLOCK_OK,
              "create");
    rc = sqllock_record_cas(f->db, key, INT64_MAX, "p", 1, &nv);
    if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
        fail_msg("cas with expected INT64_MAX on version 1: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    rec_expect(f->db, key, "o", 1, 1, "after cas with INT64_MAX");
    /* Now really at INT64_MAX, set behind the library's back. */
    v[0] = sqllock__int(INT64_MAX);
    v[1] = sqllock__text(key);
    tu_exec_ok(f->db, f->sql->rec_set_version, "", v, 2);
    rec_expect(f->db, key, "o", 1, INT64_MAX, "record at INT64_MAX");
    rc = sqllock_record_cas(f->db, key, INT64_MAX, "p", 1, &nv);
    if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
        fail_msg("cas on a record at version INT64_MAX: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    if (rc == SQLLOCK_EINVAL)
        expect_msg_any(f->db, "cas at INT64_MAX", "version|overflow");
    rec_expect(f->db, key, "o", 1, INT64_MAX, "after cas at INT64_MAX");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, INT64_MAX),
              SQLLOCK_OK, "delete at INT64_MAX");
}

/* ------------------------------------------------------------------ */
/* O2: the retry helper                                                */
/* ------------------------------------------------------------------ */

/* A decimal counter kept as text: the update function adds one. */
typedef struct counter_ctx {
    char buf[32];
    int calls;
    long sleep_us;             /* widens the read-write window */
    int bad;                   /* the old value was not a number */
} counter_ctx;

static int counter_fn(void *ctx, const void *old, size_t old_len,
                      const void **out, size_t *out_len)
{
    counter_ctx *c = ctx;
    long long n = 0;
    size_t i;
    int len;

    c->calls++;
    if (old == NULL && old_len != 0)
        c->bad = 1;
    for (i = 0; i < old_len; i++) {
        char ch = ((const char *)old)[i];
        if (ch < '0' || ch > '9') {
            c->bad = 1;
            return SQLLOCK_EINVAL;
        }
        n = n * 10 + (ch - '0');
    }
    if (c->sleep_us > 0)
        tu_sleep_us(c->sleep_us);
    len = snprintf(c->buf, sizeof c->buf, "%lld", n + 1);
    *out = c->buf;
    *out_len = (size_t)len;
    return SQLLOCK_OK;
}

typedef struct o2_shared {
    int arrived;
    int64_t attempts;          /* summed over all calls */
    int calls;                 /* calls that returned */
    int ok;
    int conflict;              /* calls that ran out of attempts */
    int max_attempts_seen;
    int more_than_one;         /* calls that needed more than one attempt */
    int bad_attempts;          /* *attempts outside 1..max_attempts */
    int errors;
} o2_shared;

static void o2_count(o2_shared *sh, int rc, int attempts, int max_attempts)
{
    int prev;

    __atomic_add_fetch(&sh->calls, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&sh->attempts, attempts, __ATOMIC_SEQ_CST);
    if (rc == SQLLOCK_OK)
        __atomic_add_fetch(&sh->ok, 1, __ATOMIC_SEQ_CST);
    else if (rc == SQLLOCK_CONFLICT)
        __atomic_add_fetch(&sh->conflict, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
    if (attempts < 1 || attempts > max_attempts)
        __atomic_add_fetch(&sh->bad_attempts, 1, __ATOMIC_SEQ_CST);
    if (attempts > 1)
        __atomic_add_fetch(&sh->more_than_one, 1, __ATOMIC_SEQ_CST);
    prev = __atomic_load_n(&sh->max_attempts_seen, __ATOMIC_SEQ_CST);
    while (attempts > prev &&
           !__atomic_compare_exchange_n(&sh->max_attempts_seen, &prev,
                                        attempts, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

/* One child: `updates` successful increments with the default retry
 * policy; a call that runs out of attempts is counted and made again. */
static int o2_child(o2_shared *sh, const char *key, int updates)
{
    sqllock_db *db = tu_child_open(g_url, "O2 child");
    counter_ctx c;
    int done = 0, rc, res = 0, tries = 0;

    if (db == NULL)
        return 2;
    memset(&c, 0, sizeof c);
    tu_barrier(&sh->arrived, PROCS);
    while (done < updates && res == 0) {
        int attempts = -1;
        rc = sqllock_record_update(db, key, counter_fn, &c, NULL, &attempts);
        o2_count(sh, rc, attempts, DEFAULT_MAX_ATTEMPTS);
        if (rc == SQLLOCK_OK) {
            done++;
        } else if (rc != SQLLOCK_CONFLICT || ++tries > 10 * updates) {
            fprintf(stderr, "O2 child: update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            res = 3;
        }
        if (c.bad) {
            fprintf(stderr, "O2 child: the function got a value that is "
                    "not a number\n");
            res = 4;
        }
    }
    sqllock_close(db);
    return res;
}

void test_optimistic_O2_counter_processes(void **state)
{
    fixture *f = *state;
    char key[128];
    o2_shared *sh, copy;
    pid_t pids[PROCS];
    int i, failed;
    char want[32];

    rkey(key, sizeof key, "counter");
    rec_remove(f->db, key);
    sh = tu_shared_map(sizeof *sh);
    tu_close_for_fork(&f->db);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = o2_child(sh, key, O2_UPDATES);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, PROCS, "O2 counter");
    tu_reopen(&f->db, g_url);
    copy = *sh;
    munmap(sh, sizeof *sh);
    printf("    O2 [%s] %d processes x %d updates: %d calls, %d OK, %d ran "
           "out of attempts, attempts summed %lld (%.2f per successful "
           "update), %d calls retried, most attempts in one call %d\n",
           f->driver, PROCS, O2_UPDATES, copy.calls, copy.ok, copy.conflict,
           (long long)copy.attempts,
           copy.ok > 0 ? (double)copy.attempts / copy.ok : 0.0,
           copy.more_than_one, copy.max_attempts_seen);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    assert_int_equal(copy.ok, PROCS * O2_UPDATES);
    if (copy.bad_attempts != 0)
        fail_msg("%d calls reported *attempts outside 1..%d",
                 copy.bad_attempts, DEFAULT_MAX_ATTEMPTS);
    if (copy.attempts < PROCS * O2_UPDATES)
        fail_msg("attempts summed to %lld, fewer than the %d updates",
                 (long long)copy.attempts, PROCS * O2_UPDATES);
    snprintf(want, sizeof want, "%d", PROCS * O2_UPDATES);
    /* Exactly 800: no lost update, no double write. The record was
     * created by the first update and written 799 times since. */
    rec_expect(f->db, key, want, strlen(want), PROCS * O2_UPDATES,
               "O2 counter after all processes");
    rec_remove(f->db, key);
}

/* A function that finds the stock sold out ("0") ends the update with
 * its own status. */
typedef struct stock_ctx {
    int calls;
    int status;                /* what to return when sold out */
    char buf[32];
} stock_ctx;

static int stock_fn(void *ctx, const void *old, size_t old_len,
                    const void **out, size_t *out_len)
{
    stock_ctx *c = ctx;

    c->calls++;
    if (old == NULL || (old_len == 1 && ((const char *)old)[0] == '0'))
        return c->status;
    snprintf(c->buf, sizeof c->buf, "%.*s-1", (int)old_len,
             (const char *)old);
    *out = c->buf;
    *out_len = strlen(c->buf);
    return SQLLOCK_OK;
}

void test_optimistic_O2_fn_status_writes_nothing(void **state)
{
    fixture *f = *state;
    char key[128], missing[128];
    stock_ctx c;
    int attempts = -1, rc;
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;

    rkey(key, sizeof key, "soldout");
    rkey(missing, sizeof missing, "soldout-missing");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "0", 1), SQLLOCK_OK,
              "create a sold-out stock");
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_CONFLICT;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, NULL, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_CONFLICT, "update whose function says "
              "sold out");
    assert_int_equal(c.calls, 1);      /* not retried: its own status */
    assert_int_equal(attempts, 1);
    rec_expect(f->db, key, "0", 1, 1, "sold-out stock after the update");

    /* Another status is passed through as well, also with retries
     * allowed. */
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_EPERM;
    o.max_attempts = 5;
    attempts = -1;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, &o, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_EPERM, "update whose function returns "
              "SQLLOCK_EPERM");
    assert_int_equal(c.calls, 1);
    assert_int_equal(attempts, 1);
    rec_expect(f->db, key, "0", 1, 1, "after the EPERM function");

    /* On a missing record the function gets NULL, 0 and creates
     * nothing when it declines. */
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_CONFLICT;
    rc = sqllock_record_update(f->db, missing, stock_fn, &c, NULL, NULL);
    EXPECT_RC(f->db, rc, SQLLOCK_CONFLICT, "declined update of a missing "
              "record");
    assert_int_equal(c.calls, 1);
    rec_expect_missing(f->db, missing, "after a declined create");

    /* And a function that accepts writes once, version + 1. */
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "5", 1, NULL),
              SQLLOCK_OK, "restock");
    memset(&c, 0, sizeof c);
    attempts = -1;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, NULL, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_OK, "update that sells one");
    assert_int_equal(attempts, 1);
    assert_int_equal(c.calls, 1);
    rec_expect(f->db, key, "5-1", 3, 3, "after one sale");
    rec_remove(f->db, key);
}

/* max_attempts = 1: every call is one attempt, OK or CONFLICT. */
static int o2_one_child(o2_shared *sh, const char *key, int calls)
{
    sqllock_db *db = tu_child_open(g_url, "O2 one-attempt child");
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;
    counter_ctx c;
    int i, rc, res = 0;

    if (db == NULL)
        return 2;
    memset(&c, 0, sizeof c);
    c.sleep_us = 300;
    o.max_attempts = 1;
    tu_barrier(&sh->arrived, O2_ONE_PROCS);
    for (i = 0; i < calls && res == 0; i++) {
        int attempts = -1;
        rc = sqllock_record_update(db, key, counter_fn, &c, &o, &attempts);
        o2_count(sh, rc, attempts, 1);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_CONFLICT) {
            fprintf(stderr, "O2 one-attempt child: update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            res = 3;
        }
        if (c.bad)
            res = 4;
    }
    sqllock_close(db);
    return res;
}

void test_optimistic_O2_one_attempt_conflicts(void **state)
{
    fixture *f = *state;
    char key[128], want[32];
    o2_shared *sh, copy;
    pid_t pids[O2_ONE_PROCS];
    int i, failed;

    rkey(key, sizeof key, "one-attempt");
    rec_remove(f->db, key);
    /* Created beforehand, so that every call is a read and a cas. */
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "0", 1), SQLLOCK_OK,
              "create the counter");
    sh = tu_shared_map(sizeof *sh);
    tu_close_for_fork(&f->db);
    for (i = 0; i < O2_ONE_PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = o2_one_child(sh, key, O2_ONE_CALLS);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, O2_ONE_PROCS, "O2 one-attempt");
    tu_reopen(&f->db, g_url);
    copy = *sh;
    munmap(sh, sizeof *sh);
    printf("    O2 [%s] max_attempts = 1, %d processes x %d calls: %d OK, "
           "%d CONFLICT, attempts summed %lld\n", f->driver, O2_ONE_PROCS,
           O2_ONE_CALLS, copy.ok, copy.conflict, (long long)copy.attempts);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    assert_int_equal(copy.calls, O2_ONE_PROCS * O2_ONE_CALLS);
    assert_int_equal(copy.ok + copy.conflict, copy.calls);
    if (copy.bad_attempts != 0)
        fail_msg("%d calls with max_attempts = 1 reported *attempts != 1",
                 copy.bad_attempts);
    assert_int_equal(copy.attempts, copy.calls);
    if (copy.conflict == 0)
        fail_msg("max_attempts = 1 under contention never returned "
                 "SQLLOCK_CONFLICT in %d calls", copy.calls);
    /* The counter counts exactly the calls that returned OK. */
    snprintf(want, sizeof want, "%d", copy.ok);
    rec_expect(f->db, key, want, strlen(want), 1 + copy.ok,
               "counter after the one-attempt run");
    rec_remove(f->db, key);
}

/* sqllock_record_list(): the records under a prefix, in key (byte)
 * order -- not the prefix's neighbours ("...b" lists b and b2, not a or
 * c), keys of several bytes per character included; the empty prefix
 * lists every record; a callback's non-zero return stops the walk and is
 * returned; bad input is refused (E2). */
typedef struct rl_seen {
    char keys[8][300];
    char values[8][16];
    int64_t versions[8];
    int n;
    int stop_at;        /* return 7 at this row (1-based), 0: never */
} rl_seen;

static int rl_cb(void *ctx, const char *key, const void *value, size_t len,
                 int64_t version)
{
    rl_seen *s = ctx;

    if (s->n < 8) {
        snprintf(s->keys[s->n], sizeof s->keys[0], "%s", key);
        snprintf(s->values[s->n], sizeof s->values[0], "%.*s", (int)len,
                 (const char *)value);
        s->versions[s->n] = version;
    }
    s->n++;
    return s->n == s->stop_at ? 7 : 0;
}

void test_optimistic_O1_list_by_prefix(void **state)
{
    fixture *f = *state;
    static const char *const tails[] = {
        "-a", "-b", "-b2", "-c", "-b\xc3\xa9", "-b\xf4\x8f\xbf\xbf", "",
    };
    enum { N = sizeof tails / sizeof tails[0] };
    char base[128], key[N][300], prefix[300];
    rl_seen s;
    int64_t v;
    size_t i;

    rkey(base, sizeof base, "list");
    for (i = 0; i < N; i++) {
        snprintf(key[i], sizeof key[i], "%s%s", base, tails[i]);
        EXPECT_RC(f->db, sqllock_record_create(f->db, key[i], tails[i],
                                               strlen(tails[i])),
                  SQLLOCK_OK, key[i]);
    }
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key[1], 1, "B", 1, &v),
              SQLLOCK_OK, "cas b");

    memset(&s, 0, sizeof s);
    snprintf(prefix, sizeof prefix, "%s-b", base);
    EXPECT_RC(f->db, sqllock_record_list(f->db, prefix, rl_cb, &s),
              SQLLOCK_OK, "list -b");
    assert_int_equal(s.n, 4);
    assert_string_equal(s.keys[0], key[1]);          /* -b */
    assert_string_equal(s.values[0], "B");
    assert_int_equal(s.versions[0], 2);
    assert_string_equal(s.keys[1], key[2]);          /* -b2 */
    assert_int_equal(s.versions[1], 1);
    assert_string_equal(s.keys[2], key[4]);          /* -bé */
    assert_string_equal(s.keys[3], key[5]);          /* -b U+10FFFF */

    memset(&s, 0, sizeof s);
    snprintf(prefix, sizeof prefix, "%s-", base);
    EXPECT_RC(f->db, sqllock_record_list(f->db, prefix, rl_cb, &s),
              SQLLOCK_OK, "list -");
    assert_int_equal(s.n, 6);                        /* not `base` itself */
    assert_string_equal(s.keys[0], key[0]);
    assert_string_equal(s.keys[5], key[3]);          /* -c last */

    memset(&s, 0, sizeof s);
    s.stop_at = 2;
    assert_int_equal(sqllock_record_list(f->db, prefix, rl_cb, &s), 7);
    assert_int_equal(s.n, 2);

    memset(&s, 0, sizeof s);
    EXPECT_RC(f->db, sqllock_record_list(f->db, "", rl_cb, &s), SQLLOCK_OK,
              "list all");
    assert_true(s.n >= (int)N);

    memset(&s, 0, sizeof s);
    snprintf(prefix, sizeof prefix, "%s-zz", base);
    EXPECT_RC(f->db, sqllock_record_list(f->db, prefix, rl_cb, &s),
              SQLLOCK_OK, "list none");
    assert_int_equal(s.n, 0);

    /* E2. */
    assert_int_equal(sqllock_record_list(NULL, "", rl_cb, &s),
                     SQLLOCK_EINVAL);
    EXPECT_RC(f->db, sqllock_record_list(f->db, NULL, rl_cb, &s),
              SQLLOCK_EINVAL, "NULL prefix");
    EXPECT_RC(f->db, sqllock_record_list(f->db, "", NULL, NULL),
              SQLLOCK_EINVAL, "NULL callback");
    EXPECT_RC(f->db, sqllock_record_list(f->db, "a\x1f", rl_cb, &s),
              SQLLOCK_EINVAL, "control character");
    memset(prefix, 'p', 256);
    prefix[256] = '\0';
    EXPECT_RC(f->db, sqllock_record_list(f->db, prefix, rl_cb, &s),
              SQLLOCK_EINVAL, "oversized prefix");
    for (i = 0; i < N; i++)
        rec_remove(f->db, key[i]);
}
