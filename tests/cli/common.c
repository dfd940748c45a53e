/*
 * common.c -- test_cli: lock names unique to the process, running the
 * tool with and without the fixture's --db, acquiring with it, and the
 * group's setup and teardown (cli.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "cli.h"

/* The URL the current group runs on. */
const char *g_url;

/* The lock name `tail` made unique to this process ("cli-<pid>-tail"),
 * in one of a ring of buffers in the fixture. */
const char *cl_U(fixture *f, const char *tail)
{
    char *b = f->names[f->next_name++ % 16];

    snprintf(b, sizeof f->names[0], "cli-%ld-%s", (long)getpid(), tail);
    return b;
}

#define MAX_ARGS 32

/* Runs the tool with --db <url> and the NULL-terminated `args`; returns
 * its exit status (or 1000 + signal). stdout and stderr land in f->out
 * and f->err. */
int cl_cli(fixture *f, const char *const *args)
{
    const char *argv[MAX_ARGS + 4];
    char out_path[4300], err_path[4300];
    int n = 0, code;

    argv[n++] = SQLLOCK_CLI_PATH;
    argv[n++] = "--db";
    argv[n++] = f->url;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

/* Runs the tool with the NULL-terminated `args` alone: no --db of the
 * fixture's. The same contract as cl_cli(). */
int cl_cli_bare(fixture *f, const char *const *args)
{
    const char *argv[MAX_ARGS + 2];
    char out_path[4300], err_path[4300];
    int n = 0, code;

    argv[n++] = SQLLOCK_CLI_PATH;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

/* `acquire NAME --ttl TTL`, which must succeed; returns the owner and
 * the token it printed. */
void cl_acquire(fixture *f, const char *name, const char *ttl,
                char owner[SQLLOCK_OWNER_LEN + 1], int64_t *token)
{
    char tok[64];
    char *end;

    EXPECT_EXIT(f, 0, "acquire", name, "--ttl", ttl);
    if (!tu_get_var(f->out, "SQLLOCK_OWNER", owner, SQLLOCK_OWNER_LEN + 1) ||
        !tu_is_owner_id(owner))
        fail_msg("acquire printed no SQLLOCK_OWNER=<32 hex>:\n%s", f->out);
    if (!tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok))
        fail_msg("acquire printed no SQLLOCK_TOKEN=<n>:\n%s", f->out);
    *token = strtoll(tok, &end, 10);
    if (*end != '\0' || *token <= 0)
        fail_msg("SQLLOCK_TOKEN=%s is not a positive number", tok);
}

int cl_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int cl_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *const init[] = { "init", NULL };
    int rc;

    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp();
    if (f->dir == NULL)
        return -1;
    snprintf(f->url, sizeof f->url, "%s", g_url);
    rc = cl_cli(f, init);
    if (rc != 0) {
        fprintf(stderr, "sqllock init: exit %d: %s%s\n", rc, f->out, f->err);
        return -1;
    }
    *state = f;
    return 0;
}

int cl_teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        tu_rmdir(f->dir);
        free(f->dir);
        free(f);
    }
    return 0;
}
