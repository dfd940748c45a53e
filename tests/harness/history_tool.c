/*
 * history_tool.c -- tu_history.h for scripts and for the commands that
 * `sqllock run` runs: record events into a history, and check one.
 *
 *   sqllock_test_history note FILE CLIENT S|E|N|W NAME TOKEN [x|s]
 *   sqllock_test_history invoke FILE CLIENT OP NAME TOKEN TTL_MS
 *                                        prints the sequence number
 *   sqllock_test_history complete FILE CLIENT SEQ OUTCOME TOKEN
 *   sqllock_test_history capacity FILE NAME N
 *   sqllock_test_history final FILE NAME VALUE
 *   sqllock_test_history check FILE      the report; exit 0 clean,
 *                                        1 violations, 2 unreadable
 *
 * Exit 64 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tu_history.h"

static int usage(void)
{
    fputs("usage: sqllock_test_history note FILE CLIENT S|E|N|W NAME TOKEN "
          "[x|s]\n"
          "       sqllock_test_history invoke FILE CLIENT OP NAME TOKEN "
          "TTL_MS\n"
          "       sqllock_test_history complete FILE CLIENT SEQ OUTCOME "
          "TOKEN\n"
          "       sqllock_test_history capacity FILE NAME N\n"
          "       sqllock_test_history final FILE NAME VALUE\n"
          "       sqllock_test_history check FILE\n", stderr);
    return 64;
}

static long long num(const char *s, int *bad)
{
    char *end;
    long long v = strtoll(s, &end, 10);

    if (*s == '\0' || *end != '\0')
        *bad = 1;
    return v;
}

int main(int argc, char **argv)
{
    tu_hist *h;
    int bad = 0;

    if (argc < 3)
        return usage();
    if (strcmp(argv[1], "check") == 0) {
        int n = tu_hist_check(argv[2], stdout, NULL);

        return n < 0 ? 2 : n > 0 ? 1 : 0;
    }
    h = tu_hist_open(argv[2]);
    if (h == NULL) {
        perror(argv[2]);
        return 2;
    }
    if (strcmp(argv[1], "note") == 0 && (argc == 7 || argc == 8)) {
        long long token = num(argv[6], &bad);
        const char *k = argv[4];

        if (bad || k[0] == '\0' || k[1] != '\0')
            return usage();
        switch (k[0]) {
        case 'S':
            tu_hist_section(h, argv[3], argv[5], token,
                            argc == 8 && strcmp(argv[7], "s") == 0);
            break;
        case 'E':
            tu_hist_section_end(h, argv[3], argv[5], token);
            break;
        case 'N':
            tu_hist_told_lost(h, argv[3], argv[5], token);
            break;
        case 'W':
            tu_hist_watched(h, argv[3], argv[5], token);
            break;
        default:
            return usage();
        }
    } else if (strcmp(argv[1], "invoke") == 0 && argc == 8) {
        long long token = num(argv[6], &bad), ttl = num(argv[7], &bad);

        if (bad)
            return usage();
        printf("%lld\n", (long long)tu_hist_invoke(h, argv[3], argv[4],
                                                   argv[5], token, ttl));
    } else if (strcmp(argv[1], "complete") == 0 && argc == 7) {
        long long seq = num(argv[4], &bad), token = num(argv[6], &bad);

        if (bad)
            return usage();
        tu_hist_complete(h, argv[3], seq, argv[5], token);
    } else if (strcmp(argv[1], "capacity") == 0 && argc == 5) {
        long long n = num(argv[4], &bad);

        if (bad)
            return usage();
        tu_hist_capacity(h, argv[3], (int)n);
    } else if (strcmp(argv[1], "final") == 0 && argc == 5) {
        long long v = num(argv[4], &bad);

        if (bad)
            return usage();
        tu_hist_final(h, argv[3], v);
    } else {
        tu_hist_close(h);
        return usage();
    }
    tu_hist_close(h);
    return 0;
}
