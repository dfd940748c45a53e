/*
 * sqllock.c -- the `sqllock` command-line tool: main(), the help text, the
 * error printing helpers, and the small commands (init, acquire,
 * release). The option parser shared by every subcommand is in args.c;
 * `list`, `run`, `reap` and `demo` live in files of their own.
 *
 * The tool prints results to stdout and every error to stderr as
 * "sqllock: <what>: <message>", and tells what happened through its exit
 * code (cli.h keeps the numbers). It never prints a database URL as given:
 * the library's messages redact passwords, and where the tool shows a URL
 * itself (`init`, `demo`) it redacts it too; what a --db-file holds is
 * never quoted (dburl.c), and --db's password is overwritten in the
 * tool's own arguments (args.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

/* The help, in parts: C99 promises string literals of only 4095 bytes. */
static const char *const help_text[] = {
"usage: sqllock [--db URL | --db-file PATH | --local] COMMAND [ARGS...]\n"
"       sqllock -h | --help | -V | --version\n"
"\n"
"Distributed lease locks on the SQL database you already run.\n"
"\n"
"Commands:\n"
"  init\n"
"      Create the sqllock tables if they do not exist (idempotent) and\n"
"      print the schema version, and what a row lock excludes there:\n"
"      \"row locks: exclusive\" (every client waits), \"node\" (a Galera\n"
"      cluster: only clients of the same node wait) or \"database\"\n"
"      (SQLite: a transaction locks the whole database).\n"
"  acquire NAME --ttl DUR [--wait DUR] [--holder TEXT] [--quiet]\n"
"      Take the lease on NAME and print it as shell assignments, so that\n"
"      eval \"$(sqllock acquire NAME --ttl 30s)\" sets SQLLOCK_NAME,\n"
"      SQLLOCK_OWNER, SQLLOCK_TOKEN and SQLLOCK_TTL_MS. The lease is not\n"
"      renewed: it stays held until `sqllock release` or until --ttl has\n"
"      passed.\n"
"  release NAME --owner ID --token N\n"
"      Release a lease taken by `acquire`.\n"
"  release NAME --force [--force]\n"
"      Free NAME's lease whoever holds it, for an operator who must free\n"
"      a stuck lock; recorded in NAME's history (who, when, which token).\n"
"      A lease still live by the database's clock is freed only with\n"
"      --force twice (exit 75 with one, saying who holds it): its holder\n"
"      may be alive, and hears LOST at its next renewal.\n"
"  show NAME [--json]\n"
"      Show NAME's lease: holder, owner, token, when it was acquired and\n"
"      expires, and the time left, by the database's clock.\n"
"  history NAME [--json] [--clear]\n"
"      Show NAME's last runs under `run` and forced releases, newest\n"
"      first (start, end, duration, exit code, status, who; times by the\n"
"      clock of the host that wrote them); --clear deletes them.\n"
"  list [--json]\n"
"      Show every lease row: NAME, OWNER, TOKEN, HOLDER and LEFT (the\n"
"      time left by the database's clock). --json prints a JSON array of\n"
"      {name, owner, token, holder, acquired_at_ms, expires_at_ms,\n"
"      remaining_ms} objects.\n",
"  run NAME --ttl DUR [--wait DUR | --skip] [--holder TEXT]\n"
"      [--busy-exit CODE] [--signal SIG] [--kill-after DUR]\n"
"      [--renew-every DUR] [--hold-at-least DUR] [--quiet | --verbose]\n"
"      [--no-history] [--export-db] -- CMD [ARGS...]\n"
"      Run CMD while holding the lease on NAME. CMD gets SQLLOCK_NAME,\n"
"      SQLLOCK_OWNER and SQLLOCK_TOKEN in its environment, and not\n"
"      SQLLOCK_DB or SQLLOCK_DB_FILE: the database's URL may hold a\n"
"      password. With --export-db, CMD gets the database sqllock used\n"
"      instead, as SQLLOCK_DB=URL (from --db or $SQLLOCK_DB) or\n"
"      SQLLOCK_DB_FILE=PATH (from --db-file or $SQLLOCK_DB_FILE).\n"
"      While it runs, a thread of sqllock renews the lease every ttl/3\n"
"      (or every --renew-every, which must be shorter than the ttl minus\n"
"      ttl/10).\n"
"      If the lock is held elsewhere, CMD does not run and the exit code\n"
"      is 75 (or CODE): at once with --skip (the default), or once\n"
"      --wait has run out (a release wakes the wait early). The message\n"
"      names the holder and the time it has left; --quiet leaves it out\n"
"      (errors are still printed). --verbose prints a line, with the\n"
"      time, for each event: acquired (and the token), started, renewal\n"
"      failing, renewed late, lost, exited, released.\n"
"      When CMD ends, what it left running gets --signal, then SIGKILL\n"
"      after --kill-after; then the lease is released and the exit code\n"
"      is CMD's. With --hold-at-least DUR, if CMD ends sooner than DUR\n"
"      after the grant, the lease stays held until then (it is set to\n"
"      expire then, not released): the job runs at most once per DUR,\n"
"      whichever hosts try. Each run is noted in NAME's history (see\n"
"      history) unless --no-history.\n"
"      If the lease is lost while CMD runs (a renewal finds another\n"
"      owner, or none succeeds before the lease's time runs out), CMD\n"
"      gets SIGTERM (or --signal), then SIGKILL after --kill-after\n"
"      (default 10s; 0: at once) if it is still running. The exit code\n"
"      is 76 whenever the lease was not held from the grant until CMD\n"
"      ended -- also when sqllock itself was stopped past the lease's\n"
"      time, or its release finds the lease taken over -- whatever CMD\n"
"      returned.\n"
"      CMD is started by a guard, a small process of sqllock's: if\n"
"      sqllock dies (kill -9, the OOM killer), the guard kills CMD and\n"
"      everything CMD started at once; if sqllock is stopped past the\n"
"      lease's time, the guard stops CMD as if the lease were lost.\n"
"      SIGINT, SIGTERM and SIGHUP sent to sqllock are passed on to CMD.\n"
"      CMD runs in a process group of its own, and all these signals go\n"
"      to the whole group, so that its children stop too. In the\n"
"      foreground of a terminal, CMD joins sqllock's group instead, so\n"
"      that it can use the terminal; the signals then go to CMD alone,\n"
"      and those the terminal sends reach CMD directly (they are not\n"
"      passed on twice).\n"
"      \"--\" may be left out when CMD does not start with '-'.\n",
"  reap [--older-than DUR] [--batch N]\n"
"      Delete the lease rows that expired more than DUR ago (default 0:\n"
"      every expired row) by the database's clock, at most N rows per\n"
"      statement (default 1000), and print how many were deleted. Live\n"
"      leases are never touched; several hosts may run it at once. For\n"
"      cron, e.g. every five minutes with --older-than 1h.\n"
"  demo [--workers N] [--stock N] [--db URL | --db-file PATH]\n"
"      Show the classic oversell race: worker processes (default 8)\n"
"      sell a stock of items (default 20) with no lock, with a lease\n"
"      lock, with a row lock (SELECT ... FOR UPDATE in a transaction),\n"
"      with optimistic versioned writes (conflicts retried) and with one\n"
"      conditional UPDATE per purchase; a table shows what each sold.\n"
"      Uses a fresh temporary SQLite file (removed at the end)\n"
"      unless --db or --db-file names a database (SQLite, PostgreSQL or\n"
"      MySQL), in which it creates tables demo_stock and demo_sale and\n"
"      drops them at the end; $SQLLOCK_DB, $SQLLOCK_DB_FILE and the\n"
"      file of --local are never used.\n"
"      Exit code 1 if any mode but \"no lock\" sold anything but the\n"
"      stock.\n"
"\n",
"Options:\n"
"  --db URL          the database, before or after the command (see below)\n"
"  --db-file PATH    the database: the first line of the file PATH\n"
"  --local           the database: a file of this host, for a lock that\n"
"                    keeps out only this host's processes (see below)\n"
"  --ttl DUR         how long a lease lasts after each acquire or renewal\n"
"  --wait DUR        how long to wait for a busy lock (default 0: try once)\n"
"  --holder TEXT     who holds the lock, shown by `list` (default host:pid)\n"
"  --owner ID        the owner id that `acquire` printed\n"
"  --token N         the fencing token that `acquire` printed\n"
"  --busy-exit CODE  run: the exit code when the lock is busy (default 75)\n"
"  --skip            run: try the lock once (the default; not with --wait)\n"
"  --signal SIG      run: sent to CMD when the lease is lost (default TERM;\n"
"                    TERM, INT, HUP, QUIT, USR1, USR2, KILL, ... or a number)\n"
"  --kill-after DUR  run: SIGKILL follows --signal after DUR (default 10s)\n"
"  --renew-every DUR run: the time between renewals (default ttl/3)\n"
"  --hold-at-least DUR\n"
"                    run: keep the lock until DUR after the grant\n"
"  --quiet           run, acquire: no message when the lock is busy\n"
"  --verbose         run: a line, with the time, for each event\n"
"  --no-history      run: do not note the run in NAME's history\n"
"  --export-db       run: CMD gets SQLLOCK_DB or SQLLOCK_DB_FILE\n"
"  --older-than DUR  reap: only leases expired longer ago (default 0)\n"
"  --batch N         reap: rows per DELETE statement (default 1000)\n"
"  --json            list: print JSON\n"
"  --workers N, --stock N\n"
"                    demo: the number of worker processes and items\n"
"  -h, --help        print this help\n"
"  -V, --version     print the library's version\n"
"\n"
"  DUR is a number with a unit, ms, s, m, h or d, or several of them,\n"
"  largest first: \"500ms\", \"30s\", \"1m30s\", \"1.5h\", \"2d12h\"; a bare\n"
"  whole number is seconds. Only the last number may have a fraction,\n"
"  and the total must be a whole number of milliseconds. Options that\n"
"  take a value accept \"--opt VALUE\" and \"--opt=VALUE\"; \"--\" ends\n"
"  the options.\n"
"\n",
"Database:\n"
"  The URL is the first of: --db URL; --db-file PATH (the first line of\n"
"  the file that is not blank); --local; $" CLI_DB_ENV "; $" CLI_DB_FILE_ENV " (a\n"
"  file, as --db-file). Two of --db, --db-file and --local together are\n"
"  an error. With none of the five, every command but demo refuses to\n"
"  run (exit 64): cron and systemd start jobs without the variables of\n"
"  your shell, and a lock in a file of each host would let every host\n"
"  run the job. --local asks for such a lock by name: it keeps out only\n"
"  the processes of this host, in " CLI_DEFAULT_DB_URL ", whose\n"
"  tables sqllock creates by itself. For any other URL, run `sqllock\n"
"  init` once first; until then lock commands fail and say so.\n"
"  URLs look like sqlite:///abs/path.db, sqlite:rel/path.db,\n"
"  postgres://user:pass@host:5432/db, mysql://user:pass@host/db.\n"
"\n"
"  Passwords: every local user can read a process's arguments. sqllock\n"
"  overwrites the password of --db in its own arguments (ps shows\n"
"  user:***@host) as soon as it has read them, but until then, and in\n"
"  the shell's history, it is there to see. Put it in a file of mode\n"
"  0600 (--db-file, $" CLI_DB_FILE_ENV "), in $" CLI_DB_ENV ", or for PostgreSQL in\n"
"  ~/.pgpass or a service file (a URL without a password uses them).\n"
"  Messages never show a password.\n"
"\n"
"Exit status:\n"
"    0  success\n"
"   64  usage error: bad option, missing argument, bad duration or name\n"
"   69  database or system error (cannot connect, no schema, ...)\n"
"   75  the lock is held elsewhere (busy, or --wait ran out)\n"
"   76  the lease was lost (release or renewal found another owner;\n"
"       run: the lease was not held all the while CMD ran)\n"
"  run: otherwise CMD's own exit status, 128+N if CMD was killed by\n"
"       signal N, 126 if CMD could not be executed, 127 if not found.\n"
"  demo: 1 if a mode other than \"no lock\" oversold or undersold.\n"
};

