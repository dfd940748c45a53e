/*
 * pg.c -- test_tls on the PostgreSQL of scripts/tls.sh (the URL goes to
 * libpq): verify-full is TLS, the wrong CA and the wrong host are
 * refused, verify-ca does not check the host, a client certificate logs
 * a `cert` role in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "sqllock_driver.h"
#include "tls.h"

/* ------------------------------------------------------------------ */
/* PostgreSQL (the URL goes to libpq)                                  */
/* ------------------------------------------------------------------ */

static const char PG_IS_TLS[] =
    "SELECT CASE WHEN ssl THEN 1 ELSE 0 END FROM pg_stat_ssl "
    "WHERE pid = pg_catalog.pg_backend_pid()";

static void need_pg(void)
{
    if (sqllock_driver_find("postgres") == NULL)
        tu_cannot_run("this build has no postgres driver");
}

/* verify-full with the CA: a TLS connection, for the DNS name and the IP
 * address the certificate names; the library works over it. */
void test_tls_pg_verify_full_is_tls(void **state)
{
    sqllock_db *db;
    (void)state;

    need_pg();
    db = tl_open_ok(tl_pg_url(PG_LOGIN, "localhost",
                              "sslmode=verify-full&sslrootcert=%s",
                              tl_cert("ca.crt")));
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(tl_q1(db, PG_IS_TLS), 1);
    tl_lease_round_trip(db, "tls-pg");
    sqllock_close(db);
    db = tl_open_ok(tl_pg_url(PG_LOGIN, "127.0.0.1",
                              "sslmode=verify-full&sslrootcert=%s",
                              tl_cert("ca.crt")));
    assert_int_equal(tl_q1(db, PG_IS_TLS), 1);
    sqllock_close(db);
    /* The check tells TLS from plain text. */
    db = tl_open_ok(tl_pg_url(PG_LOGIN, "127.0.0.1", "sslmode=disable"));
    assert_int_equal(tl_q1(db, PG_IS_TLS), 0);
    sqllock_close(db);
}

void test_tls_pg_wrong_ca_refused(void **state)
{
    (void)state;
    need_pg();
    tl_open_fails(tl_pg_url(PG_LOGIN, "localhost",
                            "sslmode=verify-full&sslrootcert=%s",
                            tl_cert("other-ca.crt")),
                  SQLLOCK_ECONNECT, "sqllock-test",
                  "certificate verify failed", NULL);
}

/* 127.0.0.2 is not in the certificate: verify-full refuses it, verify-ca
 * (the chain only) does not. */
void test_tls_pg_wrong_host_refused_verify_ca_passes(void **state)
{
    sqllock_db *db;
    (void)state;

    need_pg();
    tl_open_fails(tl_pg_url(PG_LOGIN, "127.0.0.2",
                            "sslmode=verify-full&sslrootcert=%s",
                            tl_cert("ca.crt")),
                  SQLLOCK_ECONNECT, "sqllock-test", "does not match host name",
                  NULL);
    db = tl_open_ok(tl_pg_url(PG_LOGIN, "127.0.0.2",
                              "sslmode=verify-ca&sslrootcert=%s",
                              tl_cert("ca.crt")));
    assert_int_equal(tl_q1(db, PG_IS_TLS), 1);
    sqllock_close(db);
}

/* sslcert and sslkey: the role sqllock_cert logs in with its certificate
 * alone (pg_hba `cert`), and without it is refused. */
void test_tls_pg_client_certificate(void **state)
{
    sqllock_db *db;
    sqllock_db *bad = NULL;
    int rc;
    (void)state;

    need_pg();
    db = tl_open_ok(tl_pg_url("sqllock_cert@", "127.0.0.1",
                              "sslmode=verify-full&sslrootcert=%s&sslcert=%s&"
                              "sslkey=%s", tl_cert("ca.crt"),
                              tl_cert("client.crt"), tl_cert("client.key")));
    assert_int_equal(tl_q1(db, PG_IS_TLS), 1);
    assert_int_equal(tl_q1(db, "SELECT CASE WHEN current_user = "
                               "'sqllock_cert' THEN 1 ELSE 0 END"), 1);
    sqllock_close(db);
    rc = sqllock_open(tl_pg_url("sqllock_cert@", "127.0.0.1",
                                "sslmode=verify-full&sslrootcert=%s",
                                tl_cert("ca.crt")), NULL, &bad);
    printf("    without the certificate: %s: %s\n", sqllock_errname(rc),
           sqllock_errmsg(bad));
    assert_int_not_equal(rc, SQLLOCK_OK);
    assert_true(tu_contains_ci(sqllock_errmsg(bad), "certificate"));
    sqllock_close(bad);
}
