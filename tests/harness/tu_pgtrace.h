/*
 * tu_pgtrace.h -- the round trips of libpq calls, counted in libpq's
 * protocol trace (PQtrace), for the tests that check what goes over the
 * wire on PostgreSQL (test_rowlock's pipeline cases): kept once here
 * instead of a start, stop and count around each traced call.
 *
 * libpq's functions are referenced weakly: in a test linked without
 * libpq, tu_pgtrace_linked() is 0 and nothing else may be called.
 *
 * Include after cmocka.h (test_util.h includes it).
 */
#ifndef SQLLOCK_TU_PGTRACE_H
#define SQLLOCK_TU_PGTRACE_H

#include <stdio.h>

/* 1 when libpq's PQtrace, PQuntrace and PQsetTraceFlags are linked in. */
int tu_pgtrace_linked(void);

/* A trace being written: the connection (a PGconn *) and its file. */
typedef struct tu_pgtrace {
    void *pg;
    FILE *f;
} tu_pgtrace;

/* Starts tracing `pg` into a fresh temporary file, without timestamps
 * (PQtrace() resets the flags, so they are set after it). Fails the test
 * when no file can be made. */
void tu_pgtrace_start(tu_pgtrace *t, void *pg);

/* Stops the trace and returns the round trips it shows: the client's
 * Sync (the extended protocol, pipelined or not) and Query (the simple
 * one) messages. `look`, when not NULL, is shown each client message in
 * order -- its type and fields, after the length -- and NULL after each
 * Sync or Query, where a round trip ends; `ctx` is its own. The file is
 * closed and t->f set to NULL. */
int tu_pgtrace_stop(tu_pgtrace *t, void (*look)(void *ctx, const char *msg),
                    void *ctx);

#endif /* SQLLOCK_TU_PGTRACE_H */
