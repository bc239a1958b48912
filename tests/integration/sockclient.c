/*
 * vp-sockclient SOCKET: sends stdin to a Unix stream socket as it is (garbage and oversized
 * messages included), half-closes, and prints what comes back until the peer closes.
 * The integration and e2e tiers use it to speak to vcpuplaced the way a broken or hostile
 * client would; the vcpuplace CLI only ever sends well-formed requests.
 * Exit: 0 when connected (whatever the replies), 1 when the connection failed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: vp-sockclient SOCKET < input\n");
        return 2;
    }
    /* A daemon that closes on an oversized message makes our writes fail: keep reading. */
    signal(SIGPIPE, SIG_IGN);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "vp-sockclient: bad socket path %s\n", argv[1]);
        return 1;
    }
    strcpy(sa.sun_path, argv[1]);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "vp-sockclient: connect %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    char buf[65536];
    ssize_t n;
    int broken = 0;
    while (!broken && (n = read(STDIN_FILENO, buf, sizeof(buf))) > 0) {
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(fd, buf + done, n - done);
            if (w < 0) {
                broken = 1;
                break;
            }
            done += w;
        }
    }
    shutdown(fd, SHUT_WR);
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        fwrite(buf, 1, n, stdout);
    close(fd);
    return 0;
}
