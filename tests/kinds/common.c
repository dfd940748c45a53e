/*
 * common.c -- what the groups of test_kinds share: unique names, handles
 * of each kind with the options the cases use, and the check of a kind
 * marker row.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "kinds/kinds.h"

const char *g_url;

void kn_name(char *out, size_t size, const char *what)
{
    static int seq;

    snprintf(out, size, "knd-%ld-%d-%s", (long)getpid(), ++seq, what);
}

sqllock_lease *kn_lease(sqllock_db *db, const char *name, unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    o.flags = flags;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

sqllock_rw *kn_rw(sqllock_db *db, const char *name, int shared)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_rw *rw = NULL;

    o.ttl_ms = 30000;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    EXPECT_RC(db, sqllock_rw_new(db, name, shared, &o, &rw), SQLLOCK_OK,
              "rw_new");
    return rw;
}

sqllock_sem *kn_sem(sqllock_db *db, const char *name, int permits)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_sem *s = NULL;

    o.ttl_ms = 30000;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    EXPECT_RC(db, sqllock_sem_new(db, name, permits, &o, &s), SQLLOCK_OK,
              "sem_new");
    return s;
}

sqllock_lease *kn_leader_lease(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    EXPECT_RC(db, sqllock_leader_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "leader_lease_new");
    return l;
}

/* The row of `name` is the marker of the kind with `owner`, by the
 * server's clock far from expiry (more than 900 years left). */
void kn_expect_marker(sqllock_db *db, const char *name, const char *owner)
{
    tu_row r;

    EXPECT_RC(db, tu_find(db, name, &r), SQLLOCK_OK, "list");
    if (r.found != 1)
        fail_msg("N1: no row '%s' (the kind marker)", name);
    if (strcmp(r.owner, owner) != 0)
        fail_msg("N1: row '%s' has owner '%s', want the marker '%s'", name,
                 r.owner, owner);
    if (r.remaining_ms < INT64_C(900) * 365 * 86400 * 1000)
        fail_msg("N1: the marker of '%s' expires in %" PRId64 " ms, not "
                 "never", name, r.remaining_ms);
    assert_non_null(sqllock_kind_marker(r.owner));
}
