/*
 * dburl.c -- which database a command of the `sqllock` tool uses, and
 * opening it.
 *
 * The URL comes from the first of: --db URL, --db-file PATH, --local,
 * $SQLLOCK_DB, $SQLLOCK_DB_FILE. The command line goes before the
 * environment, as with every option; within each, the URL given outright
 * goes before the file, as libpq's PGPASSWORD goes before its PGPASSFILE.
 * Two of --db, --db-file and --local together are a usage error rather
 * than a silent choice.
 *
 * None of them is a usage error too. The tool once fell back to a file of
 * this host; a cron job, which starts without the variables of its
 * user's shell, then took "the" lock in a file of its own host, and every
 * host of the fleet ran the job. A lock that keeps out only this host's
 * processes is now asked for by name, with --local (the same file).
 *
 * A URL with a password in --db is in the process's arguments, which
 * every local user can read (args.c hides it, after a short window);
 * the environment (/proc/PID/environ is readable by the same user only)
 * and a file of mode 0600 are the safe places (DESIGN C4). Nothing here
 * prints a URL, and what a file holds is never quoted: a file meant to
 * hold a URL may hold something else secret instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define BLANKS " \t\r\f\v"

/* Sets db's URL to a copy of `url`. */
static int set_url(cli_db *db, const char *url, int source)
{
    db->url = malloc(strlen(url) + 1);
    if (db->url == NULL) {
        cli_error("%s", strerror(ENOMEM));
        return CLI_EXIT_DB;
    }
    strcpy(db->url, url);
    db->source = source;
    return CLI_EXIT_OK;
}

/* Reads the URL from the file at `path`, named in messages as `how`
 * ("--db-file" or "$SQLLOCK_DB_FILE"): its first line that is not blank,
 * without the white space around it. */
static int read_url_file(cli_db *db, const char *path, const char *how,
                         int source)
{
    char *buf = NULL;
    const char *why = NULL, *line, *nl;
    char big[80];
    size_t total = 0;
    ssize_t n;
    int fd, err = 0, rc = CLI_EXIT_DB;

    db->file = path;
    db->source = source;
    fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    buf = malloc(CLI_DB_FILE_MAX + 1);
    if (buf == NULL) {
        err = ENOMEM;
        goto out;
    }
    /* One byte more than the limit tells a file at the limit from a
     * larger one. A pipe (--db-file <(...)) is read to its end. */
    for (;;) {
        n = read(fd, buf + total, CLI_DB_FILE_MAX + 1 - total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            goto out;
        }
        if (n == 0)
            break;
        total += (size_t)n;
        if (total > CLI_DB_FILE_MAX) {
            snprintf(big, sizeof big, "it is larger than %d bytes, too "
                     "large for a URL", CLI_DB_FILE_MAX);
            why = big;
            goto out;
        }
    }
    if (memchr(buf, '\0', total) != NULL) {
        why = "it holds a NUL byte (not a text file)";
        goto out;
    }
    for (line = buf; line < buf + total; line = nl + 1) {
        const char *b = line, *e;

        nl = memchr(line, '\n', (size_t)(buf + total - line));
        if (nl == NULL)
            nl = buf + total;
        e = nl;
        while (b < e && strchr(BLANKS, *b) != NULL)
            b++;
        while (e > b && strchr(BLANKS, e[-1]) != NULL)
            e--;
        if (e > b) {
            db->url = malloc((size_t)(e - b) + 1);
            if (db->url == NULL) {
                err = ENOMEM;
                goto out;
            }
            memcpy(db->url, b, (size_t)(e - b));
            db->url[e - b] = '\0';
            rc = CLI_EXIT_OK;
            goto out;
        }
    }
    why = "it is empty (no line but blank ones)";
out:
    if (rc != CLI_EXIT_OK)
        cli_error("cannot read the database URL from '%s' (%s): %s", path,
                  how, why != NULL ? why : strerror(err));
    if (buf != NULL) {
        cli_wipe(buf, CLI_DB_FILE_MAX + 1);
        free(buf);
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

int cli_db_url(const cli_ctx *ctx, cli_db *db)
{
    const char *v;

    memset(db, 0, sizeof *db);
    if (ctx->db_opt != NULL && ctx->db_file_opt != NULL) {
        cli_error("--db and --db-file cannot be used together");
        return cli_usage();
    }
    if (ctx->local && (ctx->db_opt != NULL || ctx->db_file_opt != NULL)) {
        cli_error("--local cannot be used with --%s: --local is the file "
                  CLI_DEFAULT_DB_FILE " of this host",
                  ctx->db_opt != NULL ? "db" : "db-file");
        return cli_usage();
    }
    if (ctx->db_opt != NULL)
        return set_url(db, ctx->db_opt, CLI_DB_OPTION);
    if (ctx->db_file_opt != NULL)
        return read_url_file(db, ctx->db_file_opt, "--db-file",
                             CLI_DB_FILE_OPTION);
    if (ctx->local)
        return set_url(db, CLI_DEFAULT_DB_URL, CLI_DB_DEFAULT);
    v = getenv(CLI_DB_ENV);
    if (v != NULL && *v != '\0')
        return set_url(db, v, CLI_DB_VAR);
    v = getenv(CLI_DB_FILE_ENV);
    if (v != NULL && *v != '\0')
        return read_url_file(db, v, "$" CLI_DB_FILE_ENV, CLI_DB_FILE_VAR);
    cli_error("no database named: give --db URL or --db-file PATH, or set "
              "$" CLI_DB_ENV " or $" CLI_DB_FILE_ENV " (cron and systemd "
              "start jobs without your shell's variables: name it in the "
              "crontab or the unit)");
    cli_error("or, for a lock that keeps out only the processes of this "
              "host, give --local (the file " CLI_DEFAULT_DB_FILE ")");
    return cli_usage();
}

void cli_db_free(cli_db *db)
{
    if (db != NULL && db->url != NULL) {
        cli_wipe(db->url, strlen(db->url));
        free(db->url);
        db->url = NULL;
    }
}

int cli_open_db(const cli_ctx *ctx, const sqllock_options *opts,
                int lock_command, sqllock_db **out, cli_db *where)
{
    sqllock_db *db = NULL;
    cli_db src;
    int rc;

    *out = NULL;
    rc = cli_db_url(ctx, &src);
    if (rc != CLI_EXIT_OK)
        goto done;
    rc = sqllock_open(src.url, opts, &db);
    if (rc != SQLLOCK_OK) {
        int status = rc;

        rc = cli_db_error(db, rc, "cannot open the database");
        if (status == SQLLOCK_ENOTBUILT)
            cli_notbuilt_hint(src.url);
        sqllock_close(db);
        /* A URL the library cannot parse is still a database problem
         * for the caller, not a misuse of the tool's options. */
        rc = rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc;
        goto done;
    }
    if (src.source == CLI_DB_DEFAULT && lock_command) {
        rc = sqllock_init(db);
        if (rc != SQLLOCK_OK) {
            rc = cli_db_error(db, rc, "cannot create the schema in %s",
                              CLI_DEFAULT_DB_FILE);
            sqllock_close(db);
            rc = rc == CLI_EXIT_USAGE ? CLI_EXIT_DB : rc;
            goto done;
        }
    }
    *out = db;
    rc = CLI_EXIT_OK;
done:
    if (where != NULL)
        *where = src;
    else
        cli_db_free(&src);
    return rc;
}
