/*
 * reap.c -- `sqllock reap [--older-than DUR] [--batch N]`: one pass of the
 * reaper (DESIGN P4), for cron where no reaper thread runs (docs/reaping.md
 * has a crontab line: every five minutes, `reap --older-than 1h`).
 *
 * It deletes the lease rows that expired more than DUR ago (default 0:
 * every expired row) by the database's clock, N rows per statement, and
 * prints how many it deleted. Running it from several hosts at once is
 * harmless (P2).
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"

/* The most rows one DELETE may take (the library's own limit). */
#define REAP_CLI_BATCH_MAX 1000000

int cli_cmd_reap(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    const char *older = NULL, *batch_text = NULL;
    int help = 0, npos, rc;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "older-than", &older, NULL, 0 },
        { "batch", &batch_text, NULL, 0 }, { "help", NULL, &help, 0 },
        { NULL, NULL, NULL, 0 }
    };
    int64_t grace_ms = 0, batch = 1000, deleted = 0;
    sqllock_db *db;

    rc = cli_parse("reap", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    rc = cli_parse_duration("reap", "older-than", older, &grace_ms);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (batch_text != NULL) {
        rc = cli_parse_int("reap", "batch", batch_text, 1, REAP_CLI_BATCH_MAX,
                           &batch);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    rc = cli_open_db(&c, NULL, 1, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = sqllock_reap(db, grace_ms, (int)batch, &deleted);
    if (rc != SQLLOCK_OK) {
        /* Rows deleted before the failure stay deleted: say so. */
        if (deleted > 0)
            fprintf(stderr, "sqllock: reap: %" PRId64 " expired lease%s "
                    "deleted before the error\n", deleted,
                    deleted == 1 ? "" : "s");
        rc = cli_db_error(db, rc, "reap");
        sqllock_close(db);
        /* The parsers above take any duration that fits in int64 ms;
         * the library's own limit on the grace (SQLLOCK_EINVAL, "too
         * large") is still a usage error, exit 64 like every other bad
         * option, not a database failure. */
        return rc;
    }
    sqllock_close(db);
    printf("reaped %" PRId64 " expired lease%s\n", deleted,
           deleted == 1 ? "" : "s");
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}
