//! Natural numbers on wide limbs: the arithmetic under numeric's `*`, `/`, `%`,
//! sqrt and the transcendental functions.
//!
//! A [`Nat`] is a vector of base-10^9 limbs, least significant first, without
//! zero limbs at the top (zero is the empty vector). A numeric's stored form
//! keeps one decimal digit per byte (`super`'s module doc); an operation
//! converts its operands once ([`from_digits`], O(n)), works on limbs and
//! converts the result back ([`to_digits`]). Nine digits per limb make a
//! schoolbook product 81 times cheaper than on single digits, and the limbs
//! stay decimal, so scaling by powers of ten ([`mul_pow10`], [`div_pow10`]) is
//! a limb shift plus one short multiplication or division.
//!
//! | operation | method | cost for n limbs |
//! |---|---|---|
//! | [`mul`] | schoolbook with carries deferred over 16 rows; Karatsuba from [`KARATSUBA_MIN`] limbs | O(n^1.58) |
//! | [`divmod`] | Knuth's algorithm D (normalized divisor, two-limb quotient estimate) | O(n·m) |
//! | [`isqrt`] | floor square root: the root of the top half, then Newton steps from above | about four divisions |
//!
//! Invariants: every limb `< BASE`; no high zero limb.

use std::cmp::Ordering;

/// The limb base.
pub const BASE: u64 = 1_000_000_000;
/// Decimal digits per limb.
pub const DIGITS: usize = 9;
/// Operands at least this long (both) are multiplied by Karatsuba's method.
pub const KARATSUBA_MIN: usize = 40;

/// `10^i` for `i` in `0..=9`.
pub const POW10: [u32; 10] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// A natural number: base-10^9 limbs, least significant first.
pub type Nat = Vec<u32>;

