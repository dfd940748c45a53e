/*
 * demo_cmd.c -- `sqllock demo`: the options of the oversell demo. The
 * demo itself is an example program (examples/demo/demo.c, on the public
 * API only) that the tool links; this file reads its options and names
 * its database.
 */
#include <stdio.h>

#include "cli.h"
#include "demo.h"

/* demo_run() returns the tool's exit codes as they are. */
#if DEMO_EXIT_OK != CLI_EXIT_OK || DEMO_EXIT_FAIL != CLI_EXIT_FAIL \
    || DEMO_EXIT_DB != CLI_EXIT_DB
#error "the demo's exit codes differ from the tool's"
#endif

int cli_cmd_demo(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    const char *workers_text = NULL, *stock_text = NULL;
    int help = 0, npos, rc, open_status = SQLLOCK_OK;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "workers", &workers_text, NULL, 0 },
        { "stock", &stock_text, NULL, 0 }, { "help", NULL, &help, 0 },
        { NULL, NULL, NULL, 0 }
    };
    int64_t workers = DEMO_DEFAULT_WORKERS, stock = DEMO_DEFAULT_STOCK;
    demo_config cfg = { NULL, 0, 0, "sqllock" };
    cli_db src = { NULL, 0, NULL };

    rc = cli_parse("demo", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (workers_text != NULL)
        rc = cli_parse_int("demo", "workers", workers_text, 1,
                           DEMO_MAX_WORKERS, &workers);
    if (rc == CLI_EXIT_OK && stock_text != NULL)
        rc = cli_parse_int("demo", "stock", stock_text, 1, DEMO_MAX_STOCK,
                           &stock);
    if (rc != CLI_EXIT_OK)
        return rc;

    if (c.local) {
        cli_error("demo: --local is not for the demo, which makes a "
                  "temporary SQLite file unless --db or --db-file names a "
                  "database");
        return cli_usage();
    }
    cfg.workers = (int)workers;
    cfg.stock = (int)stock;
    /* Only an explicit --db or --db-file is used: the demo never touches
     * the database of $SQLLOCK_DB, $SQLLOCK_DB_FILE or the tool's default
     * file. Without them the demo makes a temporary SQLite file. */
    if (c.db_opt != NULL || c.db_file_opt != NULL) {
        rc = cli_db_url(&c, &src);
        if (rc != CLI_EXIT_OK)
            return rc;
        cfg.url = src.url;
    }
    rc = demo_run(&cfg, &open_status);
    if (open_status == SQLLOCK_ENOTBUILT)
        cli_notbuilt_hint(src.url);
    cli_db_free(&src);
    return rc;
}
