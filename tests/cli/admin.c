/*
 * admin.c -- test_cli: list --json, reap, show, release --force and a
 * name's history (DESIGN P1, P4, L4, L5; issue 15 item 7).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "cli.h"

/* list --json shows a held lease with its owner and token. */
void test_cli_list_json(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], quoted[320];
    int64_t token;

    snprintf(quoted, sizeof quoted, "\"%s\"", cl_U(f, "list-me"));
    cl_acquire(f, cl_U(f, "list-me"), "60s", owner, &token);
    EXPECT_EXIT(f, 0, "list", "--json");
    assert_true(f->out[0] == '[' || strchr(f->out, '[') != NULL);
    assert_non_null(strstr(f->out, quoted));
    assert_non_null(strstr(f->out, owner));
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    assert_non_null(strstr(f->out, tok));
    EXPECT_EXIT(f, 0, "list");
    assert_non_null(strstr(f->out, cl_U(f, "list-me")));
    EXPECT_EXIT(f, 0, "release", cl_U(f, "list-me"), "--owner", owner,
                "--token", tok);
    EXPECT_EXIT(f, 0, "list", "--json");
    assert_null(strstr(f->out, quoted));
}

/* P1/P4/L4/L5: `reap` deletes expired leases and says how many, leaves
 * live ones and, with --older-than, those that expired more recently; a
 * reaped lease's release reports lost, and the name's next token is
 * larger. Bad options are usage errors (64). */
void test_cli_reap(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], live_owner[SQLLOCK_OWNER_LEN + 1];
    char tok[32], live_tok[32];
    int64_t token, live_token, token2;
    long n = -1;

    cl_acquire(f, cl_U(f, "reap-live"), "60s", live_owner, &live_token);
    cl_acquire(f, cl_U(f, "reap-dead"), "1ms", owner, &token);
    tu_sleep_ms(100);
    EXPECT_EXIT(f, 0, "reap", "--older-than", "1h");
    if (sscanf(f->out, "reaped %ld expired lease", &n) != 1 || n < 0)
        fail_msg("reap printed \"%s\", want \"reaped N expired leases\"",
                 f->out);
    EXPECT_EXIT(f, 0, "list");
    if (strstr(f->out, cl_U(f, "reap-dead")) == NULL)
        fail_msg("reap --older-than 1h removed a lease that expired 100 ms "
                 "ago:\n%s", f->out);
    EXPECT_EXIT(f, 0, "reap", "--batch", "1");
    n = -1;
    if (sscanf(f->out, "reaped %ld expired lease", &n) != 1 || n < 1)
        fail_msg("reap printed \"%s\", want \"reaped N expired leases\" "
                 "with N >= 1", f->out);
    EXPECT_EXIT(f, 0, "list");
    if (strstr(f->out, cl_U(f, "reap-dead")) != NULL)
        fail_msg("reap left the expired lease:\n%s", f->out);
    if (strstr(f->out, cl_U(f, "reap-live")) == NULL)
        fail_msg("reap removed a live lease:\n%s", f->out);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 76, "release", cl_U(f, "reap-dead"), "--owner", owner,
                "--token", tok);
    cl_acquire(f, cl_U(f, "reap-dead"), "60s", owner, &token2);
    assert_true(token2 > token);
    snprintf(tok, sizeof tok, "%lld", (long long)token2);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "reap-dead"), "--owner", owner,
                "--token", tok);
    snprintf(live_tok, sizeof live_tok, "%lld", (long long)live_token);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "reap-live"), "--owner", live_owner,
                "--token", live_tok);

    EXPECT_EXIT(f, 64, "reap", "--batch", "0");
    EXPECT_EXIT(f, 64, "reap", "--batch", "abc");
    EXPECT_EXIT(f, 64, "reap", "--batch", "1000001");
    EXPECT_EXIT(f, 64, "reap", "--older-than", "5parsecs");
    assert_true(tu_contains_ci(f->err, "older-than"));
    EXPECT_EXIT(f, 64, "reap", "--older-than", "-1s");
    EXPECT_EXIT(f, 64, "reap", "extra");
    EXPECT_EXIT(f, 64, "reap", "--no-such-opt");
}

/* Counts the lines of f->out that start with `prefix`. */
static int count_lines(const fixture *f, const char *prefix)
{
    const char *p = f->out;
    int n = 0;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            n++;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return n;
}

/* Issue 15 item 7: `show NAME` prints the lease of one name by the
 * database's clock, or that it is free; --json for programs. */
