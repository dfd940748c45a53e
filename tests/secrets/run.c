/*
 * run.c -- test_secrets on a database: `sqllock run`'s arguments and its
 * command's environment read from /proc, for every way of naming the
 * database, and what init and list print (C4).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "secrets.h"

/* How the runs name the database. */
enum how {
    H_DB,              /* sqllock --db URL run ... */
    H_DB_EQ_AFTER,     /* sqllock run NAME --db=URL ... */
    H_DB_VAR,          /* SQLLOCK_DB=URL sqllock run ... */
    H_FILE,            /* sqllock --db-file PATH run ... */
    H_FILE_VAR,        /* SQLLOCK_DB_FILE=PATH sqllock run ... */
    H_COUNT
};

static const char *const how_names[] = {
    "--db URL", "run --db=URL", "$SQLLOCK_DB", "--db-file", "$SQLLOCK_DB_FILE"
};

/* One `sqllock run` while its command waits: checks the tool's
 * arguments and the command's environment, then lets it end. */
static void one_run(fixture *f, enum how how, int export_db)
{
    char name[128], started[4300], stop[4300], script[9000], file[4300];
    char dbeq[4500], label[200], buf[65536], text[4500];
    const char *args[MAX_ARGS];
    const char *v;
    int64_t end;
    size_t len;
    int n = 0, code;

    snprintf(label, sizeof label, "[%s] %s%s", f->drv, how_names[how],
             export_db ? " --export-db" : "");
    snprintf(name, sizeof name, "secrets-%ld-%u", (long)getpid(), f->seq);
    snprintf(started, sizeof started, "%s/started-%u", f->dir, f->seq);
    snprintf(stop, sizeof stop, "%s/stop-%u", f->dir, f->seq);
    snprintf(file, sizeof file, "%s/db-%u.url", f->dir, f->seq++);
    snprintf(script, sizeof script, "echo $$ > '%s'; while [ ! -e '%s' ]; "
             "do sleep 0.05; done", started, stop);
    snprintf(text, sizeof text, "\n  %s\n", f->run_url);
    se_write_file(file, text, strlen(text));
    se_clear_db_env();
    if (how == H_DB) {
        args[n++] = "--db";
        args[n++] = f->run_url;
    } else if (how == H_FILE) {
        args[n++] = "--db-file";
        args[n++] = file;
    } else if (how == H_DB_VAR) {
        setenv("SQLLOCK_DB", f->run_url, 1);
    } else if (how == H_FILE_VAR) {
        setenv("SQLLOCK_DB_FILE", file, 1);
    }
    args[n++] = "run";
    args[n++] = name;
    if (how == H_DB_EQ_AFTER) {
        snprintf(dbeq, sizeof dbeq, "--db=%s", f->run_url);
        args[n++] = dbeq;
    }
    args[n++] = "--ttl";
    args[n++] = "30s";
    if (export_db)
        args[n++] = "--export-db";
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = script;
    args[n] = NULL;
    se_start(&f->job, f->dir, args);
    se_clear_db_env();

    /* The command runs once it has written its pid. */
    end = tu_now_ms() + START_MS;
    f->cmd = 0;
    while (f->cmd <= 0) {
        if (tu_read_file(started, buf, sizeof buf) > 0 &&
            strchr(buf, '\n') != NULL)
            f->cmd = (pid_t)strtol(buf, NULL, 10);
        else if (tu_wait_for(f->job.pid, 0) >= 0 || tu_now_ms() > end) {
            tu_kill_wait(f->job.pid);
            f->job.pid = 0;
            tu_read_file(f->job.err_path, f->job.err, sizeof f->job.err);
            fail_msg("%s: the command did not start; stderr: %s", label,
                     f->job.err);
        } else {
            tu_sleep_ms(10);
        }
    }

    /* The tool's arguments, as every local user sees them. */
    len = se_read_proc(f->job.pid, "cmdline", buf, sizeof buf);
    se_expect_clean(label, buf, len, &f->run_forms);
    if (how == H_DB || how == H_DB_EQ_AFTER) {
        /* --db is still there, in its redacted form. */
        char *shown = sqllock__url_redact(f->run_url);

        assert_non_null(shown);
        if (!se_bin_contains(buf, len, f->run_has_pw ? "***" : f->run_url) ||
            !se_bin_contains(buf, len, how == H_DB ? "--db" : "--db=") ||
            (strlen(shown) <= strlen(f->run_url) &&
             !se_bin_contains(buf, len, shown)))
            fail_msg("%s: /proc/%ld/cmdline does not show --db %s",
                     label, (long)f->job.pid, shown);
        free(shown);
    }

    /* The command's environment. */
    len = se_read_proc(f->cmd, "environ", buf, sizeof buf);
    v = se_env_value(buf, len, "SQLLOCK_DB");
    if (export_db && (how == H_DB || how == H_DB_EQ_AFTER ||
                      how == H_DB_VAR)) {
        /* The URL itself, password and all: what was asked for. */
        if (v == NULL || strcmp(v, f->run_url) != 0)
            fail_msg("%s: the command's SQLLOCK_DB is %s, want the URL",
                     label, v != NULL ? "another" : "missing");
    } else {
        if (v != NULL)
            fail_msg("%s: the command got SQLLOCK_DB", label);
        se_expect_clean(label, buf, len, &f->run_forms);
    }
    v = se_env_value(buf, len, "SQLLOCK_DB_FILE");
    if (export_db && (how == H_FILE || how == H_FILE_VAR)) {
        if (v == NULL || strcmp(v, file) != 0)
            fail_msg("%s: the command's SQLLOCK_DB_FILE is %s, want %s",
                     label, v != NULL ? v : "missing", file);
    } else if (v != NULL) {
        fail_msg("%s: the command got SQLLOCK_DB_FILE=%s", label, v);
    }
    v = se_env_value(buf, len, "SQLLOCK_NAME");
    if (v == NULL || strcmp(v, name) != 0)
        fail_msg("%s: SQLLOCK_NAME is %s, want %s", label, v ? v : "missing",
                 name);
    v = se_env_value(buf, len, "SQLLOCK_OWNER");
    if (v == NULL || !tu_is_owner_id(v))
        fail_msg("%s: no SQLLOCK_OWNER of 32 hex digits", label);
    v = se_env_value(buf, len, "SQLLOCK_TOKEN");
    if (v == NULL || v[0] < '1' || v[0] > '9')
        fail_msg("%s: no SQLLOCK_TOKEN", label);

    /* The command ends; so does the run, with its status. */
    se_write_file(stop, "", 0);
    code = se_finish(&f->job, 30000);
    f->cmd = 0;
    if (code != 0)
        fail_msg("%s: exit %d; stderr: %s", label, code, f->job.err);
    se_expect_clean(label, f->job.out, strlen(f->job.out), &f->run_forms);
    se_expect_clean(label, f->job.err, strlen(f->job.err), &f->run_forms);
}

