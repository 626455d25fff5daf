//! The free space map: one byte per heap page saying roughly how much free space it
//! has, kept in the relation's `_fsm` fork as a tree of FSM pages. See heap/README.md.
//!
//! **Categories.** A byte is a category: free space / 32 bytes (`BLCKSZ / 256`),
//! rounded down when recording (so a page never promises more than it has) and up
//! when searching; 255 means "an entirely empty page".
//!
//! **One FSM page.** After the common 24-byte page header comes `fp_next_slot` (u32
//! LE) and then [`NODES_PER_PAGE`] one-byte nodes forming a binary max-tree stored as
//! an implicit heap: node `i` has children `2i+1` and `2i+2`; the last
//! [`SLOTS_PER_FSM_PAGE`] nodes are the leaves (slots), the others hold the maximum of
//! their children (a missing child counts as 0). The root (node 0) is the page's
//! maximum. A search starts at `fp_next_slot`, so that concurrent inserters looking
//! for the same amount of space spread over different pages, and wraps around.
//!
//! **The tree of pages.** Slots of a bottom-level (level 0) FSM page stand for heap
//! pages; slots of a level-1 page for level-0 FSM pages, and so on up to the single
//! root page at level [`FSM_ROOT_LEVEL`]. With 4069 slots per page, three levels cover
//! 4069^3 heap pages, more than the 2^32 a relation can have. FSM pages are laid out
//! depth-first in the fork: the root is block 0, then the first level-1 page, its
//! level-0 children, the second level-1 page, ... ([`fsm_logical_to_physical`]).
//!
//! **Not WAL-logged.** The FSM is a hint: a stale or torn FSM page only makes an
//! inserter try a page with less room than promised (it then records the truth and
//! searches again). A node inconsistent with its children is repaired by
//! [`fsm_search_avail_mut`] (the page is rebuilt from its leaves). PostgreSQL does the
//! same; after a crash the map is corrected lazily (by VACUUM and by inserters).

use crate::config::BLCKSZ;
use crate::storage::page::{page_init, PAGE_HEADER_SIZE};
use crate::storage::BlockNumber;

/// Bytes of free space per category step.
pub const FSM_CAT_STEP: usize = BLCKSZ / 256;
/// Largest request the FSM can answer: a tuple filling an empty page.
pub const MAX_FSM_REQUEST_SIZE: usize = crate::heap::toast::MAX_HEAP_TUPLE_SIZE;

const FP_NEXT_SLOT: usize = PAGE_HEADER_SIZE;
const FP_NODES: usize = PAGE_HEADER_SIZE + 4;
/// Nodes in one FSM page.
pub const NODES_PER_PAGE: usize = BLCKSZ - FP_NODES;
/// Inner nodes: a complete binary tree over BLCKSZ/2 leaf positions.
pub const NON_LEAF_NODES_PER_PAGE: usize = BLCKSZ / 2 - 1;
/// Leaves (slots) per FSM page: 4069 with 8 kB pages.
pub const SLOTS_PER_FSM_PAGE: usize = NODES_PER_PAGE - NON_LEAF_NODES_PER_PAGE;
/// Levels of FSM pages above the heap; the root page is at this level.
pub const FSM_TREE_DEPTH: u32 = 3;
pub const FSM_ROOT_LEVEL: u32 = FSM_TREE_DEPTH - 1;
pub const FSM_BOTTOM_LEVEL: u32 = 0;

const _: () = assert!(SLOTS_PER_FSM_PAGE == 4069);
// Three levels cover every block number.
const _: () = assert!((SLOTS_PER_FSM_PAGE as u128).pow(FSM_TREE_DEPTH) > u32::MAX as u128);

/// Category for a page with `avail` free bytes (rounded down).
pub fn fsm_space_avail_to_cat(avail: usize) -> u8 {
    if avail >= MAX_FSM_REQUEST_SIZE {
        255
    } else {
        (avail / FSM_CAT_STEP).min(254) as u8
    }
}

/// Smallest category guaranteed to have `needed` free bytes (rounded up).
pub fn fsm_space_needed_to_cat(needed: usize) -> u8 {
    if needed > 254 * FSM_CAT_STEP {
        return 255; // only an empty page will do
    }
    needed.div_ceil(FSM_CAT_STEP).clamp(1, 254) as u8
}

