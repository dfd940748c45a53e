/*
 * secrets.h -- what the groups of test_secrets share: the role's
 * password, the forms of a secret, a run of the tool and the group
 * fixture, with their helpers (secrets/common.c); and the cases of each
 * group, for main() (tests/test_secrets.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_SECRETS_H
#define SQLLOCK_TEST_SECRETS_H

#include <stddef.h>
#include <sys/types.h>

/* The distinctive password of the test's own role, decoded and as the
 * URL carries it. */
#define ROLE_PW "Kp7w@Vx:9q/Wz-C4s3cret"
#define ROLE_PW_URL "Kp7w%40Vx:9q%2FWz-C4s3cret"
/* How long a command may take to start (the tool connects first). */
#define START_MS 20000

/* The texts that must not appear: a password, as written and decoded,
 * the pieces of it around each '@' and the tails after each '@' (4
 * bytes or more), and, for a distinctive password, every 6 bytes of it. */
#define MAX_FORMS 160

typedef struct forms {
    int n;
    char s[MAX_FORMS][128];
} forms;

#define MAX_ARGS 24

typedef struct tool_run {
    pid_t pid;
    char out_path[4200], err_path[4200];
    char out[8192], err[8192];
} tool_run;

typedef struct fixture {
    char *dir;
    const char *drv;
    /* The test URL's parts. */
    char user[256], pw[256], host[256], db[256], query[1024];
    int port;
    /* What the runs use: the role's URL, or the test URL. */
    char run_url[4400];
    char role[64];             /* the role made for the test, or "" */
    sqllock_db *admin;         /* the superuser connection, or NULL */
    forms run_forms;           /* the run password's forms */
    int run_has_pw;
    tool_run job;              /* the run in progress (pid != 0) */
    pid_t cmd;
    unsigned seq;
} fixture;

/* The URL the current group runs on (secrets/common.c). */
extern const char *g_url;

/* secrets/common.c */
void se_forms_of(forms *fm, const char *pw, int ngrams);
int se_bin_contains(const char *hay, size_t len, const char *needle);
void se_expect_clean(const char *what, const char *hay, size_t len,
                     const forms *fm);
void se_clear_db_env(void);
void se_start(tool_run *t, const char *dir, const char *const *args);
int se_finish(tool_run *t, int64_t ms);
int se_run_tool(tool_run *t, const char *dir, const char *const *args);
size_t se_read_proc(pid_t pid, const char *what, char *buf, size_t size);
const char *se_env_value(const char *env, size_t len, const char *name);
void se_write_file(const char *path, const char *text, size_t len);
int se_group_setup(void **state);
int se_group_teardown(void **state);

/* secrets/nodb.c */
void test_secrets_C4_redact_hostile_urls(void **state);
void test_secrets_C4_scrub_messages(void **state);
void test_secrets_C4_scrub_long_message_and_handle(void **state);
void test_secrets_C4_db_file_precedence_and_errors(void **state);
void test_secrets_C4_db_file_not_a_url(void **state);
void test_secrets_C4_db_file_mode(void **state);

/* secrets/run.c */
void test_secrets_C4_run_argv_and_environ(void **state);
void test_secrets_C4_init_and_list_output(void **state);

/* secrets/urls.c */
void test_secrets_C4_hostile_urls_api(void **state);
void test_secrets_C4_password_in_host_name(void **state);
void test_secrets_C4_hostile_urls_cli(void **state);
void test_secrets_C4_parameter_values_not_echoed(void **state);

#endif /* SQLLOCK_TEST_SECRETS_H */
