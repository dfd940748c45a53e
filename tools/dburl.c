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
 * and a file of mode 0600 are the safe places (DESIGN C4). A regular
 * file that its group or others may read is refused, as libpq refuses
 * such a ~/.pgpass: a file that anyone may read is no safe place, and
 * saying so at once beats a password that leaks quietly. Nothing here
 * prints a URL, and what a file holds is never quoted: a file meant to
 * hold a URL may hold something else secret instead (a ~/.pgpass line, a
 * password alone), so a file whose line is not a URL of a known scheme
 * is refused by its name before the library could quote it.
 *
 * The commands that only read (list, show, history) open a SQLite file
 * only when it is there: SQLite would create a missing one, and a typo
 * in the path would show an empty database instead of the real one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
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
    struct stat st;

    db->file = path;
    db->source = source;
    fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    /* Before a byte is read. A pipe (--db-file <(...)) has no one else's
     * permission bits to check. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        cli_error("refusing the database URL in '%s' (%s): its group or "
                  "others may read it (mode %04o), and a URL may hold a "
                  "password; make it readable by its owner only: chmod "
                  "600 '%s'", path, how, (unsigned)(st.st_mode & 07777),
                  path);
        close(fd);
        return CLI_EXIT_USAGE;
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

/* The schemes of the drivers the tool may have, as the library reads
 * them (any case). */
static const char *const known_schemes[] = {
    "sqlite", "postgres", "postgresql", "mysql", "mariadb", NULL
};

/* 1 when `url` starts with a known scheme and its ':'. */
static int has_known_scheme(const char *url)
{
    size_t n = strcspn(url, ":");
    int i;

    if (url[n] != ':')
        return 0;
    for (i = 0; known_schemes[i] != NULL; i++)
        if (strlen(known_schemes[i]) == n &&
            strncasecmp(url, known_schemes[i], n) == 0)
            return 1;
    return 0;
}

static int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes [p, end) as the library decodes a URL's parts (%-escapes) into
 * out[size], NUL-terminated: its length, or -1 for a bad %-escape, %00,
 * or a text too long for the buffer. */