/// Lower bound of the free space of a page in category `cat`.
pub fn fsm_space_cat_to_avail(cat: u8) -> usize {
    if cat == 255 {
        MAX_FSM_REQUEST_SIZE
    } else {
        cat as usize * FSM_CAT_STEP
    }
}

/// Initializes an FSM page (all categories 0). An all-zero (new) page is also a valid
/// empty FSM page.
pub fn fsm_page_init(page: &mut [u8]) {
    page_init(page, 0);
}

#[inline]
fn node(page: &[u8], n: usize) -> u8 {
    if n < NODES_PER_PAGE {
        page[FP_NODES + n]
    } else {
        0
    }
}

#[inline]
fn set_node(page: &mut [u8], n: usize, v: u8) {
    page[FP_NODES + n] = v;
}

fn leaf_node(slot: usize) -> usize {
    NON_LEAF_NODES_PER_PAGE + slot
}

/// The category recorded in `slot`.
pub fn fsm_get_avail(page: &[u8], slot: usize) -> u8 {
    if slot < SLOTS_PER_FSM_PAGE {
        node(page, leaf_node(slot))
    } else {
        0
    }
}

/// The largest category on the page (its root node).
pub fn fsm_get_max_avail(page: &[u8]) -> u8 {
    node(page, 0)
}

/// Records category `cat` for `slot` and fixes the maxima above it. Returns whether
/// the page changed. Slots beyond [`SLOTS_PER_FSM_PAGE`] are ignored.
pub fn fsm_set_avail(page: &mut [u8], slot: usize, cat: u8) -> bool {
    if slot >= SLOTS_PER_FSM_PAGE || page.len() != BLCKSZ {
        return false;
    }
    let mut n = leaf_node(slot);
    if node(page, n) == cat {
        return false;
    }
    set_node(page, n, cat);
    while n > 0 {
        n = (n - 1) / 2;
        let v = node(page, 2 * n + 1).max(node(page, 2 * n + 2));
        if node(page, n) == v {
            break;
        }
        set_node(page, n, v);
    }
    true
}

/// Recomputes every inner node from the leaves (after a torn or stale write).
pub fn fsm_rebuild_page(page: &mut [u8]) {
    for n in (0..NON_LEAF_NODES_PER_PAGE).rev() {
        let v = node(page, 2 * n + 1).max(node(page, 2 * n + 2));
        set_node(page, n, v);
    }
}

/// Sets every slot at or beyond `nslots` to 0 (the relation was truncated).
pub fn fsm_truncate_avail(page: &mut [u8], nslots: usize) -> bool {
    let mut changed = false;
    for s in nslots..SLOTS_PER_FSM_PAGE {
        changed |= fsm_set_avail(page, s, 0);
    }
    changed
}

pub fn fsm_next_slot(page: &[u8]) -> usize {
    u32::from_le_bytes(page[FP_NEXT_SLOT..FP_NEXT_SLOT + 4].try_into().unwrap()) as usize
}

pub fn fsm_set_next_slot(page: &mut [u8], slot: usize) {
    page[FP_NEXT_SLOT..FP_NEXT_SLOT + 4].copy_from_slice(&(slot as u32).to_le_bytes());
}

enum Search {
    Found(usize),
    None,
    Inconsistent,
}

/// Descends from node `n` (value >= min) to its leftmost leaf with value >= min.
fn descend(page: &[u8], mut n: usize, min: u8) -> Search {
    while n < NON_LEAF_NODES_PER_PAGE {
        let (l, r) = (2 * n + 1, 2 * n + 2);
        n = if node(page, l) >= min {
            l
        } else if node(page, r) >= min {
            r
        } else {
            return Search::Inconsistent;
        };
    }
    if n >= NODES_PER_PAGE {
        return Search::Inconsistent;
    }
    Search::Found(n - NON_LEAF_NODES_PER_PAGE)
}

fn search(page: &[u8], min: u8) -> Search {
    if page.len() != BLCKSZ || node(page, 0) < min {
        return Search::None;
    }
    let start = fsm_next_slot(page);
    let start = if start < SLOTS_PER_FSM_PAGE { start } else { 0 };
    // Climb from the start leaf: whenever we come up from a left child whose right
    // sibling qualifies, the first qualifying leaf at or after `start` is in there.
    let mut n = leaf_node(start);
    if node(page, n) >= min {
        return Search::Found(start);
    }
    while n > 0 {
        if n % 2 == 1 && node(page, n + 1) >= min {
            return descend(page, n + 1, min);
        }
        n = (n - 1) / 2;
    }
    // Nothing at or after `start`: wrap around to the first qualifying leaf.
    descend(page, 0, min)
}

