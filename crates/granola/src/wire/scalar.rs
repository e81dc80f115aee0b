//! How scalar field types map to header slots and list entries.

/// A scalar type storable in a header slot (8 bytes) and in a packed list
/// entry array (`WIDTH` bytes per element).
pub trait WireScalar: Copy + Default + PartialEq + std::fmt::Debug {
    /// Bytes per element in a repeated field's entry array.
    const WIDTH: usize;
    /// The 8-byte slot value.
    fn to_slot(self) -> u64;
    /// Inverse of `to_slot` (truncating, as protobuf does for varints).
    fn from_slot(v: u64) -> Self;
    /// Writes `WIDTH` little-endian bytes.
    fn write_entry(self, out: &mut [u8]);
    /// Reads `WIDTH` little-endian bytes (`bytes.len() == WIDTH`).
    fn read_entry(bytes: &[u8]) -> Self;
}

macro_rules! int_scalar {
    ($t:ty, $width:expr, $to:expr, $from:expr) => {
        impl WireScalar for $t {
            const WIDTH: usize = $width;
            #[inline]
            fn to_slot(self) -> u64 {
                let f: fn($t) -> u64 = $to;
                f(self)
            }
            #[inline]
            fn from_slot(v: u64) -> Self {
                let f: fn(u64) -> $t = $from;
                f(v)
            }
            #[inline]
            fn write_entry(self, out: &mut [u8]) {
                out[..$width].copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_entry(bytes: &[u8]) -> Self {
                let mut a = [0u8; $width];
                a.copy_from_slice(&bytes[..$width]);
                <$t>::from_le_bytes(a)
            }
        }
    };
}

int_scalar!(u32, 4, |v| v as u64, |v| v as u32);
int_scalar!(i32, 4, |v| v as i64 as u64, |v| v as i32);
int_scalar!(u64, 8, |v| v, |v| v);
int_scalar!(i64, 8, |v| v as u64, |v| v as i64);
int_scalar!(f32, 4, |v| v.to_bits() as u64, |v| f32::from_bits(v as u32));
int_scalar!(f64, 8, |v| v.to_bits(), f64::from_bits);

impl WireScalar for bool {
    const WIDTH: usize = 1;
    #[inline]
    fn to_slot(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_slot(v: u64) -> Self {
        v != 0
    }
    #[inline]
    fn write_entry(self, out: &mut [u8]) {
        out[0] = self as u8;
    }
    #[inline]
    fn read_entry(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_ints_sign_extend() {
        assert_eq!((-1i32).to_slot(), u64::MAX);
        assert_eq!(i32::from_slot(u64::MAX), -1);
        assert_eq!(i64::from_slot((-5i64).to_slot()), -5);
        assert_eq!(f32::from_slot(1.5f32.to_slot()), 1.5);
        let mut b = [0u8; 4];
        (-2i32).write_entry(&mut b);
        assert_eq!(b, [0xfe, 0xff, 0xff, 0xff]);
        assert_eq!(i32::read_entry(&b), -2);
    }
}
