//! The state hash every dynamics model reports: FNV-1a over the little-endian bytes of the bit
//! patterns of its state, so two runs hash equal exactly when their states are bit for bit
//! equal (determinism tests, `sylva bench sim`).

/// FNV-1a, 64 bits.
#[derive(Clone, Copy, Debug)]
pub struct StateHash(u64);

impl Default for StateHash {
    fn default() -> Self {
        StateHash::new()
    }
}

impl StateHash {
    /// The FNV-1a offset basis.
    pub fn new() -> StateHash {
        StateHash(0xcbf2_9ce4_8422_2325)
    }

    /// Adds the bit patterns of `values`, in order.
    pub fn add(&mut self, values: impl IntoIterator<Item = f32>) {
        for x in values {
            for byte in x.to_bits().to_le_bytes() {
                self.0 ^= byte as u64;
                self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }

    /// The hash of everything added.
    pub fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::StateHash;

    #[test]
    fn hashes_the_bits_in_order() {
        // FNV-1a of the empty input is the offset basis; of the byte 0x61 ("a"), the published
        // test vector 0xaf63dc4c8601ec8c. 0x61 as the low byte of an f32 bit pattern with
        // three zero bytes after it hashes as "a\0\0\0".
        assert_eq!(StateHash::new().finish(), 0xcbf2_9ce4_8422_2325);
        let mut h = StateHash::new();
        h.add([f32::from_bits(0x61)]);
        let mut expect = 0xaf63_dc4c_8601_ec8cu64;
        for _ in 0..3 {
            expect = expect.wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(h.finish(), expect);
        let (mut a, mut b) = (StateHash::new(), StateHash::new());
        a.add([1.0, 2.0]);
        b.add([2.0, 1.0]);
        assert_ne!(a.finish(), b.finish(), "order matters");
        let (mut z, mut n) = (StateHash::new(), StateHash::new());
        z.add([0.0]);
        n.add([-0.0]);
        assert_ne!(z.finish(), n.finish(), "bits, not values");
    }
}
