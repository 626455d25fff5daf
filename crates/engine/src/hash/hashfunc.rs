//! PostgreSQL's hash functions, bit for bit: `hash_bytes` (formerly `hash_any`) and
//! `hash_bytes_uint32` (`hash_uint32`) are Bob Jenkins' lookup3 mix ("hash()",
//! 2006, public domain) as PostgreSQL 15 uses it in `src/common/hashfn.c`, with
//! PostgreSQL's initial value (`0x9e3779b9 + length + 3923095`); the typed helpers
//! are what PostgreSQL's hash operator classes call for each type (`hashint8`'s
//! folding of the high half, `hashfloat8`'s treatment of -0 and NaN, `hashbpchar`'s
//! trailing blanks). Equal values of one operator family hash equal: `hash_int8(x)
//! == hash_int4(x)` for every `x` in int4's range, as PostgreSQL needs for its
//! cross-type integer family.
//!
//! Words are read little-endian: on a little-endian machine that is what
//! PostgreSQL's word-wide and byte-wise paths both read, so the values equal
//! PostgreSQL's on x86-64 and ARM64 whatever the alignment of the input.

/// lookup3's `mix`: reversible mixing of three 32-bit words.
#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`: the last avalanche into `c`.
#[inline]
fn finish(mut a: u32, mut b: u32, mut c: u32) -> u32 {
    c = (c ^ b).wrapping_sub(b.rotate_left(14));
    a = (a ^ c).wrapping_sub(c.rotate_left(11));
    b = (b ^ a).wrapping_sub(a.rotate_left(25));
    c = (c ^ b).wrapping_sub(b.rotate_left(16));
    a = (a ^ c).wrapping_sub(c.rotate_left(4));
    b = (b ^ a).wrapping_sub(a.rotate_left(14));
    (c ^ b).wrapping_sub(b.rotate_left(24))
}

#[inline]
fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// PostgreSQL's `hash_bytes` (`hash_any`) of `key`.
pub fn hash_bytes(key: &[u8]) -> u32 {
    let init = 0x9e37_79b9u32.wrapping_add(key.len() as u32).wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut blocks = key.chunks_exact(12);
    for blk in &mut blocks {
        a = a.wrapping_add(word(&blk[0..4]));
        b = b.wrapping_add(word(&blk[4..8]));
        c = c.wrapping_add(word(&blk[8..12]));
        mix(&mut a, &mut b, &mut c);
    }
    // The last 0..11 bytes, zero-padded: bytes 0-3 go to a, 4-7 to b and 8-10 to
    // the upper three bytes of c (its low byte is "reserved for the length" in
    // lookup2's layout, which PostgreSQL kept). Adding zeroes changes nothing, so
    // an empty tail needs no special case.
    let rest = blocks.remainder();
    let mut t = [0u8; 12];
    t[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&t[0..4]));
    b = b.wrapping_add(word(&t[4..8]));
    c = c.wrapping_add(u32::from_le_bytes([0, t[8], t[9], t[10]]));
    finish(a, b, c)
}

/// PostgreSQL's `hash_bytes_uint32` (`hash_uint32`): the hash of one 32-bit word.
pub fn hash_uint32(k: u32) -> u32 {
    let init = 0x9e37_79b9u32.wrapping_add(4).wrapping_add(3_923_095);
    finish(init.wrapping_add(k), init, init)
}

/// `hashint2`: the value sign-extended to 32 bits.
pub fn hash_int2(v: i16) -> u32 {
    hash_uint32(v as i32 as u32)
}

/// `hashint4` (also date, whose value is an int4 day number).
pub fn hash_int4(v: i32) -> u32 {
    hash_uint32(v as u32)
}

/// `hashint8` (also timestamp, timestamptz, time and pg_lsn): the high half is
/// folded into the low one so that values in int4's range hash as `hashint4`.
pub fn hash_int8(v: i64) -> u32 {
    let lo = v as u32;
    let hi = (v >> 32) as u32;
    hash_uint32(if v >= 0 { lo ^ hi } else { lo ^ !hi })
}

/// `hashoid`.
pub fn hash_oid(v: u32) -> u32 {
    hash_uint32(v)
}

/// `hashchar` (also bool: false 0, true 1): the byte as a signed C `char`.
pub fn hash_char(v: u8) -> u32 {
    hash_uint32(v as i8 as i32 as u32)
}

/// `hashfloat8`: 0 for both zeroes (they are equal), every NaN as the one NaN.
pub fn hash_float8(v: f64) -> u32 {
    if v == 0.0 {
        return 0;
    }
    let v = if v.is_nan() { f64::NAN } else { v };
    hash_bytes(&v.to_le_bytes())
}

/// `hashfloat4`: hashed as the equal float8, so that float4 and float8 (one
/// operator family) agree.
pub fn hash_float4(v: f32) -> u32 {
    hash_float8(v as f64)
}

/// `hashtext` under a deterministic collation (varchar uses it too), `hashname`,
/// `hashvarlena` (bytea) and `uuid_hash`: the bytes.
pub fn hash_text(v: &[u8]) -> u32 {
    hash_bytes(v)
}

