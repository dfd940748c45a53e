/*
 * lock.c -- the small commands of the tool: `init` (the schema),
 * `acquire` and `release` (a lease held between two commands of a
 * script). `release --force` is the operator's and lives in ops.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

int cli_cmd_init(const cli_ctx *ctx, int argc, char **argv)
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
    sqllock_url_redact(where.url, &shown);
    cli_db_free(&where);
    printf("schema ready (version %d) in %s\n", SQLLOCK_SCHEMA_VERSION,
           shown != NULL ? shown : sqllock_db_driver(db));
    sqllock_free(shown);
    /* The handle is connected: this sends nothing. */
    if (sqllock_row_lock_scope(db, &scope) == SQLLOCK_OK)
        printf("row locks: %s\n", sqllock_row_lock_scope_name(scope));
    sqllock_close(db);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_DB;
}

int cli_cmd_acquire(const cli_ctx *ctx, int argc, char **argv)
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

int cli_cmd_release(const cli_ctx *ctx, int argc, char **argv)
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
    if (rc == SQLLOCK_LOST) {
        /* Lost, or never this owner's: the row tells (ops.c). */
        rc = cli_release_lost(db, name, owner, token);
    } else if (rc != SQLLOCK_OK) {
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
