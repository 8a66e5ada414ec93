//! Key generation: a small seedable PRNG (wyrand) and uniform or zipfian draws
//! over the key space 1..=N. Key k has popularity rank k (key 1 is the hottest).

/// wyrand: tiny, fast, good enough for load generation; fully determined by its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(splitmix64(seed))
    }

    /// A seed for stream `i` derived from a base seed, so connections differ.
    pub fn for_stream(seed: u64, i: u64) -> Self {
        Rng::new(splitmix64(seed ^ splitmix64(i.wrapping_add(0x51_7c_c1_b7))))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) ^ t) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 1..=n (Lemire's multiply-shift; the bias is negligible here).
    #[inline]
    pub fn range1(&mut self, n: u64) -> u64 {
        (((self.next_u64() as u128) * (n as u128)) >> 64) as u64 + 1
    }
}

pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Zipf over 1..=n with exponent s > 0: P(k) proportional to k^-s.
/// Rejection-inversion against the continuous envelope h(x) = 1 on [0,1],
/// x^-s beyond; O(1) setup (no zeta sum), works for any s > 0 including 1.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    s: f64,
    t: f64,
    q: f64,
    s_is_one: bool,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Self {
        assert!(n >= 1 && s > 0.0 && s.is_finite());
        let nf = n as f64;
        let s_is_one = (s - 1.0).abs() < 1e-12;
        let (t, q) = if s_is_one {
            (1.0 + nf.ln(), 0.0)
        } else {
            ((nf.powf(1.0 - s) - s) / (1.0 - s), 1.0 / (1.0 - s))
        };
        Zipf {
            n,
            s,
            t,
            q,
            s_is_one,
        }
    }

    /// Inverse of the envelope's cumulative integral, scaled to [0, t).
    #[inline]
    fn inv_cdf(&self, p: f64) -> f64 {
        let pt = p * self.t;
        if pt <= 1.0 {
            pt
        } else if self.s_is_one {
            (pt - 1.0).exp()
        } else {
            (pt * (1.0 - self.s) + self.s).powf(self.q)
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let inv_b = self.inv_cdf(rng.f64());
            let x = (inv_b + 1.0).floor();
            let mut ratio = x.powf(-self.s);
            if x > 1.0 {
                ratio *= inv_b.powf(self.s);
            }
            if rng.f64() < ratio {
                return (x as u64).clamp(1, self.n);
            }
        }
    }
}

#[derive(Clone, Debug)]
pub enum KeyGen {
    Uniform(u64),
    Zipf(Zipf),
}

impl KeyGen {
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match self {
            KeyGen::Uniform(n) => rng.range1(*n),
            KeyGen::Zipf(z) => z.sample(rng),
        }
    }

    /// Fills `out` with distinct keys (the caller guarantees n >= out.len()).
    pub fn distinct(&self, rng: &mut Rng, out: &mut [u64]) {
        let mut i = 0;
        while i < out.len() {
            let k = self.next(rng);
            if !out[..i].contains(&k) {
                out[i] = k;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(gen: &KeyGen, n: u64, draws: usize, seed: u64) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let mut c = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            let k = gen.next(&mut rng);
            assert!((1..=n).contains(&k), "key {k} out of 1..={n}");
            c[k as usize] += 1;
        }
        c
    }

    #[test]
    fn uniform_in_range_and_flat() {
        let n = 100;
        let c = counts(&KeyGen::Uniform(n), n, 200_000, 7);
        assert_eq!(c[0], 0);
        for &x in &c[1..] {
            assert!(
                (1500..2500).contains(&x),
                "uniform bucket {x} far from 2000"
            );
        }
    }

    #[test]
    fn zipf_in_range_and_skewed() {
        let n = 10_000;
        let draws = 500_000;
        let c = counts(&KeyGen::Zipf(Zipf::new(n, 0.99)), n, draws, 3);
        // Theoretical P(1) = 1 / H(n, 0.99).
        let h: f64 = (1..=n).map(|k| (k as f64).powf(-0.99)).sum();
        let p1 = c[1] as f64 / draws as f64;
        assert!(
            (p1 - 1.0 / h).abs() < 0.01,
            "P(1) = {p1}, expected {}",
            1.0 / h
        );
        // Key 2 about 2^-0.99 as popular as key 1.
        let r = c[2] as f64 / c[1] as f64;
        assert!((0.44..0.56).contains(&r), "c2/c1 = {r}");
        // The hottest 1% of keys take a large share; the coldest half little.
        let hot: u64 = c[1..=100].iter().sum();
        let cold: u64 = c[5001..].iter().sum();
        assert!(hot as f64 / draws as f64 > 0.45, "hot share {hot}");
        assert!((cold as f64 / draws as f64) < 0.12, "cold share {cold}");
        // The tail is reachable.
        assert!(c[5000..].iter().any(|&x| x > 0));
    }

    #[test]
    fn zipf_theta_one_and_tiny_spaces() {
        let c = counts(&KeyGen::Zipf(Zipf::new(1000, 1.0)), 1000, 100_000, 9);
        assert!(c[1] > c[2] && c[2] > c[10]);
        let c = counts(&KeyGen::Zipf(Zipf::new(1, 0.99)), 1, 1000, 9);
        assert_eq!(c[1], 1000);
        let c = counts(&KeyGen::Zipf(Zipf::new(3, 1.5)), 3, 10_000, 9);
        assert!(c[1] > c[2] && c[2] > c[3] && c[3] > 0);
    }

    #[test]
    fn seeded_and_distinct() {
        let g = KeyGen::Zipf(Zipf::new(10, 0.99));
        let (mut a, mut b) = (Rng::for_stream(5, 1), Rng::for_stream(5, 1));
        let (mut x, mut y) = ([0u64; 10], [0u64; 10]);
        g.distinct(&mut a, &mut x);
        g.distinct(&mut b, &mut y);
        assert_eq!(x, y);
        let mut s = x.to_vec();
        s.sort();
        assert_eq!(s, (1..=10).collect::<Vec<_>>());
        assert_ne!(
            Rng::for_stream(5, 1).next_u64(),
            Rng::for_stream(5, 2).next_u64()
        );
    }
}
