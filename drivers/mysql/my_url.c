/*
 * my_url.c -- what a mysql: URL asks of the driver: the host (one: the
 * core splits a host list and hands the driver one host at a time), the
 * socket, the database, the TLS settings, and the option file whose
 * login and TLS settings fill what the URL leaves out (my_optfile.c reads
 * it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "my.h"

/* The URL's ssl_mode. */
static int parse_ssl_mode(const char *v, my_ssl_mode *mode,
                          sqllock_dberr *err)
{
    if (sqllock__my_ssl_mode_parse(v, mode))
        return SQLLOCK_OK;
    /* The value is not quoted: a password pasted into the wrong
     * parameter would be (DESIGN C4). */
    return sqllock_dberr_set(err, SQLLOCK_EURL, "", "ssl_mode must be "
                             "DISABLED, PREFERRED, REQUIRED, VERIFY_CA or "
                             "VERIFY_IDENTITY (in any case); the value "
                             "given is none of them (it is not shown, in "
                             "case it is a secret)");
}

void sqllock__my_target_free(my_target *t)
{
    sqllock__my_optfile_free(&t->file);
}

/* The URL parameters the driver knows, for the message about one it does
 * not. */
#define MY_KNOWN_PARAMS "socket, ssl_mode, ssl_ca, ssl_capath, " \
    "ssl_cert, ssl_key, ssl_cipher, ssl_crl, ssl_crlpath, option_file, " \
    "option_group, innodb_flush"

/* 1 if an unknown parameter's name looks like a password's. */
static int password_like(const char *key)
{
    static const char *const names[] = {
        "password", "passwd", "pass", "pwd", "secret", NULL
    };
    int i;

    for (i = 0; names[i] != NULL; i++)
        if (strcasecmp(key, names[i]) == 0)
            return 1;
    return 0;
}

/* Reads one URL parameter into `t`: 1 if it is the driver's, 0 if not. */
static int url_param(const sqllock_url *url, int i, my_target *t,
                     int *rc, sqllock_dberr *err)
{
    const char *key = url->keys[i], *value = url->values[i];
    int k;

    *rc = SQLLOCK_OK;
    if (strcmp(key, "socket") == 0) {
        if (value[0] != '/')
            *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "socket must be "
                                    "an absolute path (starting with '/'); "
                                    "the value given is not (it is not "
                                    "shown, in case it is a secret)");
        t->socket = value;
        return 1;
    }
    if (strcmp(key, "ssl_mode") == 0) {
        *rc = parse_ssl_mode(value, &t->ssl, err);
        return 1;
    }
    /* innodb_flush=any: connect to a server whose commits are not
     * flushed to disk when acknowledged (see after_connect()). */
    if (strcmp(key, "innodb_flush") == 0) {
        if (strcmp(value, "any") == 0)
            t->innodb_flush_any = 1;
        else if (strcmp(value, "1") == 0)
            t->innodb_flush_any = 0;
        else
            *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "innodb_flush "
                                    "must be 1 (the default: the server's "
                                    "innodb_flush_log_at_trx_commit must be "
                                    "1) or any");
        return 1;
    }
    if (strcmp(key, "option_file") == 0) {
        /* Empty: read no option file, not even ~/.my.cnf. */
        t->has_option_file = 1;
        t->option_file = value;
        return 1;
    }
    if (strcmp(key, "option_group") == 0) {
        if (value[0] == '\0')
            *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "option_group is "
                                    "empty: name the group to read besides "
                                    "[client]");
        t->option_group = value;
        return 1;
    }
    if (strncmp(key, "ssl_", 4) == 0) {
        for (k = 0; k < MY_TLS_N; k++) {
            if (strcmp(key + 4, sqllock__my_tls_names[k]) != 0)
                continue;
            if (value[0] == '\0')
                *rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "%s is empty: "
                                        "give a %s", key,
                                        k == MY_TLS_CIPHER ? "cipher list"
                                        : k == MY_TLS_CAPATH ||
                                          k == MY_TLS_CRLPATH
                                        ? "directory" : "file");
            t->tls[k] = value;
            return 1;
        }
    }
    return 0;
}

/* Checks the URL and reads its parameters into `t`;
 * sqllock__my_target_free() frees
 * what it allocated, also after a failure. */
