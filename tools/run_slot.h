/*
 * run_slot.h -- `sqllock run --once-per DUR` and --once-per-cron: at
 * most one run per schedule slot across hosts (run_slot.c).
 */
#ifndef SQLLOCK_RUN_SLOT_H
#define SQLLOCK_RUN_SLOT_H

#include "run_base.h"

/* The options of a schedule, as given. */
typedef struct run_slot_args {
    const char *once_per;
    const char *once_per_cron;
    const char *done_exit;     /* --slot-done-exit */
    int retry_failed;
} run_slot_args;

int run_slot_check(run_state *st, const run_slot_args *a,
                   const char *excluded);
int run_slot_claim(run_state *st);
void run_slot_finish(run_state *st, int code, const char *state);

#endif
