/*
 * replay.c -- runs a fuzz target once on each file of the directories (or
 * files) named on the command line, without libFuzzer: the seed corpus
 * and the regression inputs then run in every ordinary build, under the
 * sanitizers and valgrind too. A failed property aborts, as in the fuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on one file; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            unsigned char *nb;
            cap = cap ? 2 * cap : 4096;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int i, files = 0;

    for (i = 1; i < argc; i++) {
        struct stat st;
        DIR *d;
        struct dirent *e;

        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 1;
            files++;
            continue;
        }
        d = opendir(argv[i]);
        if (d == NULL) {
            perror(argv[i]);
            return 1;
        }
        while ((e = readdir(d)) != NULL) {
            char path[4096];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            if (run_file(path) != 0) {
                closedir(d);
                return 1;
            }
            files++;
        }
        closedir(d);
    }
    printf("%d inputs replayed\n", files);
    return 0;
}
