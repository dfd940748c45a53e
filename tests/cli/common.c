/*
 * common.c -- test_cli: acquiring with the tool, and the group's setup
 * and teardown on the harness's fixture (cli.h, tests/harness/tu_tool.h,
 * which runs the tool).
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

/* The URL the current group runs on. */
const char *g_url;

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

/* The tool run with `url` as --db instead of the group's, its output in
 * f->out and f->err as tt_run_tool() leaves them. */
int cl_run_with_url(fixture *f, const char *url, const char *const *args)
{
    const char *own = f->url;
    int rc;

    f->url = url;
    rc = tt_run_tool(f, args);
    f->url = own;
    return rc;
}

int cl_setup(void **state)
{
    *state = tt_setup(SQLLOCK_CLI_PATH, g_url, "cli");
    return *state != NULL ? 0 : -1;
}

int cl_teardown(void **state)
{
    tt_teardown(*state);
    return 0;
}
