/*
 * layout.c -- prints what the Python binding must mirror of sqllock.h:
 * the size and field offsets of every struct it passes to the library,
 * the values of each *_INIT macro, and the constants and status codes.
 *
 * One line per fact, "kind name [field] value":
 *   sizeof sqllock_options 32
 *   offsetof sqllock_options busy_timeout_ms 8
 *   init sqllock_options struct_version 2
 *   const SQLLOCK_NAME_MAX 255
 *   status SQLLOCK_BUSY 1
 * bindings/python/tests/test_layout.py runs it (ctest passes its path in
 * SQLLOCK_PY_LAYOUT) and compares each line with the ctypes side. It
 * links nothing: it is compiled from the header alone.
 */
#include <stddef.h>
#include <stdio.h>

#include "sqllock.h"

#define SIZE(T) printf("sizeof %s %zu\n", #T, sizeof(T))
#define FIELD(T, f) printf("offsetof %s %s %zu\n", #T, #f, offsetof(T, f))
#define INIT(T, v, f) printf("init %s %s %lld\n", #T, #f, (long long)(v).f)
#define INIT_PTR(T, v, f) printf("init %s %s %d\n", #T, #f, (v).f != NULL)
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))
#define STATUS(name, code, text) printf("status SQLLOCK_%s %d\n", #name, code);

