/*
 * run_history.h -- `sqllock run`: the run in its name's history, and
 * the writes after the job that are tried again through an outage
 * (run_history.c).
 */
#ifndef SQLLOCK_RUN_HISTORY_H
#define SQLLOCK_RUN_HISTORY_H

#include "run_base.h"

int64_t run_history_now_ms(void);
int run_persist(run_state *st, int persist, const char *what,
                int (*write)(sqllock_db *db, void *ctx), void *ctx);
void run_note_history(run_state *st, int64_t end_ms, int code,
                      const char *status);

#endif
