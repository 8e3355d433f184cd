//! Reproductions of llvm-xray's formatting and of the iteration order of LLVM's `DenseMap`,
//! which decides the order of rows and stacks in several llvm-xray outputs.

use std::fmt::Write as _;

/// A `double` as C's `printf("%e")` (and LLVM's `raw_ostream << double`) prints it:
/// six decimals, exponent with a sign and at least two digits (`9.000000e-08`).
pub fn format_e(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let s = format!("{v:.6e}");
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut out = String::with_capacity(16);
    out.push_str(mant);
    let _ = write!(
        out,
        "e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    );
    out
}

/// LLVM's `DenseMapInfo<unsigned>::getHashValue` (also used for `int`): `v * 37`.
fn hash(v: u32) -> u32 {
    v.wrapping_mul(37)
}

/// The order in which an LLVM `DenseMap` with 32-bit integer keys iterates over `keys`, given in
/// insertion order (no erasures). Returns indices into `keys`.
///
/// DenseMap starts with 64 buckets, grows ×2 when more than 3/4 full (rehashing in bucket
/// order), places keys at `hash & (n-1)` with quadratic probing, and iterates by bucket.
pub fn densemap_order(keys: &[u32]) -> Vec<usize> {
    let mut buckets: Vec<Option<usize>> = Vec::new();
    let insert = |buckets: &mut Vec<Option<usize>>, idx: usize, key: u32| {
        let n = buckets.len();
        if n == 0 {
            return;
        }
        let mask = n - 1;
        let mut b = hash(key) as usize & mask;
        let mut probe = 1usize;
        loop {
            match buckets.get(b) {
                Some(None) => {
                    if let Some(slot) = buckets.get_mut(b) {
                        *slot = Some(idx);
                    }
                    return;
                }
                Some(Some(_)) => {
                    b = (b + probe) & mask;
                    probe += 1;
                }
                None => return,
            }
        }
    };
    let mut entries = 0usize;
    for (idx, &key) in keys.iter().enumerate() {
        let new_entries = entries + 1;
        let nb = buckets.len();
        if new_entries * 4 >= nb * 3 {
            let new_n = (nb * 2).max(64);
            let old = std::mem::replace(&mut buckets, vec![None; new_n]);
            for i in old.into_iter().flatten() {
                if let Some(&k) = keys.get(i) {
                    insert(&mut buckets, i, k);
                }
            }
        }
        insert(&mut buckets, idx, key);
        entries = new_entries;
    }
    buckets.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_format() {
        assert_eq!(format_e(9.0e-8), "9.000000e-08");
        assert_eq!(format_e(2.693e-4), "2.693000e-04");
        assert_eq!(format_e(0.0), "0.000000e+00");
        assert_eq!(format_e(123456.0), "1.234560e+05");
        assert_eq!(format_e(1e100), "1.000000e+100");
    }

    #[test]
    fn densemap() {
        // 1..6 hash to buckets 37, 10, 47, 20, 57, 30.
        assert_eq!(densemap_order(&[1, 2, 3, 4, 5, 6]), vec![1, 3, 5, 0, 2, 4]);
    }
}
