/*
 * helpers.h -- the C side of the Go binding: trampolines that turn the
 * library's callbacks (void *ctx) into calls of exported Go functions
 * (a cgo.Handle in ctx), and option structs filled in C, so that Go
 * never builds a struct whose layout it would have to keep in step.
 */
#ifndef SQLLOCK_GO_HELPERS_H
#define SQLLOCK_GO_HELPERS_H

#include <stdint.h>
#include <stdlib.h>
#include <sqllock.h>

int sqllock_go_open(const char *url, int64_t busy_ms, int64_t connect_ms,
                    int64_t statement_ms, sqllock_db **out);
void sqllock_go_lease_opts(sqllock_lease_options *o, int64_t ttl_ms,
                           int64_t margin_ms, const char *holder,
                           unsigned flags);
int sqllock_go_watch(sqllock_lease *lease, int64_t interval_ms,
                     uintptr_t handle);
int sqllock_go_leader_start(const char *url, const char *name,
                            int64_t ttl_ms, int64_t resign_hold_ms,
                            const char *holder, uintptr_t handle,
                            sqllock_leader **out, char *why, size_t size);
int sqllock_go_record_update(sqllock_db *db, const char *key,
                             uintptr_t handle, int max_attempts,
                             int *attempts);
int sqllock_go_force_release(sqllock_db *db, const char *name, int live,
                             int64_t token);
int sqllock_go_txn_begin(sqllock_db *db, int64_t lock_timeout_ms,
                         sqllock_txn **out);
int sqllock_go_lookup(sqllock_db *db, const char *name, char *holder,
                      size_t size, int64_t *token, int64_t *remaining_ms);

/* One row of sqllock_list(), its strings copied (malloc'd). */
typedef struct sqllock_go_row {
    char *name, *owner, *holder;
    int64_t token, acquired_at_ms, expires_at_ms, remaining_ms;
} sqllock_go_row;

int sqllock_go_list(sqllock_db *db, sqllock_go_row **rows, size_t *n);
void sqllock_go_rows_free(sqllock_go_row *rows, size_t n);
int sqllock_go_reaper_start(const char *url, int64_t interval_ms,
                            int64_t grace_ms, int batch,
                            sqllock_reaper **out, char *why, size_t size);

#endif
