/* The kernel's floor for dump files (numpy_call_cost.py): COUNT files of BYTES bytes each, created
 * the way ophook creates them so that no reader sees one half written (unnamed with O_TMPFILE, one
 * write, then linked under its name: by the fd, or by its /proc/self/fd path where the kernel
 * refuses that), named as ophook names np.add's files, on THREADS threads at once in one directory
 * as ophook's writer and its helper do. Prints the wall seconds it took.
 *
 *   atomic_files DIR COUNT BYTES THREADS     (DIR must exist and be empty)
 * Built with _GNU_SOURCE (tests/bench/CMakeLists.txt) for O_TMPFILE and AT_EMPTY_PATH. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int dir_fd;
static long count, threads;
static char *bytes;
static long size;

static int link_unnamed(int fd, const char *name) {
  if (linkat(fd, "", dir_fd, name, AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOENT && errno != EPERM && errno != EACCES) return -1;
  char path[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, path, dir_fd, name, AT_SYMLINK_FOLLOW);
}

static void *create_files(void *thread_index) {
  static const char *const kinds[] = {"input1", "input2", "output"};
  char name[64];
  for (long i = *(const long *)thread_index; i < count; i += threads) {
    snprintf(name, sizeof name, "op_numpy.add_%s_%06ld.npy", kinds[i % 3], i / 3);
    const int fd = openat(dir_fd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, bytes, size) != size || link_unnamed(fd, name) != 0) {
      perror(name);
      exit(1);
    }
    close(fd);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s DIR COUNT BYTES THREADS\n", argv[0]);
    return 2;
  }
  count = atol(argv[2]);
  size = atol(argv[3]);
  threads = atol(argv[4]);
  dir_fd = open(argv[1], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  bytes = calloc(1, size > 0 ? size : 1);
  if (dir_fd < 0 || count < 1 || size < 0 || threads < 1 || threads > 64 || !bytes) {
    fprintf(stderr, "%s: bad arguments or directory\n", argv[0]);
    return 2;
  }
  pthread_t workers[64];
  long indexes[64];
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long t = 0; t < threads; ++t) {
    indexes[t] = t;
    if (pthread_create(&workers[t], NULL, create_files, &indexes[t]) != 0) {
      fprintf(stderr, "%s: no thread\n", argv[0]);
      return 1;
    }
  }
  for (long t = 0; t < threads; ++t) pthread_join(workers[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("%.9f\n", (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9);
  return 0;
}
