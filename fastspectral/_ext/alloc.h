/* The kernels' allocator: malloc / calloc / realloc with a switch that makes them fail.
 *
 * Every compiled kernel allocates through these (alloc.pxd names them malloc, calloc and
 * realloc), so that the tests can make the k-th allocation of a call and every later one fail
 * (``fs_alloc_fail_after(k)``; a negative k switches the failures off) and check that each
 * kernel reports the lack of memory instead of crashing or returning garbage.  The switch is
 * per extension module (a static of each translation unit); when it is off an allocation
 * costs one load and one predictable branch more than the C library's.
 */
#ifndef FASTSPECTRAL_ALLOC_H
#define FASTSPECTRAL_ALLOC_H

#include <stdlib.h>

static int fs_alloc_failing = 0;     /* failures switched on */
static long fs_alloc_left = 0;       /* allocations that still succeed while switched on */

static inline void fs_alloc_fail_after(long k)
{
    fs_alloc_left = k < 0 ? 0 : k;
    fs_alloc_failing = k >= 0;
}

static inline int fs_alloc_fails(void)
{
    if (!fs_alloc_failing)
        return 0;
    return __atomic_fetch_sub(&fs_alloc_left, 1, __ATOMIC_RELAXED) <= 0;
}

static inline void* fs_malloc(size_t n) { return fs_alloc_fails() ? NULL : malloc(n); }

static inline void* fs_calloc(size_t n, size_t size)
{
    return fs_alloc_fails() ? NULL : calloc(n, size);
}

static inline void* fs_realloc(void* p, size_t n)
{
    return fs_alloc_fails() ? NULL : realloc(p, n);
}

#endif
