/*
 * test_clock.c -- DESIGN L2: expiry is judged by the database server's
 * clock, never the client's. A client whose clock is hours off neither
 * steals a live lock nor keeps an expired one.
 *
 * The skewed client is the built `sqllock` tool run under faketime(1)
 * (libfaketime), with DONT_FAKE_MONOTONIC=1 so that only the wall clock is
 * off and the tool's own monotonic deadlines stay real. The test first
 * checks that faketime really shifts a child's clock by the offset, so it
 * cannot pass vacuously.
 *
 * Runs on the postgres and mysql URLs in SQLLOCK_TEST_URLS. SQLite is
 * skipped by design: it is embedded, so its "server clock" IS the client
 * host's clock; a client with a skewed clock is a server with a skewed
 * clock there, and there is nothing to separate.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

extern char **environ;

static const char *g_url;

/* The skews every test runs: the issue's ±1 h, and ±3 h. */
static const struct { const char *skew; long seconds; } g_skews[] = {
    { "+1h", 3600 }, { "-1h", -3600 }, { "+3h", 3 * 3600 },
    { "-3h", -3 * 3600 },
};
#define N_SKEWS (sizeof g_skews / sizeof g_skews[0])

typedef struct fixture {
    char *dir;
    char out[65536];
    char err[8192];
    char name[300];
    char **env;                /* environ + DONT_FAKE_MONOTONIC etc. */
} fixture;

static size_t read_all(const char *path, char *buf, size_t size)
{
    FILE *fp = fopen(path, "rb");
    size_t n;

    buf[0] = '\0';
    if (fp == NULL)
        return 0;
    n = fread(buf, 1, size - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return n;
}

/* Runs argv (looked up on PATH) with the fixture's environment; returns
 * the exit status, 1000 + signal, or 127 when it cannot be started. */
static int run_argv(fixture *f, const char *const *argv)
{
    char out_path[4300], err_path[4300];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int st = 0, rc;

    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char **)argv, f->env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        snprintf(f->err, sizeof f->err, "cannot run %s: %s", argv[0],
                 strerror(rc));
        f->out[0] = '\0';
        return 127;
    }
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
    }
    read_all(out_path, f->out, sizeof f->out);
    read_all(err_path, f->err, sizeof f->err);
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 1000 + WTERMSIG(st);
}

/* Runs `sqllock --db URL args...`, under `faketime -f SKEW` when skew is
 * not NULL. */
static int cli(fixture *f, const char *skew, const char *const *args)
{
    const char *argv[40];
    int n = 0;

    if (skew != NULL) {
        argv[n++] = "faketime";
        argv[n++] = "-f";
        argv[n++] = skew;
    }
    argv[n++] = SQLLOCK_CLI_PATH;
    argv[n++] = "--db";
    argv[n++] = g_url;
    for (; *args != NULL && n < 39; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    return run_argv(f, argv);
}

#define EXPECT_EXIT(f, skew, want, ...)                                        \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = cli((f), (skew), args_);                                    \
        if (got_ != (want))                                                    \
            fail_msg("%s sqllock %s %s: exit %d, want %d\nstdout: %s\n"        \
                     "stderr: %s", (skew) ? "faketime" : "", args_[0],         \
                     (skew) ? (skew) : "(no skew)", got_, (want), (f)->out,    \
                     (f)->err);                                                \
    } while (0)

/* `acquire NAME --ttl TTL` (skewed or not), which must succeed; returns
 * the printed owner and token (as text). */
static void acquire(fixture *f, const char *skew, const char *name,
                    const char *ttl, char *owner, char *token)
{
    EXPECT_EXIT(f, skew, 0, "acquire", name, "--ttl", ttl);
    if (!tu_get_var(f->out, "SQLLOCK_OWNER", owner, SQLLOCK_OWNER_LEN + 1) ||
        !tu_is_owner_id(owner) ||
        !tu_get_var(f->out, "SQLLOCK_TOKEN", token, 32))
        fail_msg("acquire printed no owner and token:\n%s", f->out);
}

static const char *lock_name(fixture *f, const char *tag)
{
    snprintf(f->name, sizeof f->name, "clock-%ld-%s", (long)getpid(), tag);
    return f->name;
}

/* The environment for the children: ours, plus DONT_FAKE_MONOTONIC=1, and
 * under AddressSanitizer permission for libfaketime to be preloaded
 * before the sanitizer's runtime. */
