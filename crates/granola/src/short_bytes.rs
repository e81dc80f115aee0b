//! Copies and comparisons of a few bytes without a call into the C library.
//!
//! Most bytes a server copies into a reply are short: `+OK\r\n`, a bulk
//! header such as `$3\r\n`, a 3-byte value, an integer line; most keys it
//! compares are a few dozen bytes. For a length known only at run time
//! `copy_from_slice` calls `memcpy` and `==` calls `memcmp`, whose call,
//! length dispatch and return cost more than the work itself; two
//! overlapping fixed-size loads or moves do it in a handful of
//! instructions.

/// Copies `src` into the first `src.len()` bytes of `dst` (panics, as
/// `copy_from_slice` does, if `dst` is shorter). Up to 32 bytes go as two
/// overlapping fixed-size moves; longer copies call `copy_from_slice`.
#[inline(always)]
pub fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    match n {
        0 => {}
        1..=3 => {
            // First, middle and last byte cover every length up to 3.
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        17..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// `a == b`, with equal lengths up to 32 bytes compared as two
/// overlapping fixed-size loads; longer slices compare with `==`.
#[inline(always)]
pub fn eq_short(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => {
            let w = |s: &[u8], at: usize| u32::from_ne_bytes(word(s, at));
            w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4)
        }
        8..=16 => {
            let w = |s: &[u8], at: usize| u64::from_ne_bytes(word(s, at));
            w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8)
        }
        17..=32 => {
            let w = |s: &[u8], at: usize| u128::from_ne_bytes(word(s, at));
            w(a, 0) == w(b, 0) && w(a, n - 16) == w(b, n - 16)
        }
        _ => a == b,
    }
}

/// The `N` bytes of `s` at `at`.
#[inline(always)]
fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    w.copy_from_slice(&s[at..at + N]);
    w
}

#[cfg(test)]
mod tests {
    use super::{copy_short, eq_short};

    #[test]
    fn every_length_copies_exactly_its_bytes() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            let mut dst = [0u8; 48];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0),
                "length {n} wrote past its end"
            );
        }
    }

    #[test]
    fn equality_agrees_with_slices_at_every_length_and_difference() {
        let a: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            assert!(eq_short(&a[..n], &a[..n]), "length {n}");
            assert!(!eq_short(&a[..n], &a[..n.saturating_sub(1)]) || n == 0);
            for at in 0..n {
                let mut b = a[..n].to_vec();
                b[at] ^= 0x80;
                assert!(!eq_short(&a[..n], &b), "length {n}, byte {at} differs");
            }
        }
    }

    #[test]
    #[should_panic]
    fn a_short_destination_panics() {
        copy_short(&mut [0u8; 3], b"four");
    }
}