fn trim(mut v: Nat) -> Nat {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The number whose decimal digits (one per byte, most significant first) are `d`.
pub fn from_digits(d: &[u8]) -> Nat {
    let mut out = Vec::with_capacity(d.len() / DIGITS + 1);
    let mut end = d.len();
    while end > 0 {
        let start = end.saturating_sub(DIGITS);
        out.push(d[start..end].iter().fold(0u32, |acc, &x| acc * 10 + x as u32));
        end = start;
    }
    trim(out)
}

/// Decimal digits, most significant first, without leading zeros (zero: none).
pub fn to_digits(a: &[u32]) -> Vec<u8> {
    let Some((&top, rest)) = a.split_last() else { return Vec::new() };
    let mut out = Vec::with_capacity(a.len() * DIGITS);
    let mut t = [0u8; DIGITS];
    let mut n = 0;
    let mut x = top;
    while x > 0 {
        t[n] = (x % 10) as u8;
        x /= 10;
        n += 1;
    }
    out.extend(t[..n].iter().rev());
    for &limb in rest.iter().rev() {
        let mut x = limb;
        for slot in t.iter_mut() {
            *slot = (x % 10) as u8;
            x /= 10;
        }
        out.extend(t.iter().rev());
    }
    out
}

/// A number below 10^18 from a u64.
pub fn from_u64(v: u64) -> Nat {
    trim(vec![(v % BASE) as u32, (v / BASE % BASE) as u32, (v / BASE / BASE) as u32])
}

/// The value when it fits in a u128.
pub fn to_u128(a: &[u32]) -> Option<u128> {
    if a.len() > 5 {
        return None;
    }
    let mut v: u128 = 0;
    for &l in a.iter().rev() {
        v = v.checked_mul(BASE as u128)?.checked_add(l as u128)?;
    }
    Some(v)
}

pub fn from_u128(mut v: u128) -> Nat {
    let mut out = Vec::new();
    while v > 0 {
        out.push((v % BASE as u128) as u32);
        v /= BASE as u128;
    }
    out
}

pub fn cmp(a: &[u32], b: &[u32]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

pub fn add(a: &[u32], b: &[u32]) -> Nat {
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut carry = 0u32;
    for (i, &x) in a.iter().enumerate() {
        let s = x + b.get(i).copied().unwrap_or(0) + carry;
        if s >= BASE as u32 {
            out.push(s - BASE as u32);
            carry = 1;
        } else {
            out.push(s);
            carry = 0;
        }
    }
    if carry > 0 {
        out.push(carry);
    }
    out
}

/// `a - b`; requires `a >= b`.
pub fn sub(a: &[u32], b: &[u32]) -> Nat {
    debug_assert!(cmp(a, b) != Ordering::Less);
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &x) in a.iter().enumerate() {
        let mut d = x as i64 - b.get(i).copied().unwrap_or(0) as i64 - borrow;
        borrow = 0;
        if d < 0 {
            d += BASE as i64;
            borrow = 1;
        }
        out.push(d as u32);
    }
    trim(out)
}

/// `a × m` for a small factor.
pub fn mul_small(a: &[u32], m: u32) -> Nat {
    if m == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut carry = 0u64;
    for &x in a {
        let p = x as u64 * m as u64 + carry;
        out.push((p % BASE) as u32);
        carry = p / BASE;
    }
    while carry > 0 {
        out.push((carry % BASE) as u32);
        carry /= BASE;
    }
    trim(out)
}

/// `a + m` for a small addend.
pub fn add_small(a: &[u32], m: u32) -> Nat {
    add(a, &from_u64(m as u64))
}

/// `(a / d, a % d)` for a small nonzero divisor.
pub fn divmod_small(a: &[u32], d: u32) -> (Nat, u32) {
    debug_assert!(d > 0);
    let mut q = vec![0u32; a.len()];
    let mut r = 0u64;
    for i in (0..a.len()).rev() {
        let cur = r * BASE + a[i] as u64;
        q[i] = (cur / d as u64) as u32;
        r = cur % d as u64;
    }
    (trim(q), r as u32)
}

/// Schoolbook product. Products of two limbs are below 10^18, so a u64 column
/// holds 18 of them: carries are pushed up after every 16 rows.
fn mul_school(a: &[u32], b: &[u32]) -> Nat {
    let (a, b) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut acc = vec![0u64; a.len() + b.len() + 1];
    const ROWS: usize = 16;
    for (blk, rows) in a.chunks(ROWS).enumerate() {
        let base = blk * ROWS;
        for (k, &x) in rows.iter().enumerate() {
            if x == 0 {
                continue;
            }
            let x = x as u64;
            let dst = &mut acc[base + k..base + k + b.len()];
            for (c, &y) in dst.iter_mut().zip(b) {
                *c += x * y as u64;
            }
        }
        // Normalize the columns this block touched; the carry runs upward
        // through columns that are already below BASE.
        let mut carry = 0u64;
        let mut i = base;
        let end = base + rows.len() + b.len();
        while i < end || carry > 0 {
            let t = acc[i] + carry;
            acc[i] = t % BASE;
            carry = t / BASE;
            i += 1;
        }
    }
    trim(acc.into_iter().map(|v| v as u32).collect())
}

/// `a + b × BASE^shift` added into `acc` (which is long enough).
fn add_into(acc: &mut [u32], b: &[u32], shift: usize) {
    let mut carry = 0u32;
    let mut i = 0;
    while i < b.len() || carry > 0 {
        let s = acc[shift + i] + b.get(i).copied().unwrap_or(0) + carry;
        if s >= BASE as u32 {
            acc[shift + i] = s - BASE as u32;
            carry = 1;
        } else {
            acc[shift + i] = s;
            carry = 0;
        }
        i += 1;
    }
}

fn karatsuba(a: &[u32], b: &[u32]) -> Nat {
    // Balanced halves: a = a1 × B^m + a0, b = b1 × B^m + b0.
    let m = a.len().max(b.len()) / 2;
    let (a0, a1) = a.split_at(m.min(a.len()));
    let (b0, b1) = b.split_at(m.min(b.len()));
    let (a0, b0) = (trim(a0.to_vec()), trim(b0.to_vec()));
    let z0 = mul(&a0, &b0);
    let z2 = mul(a1, b1);
    let z1 = sub(&sub(&mul(&add(&a0, a1), &add(&b0, b1)), &z0), &z2);
    let mut out = vec![0u32; a.len() + b.len() + 1];
    add_into(&mut out, &z0, 0);
    add_into(&mut out, &z1, m);
    add_into(&mut out, &z2, 2 * m);
    trim(out)
}

pub fn mul(a: &[u32], b: &[u32]) -> Nat {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() == 1 {
        return mul_small(long, short[0]);
    }
    if short.len() < KARATSUBA_MIN {
        return mul_school(short, long);
    }
    if long.len() >= 2 * short.len() {
        // Unbalanced: the long operand in pieces as long as the short one.
        let mut out = vec![0u32; a.len() + b.len() + 1];
        for (i, piece) in long.chunks(short.len()).enumerate() {
            let p = mul(&trim(piece.to_vec()), short);
            add_into(&mut out, &p, i * short.len());
        }
        return trim(out);
    }
    karatsuba(short, long)
}

/// `(a / b, a % b)`; `b` is not zero.
pub fn divmod(a: &[u32], b: &[u32]) -> (Nat, Nat) {
    assert!(!b.is_empty(), "division by zero");
    if cmp(a, b) == Ordering::Less {
        return (Vec::new(), a.to_vec());
    }
    if b.len() == 1 {
        let (q, r) = divmod_small(a, b[0]);
        return (q, from_u64(r as u64));
    }
    // Knuth, TAOCP 4.3.1, algorithm D. Scale both so that the divisor's top limb
    // is at least BASE/2: then the estimate from the top two limbs of the
    // remainder over the divisor's top limb is at most 2 too large, and the
    // test against the second limb leaves at most 1, fixed by an add-back.
    let d = (BASE / (b[b.len() - 1] as u64 + 1)) as u32;
    let v = mul_small(b, d);
    let mut u = mul_small(a, d);
    u.resize(a.len() + 1, 0);
    let n = v.len();
    let m = u.len() - n;
    let (vt, vs) = (v[n - 1] as u64, v[n - 2] as u64);
    let mut q = vec![0u32; m];
    for j in (0..m).rev() {
        let num = u[j + n] as u64 * BASE + u[j + n - 1] as u64;
        let mut qhat = num / vt;
        let mut rhat = num % vt;
        while qhat >= BASE || qhat * vs > rhat * BASE + u[j + n - 2] as u64 {
            qhat -= 1;
            rhat += vt;
            if rhat >= BASE {
                break;
            }
        }
        // u[j..=j+n] -= qhat × v
        let mut carry = 0u64;
        let mut borrow = 0i64;
        for i in 0..n {
            let p = qhat * v[i] as u64 + carry;
            carry = p / BASE;
            let mut t = u[j + i] as i64 - (p % BASE) as i64 - borrow;
            borrow = 0;
            if t < 0 {
                t += BASE as i64;
                borrow = 1;
            }
            u[j + i] = t as u32;
        }
        let t = u[j + n] as i64 - carry as i64 - borrow;
        if t < 0 {
            // qhat was one too large: add v back; the remainder fits in n limbs.
            qhat -= 1;
            let mut c = 0u32;
            for i in 0..n {
                let s = u[j + i] + v[i] + c;
                if s >= BASE as u32 {
                    u[j + i] = s - BASE as u32;
                    c = 1;
                } else {
                    u[j + i] = s;
                    c = 0;
                }
            }
            u[j + n] = 0;
        } else {
            u[j + n] = t as u32;
        }
        q[j] = qhat as u32;
    }
    u.truncate(n);
    let (r, rest) = divmod_small(&trim(u), d);
    debug_assert_eq!(rest, 0);
    (trim(q), r)
}

/// `a × 10^k`.
pub fn mul_pow10(a: &[u32], k: usize) -> Nat {
    if a.is_empty() {
        return Vec::new();
    }
    let m = mul_small(a, POW10[k % DIGITS]);
    let mut out = vec![0u32; k / DIGITS];
    out.extend(m);
    out
}

/// `10^k`.
pub fn pow10(k: usize) -> Nat {
    mul_pow10(&[1], k)
}

/// What was dropped by [`div_pow10`]: enough to round the quotient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The dropped part is at least half of the divisor.
    pub half: bool,
    /// The dropped part is not zero.
    pub nonzero: bool,
}

