/*
 * tool.c -- test_observe's cases of `sqllock watch` (issue 31): the
 * changes it prints as JSON, and its exits. SQLLOCK_CLI_PATH is the built
 * tool (tests/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "observe/observe.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

int tool_setup(void **state)
{
    tt_fixture *f = tt_setup(SQLLOCK_CLI_PATH, g_url, "obs");

    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

int tool_teardown(void **state)
{
    tt_teardown(*state);
    return 0;
}

/* Waits until the job's stdout has `lines` lines; fails if it ends or
 * takes too long. */
static void wait_lines(tt_fixture *f, tt_job *j, int lines)
{
    int64_t end = tu_now_ms() + TT_START_MS;
    char buf[4096];
    int n;
    const char *p;

    for (;;) {
        tu_read_file(j->out, buf, sizeof buf);
        for (n = 0, p = buf; (p = strchr(p, '\n')) != NULL; p++)
            n++;
        if (n >= lines)
            return;
        if (!tt_pid_alive(j->pid) || tu_now_ms() > end) {
            int code = tt_finish(f, j, 1000);

            fail_msg("watch: %d lines, want %d (exit %d)\nstdout: %s\n"
                     "stderr: %s", n, lines, code, f->out, f->err);
        }
        tu_sleep_ms(10);
    }
}

/*
 * `sqllock watch NAME --json --initial --count 3` prints the state (free)
 * and the two changes the test makes (acquired, released, with the
 * lease's token), one JSON object per line, then exits 0.
 */
void test_observe_tool_watch_json_count(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "tool");
    char want[64];
    sqllock_lease *l;
    tt_job *j;
    const char *p;
    int code;

    TT_START(f, j, "watch", name, "--json", "--initial", "--count", "3",
             "--interval", "100ms", "--timeout", "60s");
    wait_lines(f, j, 1);
    l = tt_lease_for(f, name, 30000);
    TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, f->db);
    wait_lines(f, j, 2);
    snprintf(want, sizeof want, "\"token\": %lld",
             (long long)sqllock_lease_token(l));
    TU_ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, f->db);
    code = tt_finish(f, j, tu_scaled_ms(20000));
    if (code != 0)
        fail_msg("watch: exit %d\nstdout: %s\nstderr: %s", code, f->out,
                 f->err);
    p = f->out;
    assert_non_null(p = strstr(p, "\"change\": \"free\""));
    assert_non_null(p = strstr(p, "\"change\": \"acquired\""));
    assert_non_null(strstr(p, want));
    assert_non_null(p = strstr(p, "\"change\": \"released\""));
    assert_non_null(strstr(p, want));
    assert_null(strstr(p + 1, "\"change\""));
    assert_non_null(strstr(f->out, "\"lag_ms\": "));
}

/* The tool's exits: bad usage 64; --timeout and SIGTERM end a watch with
 * 0, printing nothing when nothing changed. */
void test_observe_tool_watch_exits(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "exits");
    tt_job *j;
    int code;

    TT_EXPECT_EXIT(f, 64, "watch");
    TT_EXPECT_EXIT(f, 64, "watch", name, "--interval", "10ms");
    TT_EXPECT_EXIT(f, 64, "watch", name, "--count", "0");
    TT_EXPECT_EXIT(f, 64, "watch", name, "--timeout", "soon");
    TT_EXPECT_EXIT(f, 64, "watch", "");
    TT_EXPECT_EXIT(f, 0, "watch", name, "--timeout", "300ms");
    assert_string_equal(f->out, "");
    TT_START(f, j, "watch", name, "--initial");
    wait_lines(f, j, 1);
    assert_int_equal(kill(j->pid, SIGTERM), 0);
    code = tt_finish(f, j, tu_scaled_ms(5000));
    if (code != 0)
        fail_msg("watch after SIGTERM: exit %d\nstderr: %s", code, f->err);
    assert_non_null(strstr(f->out, " free"));
}