int sqllock__my_parse_url(const sqllock_url *url, my_target *t,
                          sqllock_dberr *err)
{
    const char *host;
    int i, rc;

    memset(t, 0, sizeof *t);
    if (!url->has_authority)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "write a %s URL as "
                                 "%s://user:password@host:port/database",
                                 url->scheme, url->scheme);
    for (i = 0; i < url->nparams; i++) {
        /* The message names the parameter, never its value, which may be
         * a password under a name the driver does not know (DESIGN C4). */
        if (!url_param(url, i, t, &rc, err))
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "unknown %s URL "
                                     "parameter '%s'%s (known: "
                                     MY_KNOWN_PARAMS ")", url->scheme,
                                     url->keys[i], password_like(url->keys[i])
                                     ? ": a password goes in the URL's user "
                                       "info (mysql://user:password@host/db) "
                                       "or in an option file (option_file=)"
                                     : "");
        if (rc != SQLLOCK_OK)
            return rc;
    }
    /* The core hands the driver one host of a host list at a time
     * (core/failover.c); url->nhosts says how many the URL lists. */
    host = url->host != NULL && url->host[0] != '\0' ? url->host : NULL;
    if (t->socket != NULL) {
        if (url->nhosts > 1)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= connects through one unix "
                                     "socket: it cannot list several hosts "
                                     "(it lists %d)", url->nhosts);
        if (host != NULL && strcmp(host, "localhost") != 0)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= connects through the unix "
                                     "socket: leave the host out or write "
                                     "localhost, not '%s'", host);
        if (url->port != 0)
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a URL with "
                                     "socket= takes no port");
        t->host = "localhost";
    } else if (host == NULL) {
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the %s URL has no "
                                 "host: write %s://user:password@host:port/"
                                 "database, or give ?socket=/path/to/socket",
                                 url->scheme, url->scheme);
    } else {
        t->host = host;
        t->port = (unsigned int)url->port;
    }
    t->database = url->path[0] == '/' ? url->path + 1 : url->path;
    if (t->database[0] == '\0')
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the %s URL names no "
                                 "database: write %s://user:password@host:"
                                 "port/database", url->scheme, url->scheme);
    if (strchr(t->database, '/') != NULL)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the database name "
                                 "'%s' has a '/': the URL path is one "
                                 "database name", t->database);
    return SQLLOCK_OK;
}

/*
 * Reads the option file the URL asks for, and fills the login and TLS
 * settings of `t` with the file's where the URL gives none (the URL's own
 * values win). Which file:
 * - option_file=PATH: that file, which must exist; option_file= (empty)
 *   reads none, not even ~/.my.cnf.
 * - otherwise ~/.my.cnf ($HOME/.my.cnf, skipped when it does not exist),
 *   when the URL names option_group=, or has neither a user nor a
 *   password: the user's own file, where MySQL's clients find their
 *   login. A URL with its own credentials reads no file unless it says
 *   so, as before option files were read.
 * The groups are [client] (with MariaDB's [client-server] and
 * [client-mariadb]) and option_group's, in file order.
 */
int sqllock__my_load_option_file(const sqllock_url *url, my_target *t,
                                 sqllock_dberr *err)
{
    const char *home = getenv("HOME"), *path = NULL;
    char *buf = NULL;
    int rc = SQLLOCK_OK, k, no_login;

    no_login = (url->user == NULL || url->user[0] == '\0') &&
               url->password == NULL;
    if (t->has_option_file) {
        path = t->option_file[0] != '\0' ? t->option_file : NULL;
    } else if ((t->option_group != NULL || no_login) && home != NULL &&
               home[0] != '\0') {
        buf = malloc(strlen(home) + sizeof "/.my.cnf");
        if (buf == NULL)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        sprintf(buf, "%s/.my.cnf", home);
        path = buf;
    }
    if (path != NULL)
        rc = sqllock__my_optfile_read(path, t->option_group, buf != NULL,
                                      &t->file, err);
    free(buf);
    if (rc != SQLLOCK_OK)
        return rc;
    t->user = url->user != NULL && url->user[0] != '\0' ? url->user
                                                         : t->file.user;
    t->password = url->password != NULL ? url->password : t->file.password;
    if (t->ssl == MY_SSL_DEFAULT)
        t->ssl = t->file.mode;
    for (k = 0; k < MY_TLS_N; k++)
        if (t->tls[k] == NULL)
            t->tls[k] = t->file.tls[k];
    return SQLLOCK_OK;
}
