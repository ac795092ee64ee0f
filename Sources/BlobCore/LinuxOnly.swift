// blobd is built for Linux only (sync_file_range, /proc, epoll, sendfile): say so at once
// rather than with a hundred unresolved symbols.
#if !os(Linux)
#error("blobd builds and runs on Linux only")
#endif