int main(void)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_reaper_options ro = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_retry_options rt = SQLLOCK_RETRY_OPTIONS_INIT;
    sqllock_leader_options ldo = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_force_options fo = SQLLOCK_FORCE_OPTIONS_INIT;
    sqllock_observer_options obo = SQLLOCK_OBSERVER_OPTIONS_INIT;
    sqllock_change ch = SQLLOCK_CHANGE_INIT;

    SIZE(sqllock_options);
    FIELD(sqllock_options, struct_version);
    FIELD(sqllock_options, busy_timeout_ms);
    FIELD(sqllock_options, connect_timeout_ms);
    FIELD(sqllock_options, statement_timeout_ms);
    INIT(sqllock_options, o, struct_version);
    INIT(sqllock_options, o, busy_timeout_ms);
    INIT(sqllock_options, o, connect_timeout_ms);
    INIT(sqllock_options, o, statement_timeout_ms);

    SIZE(sqllock_lease_options);
    FIELD(sqllock_lease_options, struct_version);
    FIELD(sqllock_lease_options, ttl_ms);
    FIELD(sqllock_lease_options, safety_margin_ms);
    FIELD(sqllock_lease_options, backoff_min_ms);
    FIELD(sqllock_lease_options, backoff_max_ms);
    FIELD(sqllock_lease_options, holder);
    FIELD(sqllock_lease_options, flags);
    FIELD(sqllock_lease_options, release_timeout_ms);
    INIT(sqllock_lease_options, lo, struct_version);
    INIT(sqllock_lease_options, lo, ttl_ms);
    INIT(sqllock_lease_options, lo, safety_margin_ms);
    INIT(sqllock_lease_options, lo, backoff_min_ms);
    INIT(sqllock_lease_options, lo, backoff_max_ms);
    INIT_PTR(sqllock_lease_options, lo, holder);
    INIT(sqllock_lease_options, lo, flags);
    INIT(sqllock_lease_options, lo, release_timeout_ms);

    SIZE(sqllock_watch_options);
    FIELD(sqllock_watch_options, struct_version);
    FIELD(sqllock_watch_options, interval_ms);
    FIELD(sqllock_watch_options, retry_ms);
    FIELD(sqllock_watch_options, callback);
    FIELD(sqllock_watch_options, ctx);
    INIT(sqllock_watch_options, wo, struct_version);
    INIT(sqllock_watch_options, wo, interval_ms);
    INIT(sqllock_watch_options, wo, retry_ms);
    INIT_PTR(sqllock_watch_options, wo, callback);
    INIT_PTR(sqllock_watch_options, wo, ctx);

    SIZE(sqllock_reaper_options);
    FIELD(sqllock_reaper_options, struct_version);
    FIELD(sqllock_reaper_options, interval_ms);
    FIELD(sqllock_reaper_options, grace_ms);
    FIELD(sqllock_reaper_options, batch);
    FIELD(sqllock_reaper_options, db_options);
    INIT(sqllock_reaper_options, ro, struct_version);
    INIT(sqllock_reaper_options, ro, interval_ms);
    INIT(sqllock_reaper_options, ro, grace_ms);
    INIT(sqllock_reaper_options, ro, batch);
    INIT_PTR(sqllock_reaper_options, ro, db_options);

    /* Leader election (added in 0.9.0). */
    SIZE(sqllock_leader_options);
    FIELD(sqllock_leader_options, struct_version);
    FIELD(sqllock_leader_options, ttl_ms);
    FIELD(sqllock_leader_options, safety_margin_ms);
    FIELD(sqllock_leader_options, renew_interval_ms);
    FIELD(sqllock_leader_options, resign_hold_ms);
    FIELD(sqllock_leader_options, holder);
    FIELD(sqllock_leader_options, db_options);
    FIELD(sqllock_leader_options, on_elected);
    FIELD(sqllock_leader_options, on_lost);
    FIELD(sqllock_leader_options, on_observed);
    FIELD(sqllock_leader_options, ctx);
    INIT(sqllock_leader_options, ldo, struct_version);
    INIT(sqllock_leader_options, ldo, ttl_ms);
    INIT(sqllock_leader_options, ldo, resign_hold_ms);
    INIT_PTR(sqllock_leader_options, ldo, holder);
    INIT_PTR(sqllock_leader_options, ldo, on_lost);
    SIZE(sqllock_event);
    FIELD(sqllock_event, struct_version);
    FIELD(sqllock_event, type);
    FIELD(sqllock_event, level);
    FIELD(sqllock_event, status);
    FIELD(sqllock_event, name);
    FIELD(sqllock_event, token);
    FIELD(sqllock_event, value_ms);
    FIELD(sqllock_event, msg);
    FIELD(sqllock_event, db);

    SIZE(sqllock_leader_info);
    FIELD(sqllock_leader_info, holder);
    FIELD(sqllock_leader_info, token);
    FIELD(sqllock_leader_info, remaining_ms);

    SIZE(sqllock_reaper_stats);
    FIELD(sqllock_reaper_stats, reaped);
    FIELD(sqllock_reaper_stats, passes);
    FIELD(sqllock_reaper_stats, errors);
    FIELD(sqllock_reaper_stats, last_status);
    FIELD(sqllock_reaper_stats, last_error);

    SIZE(sqllock_lease_info);
    FIELD(sqllock_lease_info, name);
    FIELD(sqllock_lease_info, owner);
    FIELD(sqllock_lease_info, holder);
    FIELD(sqllock_lease_info, token);
    FIELD(sqllock_lease_info, acquired_at_ms);
    FIELD(sqllock_lease_info, expires_at_ms);
    FIELD(sqllock_lease_info, remaining_ms);

    SIZE(sqllock_txn_options);
    FIELD(sqllock_txn_options, struct_version);
    FIELD(sqllock_txn_options, lock_timeout_ms);
    INIT(sqllock_txn_options, to, struct_version);
    INIT(sqllock_txn_options, to, lock_timeout_ms);

    SIZE(sqllock_force_options);
    FIELD(sqllock_force_options, struct_version);
    FIELD(sqllock_force_options, token);
    FIELD(sqllock_force_options, live);
    FIELD(sqllock_force_options, who);
    INIT(sqllock_force_options, fo, struct_version);
    INIT(sqllock_force_options, fo, token);
    INIT(sqllock_force_options, fo, live);
    INIT_PTR(sqllock_force_options, fo, who);
    /* Observers (added in 0.11.0). */
    SIZE(sqllock_observer_options);
    FIELD(sqllock_observer_options, struct_version);
    FIELD(sqllock_observer_options, interval_ms);
    FIELD(sqllock_observer_options, include_initial);
    INIT(sqllock_observer_options, obo, struct_version);
    INIT(sqllock_observer_options, obo, interval_ms);
    INIT(sqllock_observer_options, obo, include_initial);
    SIZE(sqllock_change);
    FIELD(sqllock_change, struct_version);
    FIELD(sqllock_change, type);
    FIELD(sqllock_change, name);
    FIELD(sqllock_change, watched);
    FIELD(sqllock_change, token);
    FIELD(sqllock_change, old_token);
    FIELD(sqllock_change, holder);
    FIELD(sqllock_change, expires_at_ms);
    FIELD(sqllock_change, seen_at_ms);
    FIELD(sqllock_change, lag_ms);
    INIT(sqllock_change, ch, struct_version);
    INIT(sqllock_change, ch, type);
    INIT_PTR(sqllock_change, ch, name);

    SIZE(sqllock_retry_options);
    FIELD(sqllock_retry_options, struct_version);
    FIELD(sqllock_retry_options, max_attempts);
    FIELD(sqllock_retry_options, backoff_min_ms);
    FIELD(sqllock_retry_options, backoff_max_ms);
    INIT(sqllock_retry_options, rt, struct_version);
    INIT(sqllock_retry_options, rt, max_attempts);
    INIT(sqllock_retry_options, rt, backoff_min_ms);
    INIT(sqllock_retry_options, rt, backoff_max_ms);

    SIZE(sqllock_table);
    FIELD(sqllock_table, table);
    FIELD(sqllock_table, key_column);
    FIELD(sqllock_table, version_column);

    SIZE(sqllock_cell);
    FIELD(sqllock_cell, column);
    FIELD(sqllock_cell, op);
    FIELD(sqllock_cell, text);
    FIELD(sqllock_cell, number);
    printf("sizeof sqllock_op %zu\n", sizeof(sqllock_op));
    printf("sizeof sqllock_lock_mode %zu\n", sizeof(sqllock_lock_mode));

    CONST(SQLLOCK_VERSION_MAJOR);
    CONST(SQLLOCK_PRIMITIVE_NAME_MAX);
    CONST(SQLLOCK_NAME_MAX);
    CONST(SQLLOCK_OWNER_LEN);
    CONST(SQLLOCK_HOLDER_MAX);
    CONST(SQLLOCK_VALUE_MAX);
    CONST(SQLLOCK_WAIT_FOREVER);
    CONST(SQLLOCK_SCHEMA_VERSION);
    CONST(SQLLOCK_PARAM_QMARK);
    CONST(SQLLOCK_PARAM_DOLLAR);
    CONST(SQLLOCK_PARAM_FORMAT);
    CONST(SQLLOCK_PARAM_PYFORMAT);
    CONST(SQLLOCK_PARAM_NAMED);
    CONST(SQLLOCK_PARAM_NUMERIC);
    CONST(SQLLOCK_GUARD_SQL_MAX);
    CONST(SQLLOCK_STATUS_END_);
    CONST(SQLLOCK_STATE_NOT_HELD);
    CONST(SQLLOCK_STATE_HELD);
    CONST(SQLLOCK_STATE_UNCERTAIN);
    CONST(SQLLOCK_STATE_LOST);
    CONST(SQLLOCK_ROW_LOCKS_EXCLUSIVE);
    CONST(SQLLOCK_ROW_LOCKS_NODE);
    CONST(SQLLOCK_ROW_LOCKS_DATABASE);
    CONST(SQLLOCK_LOCK_WAIT);
    CONST(SQLLOCK_LOCK_NOWAIT);
    CONST(SQLLOCK_LOCK_SKIP_LOCKED);
    CONST(SQLLOCK_OP_SET);
    CONST(SQLLOCK_OP_ADD);
    CONST(SQLLOCK_OP_SUB);
    CONST(SQLLOCK_OP_EQ);
    CONST(SQLLOCK_OP_NE);
    CONST(SQLLOCK_OP_LT);
    CONST(SQLLOCK_OP_LE);
    CONST(SQLLOCK_OP_GT);
    CONST(SQLLOCK_OP_GE);
    CONST(SQLLOCK_LEASE_NO_WAKEUP);
    CONST(SQLLOCK_LEASE_FAST);
    CONST(SQLLOCK_OPTIONS_VERSION);
    CONST(SQLLOCK_LEASE_OPTIONS_VERSION);
    CONST(SQLLOCK_WATCH_OPTIONS_VERSION);
    CONST(SQLLOCK_REAPER_OPTIONS_VERSION);
    CONST(SQLLOCK_TXN_OPTIONS_VERSION);
    CONST(SQLLOCK_RETRY_OPTIONS_VERSION);
    CONST(SQLLOCK_FORCE_OPTIONS_VERSION);
    CONST(SQLLOCK_OBSERVER_OPTIONS_VERSION);
    CONST(SQLLOCK_CHANGE_VERSION);
    CONST(SQLLOCK_OBSERVER_INTERVAL_MIN_MS);
    CONST(SQLLOCK_OBSERVER_NAMES_MAX);
    CONST(SQLLOCK_CHANGE_HELD);
    CONST(SQLLOCK_CHANGE_FREE);
    CONST(SQLLOCK_CHANGE_ACQUIRED);
    CONST(SQLLOCK_CHANGE_RELEASED);
    CONST(SQLLOCK_CHANGE_EXPIRED);
    CONST(SQLLOCK_CHANGE_TAKEN_OVER);
    CONST(SQLLOCK_CHANGE_FORCE_RELEASED);
    SQLLOCK_STATUS_MAP(STATUS)
    return 0;
}
