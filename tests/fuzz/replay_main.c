/*
 * replay_main.c - stands in for libFuzzer where clang is not the compiler: runs
 * LLVMFuzzerTestOneInput over every file in the directories or files given.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;

    if (f == NULL)
        return 1;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return 1;
    }
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        DIR *d;
        struct dirent *de;
        if (stat(argv[i], &st) != 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            runs += run_file(argv[i]) == 0;
            continue;
        }
        d = opendir(argv[i]);
        while (d != NULL && (de = readdir(d)) != NULL) {
            char path[4096];
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            runs += run_file(path) == 0;
        }
        if (d != NULL)
            closedir(d);
    }
    printf("replayed %d inputs\n", runs);
    return 0;
}
