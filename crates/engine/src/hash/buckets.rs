//! Linear hashing's arithmetic: which bucket a hash code belongs to for a given
//! `maxbucket`, which bucket a split divides, and where each bucket's primary page
//! lies (allocation units). Pure functions, also compiled under loom.
//!
//! Buckets are numbered 0..=maxbucket. With `high` the smallest `2^k - 1 >=
//! maxbucket`, a hash code `h` belongs to `h & high`, or to `h & (high >> 1)` when
//! that bucket does not exist yet (Litwin's linear hashing, as PostgreSQL's
//! `_hash_hashkey2bucket`). PostgreSQL keeps `highmask` and `lowmask` in the
//! metapage; both follow from `maxbucket`, so we keep only that.
//!
//! Primary bucket pages are allocated in **units** of consecutive blocks: bucket
//! group `g` (bucket 0 alone for g = 0, buckets `[2^(g-1), 2^g)` for g >= 1) is
//! one unit while it has at most 512 buckets, and four equal units after that (as
//! PostgreSQL 10's four "splitpoint phases", so that one split never allocates more
//! than a quarter of the index again). The metapage records each allocated unit's
//! first block; overflow and bitmap pages come from relation extension in between.

/// Groups 0..=10 (up to 512 buckets each) are one unit each; later groups four.
pub const WHOLE_GROUPS: u32 = 11;
/// The largest group: buckets `[2^30, 2^31)`.
pub const MAX_GROUP: u32 = 31;
/// Number of allocation units (`11 + 21 * 4`).
pub const NUM_UNITS: usize = (WHOLE_GROUPS + (MAX_GROUP + 1 - WHOLE_GROUPS) * 4) as usize;
/// The largest bucket number (2^31 - 1): a split beyond it is not made.
pub const MAX_BUCKET: u32 = (1 << MAX_GROUP) - 1;

/// `2^k - 1` for the smallest such value `>= maxbucket` (PostgreSQL's highmask, up
/// to equivalence: it maps every hash code to the same bucket).
#[inline]
pub fn high_mask(maxbucket: u32) -> u32 {
    debug_assert!(maxbucket <= MAX_BUCKET);
    (maxbucket + 1).next_power_of_two() - 1
}

/// The bucket of hash code `hash` when the buckets are `0..=maxbucket`.
#[inline]
pub fn bucket_of(hash: u32, maxbucket: u32) -> u32 {
    let high = high_mask(maxbucket);
    let b = hash & high;
    if b > maxbucket {
        b & (high >> 1)
    } else {
        b
    }
}

/// The bucket whose split creates bucket `new_bucket` (> 0): its number without the
/// highest bit. Its hash codes with that bit set move to the new bucket.
#[inline]
pub fn split_source(new_bucket: u32) -> u32 {
    debug_assert!(new_bucket > 0);
    new_bucket & !(1 << (31 - new_bucket.leading_zeros()))
}

/// The group of a bucket: 0 for bucket 0, else its bit length.
#[inline]
fn group_of(bucket: u32) -> u32 {
    32 - bucket.leading_zeros()
}

#[inline]
fn group_start(g: u32) -> u32 {
    if g == 0 {
        0
    } else {
        1 << (g - 1)
    }
}

#[inline]
fn group_size(g: u32) -> u32 {
    if g == 0 {
        1
    } else {
        1 << (g - 1)
    }
}

/// (allocation unit, offset in the unit) of `bucket`.
#[inline]
pub fn unit_of(bucket: u32) -> (usize, u32) {
    let g = group_of(bucket);
    let off = bucket - group_start(g);
    if g < WHOLE_GROUPS {
        return (g as usize, off);
    }
    let q = group_size(g) / 4;
    ((WHOLE_GROUPS + (g - WHOLE_GROUPS) * 4 + off / q) as usize, off % q)
}

/// (first bucket, number of buckets) of allocation unit `unit`.
pub fn unit_range(unit: usize) -> (u32, u32) {
    let u = unit as u32;
    if u < WHOLE_GROUPS {
        return (group_start(u), group_size(u));
    }
    let g = WHOLE_GROUPS + (u - WHOLE_GROUPS) / 4;
    let q = group_size(g) / 4;
    (group_start(g) + (u - WHOLE_GROUPS) % 4 * q, q)
}

/// The number of buckets of a new index meant for `wanted` buckets: the end of the
/// unit holding bucket `wanted - 1` (at least 2), so that creation allocates whole
/// units.
pub fn initial_buckets(wanted: u64) -> u32 {
    let w = wanted.clamp(2, 1 << 30) as u32;
    let (unit, _) = unit_of(w - 1);
    let (first, n) = unit_range(unit);
    first + n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_tile_the_bucket_numbers() {
        let mut next = 0u64;
        for u in 0..NUM_UNITS {
            let (first, n) = unit_range(u);
            assert_eq!(first as u64, next, "unit {u}");
            assert!((1..=1 << 28).contains(&n));
            for b in [first, first + n / 2, first + n - 1] {
                assert_eq!(unit_of(b), (u, b - first), "bucket {b}");
            }
            next += n as u64;
        }
        assert_eq!(next, 1 << 31);
        assert_eq!(unit_of(MAX_BUCKET).0, NUM_UNITS - 1);
        assert_eq!(unit_range(11), (1024, 256));
        assert_eq!(initial_buckets(0), 2);
        assert_eq!(initial_buckets(3), 4);
        assert_eq!(initial_buckets(3258), 3584);
    }

    /// Linear hashing: every split moves exactly the codes of its source bucket
    /// that now map to the new bucket, and no other code changes bucket.
    #[test]
    fn a_split_moves_only_its_source_buckets_codes() {
        let codes: Vec<u32> = (0..4000u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ (i << 7)).collect();
        for maxbucket in 1..600u32 {
            let nb = maxbucket + 1;
            let src = split_source(nb);
            assert!(src < nb);
            for &h in &codes {
                let before = bucket_of(h, maxbucket);
                let after = bucket_of(h, nb);
                assert!(before <= maxbucket && after <= nb);
                if before != after {
                    assert_eq!((before, after), (src, nb), "code {h:#x} at maxbucket {maxbucket}");
                }
            }
        }
        assert_eq!(split_source(1), 0);
        assert_eq!(split_source(4), 0);
        assert_eq!(split_source(7), 3);
    }
}
