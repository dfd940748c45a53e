/*
 * run_history.h -- `sqllock run`: the run in its name's history
 * (run_history.c).
 */
#ifndef SQLLOCK_RUN_HISTORY_H
#define SQLLOCK_RUN_HISTORY_H

#include "run_base.h"

int64_t run_history_now_ms(void);
void run_note_history(run_state *st, int64_t end_ms, int code,
                      const char *status);

#endif