/// `floor(a / 10^k)`, with what the division dropped.
pub fn div_pow10(a: &[u32], k: usize) -> (Nat, Dropped) {
    if k == 0 {
        return (a.to_vec(), Dropped { half: false, nonzero: false });
    }
    let (limbs, r) = (k / DIGITS, k % DIGITS);
    let low = &a[..limbs.min(a.len())];
    let high = if limbs < a.len() { &a[limbs..] } else { &[][..] };
    let low_nonzero = low.iter().any(|&x| x != 0);
    if r == 0 {
        // Divisor BASE^limbs: half of it is 5e8 in the top dropped limb.
        let top = if limbs <= a.len() { a[limbs - 1] } else { 0 };
        return (high.to_vec(), Dropped { half: top >= (BASE / 2) as u32, nonzero: low_nonzero });
    }
    let (q, rem) = divmod_small(high, POW10[r]);
    // Dropped = rem × BASE^limbs + low, half = 5 × 10^(r-1) × BASE^limbs.
    (q, Dropped { half: rem >= 5 * POW10[r - 1], nonzero: rem != 0 || low_nonzero })
}

/// Decimal digits of `a` (0 for zero).
pub fn digit_count(a: &[u32]) -> usize {
    match a.last() {
        None => 0,
        Some(&top) => (a.len() - 1) * DIGITS + POW10.iter().take_while(|&&p| p <= top).count(),
    }
}