/// `hashbpchar`: trailing blanks do not count (`'a  ' = 'a'` for character(n)).
pub fn hash_bpchar(v: &[u8]) -> u32 {
    let n = v.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    hash_bytes(&v[..n])
}

/// `interval_hash`: `hashint8` of the low 64 bits of the interval's comparison
/// value (months as 30 days, days as 24 hours, in microseconds).
pub fn hash_interval(months: i32, days: i32, micros: i64) -> u32 {
    let d = (months as i64) * 30 + days as i64;
    hash_int8(micros.wrapping_add(d.wrapping_mul(86_400_000_000)))
}

/// `timetz_hash`: `hashint8` of the time XORed with `hash_uint32` of the zone
/// offset (seconds west of UTC).
pub fn hash_timetz(micros: i64, zone: i32) -> u32 {
    hash_int8(micros) ^ hash_uint32(zone as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed by PostgreSQL 15 (x86-64), e.g. `select hashtext(substr(S, 1,
    /// n)) from generate_series(0, 40) n`: every tail length 0..11 and several whole
    /// 12-byte blocks, integers at the edges of their ranges, the float specials.
    #[test]
    fn equal_postgresql_15() {
        const S: &str = "The quick brown fox jumps over the lazy dog 0123456789";
        let text: [i32; 41] = [
            -1477818771, 189977564, -1032424723, -2092041454, -529746819, 1319395734, 2048143525, 105174900,
            -461557097, 916841358, 1490567601, 2124940397, 82921656, -1857862021, -435097191, 1349080213,
            -807732534, 1801273035, 2125926248, -287177489, -685456130, 300619715, -1262620514, -1236432247,
            -1217470220, 1370806276, 2038649153, 1771424372, 1000863782, -1372205352, 1474626926, 1482680789,
            -2097643709, 1270545934, 282202191, 646838985, -542547460, 1430556688, -1835488606, 1690460682,
            -1767799431,
        ];
        for (n, want) in text.iter().enumerate() {
            assert_eq!(hash_text(&S.as_bytes()[..n]) as i32, *want, "hashtext of {n} bytes");
        }
        assert_eq!(hash_text(b"x") as i32, 1074944137);
        assert_eq!(hash_text("h\u{e9}llo w\u{f6}rld \u{fc}n\u{ef}code".as_bytes()) as i32, -815073686);
        for (v, want) in [
            (i64::MIN, -96758253),
            (-123456789012, 1743192617),
            (-4294967296, -272711505),
            (-1, 385747274),
            (0, -272711505),
            (1, -1905060026),
            (4294967296, -1905060026),
            (123456789012, 1645134813),
            (i64::MAX, -1524351049),
        ] {
            assert_eq!(hash_int8(v) as i32, want, "hashint8({v})");
        }
        for (v, want) in [(i32::MIN, -1524351049), (-1, 385747274), (0, -272711505), (1, -1905060026), (1000000, -723906379), (i32::MAX, -96758253)] {
            assert_eq!(hash_int4(v) as i32, want, "hashint4({v})");
        }
        assert_eq!(hash_int2(-3) as i32, -1044245375);
        for (v, want) in [
            (f64::NEG_INFINITY, -1377680656),
            (-1.0, 1360688392),
            (0.1, -573871567),
            (1.0, 376496956),
            (1e300, 318710814),
            (f64::INFINITY, -2133226302),
            (f64::NAN, -1275764840),
            (1.5, 630860146),
        ] {
            assert_eq!(hash_float8(v) as i32, want, "hashfloat8({v})");
        }
        assert_eq!(hash_float8(0.0), 0);
        assert_eq!(hash_float8(-0.0), 0);
        assert_eq!(hash_float4(1.5) as i32, 630860146);
        assert_eq!(hash_bpchar(b"ab  ") as i32, 1718550461);
        assert_eq!(hash_bpchar(b"   ") as i32, -1477818771);
        assert_eq!(hash_text(b"ab") as i32, 1718550461);
        assert_eq!(hash_oid(7) as i32, -978793473);
        assert_eq!(hash_char(b'a') as i32, 463612535);
        assert_eq!(hash_char(b'1') as i32, 888805212);
        // chr(200)::"char": the first byte of its UTF-8 form, 0xc3 (signed: -61).
        assert_eq!(hash_char(0xc3) as i32, 372385741);
        // interval '1 mon 2 days 03:04:05.123456', time '12:34:56.789',
        // timetz '12:34:56.789+05:30' (zone: seconds west of UTC).
        assert_eq!(hash_interval(1, 2, 11_045_123_456) as i32, -122722052);
        assert_eq!(hash_int8(45_296_789_000) as i32, 1053370306);
        assert_eq!(hash_timetz(45_296_789_000, -19800) as i32, -1445374169);
    }

    #[test]
    fn int8_folds_to_int4() {
        for v in [0i32, 1, -1, 42, -42, i32::MAX, i32::MIN, 123456789] {
            assert_eq!(hash_int8(v as i64), hash_int4(v));
            assert_eq!(hash_int4(v), hash_int4(v));
        }
        for v in [0i16, 1, -1, i16::MAX, i16::MIN] {
            assert_eq!(hash_int2(v), hash_int4(v as i32));
        }
        assert_eq!(hash_float8(f64::NAN), hash_float8(-f64::NAN));
    }
}
