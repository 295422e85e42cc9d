//! The hash Kafka's default partitioner gives a record key: murmur2 as Java's `Utils.murmur2` (seed
//! 0x9747b28c), unsigned. The Kafka sink picks a keyed record's partition with it once per message
//! (protocol_adapters/kafka/partitioning.py keeps the same function in Python for a checkout without the core).

const SEED: u32 = 0x9747_b28c;
const M: u32 = 0x5bd1_e995;

pub fn murmur2(data: &[u8]) -> u32 {
    let mut h = SEED ^ data.len() as u32;
    let mut words = data.chunks_exact(4);
    for word in words.by_ref() {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]).wrapping_mul(M);
        k ^= k >> 24;
        h = h.wrapping_mul(M) ^ k.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (at, byte) in tail.iter().enumerate() {
            h ^= u32::from(*byte) << (8 * at);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

#[cfg(test)]
mod tests {
    use super::murmur2;

    #[test]
    fn agrees_with_kafkas_partitioner() {
        // Kafka's own test vectors (clients/src/test/.../UtilsTest.testMurmur2), as unsigned
        let cases: [(&[u8], i32); 4] = [(b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
                                        (b"a-little-bit-longer-string", -1486304829)];
        for (key, java) in cases {
            assert_eq!(murmur2(key), java as u32, "{}", String::from_utf8_lossy(key));
        }
    }
}
