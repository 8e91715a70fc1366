/* Included before each source file of the ZooKeeper C client when libzklock compiles it from
   Apache's source release (cmake/ZooKeeperSource.cmake): the compiler seals the client.
   1. The system headers the client uses come first, so that their declarations, and the inline
      wrappers that _FORTIFY_SOURCE puts around read, recv and poll, keep their own names.
   2. Then the client's calls of socket, close, send, recv, poll and read go to zklock's seam
      (src/bridge/client_io.cpp): a call, not the headers' wrapper, so no fortified variant
      (__recv_chk, __read_chk, __poll_chk) stands between the client and the seam.
   3. Then every name the client defines is renamed zklock_zc_<name> (the generated header
      ZKLOCK_ZK_CLIENT_NAMES; absent when configure probes the client for those names). */
#ifndef ZKLOCK_ZK_SOURCE_PRELUDE_H
#define ZKLOCK_ZK_SOURCE_PRELUDE_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int zklock_cio_socket(int domain, int type, int protocol);
int zklock_cio_close(int fd);
ssize_t zklock_cio_send(int fd, const void* buf, size_t len, int flags);
ssize_t zklock_cio_recv(int fd, void* buf, size_t len, int flags);
ssize_t zklock_cio_read(int fd, void* buf, size_t len);
int zklock_cio_poll(struct pollfd* fds, nfds_t n, int timeout_ms);

#define socket(...) zklock_cio_socket(__VA_ARGS__)
#define close(...) zklock_cio_close(__VA_ARGS__)
#define send(...) zklock_cio_send(__VA_ARGS__)
#define recv(...) zklock_cio_recv(__VA_ARGS__)
#define read(...) zklock_cio_read(__VA_ARGS__)
#define poll(...) zklock_cio_poll(__VA_ARGS__)

#ifdef ZKLOCK_ZK_CLIENT_NAMES
#include ZKLOCK_ZK_CLIENT_NAMES
#endif

#endif
