//! A small fast hasher for pointer-keyed maps (the Firefox/rustc "Fx" multiply-rotate hash):
//! the keys are MonoMethod*, MonoClass* and object addresses from the file, so HashDoS is not
//! a concern worth SipHash's cost on the hot path.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hasher.
#[derive(Clone, Copy, Debug, Default)]
pub struct FxHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut a = [0u8; 8];
            if let Some(dst) = a.get_mut(..chunk.len()) {
                dst.copy_from_slice(chunk);
            }
            self.add(u64::from_le_bytes(a));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
