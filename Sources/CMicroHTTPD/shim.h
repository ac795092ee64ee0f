// Swift cannot call C variadic functions, so libmicrohttpd's variadic entry points are
// wrapped here with fixed argument lists. Nothing else belongs in this file.
#ifndef BLOBD_CMICROHTTPD_SHIM_H
#define BLOBD_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// Leaves the URL exactly as received: blobd percent-decodes strictly in Swift, so `%00`
/// cannot truncate a key and invalid UTF-8 cannot turn into U+FFFD.
static size_t blobd_mhd_unescape_nothing(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls; (void)c;
    size_t n = 0;
    while (s[n] != '\0') n++;
    return n;
}

/// Starts a daemon bound to `addr` with the options blobd uses.
static inline struct MHD_Daemon *blobd_mhd_start(
    unsigned int flags,
    const struct sockaddr *addr,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    void *(*uri_logger)(void *cls, const char *uri, struct MHD_Connection *c), void *uri_logger_cls,
    unsigned int thread_pool_size,
    unsigned int connection_timeout,
    unsigned int connection_limit,
    size_t connection_memory_limit)
{
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_logger, uri_logger_cls,
        MHD_OPTION_UNESCAPE_CALLBACK, blobd_mhd_unescape_nothing, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0), or 0.
static inline uint16_t blobd_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The connection's socket, or -1.
static inline int blobd_mhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// The client's socket address, or NULL.
static inline const struct sockaddr *blobd_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}


#endif