void test_cli_show(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "show");
    char owner[SQLLOCK_OWNER_LEN + 1], want[128];
    int64_t token;

    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "free (no lease row)");
    EXPECT_EXIT(f, 0, "show", name, "--json");
    EXPECT_CONTAINS(f, "\"held\": false");
    cl_acquire(f, name, "60s", owner, &token);
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_CONTAINS(f, owner);
    snprintf(want, sizeof want, "token:    %lld", (long long)token);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "by the database's clock");
    EXPECT_EXIT(f, 0, "show", name, "--json");
    snprintf(want, sizeof want, "\"token\": %lld", (long long)token);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "\"held\": true");
    EXPECT_EXIT(f, 64, "show");
    EXPECT_EXIT(f, 0, "release", name, "--owner", owner, "--token",
                strchr(want, ' ') + 1);
}

/* Issue 15 item 7, L4/L5: `release NAME --force` frees a stuck lease
 * whoever holds it: a live one only with --force twice (75 with one,
 * naming holder and token, nothing freed); it is recorded in NAME's
 * history (who, which token); the holder then hears LOST; an expired one
 * needs --force once. */
void test_cli_release_force(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "force");
    char owner[SQLLOCK_OWNER_LEN + 1], owner2[SQLLOCK_OWNER_LEN + 1];
    char tok[32], want[128];
    int64_t token, token2;

    EXPECT_EXIT(f, 0, "history", name, "--clear");
    cl_acquire(f, name, "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 75, "release", name, "--force");
    EXPECT_CONTAINS_ERR(f, "--force twice");
    EXPECT_CONTAINS_ERR(f, tok);
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_EXIT(f, 0, "release", name, "--force", "--force");
    EXPECT_CONTAINS(f, "by force");
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "free");
    /* The holder's own release now says the lease was lost (L4). */
    EXPECT_EXIT(f, 76, "release", name, "--owner", owner, "--token", tok);
    /* Recorded: kind, token, who. */
    EXPECT_EXIT(f, 0, "history", name, "--json");
    snprintf(want, sizeof want, "\"token\": %s", tok);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "\"kind\": \"force\"");
    EXPECT_CONTAINS(f, "\"status\": \"live\"");
    EXPECT_CONTAINS(f, "@");
    /* An expired lease: once is enough. */
    cl_acquire(f, name, "1s", owner2, &token2);
    tu_sleep_ms(1300);
    EXPECT_EXIT(f, 0, "release", name, "--force");
    EXPECT_CONTAINS(f, "by force");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 2);
    /* Nothing there: nothing to do. */
    EXPECT_EXIT(f, 0, "release", name, "--force");
    EXPECT_CONTAINS(f, "nothing to release");
    /* --force takes neither --owner nor --token. */
    EXPECT_EXIT(f, 64, "release", name, "--force", "--token", tok);
    /* Issue 27 item 3, C5: --clear keeps the forced releases and notes
     * itself; --clear-all removes them too, and notes itself. */
    EXPECT_EXIT(f, 0, "history", name, "--clear");
    EXPECT_CONTAINS(f, "forced releases kept");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 2);
    assert_int_equal(count_lines(f, "clear "), 2);
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    EXPECT_CONTAINS(f, "forced releases too");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 0);
    assert_int_equal(count_lines(f, "clear "), 1);
    EXPECT_CONTAINS(f, "@");
}

/* Issue 27 item 3, DESIGN C5: a forced release names the database user
 * beside the client's user@host (PostgreSQL current_user, MySQL
 * CURRENT_USER(); SQLite has none), and its lines outlive the runs:
 * twenty-five runs after it, the forced release is still in the history
 * (each kind keeps its own twenty newest). */
void test_cli_C5_force_audit_names_role_and_outlives_runs(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "audit");
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    int i;

    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    cl_acquire(f, name, "60s", owner, &token);
    EXPECT_EXIT(f, 0, "release", name, "--force", "--force");
    EXPECT_CONTAINS(f, "in the same transaction");
    EXPECT_EXIT(f, 0, "history", name, "--json");
    if (strcmp(tu_url_driver(g_url), "sqlite") != 0) {
        /* "user@host as ROLE", the role filled in by the database. */
        EXPECT_CONTAINS(f, " as ");
        if (strstr(f->out, " as \"") != NULL || strchr(f->out, 1) != NULL)
            fail_msg("the database user is missing: %s", f->out);
    } else if (strstr(f->out, " as ") != NULL) {
        fail_msg("SQLite has no database user: %s", f->out);
    }
    for (i = 0; i < 25; i++)
        EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--", "true");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 1);
    assert_int_equal(count_lines(f, "run "), 20);
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
}

/* Issue 15 item 7: a name's history keeps the newest SQLLOCK_HISTORY_MAX
 * (20) entries, newest first; a name too long to fit the record key with
 * its prefix gets a key of its own (a hash of the whole name), never
 * another name's. */
