/*
 * sqllock.c -- the `sqllock` command-line tool: main() and the choice of
 * the subcommand. Every subcommand lives in a file of its own (init,
 * acquire and release in lock.c; list.c, run.c, reap.c, ops.c for show,
 * history and release --force, demo_cmd.c); what they share is in cli.c
 * (exit codes, error printing), args.c (options), dburl.c (the database)
 * and help.c (the help text). The tool uses only the library's public
 * header, <sqllock.h>.
 *
 * The tool prints results to stdout and every error to stderr as
 * "sqllock: <what>: <message>", and tells what happened through its exit
 * code (cli.h keeps the numbers). It never prints a database URL as given:
 * the library's messages redact passwords, and where the tool shows a URL
 * itself (`init`, `demo`) it redacts it too; what a --db-file holds is
 * never quoted (dburl.c), and --db's password is overwritten in the
 * tool's own arguments (args.c).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Runs the command the arguments name; returns the exit code. */
static int dispatch(int argc, char **argv)
{
    cli_ctx ctx = { NULL, NULL, 0 };
    int help = 0, version = 0, npos, rest, rc;
    const cli_opt opts[] = {
        CLI_OPTS_DB(ctx), { "help", NULL, &help, 0 },
        { "version", NULL, &version, 0 }, { NULL, NULL, NULL, 0 }
    };
    const char *cmd;

    if (argc < 1)
        return CLI_EXIT_USAGE;
    rc = cli_parse("", argc - 1, argv + 1, opts, NULL, 0, &npos,
                   &rest);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (version) {
        printf("sqllock %s\n", sqllock_version_string());
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
    }
    rest += 1;
    if (rest >= argc) {
        cli_error("missing COMMAND (init, acquire, release, list, show, "
                  "history, watch, run, reap, metrics or demo)");
        return cli_usage();
    }
    cmd = argv[rest];
    argc -= rest + 1;
    argv += rest + 1;
    /* `sqllock CMD --help` prints CMD's part of the help. */
    cli_help_command(cmd);
    if (strcmp(cmd, "init") == 0)
        return cli_cmd_init(&ctx, argc, argv);
    if (strcmp(cmd, "acquire") == 0)
        return cli_cmd_acquire(&ctx, argc, argv);
    if (strcmp(cmd, "release") == 0)
        return cli_cmd_release(&ctx, argc, argv);
    if (strcmp(cmd, "list") == 0)
        return cli_cmd_list(&ctx, argc, argv);
    if (strcmp(cmd, "run") == 0)
        return cli_cmd_run(&ctx, argc, argv);
    if (strcmp(cmd, "reap") == 0)
        return cli_cmd_reap(&ctx, argc, argv);
    if (strcmp(cmd, "demo") == 0)
        return cli_cmd_demo(&ctx, argc, argv);
    if (strcmp(cmd, "show") == 0)
        return cli_cmd_show(&ctx, argc, argv);
    if (strcmp(cmd, "history") == 0)
        return cli_cmd_history(&ctx, argc, argv);
    if (strcmp(cmd, "watch") == 0)
        return cli_cmd_watch(&ctx, argc, argv);
    if (strcmp(cmd, "metrics") == 0)
        return cli_cmd_metrics(&ctx, argc, argv);
    cli_error("unknown command '%s'", cmd);
    return cli_usage();
}

int main(int argc, char **argv)
{
    int rc = dispatch(argc, argv);

    /* The copies of --db's value (args.c). */
    cli_free_secrets();
    return rc;
}

