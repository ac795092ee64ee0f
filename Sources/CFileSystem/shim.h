// Linux file calls that Swift's Glibc module leaves out (they need _GNU_SOURCE).
#ifndef BLOBD_CFILESYSTEM_SHIM_H
#define BLOBD_CFILESYSTEM_SHIM_H
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <unistd.h>

/// Starts writeback of a file range without waiting for it (sync_file_range with
/// SYNC_FILE_RANGE_WRITE): a later fsync then has little left to flush.
static inline int blobd_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

#endif
