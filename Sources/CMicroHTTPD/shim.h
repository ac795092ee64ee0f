// Swift cannot call C variadic functions, so libmicrohttpd's variadic entry points are
// wrapped here with fixed argument lists, with the checks of a request's raw bytes that need
// pointer arithmetic on libmicrohttpd's read buffer (see blobd_mhd_head_is_strict).
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
    size_t connection_memory_limit,
    unsigned int per_ip_connection_limit,
    MHD_NotifyConnectionCallback notify_connection, void *notify_connection_cls)
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
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, notify_connection_cls,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
        MHD_OPTION_END);
}

/// The port the daemon is bound to (useful after binding port 0), or 0.
static inline uint16_t blobd_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The client's socket address, or NULL.
static inline const struct sockaddr *blobd_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// The connection's socket descriptor, or -1.
static inline int blobd_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// What blobd stored in the connection's socket context at MHD_CONNECTION_NOTIFY_STARTED, or NULL.
static inline void *blobd_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

// libmicrohttpd 0.9.75 has no option to refuse a bare LF as a line end, a bare CR or NUL inside
// a field, or an obs-folded line (MHD_OPTION_STRICT_FOR_CLIENT 1 only requires Host and refuses
// spaces in the target). It parses the head in place in its read buffer: each line end (CRLF,
// or a bare LF) becomes NUL bytes, each colon a NUL, and the header records point into the
// buffer. So a head was sent with CRLF line ends, no NUL and no folded line exactly when, in
// the buffer, the request line's version is followed by two NULs (its CRLF), every field line
// starts right there, its value is followed by two NULs, and the blank line's two NULs end the
// head where libmicrohttpd says it ends (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE, counted from
// the method). A folded line is merged or dropped by libmicrohttpd, which breaks that chain.
struct blobd_head_walk {
    const char *next;
    const char *end;
    int ok;
};

static enum MHD_Result blobd_mhd_walk_field(void *cls, enum MHD_ValueKind kind,
                                            const char *key, size_t key_size,
                                            const char *value, size_t value_size) {
    (void)kind;
    struct blobd_head_walk *walk = (struct blobd_head_walk *)cls;
    const char *p = key + key_size;  /* the colon, now NUL */
    if (!walk->ok || key != walk->next || value == NULL || p >= walk->end || *p != '\0') {
        walk->ok = 0;
        return MHD_NO;
    }
    for (p++; p < value && (*p == ' ' || *p == '\t'); p++) {}  /* OWS after the colon */
    if (p != value) {
        walk->ok = 0;
        return MHD_NO;
    }
    p = value + value_size;  /* the line's CR and LF, now NULs */
    if (p + 2 > walk->end || p[0] != '\0' || p[1] != '\0') {
        walk->ok = 0;
        return MHD_NO;
    }
    walk->next = p + 2;
    return MHD_YES;
}

/// True when the head of the request now being handled (first call of the access handler,
/// with its `method` and `version` arguments) came with CRLF line ends only, no NUL, no bare CR
/// at a line end and no folded line. The target and field values are checked for other
/// control bytes in Swift.
static inline int blobd_mhd_head_is_strict(struct MHD_Connection *connection,
                                           const char *method, const char *uri, size_t uri_length,
                                           const char *version) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (info == NULL || method == NULL || uri == NULL || version == NULL || version[0] == '\0') return 0;
    const char *end = method + info->header_size;
    size_t method_length = 0, version_length = 0;
    while (method[method_length] != '\0') method_length++;
    while (version[version_length] != '\0') version_length++;
    /* METHOD SP TARGET SP VERSION CRLF, each space a NUL now */
    if (method + method_length + 1 != uri || uri + uri_length + 1 != version) return 0;
    const char *p = version + version_length;
    if (p + 2 > end || p[1] != '\0') return 0;
    struct blobd_head_walk walk = { p + 2, end, 1 };
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, blobd_mhd_walk_field, &walk);
    return walk.ok && walk.next + 2 == end && walk.next[0] == '\0' && walk.next[1] == '\0';
}

/// For the first bytes of a chunk's data as libmicrohttpd hands them over: false when the
/// chunk-size line before them, or the end of the chunk before that, ended in a bare LF
/// (which 0.9.75 accepts). The data of a new chunk follows its size line in the read buffer;
/// the rest of a chunk split over reads starts the buffer, right after the head's blank line,
/// whose bytes are NUL. The scan back stops at that NUL at the latest.
static inline int blobd_mhd_chunk_lines_are_crlf(const char *data) {
    if (data == NULL || data[-1] != '\n') return 1;
    if (data[-2] != '\r') return 0;
    const char *p = data - 3;
    while (*p != '\n' && *p != '\0') p--;
    return *p == '\0' || p[-1] == '\r';
}

#endif
