/*
 * cli.c -- what every subcommand of the tool shares besides the option
 * parser (args.c) and the database's URL (dburl.c): exit codes for the
 * library's statuses, the printing of a failed call, and what to do
 * when the URL's driver was not built.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

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
    /* A URL that is malformed or names no driver is as much the caller's
     * to fix as a bad option: trying again cannot help. (A driver that
     * was not built, SQLLOCK_ENOTBUILT, is this host's to fix: 69.) */
    case SQLLOCK_EURL:
    case SQLLOCK_ESCHEME:
        return CLI_EXIT_USAGE;
    case SQLLOCK_EKIND:
        return CLI_EXIT_KIND;
    default:
        return CLI_EXIT_DB;
    }
}

/* What a driver needs to be built, by URL scheme: the Debian (and Ubuntu)
 * package of its client library's headers, which the build finds with
 * pkg-config, and the CMake option that leaves the driver out. */
typedef struct cli_driver_pkg {
    const char *scheme;
    const char *driver;
    const char *library;
    const char *package;
    const char *option;
    int option_on;             /* the option's value in this build */
} cli_driver_pkg;

#ifndef SQLLOCK_CLI_WITH_SQLITE
#define SQLLOCK_CLI_WITH_SQLITE 1
#endif
#ifndef SQLLOCK_CLI_WITH_POSTGRES
#define SQLLOCK_CLI_WITH_POSTGRES 1
#endif
#ifndef SQLLOCK_CLI_WITH_MYSQL
#define SQLLOCK_CLI_WITH_MYSQL 1
#endif

static const cli_driver_pkg driver_pkgs[] = {
    { "sqlite", "sqlite", "SQLite", "libsqlite3-dev", "SQLLOCK_WITH_SQLITE",
      SQLLOCK_CLI_WITH_SQLITE },
    { "postgres", "postgres", "libpq", "libpq-dev", "SQLLOCK_WITH_POSTGRES",
      SQLLOCK_CLI_WITH_POSTGRES },
    { "postgresql", "postgres", "libpq", "libpq-dev",
      "SQLLOCK_WITH_POSTGRES", SQLLOCK_CLI_WITH_POSTGRES },
    { "mysql", "mysql", "the MySQL client library",
      "default-libmysqlclient-dev", "SQLLOCK_WITH_MYSQL",
      SQLLOCK_CLI_WITH_MYSQL },
    { "mariadb", "mysql", "the MySQL client library",
      "default-libmysqlclient-dev", "SQLLOCK_WITH_MYSQL",
      SQLLOCK_CLI_WITH_MYSQL },
};

/* Writes `path` for a shell: as it is when it has only characters no
 * shell treats specially, else in single quotes. */
static void print_path(const char *path)
{
    const char *p;

    for (p = path; *p != '\0'; p++)
        if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789/._-+,:=@%", *p) == NULL)
            break;
    if (*p == '\0' && *path != '\0') {
        fputs(path, stderr);
        return;
    }
    fputc('\'', stderr);
    for (p = path; *p != '\0'; p++) {
        if (*p == '\'')
            fputs("'\\''", stderr);
        else
            fputc(*p, stderr);
    }
    fputc('\'', stderr);
}

void cli_notbuilt_hint(const char *url)
{
    const cli_driver_pkg *d = NULL;
    size_t i, n = url != NULL ? strcspn(url, ":") : 0;

    for (i = 0; i < sizeof driver_pkgs / sizeof *driver_pkgs; i++) {
        if (strlen(driver_pkgs[i].scheme) == n
            && strncasecmp(url, driver_pkgs[i].scheme, n) == 0) {
            d = &driver_pkgs[i];
            break;
        }
    }
    if (d == NULL)
        return;
    fprintf(stderr, "sqllock: the %s driver needs %s's headers, the "
            "package %s on Debian and Ubuntu (sudo apt-get install %s); "
            "then build sqllock again:\n", d->driver, d->library,
            d->package, d->package);
#if defined(SQLLOCK_CLI_SOURCE_DIR) && defined(SQLLOCK_CLI_BUILD_DIR)
    fputs("sqllock:   cmake -S ", stderr);
    print_path(SQLLOCK_CLI_SOURCE_DIR);
    fputs(" -B ", stderr);
    print_path(SQLLOCK_CLI_BUILD_DIR);
    if (!d->option_on)
        fprintf(stderr, " -D%s=ON", d->option);
    fputs(" && cmake --build ", stderr);
    print_path(SQLLOCK_CLI_BUILD_DIR);
    fputs("\n", stderr);
#else
    fprintf(stderr, "sqllock:   cmake -S SOURCE -B BUILD%s%s%s && cmake "
            "--build BUILD\n", d->option_on ? "" : " -D",
            d->option_on ? "" : d->option, d->option_on ? "" : "=ON");
#endif
}
