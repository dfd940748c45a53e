/*
 * run_watch.h -- `sqllock run`: the lease while the command runs
 * (run_watch.c).
 */
#ifndef SQLLOCK_RUN_WATCH_H
#define SQLLOCK_RUN_WATCH_H

#include "run_base.h"

void run_on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                  const char *msg);
int run_share_start(run_state *st);
void run_share_stop(run_state *st);
void run_lose(run_state *st, const char *why);
void run_take_note(run_state *st);
int64_t run_deadline_us(const run_state *st);
void run_check_lease(run_state *st);

#endif
