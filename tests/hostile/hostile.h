/*
 * hostile.h -- what the groups of test_hostile share: the growable
 * string, the group fixture and the snapshot of the database around each
 * case, and the helpers that take and compare it and make URLs from the
 * group's URL (hostile/common.c); and the cases of each group, for main()
 * (tests/test_hostile.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_HOSTILE_H
#define SQLLOCK_TEST_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

extern const char *g_url;  /* the URL the current group runs on */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

typedef struct fixture {
    char *dir;
    const char *drv;            /* "sqlite", "postgres", "mysql" */
    sqllock_db *db;             /* the handle bad input is fed to */
    sqllock_db *vdb;            /* the victim's handle, also for reading */
    sqllock_lease *victim;
    char prefix[32];            /* "ho<pid>-" */
    char upper[32];             /* the first string past the prefix */
    char victim_name[64];
    char app[64];               /* the test's own table */
    sqllock_url *parts;         /* the group URL, parsed */
    char out[65536];            /* the last CLI run's stdout */
    char err[16384];            /* and stderr */
} fixture;

/* The snapshot: `state` must never change across a case; `counters`
 * (token counters) must not change across a refused case. */
typedef struct snapshot {
    strbuf state;
    strbuf counters;
} snapshot;

/* hostile/common.c */
int ho_is_drv(const fixture *f, const char *d);
const char *ho_ph(const fixture *f, const char *sql, char *buf,
                  size_t size);
void ho_snap(fixture *f, snapshot *s);
void ho_snap_free(snapshot *s);
void ho_expect_unchanged(fixture *f, const snapshot *before,
                         int counters_too, const char *what);
void ho_forget_name(fixture *f, const char *name);
int ho_setup(void **state);
int ho_teardown(void **state);
int ho_msg_has(const char *msg, const char *any);
char *ho_expand_url(const fixture *f, const char *t);

/* hostile/api.c */
void test_hostile_api_table(void **state);
void test_hostile_embedded_nul_ends_the_name(void **state);

/* hostile/durable.c */
void test_hostile_L10_options_cannot_make_grants_async(void **state);

/* hostile/cli.c */
void test_hostile_cli_table(void **state);
void test_hostile_cli_names_round_trip(void **state);

#endif /* SQLLOCK_TEST_HOSTILE_H */
