/*
 * waits.c -- N1 for a plain acquire that waits: on a marked name, and on
 * a name that becomes another kind while it waits (plain, fair and
 * multi-name waits, the marker made at the waiter's first pause).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_fixture.h"
#include "kinds/kinds.h"

/* ---- a marker made while a plain acquire waits ---- */

/* The hook's work: on its first pause on `name`, the plain holder
 * lets go and a shared/exclusive lock marks the name at once, before
 * the waiter (whose thread runs the hook) tries again. */
static struct {
    const char *name;
    sqllock_lease *holder;
    sqllock_rw *rw;
    int done, rc;
} g_mark;

static void mark_on_pause(const char *name, int64_t sleep_ms, int listening)
{
    (void)sleep_ms;
    (void)listening;
    if (g_mark.done || g_mark.name == NULL || strcmp(name, g_mark.name) != 0)
        return;
    g_mark.done = 1;
    g_mark.rc = sqllock_lease_release(g_mark.holder);
    if (g_mark.rc == SQLLOCK_OK)
        g_mark.rc = sqllock_rw_acquire(g_mark.rw, 5000);
    if (g_mark.rc == SQLLOCK_OK)
        g_mark.rc = sqllock_rw_release(g_mark.rw);
}

/* One waiter of kind `how` (0 plain, 1 fair, 2 several names) on a name
 * held by a plain lease that becomes a shared/exclusive lock while it
 * waits: EKIND, long before its deadline. */
static void marked_while_waiting(int how)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_db *db3 = tu_open_or_fail(g_url);
    sqllock_lease *w, *other = NULL, *both[2];
    char name[96], other_name[96];
    int64_t t0, took, wait = tu_scaled_ms(30000);
    int rc;

    kn_name(name, sizeof name, how == 0 ? "wait-plain" : how == 1 ?
           "wait-fair" : "wait-many");
    g_mark.name = name;
    g_mark.holder = kn_lease(db2, name, 0);
    g_mark.rw = kn_rw(db3, name, 0);
    g_mark.done = 0;
    g_mark.rc = -1;
    EXPECT_RC(db2, sqllock_lease_try_acquire(g_mark.holder), SQLLOCK_OK,
              "holder");
    w = kn_lease(db, name, how == 1 ? SQLLOCK_LEASE_FAIR : 0);
    atomic_store(&sqllock__on_backoff, mark_on_pause);
    t0 = tu_now_ms();
    if (how == 2) {
        kn_name(other_name, sizeof other_name, "wait-many-other");
        other = kn_lease(db, other_name, 0);
        both[0] = other;
        both[1] = w;
        rc = sqllock_lease_acquire_many(db, both, 2, wait);
    } else {
        rc = sqllock_lease_acquire(w, wait);
    }
    took = tu_now_ms() - t0;
    atomic_store(&sqllock__on_backoff, NULL);
    g_mark.name = NULL;
    if (!g_mark.done || g_mark.rc != SQLLOCK_OK)
        fail_msg("the marker was not made during the wait (%d, %s)",
                 g_mark.done, sqllock_errname(g_mark.rc));
    if (rc != SQLLOCK_EKIND)
        fail_msg("N1: a %s wait that saw the name become a shared/"
                 "exclusive lock ended with %s (%s) after %" PRId64 " ms, "
                 "want SQLLOCK_EKIND", how == 0 ? "plain" : how == 1 ?
                 "fair" : "multi-name", sqllock_errname(rc),
                 sqllock_errmsg(db), took);
    expect_msg_any(db, "wait", "shared/exclusive");
    print_message("    %s wait: EKIND after %" PRId64 " ms (deadline %"
                  PRId64 " ms)\n", how == 0 ? "plain" : how == 1 ? "fair" :
                  "multi-name", took, wait);
    if (took > SQLLOCK__KIND_RECHECK_MS + tu_scaled_ms(5000))
        fail_msg("N1: EKIND after %" PRId64 " ms, more than the recheck "
                 "interval and a margin", took);
    assert_int_equal(sqllock_lease_count(w), 0);
    if (other != NULL)
        assert_int_equal(sqllock_lease_count(other), 0);
    sqllock_lease_free(other);
    sqllock_lease_free(w);
    sqllock_lease_free(g_mark.holder);
    sqllock_rw_free(g_mark.rw);
    sqllock_close(db);
    sqllock_close(db2);
    sqllock_close(db3);
}

/*
 * N1: a waiting plain acquire of a name that is marked is EKIND at once,
 * not TIMEOUT; and when the name becomes a shared/exclusive lock while
 * it waits (its plain holder lets go and a writer marks it before the
 * waiter's next try), the wait ends with EKIND within about a second,
 * not at its deadline -- for a plain, a fair and a multi-name wait.
 */
void test_kinds_N1_waiting_plain_gets_ekind(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *plain;
    sqllock_rw *rd;
    char name[96];
    int64_t t0;
    (void)state;

    kn_name(name, sizeof name, "marked");
    rd = kn_rw(db, name, 1);
    EXPECT_RC(db, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "shared");
    EXPECT_RC(db, sqllock_rw_release(rd), SQLLOCK_OK, "shared release");
    plain = kn_lease(db, name, 0);
    t0 = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_acquire(plain, tu_scaled_ms(30000)),
              SQLLOCK_EKIND, "plain wait on a marked name");
    if (tu_now_ms() - t0 > tu_scaled_ms(5000))
        fail_msg("N1: EKIND after %" PRId64 " ms, not at once",
                 tu_now_ms() - t0);
    sqllock_lease_free(plain);
    sqllock_rw_free(rd);
    sqllock_close(db);
    marked_while_waiting(0);
    marked_while_waiting(1);
    marked_while_waiting(2);
}
