/*
 * failover.c -- connecting to a URL's hosts: the one failover policy of
 * every driver (docs/drivers.md, "Host lists"). core/url.c parses the
 * host list; a driver's connect() connects to the one host it is handed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* "host:port", "[::1]:port", or the name alone without a port, for
 * messages. */
static void host_label(const sqllock_url_host *h, char *out, size_t size)
{
    const char *fmt = strchr(h->name, ':') != NULL ? "[%s]" : "%s";
    size_t n;

    snprintf(out, size, fmt, h->name);
    n = strlen(out);
    if (h->port != 0 && n < size)
        snprintf(out + n, size - n, ":%d", h->port);
}

/* Appends to buf[size], cutting what does not fit. */
static void append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/*
 * Connects the driver to the URL's hosts, the one failover policy of every
 * driver (docs/drivers.md, "Host lists"):
 *
 * - The hosts are tried in the order the URL lists them, one connect
 *   each, and the first that connects (and passes the driver's checks:
 *   target_session_attrs on PostgreSQL, a Galera node in the primary
 *   component on MariaDB) wins. Later connects of the handle (after a
 *   lost connection) start again from the first host.
 * - Each host gets the whole connect timeout (sqllock_options
 *   connect_timeout_ms; the driver bounds its connect by it), so a host
 *   that accepts and never answers costs one timeout, not the list's
 *   chance: a list of n hosts may take up to n timeouts.
 * - A failed connect (SQLLOCK_ECONNECT: unreachable, refused, timed out,
 *   lost during the set-up, not ready) moves on to the next host. Any
 *   other failure ends the connect there: refused credentials above all
 *   (SQLLOCK_EPERM) -- every host gets the same ones, so the next would
 *   refuse them too, and each attempt counts against the account or the
 *   client's address (MySQL's max_connect_errors, failed-login locks,
 *   fail2ban); libpq documents the same rule for its own host lists --
 *   and a URL the driver refuses, memory, a system error.
 *
 * The message names the host that answered last and why; a list's names
 * every host tried.
 */
int sqllock__connect_hosts(sqllock_db *db, const sqllock_url *url,
                          sqllock_dberr *err)
{
    const char *dbname = url->path[0] == '/' ? url->path + 1 : url->path;
    char tried[sizeof err->msg], label[300], dbpart[300];
    sqllock_url one = *url;
    sqllock_dberr herr;
    int i, rc = SQLLOCK_ECONNECT;

    if (url->nhosts == 0) {
        /* No host: the driver's default (a unix socket, a file). */
        rc = db->drv->connect(url, &db->params, &db->conn, err);
        return rc;
    }
    dbpart[0] = '\0';
    if (dbname[0] != '\0')
        snprintf(dbpart, sizeof dbpart, " (database '%s')", dbname);
    tried[0] = '\0';
    for (i = 0; i < url->nhosts; i++) {
        one.host = url->hosts[i].name;
        one.port = url->hosts[i].port;
        memset(&herr, 0, sizeof herr);
        rc = db->drv->connect(&one, &db->params, &db->conn, &herr);
        if (rc == SQLLOCK_OK)
            return SQLLOCK_OK;
        db->conn = NULL;
        if (rc == SQLLOCK_EURL) {
            *err = herr;
            return rc;
        }
        host_label(&url->hosts[i], label, sizeof label);
        if (rc != SQLLOCK_ECONNECT || url->nhosts == 1) {
            sqllock_dberr_set(err, rc, herr.code, "cannot connect to %s at "
                              "%s%s: %s%s%s", url->scheme, label, dbpart,
                              herr.msg, tried[0] ? "; hosts tried before: "
                                                 : "", tried);
            return rc;
        }
        append(tried, sizeof tried, "%s%s: %s%s%s%s", tried[0] ? "; " : "",
               label, herr.msg, herr.code[0] ? " (" : "", herr.code,
               herr.code[0] ? ")" : "");
    }
    return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "cannot connect to %s "
                             "at any of its %d hosts%s: %s", url->scheme,
                             url->nhosts, dbpart, tried);
}
