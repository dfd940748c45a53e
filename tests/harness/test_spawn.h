/*
 * test_spawn.h -- running a program (the built `sqllock` tool) as a
 * separate process from a test: start it with stdin from /dev/null and
 * stdout and stderr in files, wait for it (with a deadline), read the
 * files back.
 *
 * Include after cmocka.h and test_util.h.
 */
#ifndef SQLLOCK_TEST_SPAWN_H
#define SQLLOCK_TEST_SPAWN_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>

extern char **environ;

/* Reads up to size - 1 bytes of the file at `path` into buf, always
 * terminated; returns the bytes read (0, with buf "", when there is no
 * such file). */
size_t tu_read_file(const char *path, char *buf, size_t size);

/* Starts argv[0] (a path) with the NULL-terminated argv, the environment
 * `envp`, stdin from /dev/null and stdout and stderr into the files
 * `out_path` and `err_path` (truncated). With `own_group`, the program
 * gets a process group of its own, as a job that cron or a
 * non-interactive script starts is never the foreground of a terminal,
 * whatever terminal the tests run under. Returns its pid; fails the test
 * when it cannot start. */
pid_t tu_spawn_env(const char *const *argv,
                                 char *const *envp, const char *out_path,
                                 const char *err_path, int own_group);

/* tu_spawn_env() with this process's environment. */
pid_t tu_spawn(const char *const *argv, const char *out_path,
                             const char *err_path, int own_group);

/* The status waitpid() reported, as one number: the exit code, or 1000 +
 * the signal that killed it. */
int tu_exit_code(int st);

/* Waits for `pid` to end and returns tu_exit_code() of it. */
int tu_wait(pid_t pid);

/* Waits up to `ms` for `pid` to end: returns tu_exit_code() of it, or -1
 * when it is still running then (it is left running). */
int tu_wait_for(pid_t pid, int64_t ms);

/* Kills `pid` (and its process group, when it leads one) and reaps it;
 * for cleaning up after a failed check. Harmless when it has ended. */
void tu_kill_wait(pid_t pid);

#endif /* SQLLOCK_TEST_SPAWN_H */
