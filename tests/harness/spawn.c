/*
 * spawn.c -- running a program as a separate process (test_spawn.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_spawn.h"

size_t tu_read_file(const char *path, char *buf, size_t size)
{
    FILE *fp = fopen(path, "rb");
    size_t n = 0;

    buf[0] = '\0';
    if (fp == NULL)
        return 0;
    n = fread(buf, 1, size - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return n;
}

pid_t tu_spawn_env(const char *const *argv,
                                 char *const *envp, const char *out_path,
                                 const char *err_path, int own_group)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t mask;
    short flags;
    pid_t pid;
    int rc;

    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    assert_int_equal(posix_spawnattr_init(&attr), 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    /* Default dispositions and an empty mask, whatever the test runner
     * left (a shell's background job ignores SIGINT, for one). */
    sigemptyset(&mask);
    posix_spawnattr_setsigmask(&attr, &mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGPIPE);
    sigaddset(&mask, SIGCHLD);
    posix_spawnattr_setsigdefault(&attr, &mask);
    flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&attr, 0);
    }
    posix_spawnattr_setflags(&attr, flags);
    rc = posix_spawn(&pid, argv[0], &fa, &attr, (char **)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        fail_msg("posix_spawn(%s): %s", argv[0], strerror(rc));
    return pid;
}

pid_t tu_spawn(const char *const *argv, const char *out_path,
                             const char *err_path, int own_group)
{
    return tu_spawn_env(argv, environ, out_path, err_path, own_group);
}

int tu_exit_code(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return 1000 + WTERMSIG(st);
}

int tu_wait(pid_t pid)
{
    int st = 0;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
    }
    return tu_exit_code(st);
}

int tu_wait_for(pid_t pid, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;
    int st = 0;
    pid_t r;

    for (;;) {
        r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return tu_exit_code(st);
        if (r < 0 && errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
        if (tu_now_ms() >= end)
            return -1;
        tu_sleep_ms(10);
    }
}

void tu_kill_wait(pid_t pid)
{
    int st;

    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}