void test_cli_history_bounded(void **state)
{
    fixture *f = *state;
    char longa[256], longb[256], owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token, first = 0;
    const char *name = cl_U(f, "bounded");
    int i;

    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    for (i = 0; i < 23; i++) {
        cl_acquire(f, name, "60s", owner, &token);
        if (i == 0)
            first = token;
        EXPECT_EXIT(f, 0, "release", name, "--force", "--force");
    }
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 20);
    EXPECT_EXIT(f, 0, "history", name, "--json");
    {
        char old[64];
        snprintf(old, sizeof old, "\"token\": %lld,", (long long)first);
        if (strstr(f->out, old) != NULL)
            fail_msg("the oldest entry (token %lld) was kept: %s",
                     (long long)first, f->out);
    }
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    /* Two 255-byte names that differ only in their last byte. */
    memset(longa, 'x', 254);
    memcpy(longa, "cli-long-", 9);
    longa[254] = 'a';
    longa[255] = '\0';
    memcpy(longb, longa, sizeof longb);
    longb[254] = 'b';
    EXPECT_EXIT(f, 0, "history", longa, "--clear-all");
    EXPECT_EXIT(f, 0, "history", longb, "--clear-all");
    cl_acquire(f, longa, "60s", owner, &token);
    EXPECT_EXIT(f, 0, "release", longa, "--force", "--force");
    EXPECT_EXIT(f, 0, "history", longa);
    assert_int_equal(count_lines(f, "force "), 1);
    EXPECT_EXIT(f, 0, "history", longb);
    assert_int_equal(count_lines(f, "force "), 0);
    EXPECT_EXIT(f, 0, "history", longa, "--clear-all");
}

/* Issue 15 item 7: `run` notes each run in the name's history -- its
 * start, end, exit code and outcome -- newest first, the "running" entry
 * of a run replaced by its outcome; --no-history leaves it out. Six runs
 * at once, each waiting for the lock, all end up there: the history is
 * written by compare-and-set, and no writer's entry is lost. */
void test_cli_history_of_runs(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "runs");
    char out_path[4300], err_path[4300];
    const char *argv[16];
    pid_t pids[6];
    int i;

    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--", "true");
    EXPECT_EXIT(f, 3, "run", name, "--ttl", "10s", "--", "sh", "-c",
                "exit 3");
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--no-history", "--",
                "true");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "run "), 2);
    if (strstr(f->out, "failed") == NULL || strstr(f->out, " ok ") == NULL ||
        strstr(f->out, "failed") > strstr(f->out, " ok "))
        fail_msg("want the failed run first (newest), then the ok one:\n%s",
                 f->out);
    if (strstr(f->out, "running") != NULL)
        fail_msg("a finished run is still 'running':\n%s", f->out);
    EXPECT_EXIT(f, 0, "history", name, "--json");
    EXPECT_CONTAINS(f, "\"exit\": 3");
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");

    for (i = 0; i < 6; i++) {
        int n = 0;

        argv[n++] = SQLLOCK_CLI_PATH;
        argv[n++] = "--db";
        argv[n++] = f->url;
        argv[n++] = "run";
        argv[n++] = name;
        argv[n++] = "--ttl";
        argv[n++] = "20s";
        argv[n++] = "--wait";
        argv[n++] = "60s";
        argv[n++] = "--";
        argv[n++] = "sleep";
        argv[n++] = "0.05";
        argv[n] = NULL;
        snprintf(out_path, sizeof out_path, "%s/h%d.out", f->dir, i);
        snprintf(err_path, sizeof err_path, "%s/h%d.err", f->dir, i);
        pids[i] = tu_spawn(argv, out_path, err_path, 1);
    }
    for (i = 0; i < 6; i++) {
        char err[2000];
        int code = tu_wait_for(pids[i], 90000);

        if (code != 0) {
            snprintf(err_path, sizeof err_path, "%s/h%d.err", f->dir, i);
            tu_read_file(err_path, err, sizeof err);
            if (code < 0)
                tu_kill_wait(pids[i]);
            fail_msg("run %d at once: exit %d: %s", i, code, err);
        }
    }
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "run "), 6);
    if (strstr(f->out, "running") != NULL || strstr(f->out, "failed"))
        fail_msg("six runs at once: every entry must be ok:\n%s", f->out);
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
}

/* Issue 27 item 6: show, history and release --force check a name as
 * acquire does (DESIGN E2): a name of 10 kB, an empty one and one with
 * a control character are refused with acquire's message and exit code
 * (64), before anything is read or written. */