/// `floor(sqrt(v))` and the remainder, for a u128.
fn sqrt_rem_u128(v: u128) -> (u128, u128) {
    let mut x = (v as f64).sqrt() as u128;
    while x.checked_mul(x).is_none_or(|sq| sq > v) {
        x -= 1;
    }
    while (x + 1).checked_mul(x + 1).is_some_and(|sq| sq <= v) {
        x += 1;
    }
    (x, v - x * x)
}

/// `a × BASE^k`.
fn shift_limbs(a: &[u32], k: usize) -> Nat {
    if a.is_empty() {
        return Vec::new();
    }
    let mut out = vec![0u32; k];
    out.extend_from_slice(a);
    out
}

/// Zimmermann's "Karatsuba square root": `(s, r)` with `s = floor(sqrt(a))`,
/// `r = a - s²`, for `a` whose top limb is at least BASE/4. With k = len/4
/// and β = BASE^k, `a = h·β² + a1·β + a0`: the root of the top part
/// (`s1`, `r1`, recursively) and one division of `r1·β + a1` by `2·s1`
/// give the next k limbs `q` of the root; `s = s1·β + q` is then at most a
/// little too large, corrected while the remainder `u·β + a0 - q²` is
/// negative. The normalization (s1 >= β/2) keeps the correction to one step;
/// the loop makes it right whatever.
fn sqrt_rem(a: &[u32]) -> (Nat, Nat) {
    if let Some(v) = to_u128(a) {
        let (s, r) = sqrt_rem_u128(v);
        return (from_u128(s), from_u128(r));
    }
    let k = a.len() / 4;
    let (a0, a1) = (trim(a[..k].to_vec()), trim(a[k..2 * k].to_vec()));
    let (s1, r1) = sqrt_rem(&a[2 * k..]);
    let (q, u) = divmod(&add(&shift_limbs(&r1, k), &a1), &mul_small(&s1, 2));
    let mut s = add(&shift_limbs(&s1, k), &q);
    let pos = add(&shift_limbs(&u, k), &a0);
    let q2 = mul(&q, &q);
    if cmp(&pos, &q2) != Ordering::Less {
        return (s, sub(&pos, &q2));
    }
    // r = pos - q² < 0: step s down; each step adds 2s + 1 (the new s) to r.
    let mut deficit = sub(&q2, &pos);
    loop {
        s = sub(&s, &[1]);
        let inc = add_small(&mul_small(&s, 2), 1);
        if cmp(&inc, &deficit) != Ordering::Less {
            return (s, sub(&inc, &deficit));
        }
        deficit = sub(&deficit, &inc);
    }
}