int cli_help(void)
{
    size_t i;

    for (i = 0; i < sizeof help_text / sizeof *help_text; i++)
        fputs(help_text[i], stdout);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}

int cli_db_error(const sqllock_db *db, int status, const char *fmt, ...)
{
    va_list ap;
    const char *msg = db != NULL ? sqllock_errmsg(db) : NULL;
    char what[512];

    if (msg == NULL || *msg == '\0')
        msg = sqllock_strerror(status);
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sqllock: %s: %s\n", what, msg);
    return cli_exit_code(status);
}

int cli_exit_code(int status)
{
    switch (status) {
    case SQLLOCK_OK:
        return CLI_EXIT_OK;
    case SQLLOCK_BUSY:
    case SQLLOCK_TIMEOUT:
        return CLI_EXIT_BUSY;
    case SQLLOCK_LOST:
        return CLI_EXIT_LOST;
    case SQLLOCK_EINVAL:
        return CLI_EXIT_USAGE;
    default:
        return CLI_EXIT_DB;
    }
}

/* Writes `s` to stdout in single quotes, so that any shell reads it back
 * as exactly those bytes: each ' becomes '\'' (close, escaped quote,
 * reopen). Nothing else is special inside single quotes. */
static void print_shell_quoted(const char *s)
{
    putchar('\'');
    for (; *s != '\0'; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

static int cmd_init(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, npos, rc, scope = 0;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "help", NULL, &help, 0 },
        { NULL, NULL, NULL, 0 }
    };
    sqllock_db *db;
    cli_db where;
    char *shown;

    rc = cli_parse("init", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    rc = cli_open_db(&c, NULL, 0, &db, &where);
    if (rc != CLI_EXIT_OK) {
        cli_db_free(&where);
        return rc;
    }
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(db, rc, "init");
        sqllock_close(db);
        cli_db_free(&where);
        return rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc;
    }
    /* The URL is shown only with its secrets replaced by "***". */
    shown = sqllock__url_redact(where.url);
    cli_db_free(&where);
    printf("schema ready (version %d) in %s\n", SQLLOCK_SCHEMA_VERSION,
           shown != NULL ? shown : sqllock_db_driver(db));
    free(shown);
    /* The handle is connected: this sends nothing. */
    if (sqllock_row_lock_scope(db, &scope) == SQLLOCK_OK)
        printf("row locks: %s\n", sqllock_row_lock_scope_name(scope));
    sqllock_close(db);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}

