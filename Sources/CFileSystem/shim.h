// Linux file calls that Swift's Glibc module leaves out (they need _GNU_SOURCE).
#ifndef BLOBD_CFILESYSTEM_SHIM_H
#define BLOBD_CFILESYSTEM_SHIM_H
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

/// Starts writeback of a file range without waiting for it (sync_file_range with
/// SYNC_FILE_RANGE_WRITE): a later fsync then has little left to flush.
static inline int blobd_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

/// Copies up to `length` bytes from `in` at `*offset_in` to `out` at its file offset, inside
/// the kernel (copy_file_range; reflinked on file systems that share extents). Called through
/// syscall(2): the glibc declaration is hidden when unistd.h came in without _GNU_SOURCE.
static inline long long blobd_copy_file_range(int in, long long *offset_in, int out, unsigned long length) {
    return syscall(SYS_copy_file_range, in, offset_in, out, (void *)0, length, 0u);
}

#endif
