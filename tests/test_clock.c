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
 * The same again through the library (test_clock_L2_library_*): a child
 * process -- this program, started again under faketime -- opens the
 * database and takes or tries the lease with sqllock_lease_*(), its wall
 * clock hours off, and the test checks the lease's life by the real
 * clock.
 *
 * The ttls are scaled (g_scale): the timed work is done by the
 * children -- the tool, and this program again -- which run under the
 * build's sanitizer but never under valgrind (tests/valgrind.sh follows
 * no child), so the scale starts at 2 under a sanitizer and at 1
 * otherwise. A check whose timing precondition failed anyway -- the
 * "live" lease may have expired before it was looked at -- is
 * inconclusive and tried again with the scale doubled (tu_too_slow): that
 * is decided BEFORE the assertion it protects, and three times in a row
 * is a failure under CI. A loaded machine thus costs a longer try only
 * when it was too slow for the short one, and the test need not run
 * alone.
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
static const char *g_self;     /* this program, for the library children */

/* Tries of a timing check before it counts as "cannot run here". */
#define TRIES 3

/* What the ttls are multiplied by: see the top of the file. */
static int64_t g_scale = 1;

/* A try was too slow (tu_too_slow, which fails after TRIES): the next
 * one, and the tests after it, get twice the time. */
#define too_slow(tries, ...) \
    (tu_too_slow((tries), TRIES, __VA_ARGS__), g_scale *= 2)

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

/* L2 (a): a live lease (ttl 6 s, times the slowdown factor) held by a
 * normal client is not taken by a client whose clock is 1 h or 3 h
 * ahead, nor by one 1 h or 3 h behind. A skewed acquire that got the
 * lease after the ttl had passed proves nothing (the lease had expired):
 * inconclusive, tried again on a fresh lease. */
static void test_clock_L2_skewed_client_does_not_steal(void **state)
{
    fixture *f = *state;
    int64_t ttl_ms;
    char ttl[32];
    int tries = 0;

    for (;;) {
        char owner[SQLLOCK_OWNER_LEN + 1], token[32], tag[16];
        const char *name;
        int64_t t0 = tu_now_ms();
        int got = 75;
        size_t i;

        ttl_ms = 6000 * g_scale;
        snprintf(ttl, sizeof ttl, "%lldms", (long long)ttl_ms);
        snprintf(tag, sizeof tag, "live%d", tries);
        name = lock_name(f, tag);
        acquire(f, NULL, name, ttl, owner, token);
        for (i = 0; i < N_SKEWS && got == 75; i++) {
            const char *const args[] = { "acquire", name, "--ttl", "3s",
                                         NULL };
            got = cli(f, g_skews[i].skew, args);
            if (got != 75 && tu_now_ms() - t0 >= ttl_ms)
                break;          /* the lease may have expired: see below */
            if (got != 75)
                fail_msg("faketime -f %s sqllock acquire: exit %d, want 75 "
                         "(the lease is live)\nstdout: %s\nstderr: %s",
                         g_skews[i].skew, got, f->out, f->err);
        }
        if (got != 75) {
            too_slow(&tries, "the skewed acquires took %lld ms, past the "
                     "%lld ms ttl",
                        (long long)(tu_now_ms() - t0), (long long)ttl_ms);
            continue;
        }
        /* The holder still holds: its release is a clean 0. */
        EXPECT_EXIT(f, NULL, 0, "release", name, "--owner", owner, "--token",
                    token);
        return;
    }
}

/* L2 (b): a client whose clock is off takes a 1 s lease (times the
 * slowdown factor); it is not stretched (a normal client gets in half a
 * second after it expired, by the real clock) nor cut short (a normal
 * client is refused while it lives), and the skewed holder's release then
 * reports the loss (76). A normal acquire that got in only after the ttl
 * had passed since the skewed acquire began proves nothing:
 * inconclusive, tried again. */
