/*
 * tu_proxy.h -- a loopback TCP proxy for the tests that need a network
 * that stalls (issue 7, fault 4).
 *
 * The proxy listens on 127.0.0.1 on a free port and forwards every
 * connection it accepts to one target host:port. The test can tell it to
 *
 *   freeze  stop forwarding in both directions and stop accepting new
 *           connections, keeping every socket open: the client's bytes
 *           sit in socket buffers and the kernel still acknowledges them,
 *           so to the client the server simply never answers (neither
 *           keepalives nor a TCP user timeout notice anything);
 *   thaw    forward again (new connections that waited are accepted);
 *   cut     close every current connection (the client sees EOF);
 *   deafen  on every current connection, pass the client's bytes on but
 *           drop the server's answers: the statement runs, and its answer
 *           is lost (new connections are not affected).
 *
 * It runs in a forked child process, so that it works the same under
 * valgrind and the sanitizers and never shares memory or locks with the
 * library under test. The child uses only system calls on stack and
 * static buffers (no malloc, no stdio), so forking it is safe even when
 * the test already runs threads. Each command is acknowledged, so it has
 * taken effect when the call returns. tu_proxy_stop() kills and reaps
 * the child; tu_proxy_stop_all() does that for every proxy still running
 * (for a teardown after a failed test); on Linux the child also dies with
 * its parent.
 *
 * Include after test_util.h.
 */
#ifndef SQLLOCK_TU_PROXY_H
#define SQLLOCK_TU_PROXY_H

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#define TU_PROXY_MAX_PAIRS 48
#define TU_PROXY_MAX_RUNNING 8

typedef struct tu_proxy {
    pid_t pid;                 /* the child, or 0 */
    int port;                  /* where it listens on 127.0.0.1 */
    int ctl;                   /* commands to the child */
    int ack;                   /* its answers */
} tu_proxy;

/* One forwarded connection: the client's socket and the target's. */
typedef struct tu_proxy_pair {
    int fd[2];
    int deaf;                  /* drop what the target sends */
} tu_proxy_pair;

/* Writes all of buf; 0, or -1 when the peer is gone. */
int tu_proxy_write_all(int fd, const char *buf, ssize_t n);

void tu_proxy_close_pair(tu_proxy_pair *p);

/* Accepts one client and connects it to the target. */
void tu_proxy_accept(int lfd, const struct sockaddr *to,
                                   socklen_t tolen, tu_proxy_pair *pairs);

/* Runs a command from the parent; 0 to go on, -1 to end. */
int tu_proxy_command(int ctl, int ack, int *frozen,
                                   tu_proxy_pair *pairs);

/* The child's loop: the listening socket, the control pipe and, unless
 * frozen, every forwarded socket, in one poll(). */
void tu_proxy_main(int lfd, int ctl, int ack,
                                 const struct sockaddr *to, socklen_t tolen);

/* Resolves host:port of the target. 0, or -1. */
int tu_proxy_resolve(const char *host, int port,
                                   struct sockaddr_storage *to,
                                   socklen_t *tolen);

/* Sends one command and waits for its acknowledgement. 0, or -1. */
int tu_proxy_send(tu_proxy *p, char cmd);

int tu_proxy_freeze(tu_proxy *p);
int tu_proxy_thaw(tu_proxy *p);
int tu_proxy_cut(tu_proxy *p);
int tu_proxy_deafen(tu_proxy *p);

/* Kills and reaps the child and closes the pipes. Harmless twice. */
void tu_proxy_stop(tu_proxy *p);

/* Stops every proxy still running: for a teardown after a test failed
 * between its start and its stop. */
void tu_proxy_stop_all(void);

/* Starts a proxy to host:port. 0, or -1 (errno tells). `p` must stay
 * valid until tu_proxy_stop(). */
int tu_proxy_start(tu_proxy *p, const char *host, int port);

/* Starts a proxy to the host and port of `url`
 * ("scheme://user:pass@host:port/db?query") and writes into out[] the
 * same URL with 127.0.0.1:<proxy port> in their place. 0, or -1. */
int tu_proxy_for_url(tu_proxy *p, const char *url, char *out,
                                   size_t size);

#endif /* SQLLOCK_TU_PROXY_H */
