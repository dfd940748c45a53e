/*
 * run_metrics.c -- `sqllock run --metrics-file PATH` (issue 31): after
 * the run, whatever its outcome, PATH gets the run's metrics in the
 * Prometheus text exposition format, for node_exporter's textfile
 * collector, which reads every *.prom file of its directory: one file
 * per job (two jobs writing one PATH would keep only the last one's).
 *
 * The file is replaced whole, never seen half written: the text goes to
 * PATH.tmp.PID in the same directory, is synced, and is renamed over
 * PATH; then the directory is synced, so that the rename outlives a
 * crash. (The collector skips files that do not end in .prom, so the
 * temporary one is never read.) Each series has the run's lock name as
 * its label name="..." (\, " and a line break escaped); all are gauges
 * of the last run, in base units (seconds), named by Prometheus's
 * conventions. A file that cannot be written is a warning on stderr: the
 * exit code stays the run's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run_metrics.h"

/* The label value of outcome=..., by RUN_OUTCOME_*. */
static const char *const outcome_names[RUN_OUTCOME_N] = {
    "error", "ran", "busy", "skipped_slot", "lost", "timeout"
};

/* The text of one sample's label value, escaped, in out[size]. */
static void label_value(char *out, size_t size, const char *s)
{
    size_t n = 0;

    for (; *s != '\0' && n + 3 < size; s++) {
        if (*s == '\\' || *s == '"') {
            out[n++] = '\\';
            out[n++] = *s;
        } else if (*s == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* Seconds with milliseconds, "1732546518.123" (a negative span as 0). */
static const char *seconds(char *buf, size_t size, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    snprintf(buf, size, "%" PRId64 ".%03d", ms / 1000, (int)(ms % 1000));
    return buf;
}

/* Writes one gauge: its HELP and TYPE lines and its sample. */
static void gauge(FILE *f, const char *metric, const char *help,
                  const char *label, const char *value)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s{name=\"%s\"} %s\n",
            metric, help, metric, metric, label, value);
}

/* The text of the file. */
static void metrics_text(FILE *f, const run_state *st, int code)
{
    char label[3 * SQLLOCK_NAME_MAX + 8], v[64];
    struct timespec ts;
    int64_t now_ms, now_us = cli_guard_now_us(), wait_us = 0, ran_us = 0;
    int i;

    clock_gettime(CLOCK_REALTIME, &ts);
    now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    label_value(label, sizeof label, st->name);
    if (st->granted_us > 0)
        wait_us = st->granted_us - st->start_us;
    if (st->cmd_start_us > 0)
        ran_us = (st->cmd_end_us > 0 ? st->cmd_end_us : now_us)
                 - st->cmd_start_us;
    gauge(f, "sqllock_run_last_start_timestamp_seconds",
          "When the last sqllock run of this job started (Unix time).",
          label, seconds(v, sizeof v, st->start_wall_ms));
    gauge(f, "sqllock_run_last_end_timestamp_seconds",
          "When it ended (Unix time).", label,
          seconds(v, sizeof v, now_ms));
    gauge(f, "sqllock_run_last_wait_seconds",
          "How long it waited for the lock.", label,
          seconds(v, sizeof v, wait_us / 1000));
    gauge(f, "sqllock_run_last_duration_seconds",
          "How long the command ran (0 when it did not run).", label,
          seconds(v, sizeof v, ran_us / 1000));
    snprintf(v, sizeof v, "%d", code);
    gauge(f, "sqllock_run_last_exit_code",
          "The exit code of sqllock run: the command's, or sqllock's own "
          "(75 busy, 76 lost, 124 past --max-runtime, ...).", label, v);
    fputs("# HELP sqllock_run_last_outcome How the last run ended: 1 for "
          "its outcome, 0 for the others.\n"
          "# TYPE sqllock_run_last_outcome gauge\n", f);
    for (i = 0; i < RUN_OUTCOME_N; i++)
        fprintf(f, "sqllock_run_last_outcome{name=\"%s\",outcome=\"%s\"} "
                "%d\n", label, outcome_names[i], st->outcome == i);
}

/* Syncs the directory of `path`, so that a rename in it is durable. */
static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    int fd, rc;

    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

/* Writes the run's metrics into `path`, atomically; `code` is the exit
 * code of the run. Says why on stderr when it cannot. */
void run_metrics_write(const run_state *st, const char *path, int code)
{
    char *tmp;
    size_t n = strlen(path) + 32;
    FILE *f = NULL;
    int fd, err = 0;

    if (st->name == NULL)
        return;
    tmp = malloc(n);
    if (tmp == NULL) {
        cli_error("run: warning: cannot write --metrics-file %s: %s", path,
                  strerror(ENOMEM));
        return;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0)
        f = fdopen(fd, "w");
    if (f == NULL) {
        err = errno;
        if (fd >= 0)
            close(fd);
    } else {
        metrics_text(f, st, code);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0)
            err = errno;
        if (fclose(f) != 0 && err == 0)
            err = errno;
        if (err == 0 && rename(tmp, path) != 0)
            err = errno;
        if (err != 0)
            unlink(tmp);
        else
            sync_dir(path);
    }
    if (err != 0)
        cli_error("run: warning: cannot write --metrics-file %s: %s", path,
                  strerror(err));
    free(tmp);
}
