// blobd never corks its sockets.
//
// libmicrohttpd 0.9.75 sends a file response in sendfile() calls of 128 KiB and sets TCP_CORK
// before every call but the last; it has no option to leave that out. A corked socket holds
// each call's tail until the next call completes a full segment. Over loopback (a reverse
// proxy or a client on the same host) that costs a quarter of the throughput: 1 GiB
// downloads measured 2.9 GB/s corked and 3.9 GB/s uncorked, with 25 % more server CPU.
//
// So this setsockopt() replaces libc's for the whole process, libmicrohttpd included (an
// executable's definition comes first in symbol lookup). It turns a request to set TCP_CORK
// into a successful no-op and passes every other call to the kernel unchanged. Nothing waits
// because of it: libmicrohttpd ends every response by setting TCP_NODELAY or by uncorking,
// and both still reach the kernel, which sends whatever is queued.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int setsockopt(int fd, int level, int name, const void *value, socklen_t length) {
    if (level == IPPROTO_TCP && name == TCP_CORK && value != NULL && length >= sizeof(int)
        && *(const int *)value != 0) {
        return 0;
    }
    return (int)syscall(SYS_setsockopt, fd, level, name, value, length);
}
