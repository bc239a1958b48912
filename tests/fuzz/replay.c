/*
 * Replays corpus files (or directories of them) through LLVMFuzzerTestOneInput when the
 * target is built without libFuzzer.
 */
#include "fuzz.h"

#include <glib.h>
#include <stdio.h>

static int
replayFile(const char *path)
{
    g_autofree char *data = NULL;
    gsize len;

    if (!g_file_get_contents(path, &data, &len, NULL)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    return 0;
}

int
main(int argc, char **argv)
{
    int n = 0, bad = 0;

    for (int i = 1; i < argc; i++) {
        g_autoptr(GDir) dir = g_dir_open(argv[i], 0, NULL);
        const char *name;

        if (!dir) {
            bad += replayFile(argv[i]);
            n++;
            continue;
        }
        while ((name = g_dir_read_name(dir))) {
            g_autofree char *path = g_build_filename(argv[i], name, NULL);

            bad += replayFile(path);
            n++;
        }
    }
    printf("replayed %d inputs\n", n);
    return bad || n == 0;
}