/// `floor(sqrt(a))`: [`sqrt_rem`] of `a·c²`, with the small factor `c` that
/// brings the top limb to at least BASE/4 (and keeps the length), divided by
/// `c` again (`floor(floor(c·√a) / c) = floor(√a)`).
pub fn isqrt(a: &[u32]) -> Nat {
    let Some(&top) = a.last() else { return Vec::new() };
    if let Some(v) = to_u128(a) {
        return from_u128(sqrt_rem_u128(v).0);
    }
    // The largest c with (top + 1)·c² <= BASE: top·c² plus the carry from
    // below (< c²) stays under BASE, and top·c² >= BASE/4 (checked for every
    // top below BASE/4 at each change of c).
    let c = (BASE / (top as u64 + 1)).isqrt() as u32;
    let scaled = mul_small(a, c * c);
    debug_assert_eq!(scaled.len(), a.len());
    debug_assert!(scaled[scaled.len() - 1] as u64 >= BASE / 4);
    let (s, _) = sqrt_rem(&scaled);
    divmod_small(&s, c).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 11
    }

    fn random_nat(seed: &mut u64, limbs: usize) -> Nat {
        trim((0..limbs).map(|_| (lcg(seed) % BASE) as u32).collect())
    }

    #[test]
    fn digits_round_trip() {
        assert_eq!(from_digits(&[]), Vec::<u32>::new());
        assert_eq!(from_digits(&[0, 0, 1, 2]), vec![12]);
        assert_eq!(from_digits(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]), vec![0, 1]);
        assert_eq!(to_digits(&[0, 1]), vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(to_digits(&[]), Vec::<u8>::new());
        let mut s = 3;
        for len in [1, 2, 5, 40, 100] {
            let a = random_nat(&mut s, len);
            assert_eq!(from_digits(&to_digits(&a)), a);
        }
        assert_eq!(digit_count(&[0, 1]), 10);
        assert_eq!(digit_count(&[999_999_999]), 9);
    }

    #[test]
    fn small_values_match_u128() {
        let mut s = 11;
        for _ in 0..5000 {
            let x = (lcg(&mut s) as u128) * (lcg(&mut s) as u128 >> (lcg(&mut s) % 50));
            let y = ((lcg(&mut s) as u128) >> (lcg(&mut s) % 50)) + 1;
            let (a, b) = (from_u128(x), from_u128(y));
            assert_eq!(to_u128(&add(&a, &b)), Some(x + y));
            if x >= y {
                assert_eq!(to_u128(&sub(&a, &b)), Some(x - y));
            }
            if let Some(p) = x.checked_mul(y) {
                assert_eq!(to_u128(&mul(&a, &b)), Some(p));
            }
            let (q, r) = divmod(&a, &b);
            assert_eq!((to_u128(&q), to_u128(&r)), (Some(x / y), Some(x % y)), "{x} / {y}");
            let root = to_u128(&isqrt(&a)).unwrap();
            assert!(root * root <= x && (root + 1) * (root + 1) > x);
        }
    }

    #[test]
    fn large_products_and_quotients_agree() {
        // (a × b + r) / b = a rem r for r < b, over sizes that exercise the
        // schoolbook, unbalanced and Karatsuba paths and Knuth's add-back.
        let mut s = 5;
        for (la, lb) in [(3, 2), (50, 45), (200, 41), (130, 130), (700, 90), (90, 700), (2, 300)] {
            for _ in 0..4 {
                let a = random_nat(&mut s, la);
                let b = random_nat(&mut s, lb);
                let p = mul(&a, &b);
                assert_eq!(p, mul_school(&a, &b), "{la}x{lb}");
                if b.is_empty() {
                    continue;
                }
                let r = divmod(&random_nat(&mut s, lb), &b).1;
                let (q, rr) = divmod(&add(&p, &r), &b);
                assert_eq!((q, rr), (a.clone(), r));
            }
        }
        // Divisors with a top limb just under BASE / 2 and at BASE - 1, and
        // remainders that make the quotient estimate too large.
        for top in [1u32, 499_999_999, 500_000_000, 999_999_999] {
            let b: Nat = vec![999_999_999, 0, top];
            let a: Nat = vec![0, 0, 0, 999_999_998, top - (top > 1) as u32, top];
            let (q, r) = divmod(&a, &b);
            assert_eq!(add(&mul(&q, &b), &r), a);
            assert_eq!(cmp(&r, &b), Ordering::Less);
        }
    }

    #[test]
    fn square_roots() {
        let mut s = 9;
        for len in [5, 9, 40, 121] {
            let a = random_nat(&mut s, len);
            let r = isqrt(&a);
            assert_ne!(cmp(&mul(&r, &r), &a), Ordering::Greater);
            let r1 = add_small(&r, 1);
            assert_eq!(cmp(&mul(&r1, &r1), &a), Ordering::Greater);
        }
        // Perfect squares come back exactly, their neighbours one less; every
        // top limb size (normalization) and length (mod 4) is exercised.
        for len in [5, 6, 7, 8, 9, 40, 77, 130, 301] {
            for top in [1u32, 7, 249_999_999, 250_000_000, 999_999_999] {
                let mut x = random_nat(&mut s, len);
                let n = x.len();
                x[n - 1] = top;
                let sq = mul(&x, &x);
                assert_eq!(isqrt(&sq), x, "len {len} top {top}");
                assert_eq!(isqrt(&sub(&sq, &[1])), sub(&x, &[1]), "len {len} top {top}");
                let r = isqrt(&x);
                assert_ne!(cmp(&mul(&r, &r), &x), Ordering::Greater);
                let r1 = add_small(&r, 1);
                assert_eq!(cmp(&mul(&r1, &r1), &x), Ordering::Greater, "len {len} top {top}");
            }
        }
        assert_eq!(sqrt_rem_u128(u128::MAX), (u64::MAX as u128, u128::MAX - (u64::MAX as u128) * (u64::MAX as u128)));
    }

    #[test]
    fn powers_of_ten() {
        let a = from_u64(123_456_789_123);
        let text: String = to_digits(&mul_pow10(&a, 12)).iter().map(|d| (b'0' + d) as char).collect();
        assert_eq!(text, "123456789123000000000000");
        let (q, d) = div_pow10(&a, 3);
        assert_eq!((q, d), (from_u64(123_456_789), Dropped { half: false, nonzero: true }));
        assert_eq!(div_pow10(&from_u64(1_500), 3), (from_u64(1), Dropped { half: true, nonzero: true }));
        assert_eq!(div_pow10(&from_u64(1_000), 3), (from_u64(1), Dropped { half: false, nonzero: false }));
        assert_eq!(div_pow10(&from_u64(5_000_000_000), 10), (vec![], Dropped { half: true, nonzero: true }));
        assert_eq!(div_pow10(&from_u64(4_999_999_999), 10), (vec![], Dropped { half: false, nonzero: true }));
        assert_eq!(div_pow10(&from_u64(7), 30), (vec![], Dropped { half: false, nonzero: true }));
        assert_eq!(div_pow10(&pow10(27), 27), (vec![1], Dropped { half: false, nonzero: false }));
        assert_eq!(div_pow10(&add(&pow10(27), &mul_small(&pow10(17), 5)), 18).1, Dropped { half: true, nonzero: true });
    }
}
