/*
 * vp-vcputhreads PIDFILE N -name guest=NAME,debug-threads=on: stands in for the QEMU of a
 * libvirt test-driver domain, which runs no process. It starts N real threads named as
 * QEMU names vCPU threads ("CPU 3/KVM"), carries QEMU's -name argument on its command line
 * (vcpuplaced checks it against the pidfile), writes PIDFILE once every thread runs, and
 * waits for SIGTERM. Each thread wakes every 100 ms, so that its counters move.
 *
 * The test driver's domains are not processes: this is the fake the integration tier needs
 * for thread ids; vcpuplaced's monitor, cookies and status read them as they would QEMU's.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The pidfile is written once every thread has its name. */
static pthread_barrier_t named;

static void *
vcpu(void *arg)
{
    char name[16];
    const struct timespec nap = {0, 100 * 1000 * 1000};

    snprintf(name, sizeof(name), "CPU %ld/KVM", (long)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    pthread_barrier_wait(&named);
    for (;;)
        nanosleep(&nap, NULL);
    return NULL;
}

int
main(int argc, char **argv)
{
    char *end = NULL;
    long n;
    sigset_t set;
    int sig;
    FILE *f;

    if (argc < 5 || strcmp(argv[3], "-name") != 0 ||
        strncmp(argv[4], "guest=", strlen("guest=")) != 0) {
        fprintf(stderr, "usage: vp-vcputhreads PIDFILE N -name guest=NAME,debug-threads=on\n");
        return 2;
    }
    n = strtol(argv[2], &end, 10);
    if (*end || n < 1 || n > 4096) {
        fprintf(stderr, "vp-vcputhreads: N='%s' is not a number of threads in 1..4096\n", argv[2]);
        return 2;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_barrier_init(&named, NULL, (unsigned)n + 1);
    for (long i = 0; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        int err;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        err = pthread_create(&t, &attr, vcpu, (void *)(intptr_t)i);
        pthread_attr_destroy(&attr);
        if (err) {
            fprintf(stderr, "vp-vcputhreads: thread %ld: %s\n", i, strerror(err));
            return 1;
        }
    }
    pthread_barrier_wait(&named);
    if (!(f = fopen(argv[1], "w")) || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
        fprintf(stderr, "vp-vcputhreads: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    sigwait(&set, &sig);
    return 0;
}
