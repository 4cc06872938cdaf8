/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vt_platform.h - the only header of the vrdma transport core that
 * includes anything: fixed-width integers, memcpy/memset, assertions, a
 * 64-bit division and bit-scan helpers, for the kernel and for userspace.
 */
#ifndef VT_PLATFORM_H
#define VT_PLATFORM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <linux/bug.h>
#include <linux/math64.h>

#define VT_ASSERT(cond) WARN_ON_ONCE(!(cond))

static inline u64 vt_div64(u64 a, u64 b)
{
	return div64_u64(a, b);
}

#else /* userspace */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <assert.h>
#include <stdbool.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define VT_ASSERT(cond) assert(cond)

static inline u64 vt_div64(u64 a, u64 b)
{
	return a / b;
}
#endif

/* the index of the lowest set bit of @x, which must not be 0 */
static inline u32 vt_ctz64(u64 x)
{
	return (u32)__builtin_ctzll(x);
}

/* the number of bits of @x, 0 for 0 (the kernel's fls64) */
static inline u32 vt_fls64(u64 x)
{
	return x ? 64 - (u32)__builtin_clzll(x) : 0;
}

#define VT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define VT_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif /* VT_PLATFORM_H */
