/*
 * run_metrics.h -- `sqllock run --metrics-file PATH`: the run's outcome
 * for node_exporter's textfile collector (run_metrics.c).
 */
#ifndef SQLLOCK_RUN_METRICS_H
#define SQLLOCK_RUN_METRICS_H

#include "run_base.h"

void run_metrics_write(const run_state *st, const char *path, int code);

#endif
