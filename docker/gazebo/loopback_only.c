// LD_PRELOAD shim of the Gazebo image: keeps gzserver's sockets on loopback. gzserver binds its
// Gazebo master and transport servers to INADDR_ANY whatever GAZEBO_IP says, and ignition
// transport 8 (Debian 11) binds its discovery sockets to INADDR_ANY and sends its heartbeats to
// the multicast group 239.255.0.7, with no setting to change either. Here:
//   * bind() to the unspecified address (0.0.0.0, ::) binds to loopback (127.0.0.1, ::1);
//   * connect(), sendto() and sendmsg() to an IPv4 multicast address (224.0.0.0/4) go to
//     127.0.0.1 on the same port instead, so no datagram is addressed outside 127.0.0.0/8.
// Built by docker/gazebo/Dockerfile; the entrypoint preloads it (SIM2REAL_LOOPBACK_ONLY=0: off).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr*, socklen_t);
typedef int (*connect_fn)(int, const struct sockaddr*, socklen_t);
typedef ssize_t (*sendto_fn)(int, const void*, size_t, int, const struct sockaddr*, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr*, int);

// addr rewritten into *out when it is an unspecified (any == 1) or multicast (any == 0) address.
static int rewrite(const struct sockaddr* addr, socklen_t len, int any,
                   struct sockaddr_storage* out) {
  if (!addr) return 0;
  if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    const uint32_t host = ntohl(in.sin_addr.s_addr);
    if (any ? host != INADDR_ANY : (host >> 28) != 0xE) return 0;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memcpy(out, &in, sizeof in);
    return 1;
  }
  if (any && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (!IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) return 0;
    in6.sin6_addr = in6addr_loopback;
    memcpy(out, &in6, sizeof in6);
    return 1;
  }
  return 0;
}

int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  static bind_fn real;
  if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
  struct sockaddr_storage local;
  if (rewrite(addr, len, 1, &local)) return real(fd, (struct sockaddr*)&local, len);
  return real(fd, addr, len);
}

int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  static connect_fn real;
  if (!real) real = (connect_fn)dlsym(RTLD_NEXT, "connect");
  struct sockaddr_storage local;
  if (rewrite(addr, len, 0, &local)) return real(fd, (struct sockaddr*)&local, len);
  return real(fd, addr, len);
}

ssize_t sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* addr,
               socklen_t len) {
  static sendto_fn real;
  if (!real) real = (sendto_fn)dlsym(RTLD_NEXT, "sendto");
  struct sockaddr_storage local;
  if (rewrite(addr, len, 0, &local)) return real(fd, buf, n, flags, (struct sockaddr*)&local, len);
  return real(fd, buf, n, flags, addr, len);
}

ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  static sendmsg_fn real;
  if (!real) real = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");
  struct sockaddr_storage local;
  if (msg && rewrite((const struct sockaddr*)msg->msg_name, msg->msg_namelen, 0, &local)) {
    struct msghdr copy = *msg;
    copy.msg_name = &local;
    return real(fd, &copy, flags);
  }
  return real(fd, msg, flags);
}