static long pct_decode(const char *p, const char *end, char *out, size_t size)
{
    size_t n = 0;

    for (; p < end; p++) {
        int c = (unsigned char)*p;

        if (c == '%') {
            if (end - p < 3 || hex_digit(p[1]) < 0 || hex_digit(p[2]) < 0)
                return -1;
            c = hex_digit(p[1]) * 16 + hex_digit(p[2]);
            p += 2;
            if (c == 0)
                return -1;
        }
        if (n + 1 >= size)
            return -1;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return (long)n;
}

/* The file of a sqlite: URL, percent-decoded as the library decodes it,
 * in path[size]: 1, or 0 for a URL that the library refuses anyway (a
 * host, no path, a bad %-escape or %00, ":memory:") or a path too long
 * for the buffer. */
static int sqlite_file(const char *url, char *path, size_t size)
{
    const char *p = url + strlen("sqlite:");

    if (strncmp(p, "//", 2) == 0) {
        p += 2;
        if (*p != '/' && *p != '?' && *p != '\0')
            return 0;           /* a host: the driver says it takes none */
    }
    return pct_decode(p, p + strcspn(p, "?"), path, size) > 0 &&
           strcmp(path, ":memory:") != 0 && strncmp(path, "file:", 5) != 0;
}

int cli_db_session_pooler(const char *url)
{
    const char *p = strchr(url, '?'), *end;
    char key[16], value[16];

    while (p != NULL && *p != '\0') {
        const char *eq;

        p++;
        end = p + strcspn(p, "&#");
        eq = memchr(p, '=', (size_t)(end - p));
        if (eq != NULL && pct_decode(p, eq, key, sizeof key) >= 0 &&
            strcmp(key, "pooler") == 0 &&
            pct_decode(eq + 1, end, value, sizeof value) >= 0)
            return strcasecmp(value, "session") == 0 ||
                   strcasecmp(value, "pgpool") == 0;
        p = *end == '&' ? end : NULL;
    }
    return 0;
}

int cli_open_db(const cli_ctx *ctx, const sqllock_options *opts,
                int flags, sqllock_db **out, cli_db *where)
{
    return cli_open_db_within(ctx, opts, flags, 0, out, where);
}

/* Waits the pause before the next connect of cli_open_db_within(), never
 * past end_us: 0 when end_us has passed. Doubled each time up to 1 s. */
static int connect_pause(int64_t end_us, int64_t *pause_ms)
{
    int64_t left = (end_us - sqllock_now_us()) / 1000, ms = *pause_ms;
    struct timespec ts;

    if (left <= 0)
        return 0;
    if (ms > left)
        ms = left;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
    *pause_ms = *pause_ms * 2 < 1000 ? *pause_ms * 2 : 1000;
    return 1;
}

int cli_open_db_within(const cli_ctx *ctx, const sqllock_options *opts,
                       int flags, int64_t wait_ms, sqllock_db **out,
                       cli_db *where)
{
    int64_t now = sqllock_now_us(), end_us = now, pause_ms = 50;
    sqllock_db *db = NULL;
    cli_db src;
    char file[4096];
    struct stat st;
    int rc;

    *out = NULL;
    rc = cli_db_url(ctx, &src);
    if (rc != CLI_EXIT_OK)
        goto done;
    /* What a file holds is quoted by nobody: the library would quote a
     * text that is not a URL as it is (it finds no password in it). */
    if ((src.source == CLI_DB_FILE_OPTION || src.source == CLI_DB_FILE_VAR)
        && !has_known_scheme(src.url)) {
        cli_error("cannot open the database: what '%s' (%s) holds is not "
                  "a database URL: its first line that is not blank must "
                  "be one such as postgres://user:password@host:5432/db, "
                  "mysql://user:password@host/db or sqlite:///path/locks.db "
                  "(a ~/.pgpass line or a password alone is none; what the "
                  "file holds is not shown)", src.file,
                  src.source == CLI_DB_FILE_OPTION ? "--db-file"
                                                   : "$" CLI_DB_FILE_ENV);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    if ((flags & CLI_OPEN_READ) && strncasecmp(src.url, "sqlite:", 7) == 0
        && sqlite_file(src.url, file, sizeof file) && stat(file, &st) != 0
        && errno == ENOENT) {
        cli_error("cannot open the database: the SQLite file '%s' does not "
                  "exist; list, show and history do not create it (a lock "
                  "command or `sqllock init` does)", file);
        rc = CLI_EXIT_DB;
        goto done;
    }
    if (wait_ms > 0)
        end_us = wait_ms < (INT64_MAX - now) / 1000 ? now + wait_ms * 1000
                                                    : INT64_MAX;
    rc = sqllock_open(src.url, opts, &db);
    /* A server, or a pooler's slot, that cannot be had now: again while
     * the wait lasts (a connect that fails has sent nothing). */
    while (rc == SQLLOCK_ECONNECT && wait_ms > 0 &&
           connect_pause(end_us, &pause_ms)) {
        sqllock_close(db);
        db = NULL;
        rc = sqllock_open(src.url, opts, &db);
    }
    if (rc != SQLLOCK_OK) {
        int status = rc;

        rc = cli_db_error(db, rc, "cannot open the database");
        if (status == SQLLOCK_ENOTBUILT)
            cli_notbuilt_hint(src.url);
        sqllock_close(db);
        /* A malformed URL is 64 (cli_exit_code()); bad options are the
         * tool's own mistake, not the caller's. */
        rc = status == SQLLOCK_EINVAL ? CLI_EXIT_DB : rc;
        goto done;
    }
    if (src.source == CLI_DB_DEFAULT && (flags & CLI_OPEN_LOCK)) {
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