static char **make_env(void)
{
    size_t n = 0, i, k = 0;
    char **env;
    const char *asan = getenv("ASAN_OPTIONS");
    static char asan_buf[2048];

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 3, sizeof *env);
    if (env == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        if (strncmp(environ[i], "DONT_FAKE_MONOTONIC=", 20) == 0 ||
            strncmp(environ[i], "ASAN_OPTIONS=", 13) == 0)
            continue;
        env[k++] = environ[i];
    }
    env[k++] = "DONT_FAKE_MONOTONIC=1";
    snprintf(asan_buf, sizeof asan_buf, "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
             asan != NULL ? asan : "", asan != NULL && *asan ? ":" : "");
    env[k++] = asan_buf;
    env[k] = NULL;
    return env;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *const init[] = { "init", NULL };
    int rc;

    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp();
    f->env = make_env();
    if (f->dir == NULL || f->env == NULL)
        return -1;
    rc = cli(f, NULL, init);
    if (rc != 0) {
        fprintf(stderr, "sqllock init: exit %d: %s%s\n", rc, f->out, f->err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        tu_rmdir(f->dir);
        free(f->dir);
        free(f->env);
        free(f);
    }
    return 0;
}

/* faketime really moves a child's wall clock by the offset (else the
 * tests below would prove nothing). */
static void test_clock_L2_faketime_shifts_the_child(void **state)
{
    fixture *f = *state;
    size_t i;

    for (i = 0; i < N_SKEWS; i++) {
        const char *const argv[] = { "faketime", "-f", g_skews[i].skew, "date",
                                     "+%s", NULL };
        long now, child, diff;
        int rc = run_argv(f, argv);

        if (rc == 127)
            fail_msg("faketime is not installed (Debian package faketime; "
                     "scripts/test.sh installs it): %s", f->err);
        assert_int_equal(rc, 0);
        now = (long)time(NULL);
        child = strtol(f->out, NULL, 10);
        diff = child - now;
        if (diff < g_skews[i].seconds - 60 || diff > g_skews[i].seconds + 60)
            fail_msg("faketime -f %s: the child's clock is %ld s off, want "
                     "%ld s (its date said \"%s\")", g_skews[i].skew, diff,
                     g_skews[i].seconds, f->out);
    }
}

/* L2 (a): a live lease (ttl 6 s) held by a normal client is not taken by
 * a client whose clock is 1 h or 3 h ahead, nor by one 1 h or 3 h behind. */
static void test_clock_L2_skewed_client_does_not_steal(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], token[32];
    const char *name = lock_name(f, "live");
    int64_t t0 = tu_now_ms(), took;
    size_t i;

    acquire(f, NULL, name, "6s", owner, token);
    for (i = 0; i < N_SKEWS; i++)
        EXPECT_EXIT(f, g_skews[i].skew, 75, "acquire", name, "--ttl", "3s");
    took = tu_now_ms() - t0;
    if (took >= 5000)
        fail_msg("the skewed acquires took %lld ms, too close to the 6 s "
                 "ttl for the result to mean anything", (long long)took);
    /* The holder still holds: its release is a clean 0. */
    EXPECT_EXIT(f, NULL, 0, "release", name, "--owner", owner, "--token",
                token);
}

/* L2 (b): a client whose clock is off takes a 1 s lease; it is not
 * stretched (a normal client gets in after 1.5 s of real time) nor cut
 * short (a normal client is refused at once), and the skewed holder's
 * release then reports the loss (76). */
static void test_clock_L2_skewed_holder_keeps_nothing_past_expiry(
    void **state)
{
    fixture *f = *state;
    size_t i;

    for (i = 0; i < N_SKEWS; i++) {
        char owner[SQLLOCK_OWNER_LEN + 1], token[32];
        char owner2[SQLLOCK_OWNER_LEN + 1], token2[32];
        char tag[16];
        const char *name;
        int64_t t0;

        snprintf(tag, sizeof tag, "expired%zu", i);
        name = lock_name(f, tag);
        t0 = tu_now_ms();
        acquire(f, g_skews[i].skew, name, "1s", owner, token);
        /* Not cut short: the lease is live for the others. */
        EXPECT_EXIT(f, NULL, 75, "acquire", name, "--ttl", "10s");
        if (tu_now_ms() - t0 >= 900)
            fail_msg("too slow to check the skewed lease while live");
        tu_sleep_ms(1500 - (tu_now_ms() - t0));
        /* Not stretched: the server let it expire on time. */
        acquire(f, NULL, name, "10s", owner2, token2);
        assert_true(strtoll(token2, NULL, 10) > strtoll(token, NULL, 10));
        EXPECT_EXIT(f, g_skews[i].skew, 76, "release", name, "--owner", owner,
                    "--token", token);
        EXPECT_EXIT(f, NULL, 0, "release", name, "--owner", owner2,
                    "--token", token2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_L2_faketime_shifts_the_child),
        cmocka_unit_test(test_clock_L2_skewed_client_does_not_steal),
        cmocka_unit_test(test_clock_L2_skewed_holder_keeps_nothing_past_expiry),
    };
    return TU_RUN_PER_URL_NO_SQLITE("clock", &g_url, tests, setup, teardown,
                                    "SQLite is embedded, so the server "
                                    "clock IS the client host's clock (L2 "
                                    "has nothing to separate there, by "
                                    "design)");
}
