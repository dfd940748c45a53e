/*
 * run_hold.h -- `sqllock run`: giving the lease up (run_hold.c).
 */
#ifndef SQLLOCK_RUN_HOLD_H
#define SQLLOCK_RUN_HOLD_H

#include "run_base.h"

int run_give_back(run_state *st, int code);
int run_give_up(run_state *st, int code);
void run_busy_message(run_state *st);

#endif
