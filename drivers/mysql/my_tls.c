/*
 * my_tls.c -- TLS: the mode in force, the client library's TLS options,
 * and what a failed handshake checked.
 */
#include <stdio.h>
#include <string.h>

#include "my.h"

/*
 * Settles the TLS mode. Without ssl_mode (in the URL or the option file),
 * a named CA means VERIFY_CA and other TLS settings (a client certificate,
 * a cipher list, a CRL) mean REQUIRED: TLS files must not leave the
 * connection open to a plain-text fallback. With none, the client
 * library's default holds (MariaDB Connector/C 3.3: no TLS).
 * VERIFY_CA needs a CA: MariaDB Connector/C checks the certificate chain
 * only against a CA it is given, so without one it would check nothing.
 */
int sqllock__my_tls_mode(my_target *t, sqllock_dberr *err)
{
    int k, ca = t->tls[MY_TLS_CA] != NULL ||
                t->tls[MY_TLS_CAPATH] != NULL, other = 0;

    for (k = 0; k < MY_TLS_N; k++)
        if (t->tls[k] != NULL)
            other = 1;
    if (t->ssl == MY_SSL_DEFAULT)
        t->ssl = ca ? MY_SSL_VERIFY_CA
                    : other ? MY_SSL_REQUIRED : MY_SSL_DEFAULT;
    if (t->ssl == MY_SSL_VERIFY_CA && !ca)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "ssl_mode=VERIFY_CA "
                                 "needs the CA that signed the server's "
                                 "certificate: give ssl_ca=/path/to/ca.pem "
                                 "or ssl_capath=/path/to/dir (in the URL or "
                                 "the option file)");
    return SQLLOCK_OK;
}

/*
 * Asks for TLS as the mode in force says (see sqllock__my_tls_mode()),
 * and hands the
 * client library the TLS files; with DISABLED it gets none, since
 * MariaDB Connector/C turns TLS on when it is given any.
 *
 * What each mode checks with MariaDB Connector/C 3.3 (OpenSSL), read
 * from its source (libmariadb/secure/openssl.c, ma_pvio.c,
 * plugins/auth/my_auth.c) and tested in tests/tls/mysql.c (test_tls):
 * - PREFERRED, REQUIRED: MYSQL_OPT_SSL_ENFORCE, which only asks for TLS
 *   when the server offers it (a server without TLS gets plain text; for
 *   REQUIRED after_connect() then refuses the connection). A named CA
 *   makes the library verify the chain against it (SSL_VERIFY_PEER).
 * - VERIFY_CA: the same, with a CA (sqllock__my_tls_mode() insists): the
 *   chain must
 *   lead to it; the host name is not checked.
 * - VERIFY_IDENTITY: MYSQL_OPT_SSL_VERIFY_SERVER_CERT as well: the chain
 *   is verified (against the named CA, else OpenSSL's default CA store)
 *   and the host as written in the URL must match the certificate
 *   (X509_check_host() on its DNS names, X509_check_ip_asc() on its IP
 *   addresses), before the login is sent; a server without TLS is
 *   refused then too.
 * Oracle's libmysqlclient takes the mode itself (MYSQL_OPT_SSL_MODE).
 */
