/*
 * run_super.h -- `sqllock run`: the supervision of the command
 * (run_super.c).
 */
#ifndef SQLLOCK_RUN_SUPER_H
#define SQLLOCK_RUN_SUPER_H

#include "run_base.h"

int run_prepare_renewer(sqllock_db *db);
int run_end_guard(run_state *st);
int run_start_and_supervise(run_state *st);

#endif