/* C4: the password is in neither the tool's arguments (once it has
 * read them) nor its command's environment, whichever way the URL came,
 * unless --export-db asks for it. */
void test_secrets_C4_run_argv_and_environ(void **state)
{
    fixture *f = *state;
    int how, exp;

    for (how = 0; how < H_COUNT; how++)
        for (exp = 0; exp < 2; exp++)
            one_run(f, (enum how)how, exp);
}

/* C4: what init, list and list --json print on success: init shows the
 * URL redacted, and nothing shows the password. */
void test_secrets_C4_init_and_list_output(void **state)
{
    fixture *f = *state;
    const char *const init[] = { "--db", f->run_url, "init", NULL };
    const char *const list[] = { "--db", f->run_url, "list", NULL };
    const char *const json[] = { "--db", f->run_url, "list", "--json", NULL };
    const char *const *cmds[] = { init, list, json };
    tool_run t;
    int i, code;

    se_clear_db_env();
    for (i = 0; i < 3; i++) {
        code = se_run_tool(&t, f->dir, cmds[i]);
        if (code != 0)
            fail_msg("[%s] sqllock %s: exit %d; stderr: %s", f->drv,
                     cmds[i][2], code, t.err);
        se_expect_clean(cmds[i][2], t.out, strlen(t.out), &f->run_forms);
        se_expect_clean(cmds[i][2], t.err, strlen(t.err), &f->run_forms);
        if (i == 0 && f->run_has_pw && strstr(t.out, ":***@") == NULL)
            fail_msg("[%s] init does not show the URL redacted: %s", f->drv,
                     t.out);
    }
}

