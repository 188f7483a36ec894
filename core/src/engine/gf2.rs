//! Arithmetic on remainders modulo the CRC-16/XMODEM polynomial, and the
//! constants the carry-less engines fold and reduce with.
//!
//! Polynomials over GF(2) are held with bit `i` the coefficient of `x^i`.
//! The CRC state after a message `M` is `M(x) * x^16 mod P(x)`, so feeding
//! `n` more bytes `D` from a state `s` gives `s * x^(8n) + crc(0, D)`: that
//! is what lets a folded 128-bit remainder be handed from one engine to
//! another.

/// The generator polynomial `P(x) = x^16 + x^12 + x^5 + 1`, without its
/// `x^16` term.
pub(crate) const POLY: u16 = 0x1021;

/// The reference CRC: one bit at a time, straight from the definition.
/// Every fast path is tested against it.
pub(crate) fn crc_bitwise(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// `x^-1 mod P = x^15 + x^11 + x^4`: `x * (x^15 + x^11 + x^4) = P - 1`.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) const X_INVERSE: u16 = 0x8810;

/// `x^n mod P`.
pub(crate) const fn x_pow_mod(n: u32) -> u16 {
    // From x^0 = 1, multiply by x n times, reducing as we go.
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & 0x1_0000 != 0 {
            r ^= 0x1_0000 | POLY as u32;
        }
        i += 1;
    }
    r as u16
}

/// `a * b mod P` for two remainders.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) const fn mul_mod(a: u16, b: u16) -> u16 {
    let mut acc: u16 = 0;
    let mut bit = 16;
    while bit > 0 {
        bit -= 1;
        acc = if acc & 0x8000 != 0 {
            (acc << 1) ^ POLY
        } else {
            acc << 1
        };
        if b >> bit & 1 == 1 {
            acc ^= a;
        }
    }
    acc
}

/// A `d` with `d * m = r mod P`, if there is one: `d -> d * m` is linear
/// over the 16 bits of `d`, so Gaussian elimination finds it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const fn solve_mul(m: u16, r: u16) -> Option<u16> {
    // `rows[p]`: a product whose top bit is `p`, and the `d` that gives it.
    let mut rows = [(0u16, 0u16); 16];
    let mut j = 0;
    while j < 16 {
        let (mut v, mut d) = (mul_mod(1 << j, m), 1u16 << j);
        let mut p = 16;
        while p > 0 {
            p -= 1;
            if v >> p & 1 == 1 {
                if rows[p].0 == 0 {
                    rows[p] = (v, d);
                    break;
                }
                v ^= rows[p].0;
                d ^= rows[p].1;
            }
        }
        j += 1;
    }
    let (mut v, mut d) = (r, 0u16);
    let mut p = 16;
    while p > 0 {
        p -= 1;
        if v >> p & 1 == 1 {
            if rows[p].0 == 0 {
                return None;
            }
            v ^= rows[p].0;
            d ^= rows[p].1;
        }
    }
    Some(d)
}

/// `floor(x^80 / P)` without its `x^64` term: Barrett's constant for
/// reducing a polynomial of degree below 80 in two multiplies.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) const BARRETT_MU: u64 = {
    let mut rem: u128 = 1 << 80;
    let mut quotient: u128 = 0;
    let divisor: u128 = 0x1_0000 | POLY as u128;
    let mut bit = 80;
    while bit >= 16 {
        if rem >> bit & 1 == 1 {
            rem ^= divisor << (bit - 16);
            quotient |= 1 << (bit - 16);
        }
        bit -= 1;
    }
    quotient as u64
};

/// `x^80 mod P`: folds the high half of a 128-bit remainder into its low
/// half before the Barrett step.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) const X80: u64 = x_pow_mod(80) as u64;

/// Fold constants for moving a 128-bit remainder `d` bits further on:
/// `[x^d mod P, x^(d+64) mod P]`, for its low and high 64-bit halves.
///
/// Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
/// PCLMULQDQ"): a remainder `A` followed, `d` bits later, by a block `B` is
/// congruent to `A_hi * (x^(d+64) mod P) ^ A_lo * (x^d mod P) ^ B`. Every
/// product has degree below 79, so nothing is reduced until the end.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) const fn fold_keys(d: u32) -> [u64; 2] {
    [x_pow_mod(d) as u64, x_pow_mod(d + 64) as u64]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve_mul_inverts_a_product() {
        // `x^2048 + 1` shares the factor `x + 1` with `P`: a product of it
        // is a multiple of `x + 1` (an even number of bits), and only those
        // have a solution.
        let m = x_pow_mod(2048) ^ 1;
        for m in [m, 0x1234, X_INVERSE, 1] {
            let mut found = 0;
            for r in (0..=u16::MAX).step_by(97) {
                let Some(d) = solve_mul(m, r) else {
                    continue;
                };
                assert_eq!(mul_mod(d, m), r, "m {m:#x} r {r:#x}");
                found += 1;
            }
            assert!(found > 300, "m {m:#x}: {found}");
        }
        assert_eq!(solve_mul(m, 1), None, "an odd number of bits");
        assert_eq!(solve_mul(m, 3).map(|d| mul_mod(d, m)), Some(3));
        assert_eq!(solve_mul(0, 5), None);
    }

    #[test]
    fn check_value() {
        assert_eq!(crc_bitwise(b"123456789"), 0x31C3);
        assert_eq!(crc_bitwise(b""), 0);
    }

    #[test]
    fn x_pow_mod_agrees_with_crc_of_a_one_bit() {
        // The CRC of a single 0x80 byte followed by k zero bytes is
        // x^7 * x^(8k) * x^16 mod P.
        for k in 0..8u32 {
            let mut msg = [0u8; 8];
            msg[0] = 0x80;
            assert_eq!(x_pow_mod(7 + 8 * k + 16), crc_bitwise(&msg[..=k as usize]));
        }
    }

    #[test]
    fn products() {
        for (a, b) in [(1u16, 0x1234u16), (0x8000, 0x8000), (0xFFFF, 0x0F0F)] {
            assert_eq!(mul_mod(a, b), mul_mod(b, a));
            assert_eq!(mul_mod(a, 1), a);
        }
        assert_eq!(mul_mod(x_pow_mod(9), x_pow_mod(30)), x_pow_mod(39));
    }

    #[test]
    fn x_inverse_is_the_inverse_of_x() {
        assert_eq!(mul_mod(X_INVERSE, x_pow_mod(1)), 1);
    }

    #[test]
    fn barrett_constant_is_the_quotient() {
        // mu * P (with mu's x^64 term) is x^80 plus a remainder of degree < 16.
        let mu = (1u128 << 64) | u128::from(BARRETT_MU);
        let mut product = 0u128;
        for bit in 0..17 {
            if (0x1_0000 | u32::from(POLY)) >> bit & 1 == 1 {
                product ^= mu << bit;
            }
        }
        assert_eq!(product >> 16, 1 << 64);
    }
}
