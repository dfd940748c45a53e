/*
 * tls.h -- what the groups of test_tls share: the fixture of
 * scripts/tls.sh and the test's directory, the fixture's logins and the
 * passwords looked for in messages, and the helpers for certificates,
 * URLs, opening, queries, leases and files (tls/common.c); and the cases
 * of each group, for main() (tests/test_tls.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h, test_spawn.h and
 * sqllock_driver.h.
 */
#ifndef SQLLOCK_TEST_TLS_H
#define SQLLOCK_TEST_TLS_H

#include <stddef.h>
#include <stdint.h>

/* The fixture (scripts/tls.sh): its certificates and ports. */
extern char g_certs[1024];
extern int g_pg_port, g_my_port;
/* Files this test writes (option files, a HOME). */
extern char *g_tmp;

/* The fixture's logins (scripts/tls.sh). */
#define PG_LOGIN "sqllock:sqllock-test@"
#define MY_LOGIN "sqllock:sqllock-test@"
#define MY_TLS_USER "sqllock_tls"
#define MY_TLS_PW "sqllock-tls-Pw3"
#define MY_TLS_LOGIN MY_TLS_USER ":" MY_TLS_PW "@"
#define MY_CERT_LOGIN "sqllock_cert:sqllock-cert-Pw5@"

/* Passwords found nowhere else, to look for in messages. */
#define LEAK_PW1 "Zx9-OptLeak-Kw2"
#define LEAK_PW2 "Zx9-OptLeak-Rb7"
#define LEAK_PW3 "Zx9-UrlLeak-Tq4"

/* tls/common.c */
const char *tl_cert(const char *file);
const char *tl_my_url(const char *login, const char *host,
                      const char *fmt, ...);
const char *tl_pg_url(const char *login, const char *host,
                      const char *fmt, ...);
sqllock_db *tl_open_ok(const char *url);
void tl_open_fails(const char *url, int want, const char *secret, ...);
int64_t tl_q1(sqllock_db *db, const char *sql);
void tl_lease_round_trip(sqllock_db *db, const char *name);
const char *tl_write_file(const char *name, int mode, const char *text);
int tl_load_fixture(char *why, size_t why_size);

/* tls/pg.c: PostgreSQL (the URL goes to libpq) */
void test_tls_pg_verify_full_is_tls(void **state);
void test_tls_pg_wrong_ca_refused(void **state);
void test_tls_pg_wrong_host_refused_verify_ca_passes(void **state);
void test_tls_pg_client_certificate(void **state);

#if defined(SQLLOCK_TEST_MYSQL)
/* tls/optfile.c: no server, the option-file reader and URL checks */
void test_mysql_optfile_syntax_as_mysql_reads_it(void **state);
void test_mysql_optfile_groups_and_order(void **state);
void test_mysql_optfile_include_and_includedir(void **state);
void test_mysql_optfile_errors_name_line_not_value(void **state);
void test_mysql_url_unknown_parameter_names_key_not_value(void **state);
void test_mysql_url_tls_checks_before_connect(void **state);

/* tls/mysql.c: MariaDB, and a MySQL server of SQLLOCK_TEST_URLS */
extern const char *g_plain_url;  /* that server's URL, set by main() */
void test_tls_mysql_verify_identity_is_tls(void **state);
void test_tls_mysql_wrong_ca_refused(void **state);
void test_tls_mysql_wrong_host_refused_verify_ca_passes(void **state);
void test_tls_mysql_ssl_ca_alone_verifies_chain(void **state);
void test_tls_mysql_client_certificate_require_x509(void **state);
void test_tls_mysql_require_ssl_without_tls_eperm_hint(void **state);
void test_tls_mysql_option_file_ca_and_login(void **state);
void test_tls_mysql_url_wins_over_option_file(void **state);
void test_tls_mysql_option_group(void **state);
void test_tls_mysql_home_my_cnf_without_url_login(void **state);
void test_tls_mysql_option_file_password_not_in_messages(void **state);
void test_tls_mysql_server_without_tls_refused(void **state);
#endif

#endif /* SQLLOCK_TEST_TLS_H */
