/*
 * examples.h -- what the groups of test_examples share: the paths the
 * examples name, the group fixture and the helpers for files and the
 * processes the test starts (examples/common.c); and the cases of each
 * group, for main() (tests/test_examples.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h and test_spawn.h.
 */
#ifndef SQLLOCK_TEST_EXAMPLES_H
#define SQLLOCK_TEST_EXAMPLES_H

#include <sys/types.h>

/* What the examples name, and what the test puts in their place. */
#define EX_SQLLOCK "/usr/local/bin/sqllock"
#define EX_REPORT "/usr/local/bin/nightly-report"
#define EX_URL_FILE "/etc/sqllock/db.url"

#define MAX_ENV 32
#define MAX_ARGS 32
#define MAX_LIVE 8

typedef struct fixture {
    char *dir;
    char url_file[4300];       /* holds the URL the group runs on */
    char report[4300];         /* the stand-in for the report */
    char ran[4300], started[4300], go[4300], env_seen[4300];
    char out[16384], err[16384];
    char user[256];
    char lock[128];            /* the lock's name, made this process's */
    pid_t live[MAX_LIVE];      /* started and not yet waited for */
} fixture;

/* The URL the current group runs on (examples/common.c). */
extern const char *g_url;

/* examples/common.c */
void ex_write_file(const char *path, const char *text, mode_t mode);
char *ex_slurp(const char *path);
int ex_count_lines(const char *path);
int ex_replace_all(char *s, size_t size, const char *from, const char *to);
void ex_sh_quote(const char *path, char *out, size_t size);
int ex_group_setup(void **state);
void ex_stop_live(fixture *f);
int ex_group_teardown(void **state);
void ex_make_env(char **env, char store[][4300], const char *const *base);
pid_t ex_start(fixture *f, const char *const *argv, char **env,
               const char *tag);
int ex_finish(fixture *f, pid_t pid, const char *tag);
void ex_wait_started(fixture *f, pid_t pid, const char *tag);
void ex_reset_report(fixture *f);

/* examples/crontab.c */
void test_examples_crontab(void **state);

/* examples/systemd.c */
void test_examples_systemd(void **state);
void test_examples_systemd_verify(void **state);

#endif /* SQLLOCK_TEST_EXAMPLES_H */