static int cmd_acquire(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    cli_lease_args la = { NULL, NULL, NULL, 0, 0 };
    int help = 0, quiet = 0, npos, rc;
    const char *name = NULL;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "ttl", &la.ttl, NULL, 0 },
        { "wait", &la.wait, NULL, 0 }, { "holder", &la.holder, NULL, 0 },
        { "quiet", NULL, &quiet, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *lease = NULL;
    sqllock_db *db;

    rc = cli_parse("acquire", argc, argv, opts, &name, 1, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (npos != 1) {
        cli_error("acquire: missing the lock NAME");
        return cli_usage();
    }
    rc = cli_lease_args_check("acquire", &la);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = cli_open_db(&c, NULL, 1, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    lo.ttl_ms = la.ttl_ms;
    lo.holder = la.holder;
    rc = sqllock_lease_new(db, name, &lo, &lease);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(lease, la.wait_ms);
    if (rc != SQLLOCK_OK) {
        /* --quiet: a busy lock is an expected result, told by the exit
         * code alone; errors are still printed. */
        if (quiet && (rc == SQLLOCK_BUSY || rc == SQLLOCK_TIMEOUT))
            rc = cli_exit_code(rc);
        else
            rc = cli_db_error(db, rc, "acquire");
        sqllock_lease_free(lease);
        sqllock_close(db);
        return rc;
    }
    fputs("SQLLOCK_NAME=", stdout);
    print_shell_quoted(name);
    printf("\nSQLLOCK_OWNER=%s\nSQLLOCK_TOKEN=%" PRId64
           "\nSQLLOCK_TTL_MS=%" PRId64 "\n", sqllock_lease_owner(lease),
           sqllock_lease_token(lease), la.ttl_ms);
    rc = CLI_EXIT_OK;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        /* Nobody learned the owner id, so nobody could release the
         * lease: give it back rather than leave it held until expiry. */
        cli_error("acquire: cannot write to stdout: %s; releasing the lock",
                  strerror(errno));
        if (sqllock_lease_release(lease) != SQLLOCK_OK)
            cli_db_error(db, sqllock_errcode(db), "release");
        rc = CLI_EXIT_DB;
    }
    /* Freeing the handle leaves the lease held in the database. */
    sqllock_lease_free(lease);
    sqllock_close(db);
    return rc;
}

static int cmd_release(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    int help = 0, force = 0, npos, rc;
    const char *name = NULL, *owner = NULL, *token_text = NULL;
    const cli_opt opts[] = {
        CLI_OPTS_DB(c), { "owner", &owner, NULL, 0 },
        { "token", &token_text, NULL, 0 }, { "force", NULL, &force, 0 },
        { "help", NULL, &help, 0 }, { NULL, NULL, NULL, 0 }
    };
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *lease = NULL;
    sqllock_db *db;
    int64_t token;

    rc = cli_parse("release", argc, argv, opts, &name, 1, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (force) {
        if (npos != 1 || owner != NULL || token_text != NULL) {
            cli_error("release: --force needs NAME, and neither --owner "
                      "nor --token");
            return cli_usage();
        }
        return cli_force_release(&c, name, force);
    }
    if (npos != 1 || owner == NULL || token_text == NULL) {
        cli_error("release: needs NAME, --owner ID and --token N (or "
                  "--force)");
        return cli_usage();
    }
    rc = cli_parse_int("release", "token", token_text, 1, INT64_MAX, &token);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = cli_open_db(&c, NULL, 1, &db, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    /* Release never uses the ttl, but lease options require one. */
    lo.ttl_ms = 60000;
    rc = sqllock_lease_attach(db, name, owner, token, &lo, &lease);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(lease);
    if (rc != SQLLOCK_OK) {
        rc = cli_db_error(db, rc, "release");
    } else {
        fputs("released ", stdout);
        print_shell_quoted(name);
        printf(" (token %" PRId64 ")\n", token);
        rc = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
    }
    sqllock_lease_free(lease);
    sqllock_close(db);
    return rc;
}

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
                  "history, run, reap or demo)");
        return cli_usage();
    }
    cmd = argv[rest];
    argc -= rest + 1;
    argv += rest + 1;
    if (strcmp(cmd, "init") == 0)
        return cmd_init(&ctx, argc, argv);
    if (strcmp(cmd, "acquire") == 0)
        return cmd_acquire(&ctx, argc, argv);
    if (strcmp(cmd, "release") == 0)
        return cmd_release(&ctx, argc, argv);
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