void test_cli_names_checked_as_acquire(void **state)
{
    static char big[10241];
    const char *names[3];
    fixture *f = *state;
    char want[512];
    const char *msg;
    int i;

    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    names[0] = big;
    names[1] = "";
    names[2] = "a\nb";
    for (i = 0; i < 3; i++) {
        EXPECT_EXIT(f, 64, "acquire", names[i], "--ttl", "5s");
        msg = strstr(f->err, "acquire: ");
        assert_non_null(msg);
        snprintf(want, sizeof want, "%s", msg + strlen("acquire: "));
        EXPECT_EXIT(f, 64, "show", names[i]);
        EXPECT_CONTAINS_ERR(f, want);
        EXPECT_EXIT(f, 64, "show", names[i], "--json");
        EXPECT_CONTAINS_ERR(f, want);
        assert_string_equal(f->out, "");
        EXPECT_EXIT(f, 64, "history", names[i]);
        EXPECT_CONTAINS_ERR(f, want);
        EXPECT_EXIT(f, 64, "history", names[i], "--clear-all");
        EXPECT_CONTAINS_ERR(f, want);
        EXPECT_EXIT(f, 64, "release", names[i], "--force");
        EXPECT_CONTAINS_ERR(f, want);
        EXPECT_EXIT(f, 64, "release", names[i], "--force", "--force");
        EXPECT_CONTAINS_ERR(f, want);
        assert_string_equal(f->out, "");
    }
}

/* Issue 27 item 4: `show` and `release --force` take a primitive's row
 * as `list` prints it, "NAME [p<k>]" for a permit: the operator frees a
 * stuck permit; its holder hears LOST; the forced release is in NAME's
 * history with the row's tag. A name that only looks like one (no such
 * row) is a plain name: nothing there. */
void test_cli_force_release_of_a_permit(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "permit");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_sem *sem = NULL;
    sqllock_db *db = NULL;
    char row[400], tag[32];

    EXPECT_RC(db, sqllock_open(g_url, NULL, &db), SQLLOCK_OK, "open");
    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_sem_new(db, name, 2, &o, &sem), SQLLOCK_OK, "sem");
    EXPECT_RC(db, sqllock_sem_acquire(sem, 0), SQLLOCK_OK, "permit");
    snprintf(tag, sizeof tag, "[p%d]", sqllock_sem_permit(sem));
    snprintf(row, sizeof row, "%s %s", name, tag);
    EXPECT_EXIT(f, 0, "list");
    EXPECT_CONTAINS(f, row);
    EXPECT_EXIT(f, 0, "show", row);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_EXIT(f, 75, "release", row, "--force");
    EXPECT_EXIT(f, 0, "release", row, "--force", "--force");
    EXPECT_CONTAINS(f, "by force");
    EXPECT_EXIT(f, 0, "show", row);
    EXPECT_CONTAINS(f, "free");
    /* Its holder hears it. */
    EXPECT_RC(db, sqllock_sem_release(sem), SQLLOCK_LOST, "release");
    EXPECT_EXIT(f, 0, "history", name);
    EXPECT_CONTAINS(f, tag);
    assert_int_equal(count_lines(f, "force "), 1);
    EXPECT_EXIT(f, 0, "history", name, "--clear-all");
    /* No such row: a plain name, nothing to release. */
    snprintf(row, sizeof row, "%s [p9]", name);
    EXPECT_EXIT(f, 0, "release", row, "--force");
    EXPECT_CONTAINS(f, "nothing to release");
    /* The API: sqllock_lease_attach() takes the row as sqllock_list()
     * reports it (NAME 0x1f tag), and releases it by owner and token. */
    EXPECT_RC(db, sqllock_sem_acquire(sem, 0), SQLLOCK_OK, "permit again");
    {
        sqllock_lease *held = sqllock_sem_lease(sem), *op = NULL;
        sqllock_db *other = NULL;

        EXPECT_RC(other, sqllock_open(g_url, NULL, &other), SQLLOCK_OK,
                  "open");
        EXPECT_RC(other, sqllock_lease_attach(other,
                                              sqllock_lease_name(held),
                                              sqllock_lease_owner(held),
                                              sqllock_lease_token(held), &o,
                                              &op),
                  SQLLOCK_OK, "attach to the permit's row");
        EXPECT_RC(other, sqllock_lease_try_acquire(op), SQLLOCK_EMISUSE,
                  "an attached row is not acquired");
        EXPECT_RC(other, sqllock_lease_release(op), SQLLOCK_OK,
                  "release the permit's row");
        sqllock_lease_free(op);
        sqllock_close(other);
    }
    EXPECT_RC(db, sqllock_sem_release(sem), SQLLOCK_LOST, "release");
    sqllock_sem_free(sem);
    sqllock_close(db);
}