static void test_clock_L2_skewed_holder_keeps_nothing_past_expiry(
    void **state)
{
    fixture *f = *state;
    int64_t ttl_ms, margin_ms = 500;
    char ttl[32];
    size_t i;
    int tries = 0, n = 0;

    for (i = 0; i < N_SKEWS; i++, n++) {
        char owner[SQLLOCK_OWNER_LEN + 1], token[32];
        char owner2[SQLLOCK_OWNER_LEN + 1], token2[32];
        const char *const busy[] = { "acquire", NULL, "--ttl", "10s", NULL };
        const char *args[5];
        char tag[32];
        const char *name;
        int64_t t0, t_acq;
        int got;

        ttl_ms = 1000 * g_scale;
        snprintf(ttl, sizeof ttl, "%lldms", (long long)ttl_ms);
        snprintf(tag, sizeof tag, "expired%d", n);
        name = lock_name(f, tag);
        t0 = tu_now_ms();
        acquire(f, g_skews[i].skew, name, ttl, owner, token);
        t_acq = tu_now_ms();
        /* Not cut short: the lease is live for the others -- if this
         * look came before its expiry. The lease was granted after t0,
         * so it lives at least until t0 + ttl. */
        memcpy(args, busy, sizeof args);
        args[1] = name;
        got = cli(f, NULL, args);
        if (got != 75 && tu_now_ms() - t0 >= ttl_ms) {
            too_slow(&tries, "the skewed acquire and the look took %lld "
                     "ms, past the %lld ms ttl",
                        (long long)(tu_now_ms() - t0), (long long)ttl_ms);
            i--;                /* this skew again, on a fresh name */
            continue;
        }
        if (got != 75)
            fail_msg("%lld ms after the skewed (%s) acquire of a %lld ms "
                     "lease, a normal acquire got exit %d, want 75: cut "
                     "short\nstdout: %s\nstderr: %s",
                     (long long)(tu_now_ms() - t0), g_skews[i].skew,
                     (long long)ttl_ms, got, f->out, f->err);
        /* Granted before t_acq, so expired by t_acq + ttl. */
        if (t_acq + ttl_ms + margin_ms > tu_now_ms())
            tu_sleep_ms(t_acq + ttl_ms + margin_ms - tu_now_ms());
        /* Not stretched: the server let it expire on time. */
        acquire(f, NULL, name, "10s", owner2, token2);
        assert_true(strtoll(token2, NULL, 10) > strtoll(token, NULL, 10));
        EXPECT_EXIT(f, g_skews[i].skew, 76, "release", name, "--owner", owner,
                    "--token", token);
        EXPECT_EXIT(f, NULL, 0, "release", name, "--owner", owner2,
                    "--token", token2);
    }
}

/* ------------------------------------------------------------------ */
/* L2 through the library: a child with its clock off                  */
/* ------------------------------------------------------------------ */

/* The child (this program under faketime): `--l2-child MODE URL NAME
 * TTL_MS`. MODE hold: take the lease once and leave it held (freed, not
 * released), printing TOKEN=, OWNER= and NOW= (its wall clock, to show
 * the skew took effect); exit 0, or 75 when BUSY. MODE try: take it once;
 * exit 75 when BUSY, 0 (after releasing it) when it got it. 1 on an
 * error, saying why on stderr. */
static int l2_child(const char *mode, const char *url, const char *name,
                    const char *ttl)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc == SQLLOCK_OK) {
        o.ttl_ms = strtoll(ttl, NULL, 10);
        rc = sqllock_lease_new(db, name, &o, &l);
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_try_acquire(l);
    if (rc == SQLLOCK_OK) {
        printf("TOKEN=%lld\nOWNER=%s\nNOW=%lld\n",
               (long long)sqllock_lease_token(l), sqllock_lease_owner(l),
               (long long)time(NULL));
        if (strcmp(mode, "try") == 0)
            rc = sqllock_lease_release(l);
    }
    if (rc != SQLLOCK_OK && rc != SQLLOCK_BUSY)
        fprintf(stderr, "l2 child %s: %s: %s\n", mode, sqllock_errname(rc),
                sqllock_errmsg(db));
    fflush(stdout);
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : rc == SQLLOCK_BUSY ? 75 : 1;
}

/* Runs the child under `faketime -f SKEW`; returns its exit status. */
static int l2_run(fixture *f, const char *skew, const char *mode,
                  const char *name, int64_t ttl_ms)
{
    char ttl[32];
    const char *argv[] = { "faketime", "-f", skew, g_self, "--l2-child",
                           mode, g_url, name, ttl, NULL };

    snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
    return run_argv(f, argv);
}

