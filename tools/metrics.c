/*
 * metrics.c -- `sqllock metrics`: the lock tables as the database sees
 * them (sqllock_metrics_db_text()), in the OpenMetrics text format, on
 * stdout, for node_exporter's textfile collector:
 *
 *   sqllock metrics > /var/lib/node_exporter/sqllock.prom.$$ &&
 *     mv /var/lib/node_exporter/sqllock.prom.$$ \
 *        /var/lib/node_exporter/sqllock.prom
 *
 * The text is read whole before anything is printed, so a failure (exit
 * 69, the message on stderr) leaves stdout empty, and the `&&` above
 * keeps the last good file instead of a partial one; its age
 * (node_textfile_mtime_seconds) then tells that scrapes are failing.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_cmd_metrics(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, npos, rc;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    sqllock_db *db;
    char *text = NULL;
    size_t len;

    rc = cli_parse("metrics", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    rc = cli_open_db(&c, NULL, CLI_OPEN_READ, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = sqllock_metrics_db_text(db, &text);
    if (rc != SQLLOCK_OK) {
        cli_db_error(db, rc, "metrics");
        sqllock_close(db);
        return CLI_EXIT_DB;
    }
    sqllock_close(db);
    len = strlen(text);
    rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 &&
         !ferror(stdout) ? CLI_EXIT_OK : CLI_EXIT_DB;
    sqllock_free(text);
    if (rc != CLI_EXIT_OK)
        cli_error("metrics: cannot write to stdout");
    return rc;
}
