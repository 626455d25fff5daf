//! The buffer-mapping table (PostgreSQL's buf_table.c): BufferTag -> buffer id,
//! split into `buffer_mapping_partitions` partitions, each a hash map under its own
//! LWLock (tranche BufferMapping). Lookups take the partition shared; inserts and
//! deletes take it exclusive.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::{Deref, DerefMut};

use crate::lmgr::lwlock::{LwLock, LwLockGuard, Tranche};
use crate::storage::BufferTag;

/// A map key hashing with `BufferTag::hash_code` (computed once per lookup).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagKey(pub BufferTag);

impl Hash for TagKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash_code());
    }
}

/// Passes the tag's 64-bit hash code through unchanged.
#[derive(Default)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type Map = HashMap<TagKey, u32, BuildHasherDefault<IdentityHasher>>;

/// One partition, on its own cache lines so that partitions do not false-share.
#[repr(align(128))]
pub(crate) struct Partition {
    lock: LwLock,
    /// Protected by `lock`: read with it held shared, changed with it exclusive.
    map: UnsafeCell<Map>,
}

// SAFETY: `map` is only reached through `PartitionRead`/`PartitionWrite`, which hold
// `lock` in the matching mode for their whole life, so the map is shared only
// read-only and mutated only exclusively.
unsafe impl Sync for Partition {}
unsafe impl Send for Partition {}

pub(crate) struct PartitionRead<'a> {
    _guard: LwLockGuard<'a>,
    map: &'a Map,
}

pub(crate) struct PartitionWrite<'a> {
    _guard: LwLockGuard<'a>,
    map: &'a mut Map,
}

impl<'a> Deref for PartitionRead<'a> {
    type Target = Map;
    fn deref(&self) -> &Map {
        self.map
    }
}

impl<'a> Deref for PartitionWrite<'a> {
    type Target = Map;
    fn deref(&self) -> &Map {
        self.map
    }
}

impl<'a> DerefMut for PartitionWrite<'a> {
    fn deref_mut(&mut self) -> &mut Map {
        self.map
    }
}

impl Partition {
    fn new(capacity: usize) -> Partition {
        Partition {
            lock: LwLock::new(Tranche::BufferMapping),
            map: UnsafeCell::new(Map::with_capacity_and_hasher(capacity, Default::default())),
        }
    }

    pub(crate) fn read(&self) -> PartitionRead<'_> {
        let guard = self.lock.shared();
        // SAFETY: the shared lock excludes writers until `guard` drops; the reference
        // lives no longer than the guard (same struct, same lifetime).
        PartitionRead { _guard: guard, map: unsafe { &*self.map.get() } }
    }

    pub(crate) fn write(&self) -> PartitionWrite<'_> {
        let guard = self.lock.exclusive();
        // SAFETY: the exclusive lock excludes every other reader and writer until
        // `guard` drops.
        PartitionWrite { _guard: guard, map: unsafe { &mut *self.map.get() } }
    }
}

/// The partitioned mapping table.
pub(crate) struct BufTable {
    partitions: Box<[Partition]>,
    mask: u64,
}

impl BufTable {
    pub(crate) fn new(nbuffers: usize, npartitions: usize) -> BufTable {
        assert!(npartitions.is_power_of_two(), "buffer_mapping_partitions must be a power of two");
        // Room for every buffer plus slack, spread evenly; a partition may still grow.
        let cap = (nbuffers * 5 / 4) / npartitions + 8;
        BufTable {
            partitions: (0..npartitions).map(|_| Partition::new(cap)).collect(),
            mask: npartitions as u64 - 1,
        }
    }

    /// The partition of a tag. Uses hash bits 32.. so that the low bits, which the
    /// hash map uses for its buckets, stay spread within a partition.
    #[inline]
    pub(crate) fn partition_number(&self, tag: &BufferTag) -> usize {
        ((tag.hash_code() >> 32) & self.mask) as usize
    }

    #[inline]
    pub(crate) fn partition(&self, tag: &BufferTag) -> &Partition {
        &self.partitions[self.partition_number(tag)]
    }

    pub(crate) fn len(&self) -> usize {
        self.partitions.iter().map(|p| p.read().len()).sum()
    }

    pub(crate) fn npartitions(&self) -> usize {
        self.partitions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{ForkNumber, RelFileLocator};

    #[test]
    fn buffer_mapping_partitions_spread_and_isolate() {
        let t = BufTable::new(1024, 128);
        let rel = RelFileLocator { spc_oid: 1663, db_oid: 1, rel_number: 16384 };
        let mut used = std::collections::HashSet::new();
        for b in 0..1024u32 {
            let tag = BufferTag::new(rel, ForkNumber::Main, b);
            used.insert(t.partition_number(&tag));
            t.partition(&tag).write().insert(TagKey(tag), b);
        }
        assert!(used.len() > 110, "only {} of 128 partitions used", used.len());
        assert_eq!(t.len(), 1024);
        let tag = BufferTag::new(rel, ForkNumber::Main, 77);
        // A shared lock on one partition does not block writers of another.
        let r = t.partition(&tag).read();
        assert_eq!(r.get(&TagKey(tag)), Some(&77));
        let other = (0..1024u32)
            .map(|b| BufferTag::new(rel, ForkNumber::Main, b))
            .find(|o| t.partition_number(o) != t.partition_number(&tag))
            .unwrap();
        t.partition(&other).write().remove(&TagKey(other));
        drop(r);
        assert_eq!(t.len(), 1023);
        assert_eq!(t.npartitions(), 128);
    }
}