static sqllock_lease *l2_lease(sqllock_db *db, const char *name,
                               int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* L2 through the library: a child whose clock is 1 h or 3 h ahead or
 * behind takes a 1 s lease (times the slowdown factor) with
 * sqllock_lease_try_acquire() and leaves it held. By the real clock the
 * lease is live until its ttl has passed -- not cut short: this process
 * is refused -- and over once it has -- not stretched: this process gets
 * it, with a larger token, half a second later. Expiry by the client's
 * clock fails one or the other: +3 h would keep the lease for hours, -3 h
 * would end it at once. */
static void test_clock_L2_library_expiry_by_server_clock(void **state)
{
    fixture *f = *state;
    int64_t ttl_ms, margin_ms = 500;
    sqllock_db *db = NULL;
    size_t i;
    int tries = 0, n = 0;

    EXPECT_RC(db, sqllock_open(g_url, NULL, &db), SQLLOCK_OK, "open");
    for (i = 0; i < N_SKEWS; i++, n++) {
        char tag[32], var[64];
        const char *name;
        sqllock_lease *l;
        int64_t t0, t_acq, token;
        long child_now, diff;
        int code, rc;

        ttl_ms = 1000 * g_scale;
        snprintf(tag, sizeof tag, "lib%d", n);
        name = lock_name(f, tag);
        l = l2_lease(db, name, tu_scaled_ms(10000));
        t0 = tu_now_ms();
        code = l2_run(f, g_skews[i].skew, "hold", name, ttl_ms);
        t_acq = tu_now_ms();
        if (code != 0 || !tu_get_var(f->out, "TOKEN", var, sizeof var))
            fail_msg("the child (faketime -f %s) could not take the lease: "
                     "exit %d\nstdout: %s\nstderr: %s", g_skews[i].skew,
                     code, f->out, f->err);
        token = strtoll(var, NULL, 10);
        /* Its clock really was off (else this proves nothing). */
        assert_true(tu_get_var(f->out, "NOW", var, sizeof var));
        child_now = strtol(var, NULL, 10);
        diff = child_now - (long)time(NULL);
        if (diff < g_skews[i].seconds - 60 || diff > g_skews[i].seconds + 60)
            fail_msg("faketime -f %s: the child's clock was %ld s off, want "
                     "%ld s", g_skews[i].skew, diff, g_skews[i].seconds);
        /* Not cut short: live for this process while its ttl runs (it
         * was granted after t0). */
        rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK && tu_now_ms() - t0 >= ttl_ms) {
            EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
            sqllock_lease_free(l);
            too_slow(&tries, "the child took %lld ms to take a %lld ms "
                     "lease", (long long)(t_acq - t0),
                        (long long)ttl_ms);
            i--;                /* this skew again, on a fresh name */
            continue;
        }
        if (rc != SQLLOCK_BUSY)
            fail_msg("%lld ms after a child %s took a %lld ms lease, this "
                     "process got %s, want BUSY: the lease was cut short",
                     (long long)(tu_now_ms() - t0), g_skews[i].skew,
                     (long long)ttl_ms, sqllock_errname(rc));
        /* Not stretched: granted before t_acq, so over by t_acq + ttl. */
        if (t_acq + ttl_ms + margin_ms > tu_now_ms())
            tu_sleep_ms(t_acq + ttl_ms + margin_ms - tu_now_ms());
        rc = sqllock_lease_try_acquire(l);
        if (rc != SQLLOCK_OK)
            fail_msg("%lld ms after a child %s took a %lld ms lease, this "
                     "process got %s, want OK: the lease was stretched (%s)",
                     (long long)(tu_now_ms() - t_acq), g_skews[i].skew,
                     (long long)ttl_ms, sqllock_errname(rc),
                     sqllock_errmsg(db));
        assert_true(sqllock_lease_token(l) > token);
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        sqllock_lease_free(l);
    }
    sqllock_close(db);
}

/* L2 through the library: a live lease (ttl 6 s, times the slowdown
 * factor) held by this process is not taken by a child whose clock is
 * 1 h or 3 h ahead or behind (sqllock_lease_try_acquire() is BUSY there).
 * Expiry by the client's clock lets the +3 h child take it. */
static void test_clock_L2_library_skewed_client_does_not_steal(void **state)
{
    fixture *f = *state;
    int64_t ttl_ms;
    sqllock_db *db = NULL;
    int tries = 0;

    EXPECT_RC(db, sqllock_open(g_url, NULL, &db), SQLLOCK_OK, "open");
    for (;;) {
        char tag[32];
        const char *name;
        sqllock_lease *l;
        int64_t t0;
        int code = 75;
        size_t i;

        ttl_ms = 6000 * g_scale;
        snprintf(tag, sizeof tag, "libsteal%d", tries);
        name = lock_name(f, tag);
        l = l2_lease(db, name, ttl_ms);
        t0 = tu_now_ms();
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
        for (i = 0; i < N_SKEWS && code == 75; i++) {
            code = l2_run(f, g_skews[i].skew, "try", name, 3000);
            if (code != 75 && !(code == 0 && tu_now_ms() - t0 >= ttl_ms))
                fail_msg("a child (faketime -f %s) trying a live lease: "
                         "exit %d, want 75 (BUSY)\nstdout: %s\nstderr: %s",
                         g_skews[i].skew, code, f->out, f->err);
        }
        if (code != 75) {
            sqllock_lease_free(l);
            too_slow(&tries, "the children took %lld ms, past the %lld "
                     "ms ttl", (long long)(tu_now_ms() - t0),
                        (long long)ttl_ms);
            continue;
        }
        /* This process still holds it. */
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        sqllock_lease_free(l);
        break;
    }
    sqllock_close(db);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_L2_faketime_shifts_the_child),
        cmocka_unit_test(test_clock_L2_skewed_client_does_not_steal),
        cmocka_unit_test(test_clock_L2_skewed_holder_keeps_nothing_past_expiry),
        cmocka_unit_test(test_clock_L2_library_expiry_by_server_clock),
        cmocka_unit_test(test_clock_L2_library_skewed_client_does_not_steal),
    };

    if (argc == 6 && strcmp(argv[1], "--l2-child") == 0)
        return l2_child(argv[2], argv[3], argv[4], argv[5]);
    g_self = argv[0];
    /* tu_slowdown_tool(): 4 under a sanitizer, 8 under valgrind. */
    g_scale = tu_slowdown_tool() == 4 ? 2 : 1;
    return TU_RUN_PER_URL_NO_SQLITE("clock", &g_url, tests, setup, teardown,
                                    "SQLite is embedded, so the server "
                                    "clock IS the client host's clock (L2 "
                                    "has nothing to separate there, by "
                                    "design)");
}