int sqllock__my_set_tls(MYSQL *my, const my_target *t, sqllock_dberr *err)
{
    static const enum mysql_option files[MY_TLS_N] = {
        MYSQL_OPT_SSL_CA, MYSQL_OPT_SSL_CAPATH, MYSQL_OPT_SSL_CERT,
        MYSQL_OPT_SSL_KEY, MYSQL_OPT_SSL_CIPHER, MYSQL_OPT_SSL_CRL,
        MYSQL_OPT_SSL_CRLPATH
    };
    static const char *const names[MY_TLS_N] = {
        "SSL_CA", "SSL_CAPATH", "SSL_CERT", "SSL_KEY", "SSL_CIPHER",
        "SSL_CRL", "SSL_CRLPATH"
    };
    int k, rc = SQLLOCK_OK;
#if defined(MARIADB_PACKAGE_VERSION)
    my_flag on = 1, off = 0;
#else
    unsigned int m;
#endif

    if (t->ssl != MY_SSL_DISABLED)
        for (k = 0; k < MY_TLS_N && rc == SQLLOCK_OK; k++)
            if (t->tls[k] != NULL)
                rc = sqllock__my_set_option(my, files[k], t->tls[k],
                                            names[k], err);
    if (rc != SQLLOCK_OK)
        return rc;
#if defined(MARIADB_PACKAGE_VERSION)
    switch (t->ssl) {
    case MY_SSL_DEFAULT:
        break;
    case MY_SSL_DISABLED:
        rc = sqllock__my_set_option(my, MYSQL_OPT_SSL_ENFORCE, &off,
                                    "SSL_ENFORCE", err);
        break;
    case MY_SSL_PREFERRED:
    case MY_SSL_REQUIRED:
    case MY_SSL_VERIFY_CA:
        rc = sqllock__my_set_option(my, MYSQL_OPT_SSL_ENFORCE, &on,
                                    "SSL_ENFORCE", err);
        break;
    case MY_SSL_VERIFY_IDENTITY:
        rc = sqllock__my_set_option(my, MYSQL_OPT_SSL_ENFORCE, &on,
                                    "SSL_ENFORCE", err);
        if (rc == SQLLOCK_OK)
            rc = sqllock__my_set_option(my,
                                        MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on,
                                        "SSL_VERIFY_SERVER_CERT", err);
        break;
    }
    return rc;
#else
    /* Oracle's libmysqlclient 5.7.11 and later take the mode itself. */
    switch (t->ssl) {
    case MY_SSL_DEFAULT:
        return SQLLOCK_OK;
    case MY_SSL_DISABLED:
        m = SSL_MODE_DISABLED;
        break;
    case MY_SSL_PREFERRED:
        m = SSL_MODE_PREFERRED;
        break;
    case MY_SSL_REQUIRED:
        m = SSL_MODE_REQUIRED;
        break;
    case MY_SSL_VERIFY_CA:
        m = SSL_MODE_VERIFY_CA;
        break;
    default:
        m = SSL_MODE_VERIFY_IDENTITY;
        break;
    }
    return sqllock__my_set_option(my, MYSQL_OPT_SSL_MODE, &m, "SSL_MODE", err);
#endif
}

/* After a failed TLS handshake (2026), says what the mode in force checked,
 * since the client library's words are OpenSSL's ("self-signed
 * certificate in certificate chain"). */
void sqllock__my_tls_hint(const my_target *t, sqllock_dberr *err)
{
    const char *ca = t->tls[MY_TLS_CA] != NULL ? t->tls[MY_TLS_CA]
                     : t->tls[MY_TLS_CAPATH];

    if (strstr(err->msg, "does not support it") != NULL)
        return;                 /* "SSL is required, but the server ..." */
    if (strstr(err->msg, "Validation of SSL server certificate") != NULL)
        sqllock__my_append(err->msg, sizeof err->msg, "; the server's "
                           "certificate does not name the host '%s' "
                           "(ssl_mode=VERIFY_IDENTITY checks the host name "
                           "as the URL writes it; VERIFY_CA does not)",
                           t->host);
    else if (ca != NULL)
        sqllock__my_append(err->msg, sizeof err->msg, "; the server's "
                           "certificate was not accepted: it must be signed "
                           "by the CA in %s (ssl_%s)", ca,
                           t->tls[MY_TLS_CA] != NULL ? "ca" : "capath");
    else if (t->ssl == MY_SSL_VERIFY_IDENTITY)
        sqllock__my_append(err->msg, sizeof err->msg, "; without ssl_ca the "
                           "server's certificate is checked against the "
                           "system's CA store: give ssl_ca= with the CA that "
                           "signed it");
}