/// Finds a slot with category >= `min_cat`, preferring the first at or after the
/// page's next-slot hint, wrapping around. Read-only (usable under a shared content
/// lock); a page whose inner nodes disagree with its leaves may answer `None`.
pub fn fsm_search_avail(page: &[u8], min_cat: u8) -> Option<usize> {
    match search(page, min_cat) {
        Search::Found(s) => Some(s),
        _ => None,
    }
}

/// As [`fsm_search_avail`], under an exclusive content lock: rebuilds an inconsistent
/// page and searches again, and with `advance_next` moves the next-slot hint past the
/// slot found (so the next inserter starts after it).
pub fn fsm_search_avail_mut(page: &mut [u8], min_cat: u8, advance_next: bool) -> Option<usize> {
    let mut r = search(page, min_cat);
    if let Search::Inconsistent = r {
        fsm_rebuild_page(page);
        r = search(page, min_cat);
    }
    match r {
        Search::Found(s) => {
            if advance_next {
                fsm_set_next_slot(page, s + 1);
            }
            Some(s)
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------
// Addressing: heap block <-> (FSM page, slot), and FSM pages' physical blocks.
// ---------------------------------------------------------------------------------

/// A logical FSM page: its level (0 = bottom, slots are heap pages) and its number
/// among the pages of that level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FsmAddress {
    pub level: u32,
    pub logpageno: u64,
}

pub const FSM_ROOT_ADDRESS: FsmAddress = FsmAddress { level: FSM_ROOT_LEVEL, logpageno: 0 };

const S: u64 = SLOTS_PER_FSM_PAGE as u64;

/// The bottom-level FSM page and slot that record heap block `heap_blk`.
pub fn fsm_get_location(heap_blk: BlockNumber) -> (FsmAddress, usize) {
    let b = heap_blk as u64;
    (FsmAddress { level: FSM_BOTTOM_LEVEL, logpageno: b / S }, (b % S) as usize)
}

/// The heap block that `slot` of a bottom-level FSM page stands for.
pub fn fsm_get_heap_blk(addr: FsmAddress, slot: usize) -> Option<BlockNumber> {
    if addr.level != FSM_BOTTOM_LEVEL {
        return None;
    }
    BlockNumber::try_from(addr.logpageno * S + slot as u64).ok()
}

/// The parent page of `addr` and the slot there that summarizes `addr`.
pub fn fsm_get_parent(addr: FsmAddress) -> (FsmAddress, usize) {
    debug_assert!(addr.level < FSM_ROOT_LEVEL);
    (FsmAddress { level: addr.level + 1, logpageno: addr.logpageno / S }, (addr.logpageno % S) as usize)
}

/// The child page that `slot` of the (non-bottom) page `addr` summarizes.
pub fn fsm_get_child(addr: FsmAddress, slot: usize) -> FsmAddress {
    debug_assert!(addr.level > FSM_BOTTOM_LEVEL);
    FsmAddress { level: addr.level - 1, logpageno: addr.logpageno * S + slot as u64 }
}

/// Pages in a complete subtree whose top page is at `level`.
fn subtree_pages(level: u32) -> u64 {
    (0..=level).map(|l| S.pow(l)).sum()
}

/// The block number of FSM page `addr` in the `_fsm` fork (depth-first layout).
pub fn fsm_logical_to_physical(addr: FsmAddress) -> BlockNumber {
    let mut blk = 0u64;
    // For each level from the root down to addr's level: skip the page of the
    // ancestor at the level above, then the complete subtrees of the earlier siblings.
    for l in (addr.level..FSM_ROOT_LEVEL).rev() {
        let anc = addr.logpageno / S.pow(l - addr.level);
        blk += 1 + (anc % S) * subtree_pages(l);
    }
    blk as BlockNumber
}

/// The FSM page and slot for heap block `heap_blk` as physical block numbers: what an
/// inserter that filled the page updates.
pub fn fsm_heap_block_location(heap_blk: BlockNumber) -> (BlockNumber, usize) {
    let (addr, slot) = fsm_get_location(heap_blk);
    (fsm_logical_to_physical(addr), slot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    use std::collections::HashMap;

    fn new_page() -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        fsm_page_init(&mut p);
        p
    }

    #[test]
    fn categories() {
        assert_eq!(fsm_space_avail_to_cat(0), 0);
        assert_eq!(fsm_space_avail_to_cat(31), 0);
        assert_eq!(fsm_space_avail_to_cat(32), 1);
        assert_eq!(fsm_space_avail_to_cat(8000), 250);
        assert_eq!(fsm_space_avail_to_cat(MAX_FSM_REQUEST_SIZE), 255);
        assert_eq!(fsm_space_needed_to_cat(1), 1);
        assert_eq!(fsm_space_needed_to_cat(32), 1);
        assert_eq!(fsm_space_needed_to_cat(33), 2);
        assert_eq!(fsm_space_needed_to_cat(MAX_FSM_REQUEST_SIZE), 255);
        // Rounding is safe: a page whose category meets the needed one has the room.
        for needed in 1..MAX_FSM_REQUEST_SIZE {
            let c = fsm_space_needed_to_cat(needed);
            assert!(fsm_space_cat_to_avail(c) >= needed, "{needed}");
        }
        for avail in 0..BLCKSZ {
            assert!(fsm_space_cat_to_avail(fsm_space_avail_to_cat(avail)) <= avail);
        }
    }

    /// The page's answers match a brute-force scan of the leaves, for random contents.
    #[test]
    fn search_matches_brute_force() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut p = new_page();
        let mut leaves = vec![0u8; SLOTS_PER_FSM_PAGE];
        for round in 0..3000 {
            let s = rng.gen_range(0..SLOTS_PER_FSM_PAGE);
            let v = if rng.gen_bool(0.9) { rng.gen_range(0..40) } else { rng.gen() };
            fsm_set_avail(&mut p, s, v);
            leaves[s] = v;
            assert_eq!(fsm_get_max_avail(&p), *leaves.iter().max().unwrap());
            let min = rng.gen_range(1..=255u8);
            let start = rng.gen_range(0..SLOTS_PER_FSM_PAGE + 10);
            fsm_set_next_slot(&mut p, start);
            let from = if start < SLOTS_PER_FSM_PAGE { start } else { 0 };
            let expect = (from..SLOTS_PER_FSM_PAGE).chain(0..from).find(|&i| leaves[i] >= min);
            assert_eq!(fsm_search_avail(&p, min), expect, "round {round} min {min} start {start}");
        }
        assert_eq!(fsm_get_avail(&p, 5), leaves[5]);
    }

    #[test]
    fn next_slot_spreads_inserters_and_wraps() {
        let mut p = new_page();
        for s in [10, 20, 30] {
            fsm_set_avail(&mut p, s, 100);
        }
        let got: Vec<usize> = (0..4).map(|_| fsm_search_avail_mut(&mut p, 50, true).unwrap()).collect();
        assert_eq!(got, vec![10, 20, 30, 10]);
        assert_eq!(fsm_search_avail_mut(&mut p, 101, true), None);
        fsm_truncate_avail(&mut p, 15);
        assert_eq!(fsm_get_max_avail(&p), 100);
        assert_eq!(fsm_search_avail(&p, 50), Some(10));
        fsm_truncate_avail(&mut p, 0);
        assert_eq!(fsm_get_max_avail(&p), 0);
    }

    #[test]
    fn inconsistent_pages_are_rebuilt() {
        let mut p = new_page();
        fsm_set_avail(&mut p, 3000, 77);
        // A torn write: the root claims space no leaf has, and a leaf is unannounced.
        p[FP_NODES] = 200;
        assert_eq!(fsm_search_avail(&p, 150), None);
        assert_eq!(fsm_search_avail_mut(&mut p, 150, false), None);
        assert_eq!(fsm_get_max_avail(&p), 77);
        p[FP_NODES + leaf_node(5)] = 90;
        assert_eq!(fsm_search_avail(&p, 80), None); // not yet visible
        fsm_rebuild_page(&mut p);
        assert_eq!(fsm_search_avail(&p, 80), Some(5));
        // Random garbage never panics.
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..50 {
            rng.fill(&mut p[..]);
            let _ = fsm_search_avail(&p, rng.gen());
            let _ = fsm_search_avail_mut(&mut p, rng.gen(), true);
            fsm_set_avail(&mut p, rng.gen_range(0..5000), rng.gen());
        }
    }

    #[test]
    fn addressing_is_a_depth_first_layout() {
        assert_eq!(fsm_logical_to_physical(FSM_ROOT_ADDRESS), 0);
        assert_eq!(fsm_logical_to_physical(FsmAddress { level: 1, logpageno: 0 }), 1);
        assert_eq!(fsm_logical_to_physical(FsmAddress { level: 0, logpageno: 0 }), 2);
        assert_eq!(fsm_logical_to_physical(FsmAddress { level: 0, logpageno: 1 }), 3);
        assert_eq!(fsm_logical_to_physical(FsmAddress { level: 1, logpageno: 1 }), 2 + S as u32);
        assert_eq!(fsm_logical_to_physical(FsmAddress { level: 0, logpageno: S }), 3 + S as u32);
        assert_eq!(fsm_heap_block_location(0), (2, 0));
        assert_eq!(fsm_heap_block_location(4069), (3, 0));
        // Distinct pages get distinct blocks, and the mapping round-trips.
        let mut seen = HashMap::new();
        for lp in (0..3 * S + 5).chain([S * 100 + 7, u32::MAX as u64 / S]) {
            for level in 0..=1u32 {
                if level == 1 && lp >= S {
                    continue;
                }
                let a = FsmAddress { level, logpageno: lp };
                assert!(seen.insert(fsm_logical_to_physical(a), a).is_none(), "{a:?}");
            }
        }
        for blk in [0u32, 1, 4068, 4069, 10_000_000, u32::MAX - 1] {
            let (a, s) = fsm_get_location(blk);
            assert_eq!(fsm_get_heap_blk(a, s), Some(blk));
            let (p1, s1) = fsm_get_parent(a);
            assert_eq!(fsm_get_child(p1, s1), a);
            let (p2, _) = fsm_get_parent(p1);
            assert_eq!(p2, FSM_ROOT_ADDRESS);
        }
    }

    /// A small relation-level FSM over in-memory pages, as heap/README.md describes
    /// it: record a heap page's space at the bottom and propagate page maxima up;
    /// search from the root down. Works for 10^7 heap pages.
    #[test]
    fn multi_level_record_and_search() {
        let mut fork: HashMap<BlockNumber, Vec<u8>> = HashMap::new();
        let page = |blk: BlockNumber, fork: &mut HashMap<BlockNumber, Vec<u8>>| {
            fork.entry(blk).or_insert_with(|| vec![0u8; BLCKSZ]).clone()
        };
        let record = |fork: &mut HashMap<BlockNumber, Vec<u8>>, heap_blk: BlockNumber, cat: u8| {
            let (mut addr, mut slot) = fsm_get_location(heap_blk);
            let mut value = cat;
            loop {
                let blk = fsm_logical_to_physical(addr);
                let mut p = page(blk, fork);
                fsm_set_avail(&mut p, slot, value);
                value = fsm_get_max_avail(&p);
                fork.insert(blk, p);
                if addr.level == FSM_ROOT_LEVEL {
                    break;
                }
                (addr, slot) = fsm_get_parent(addr);
            }
        };
        let search = |fork: &mut HashMap<BlockNumber, Vec<u8>>, min: u8| -> Option<BlockNumber> {
            let mut addr = FSM_ROOT_ADDRESS;
            loop {
                let blk = fsm_logical_to_physical(addr);
                let mut p = fork.get(&blk)?.clone();
                let slot = fsm_search_avail_mut(&mut p, min, addr.level == FSM_BOTTOM_LEVEL)?;
                fork.insert(blk, p);
                if addr.level == FSM_BOTTOM_LEVEL {
                    return fsm_get_heap_blk(addr, slot);
                }
                addr = fsm_get_child(addr, slot);
            }
        };
        assert_eq!(search(&mut fork, 1), None);
        for (blk, cat) in [(5u32, 10u8), (9_999_999, 200), (4_100, 150), (16_600_000, 180)] {
            record(&mut fork, blk, cat);
        }
        assert_eq!(search(&mut fork, 190), Some(9_999_999));
        // Upper levels do not advance their hint: the leftmost qualifying subtree wins.
        assert_eq!(search(&mut fork, 160), Some(9_999_999));
        assert_eq!(search(&mut fork, 140), Some(4_100));
        assert_eq!(search(&mut fork, 201), None);
        record(&mut fork, 9_999_999, 0);
        assert_eq!(search(&mut fork, 190), None);
        assert_eq!(search(&mut fork, 175), Some(16_600_000));
        assert_eq!(search(&mut fork, 1), Some(5));
        // Only the pages on the paths were created: root, level-1 and level-0 pages.
        assert!(fork.len() <= 1 + 2 + 4);
    }
}
