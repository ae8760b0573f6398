//! A seeded random stream for test data, without a random-number crate.

/// Knuth's 64-bit linear congruential generator (MMIX constants): the same stream in every
/// test that shares a seed. Each draw advances the state once.
#[derive(Debug, Clone)]
pub struct Lcg(u64);

impl Lcg {
    /// A stream that starts from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next state (all 64 bits; the low ones are weak, so prefer the draws below).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// A draw uniform in `[0, 1)` (the state's top 53 bits).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A draw uniform in `[-1, 1)`.
    pub fn signed(&mut self) -> f64 {
        self.uniform() * 2.0 - 1.0
    }

    /// A draw in `0..n` (the state's top 31 bits modulo `n`, which must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() >> 33) as usize % n
    }
}

/// A draw uniform in `[0, 1)` from the state `seed` (advanced): [`Lcg::uniform`] for tests that
/// keep the state in a `u64`.
pub fn lcg(seed: &mut u64) -> f64 {
    let mut g = Lcg::new(*seed);
    let x = g.uniform();
    *seed = g.0;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draws_share_one_stream() {
        let (mut a, mut s) = (Lcg::new(7), 7u64);
        for _ in 0..5 {
            assert_eq!(a.clone().uniform(), lcg(&mut s));
            a.next_u64();
        }
        let x = Lcg::new(1).uniform();
        assert!((0.0..1.0).contains(&x));
        assert_eq!(Lcg::new(1).signed(), 2.0 * x - 1.0);
        assert!(Lcg::new(9).below(5) < 5);
    }
}
