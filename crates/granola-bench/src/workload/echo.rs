//! Echo shapes: the client sends a message, the server returns it.
//!
//! The shapes of Breakfast of Champions and Cornflakes (a 1 KiB string; an
//! id plus 2 × 2048 B) and the zFlatBuffers message sizes (1 KiB … 128 KiB):
//! a message is `pieces` byte fields of `size` bytes each. Natively the
//! request is a frame of kind 0 carrying a granola `GetListResp` with the
//! pieces as `values` (the echo server decodes and re-encodes it); over RESP
//! it is `ECHO` of the concatenated pieces. Memcached has no echo.
//! Nothing is loaded.

use super::{Op, Workload};
use crate::load::Rng64;

/// Echo parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoConfig {
    /// Number of fields (1).
    pub pieces: u32,
    /// Bytes per field (1024).
    pub size: u32,
}

impl Default for EchoConfig {
    fn default() -> Self {
        EchoConfig {
            pieces: 1,
            size: 1024,
        }
    }
}

impl EchoConfig {
    /// Named shapes: `1k` (1 × 1024), `2x2048`, or `NxS` in general; a bare
    /// size (`64k`, `131072`) is one piece.
    pub fn parse(shape: &str) -> Result<EchoConfig, String> {
        let size = |s: &str| crate::load::parse_size(s);
        match shape.split_once('x') {
            Some((n, s)) => Ok(EchoConfig {
                pieces: n
                    .parse()
                    .map_err(|e| format!("echo shape {shape:?}: {e}"))?,
                size: size(s)?,
            }),
            None => Ok(EchoConfig {
                pieces: 1,
                size: size(shape)?,
            }),
        }
    }

    /// The zFlatBuffers sweep: 1 KiB, 2 KiB, … 128 KiB single fields.
    pub fn zflatbuffers_sizes() -> Vec<EchoConfig> {
        (10..=17)
            .map(|p| EchoConfig {
                pieces: 1,
                size: 1 << p,
            })
            .collect()
    }
}

/// The echo workload.
#[derive(Clone, Debug)]
pub struct Echo {
    cfg: EchoConfig,
}

impl Echo {
    /// A workload from its parameters.
    pub fn new(cfg: EchoConfig) -> Result<Echo, String> {
        if cfg.pieces == 0 {
            return Err("echo: at least one piece".into());
        }
        Ok(Echo { cfg })
    }
}

impl Workload for Echo {
    fn describe(&self) -> String {
        format!("echo:pieces={},size={}", self.cfg.pieces, self.cfg.size)
    }

    fn load_count(&self) -> u64 {
        0
    }

    fn load_op(&self, _i: u64, op: &mut Op) {
        op.clear();
    }

    fn next_op(&mut self, _rng: &mut Rng64, op: &mut Op) {
        op.clear();
        op.echo((0..self.cfg.pieces).map(|_| self.cfg.size));
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse() {
        assert_eq!(
            EchoConfig::parse("1k").unwrap(),
            EchoConfig {
                pieces: 1,
                size: 1024
            }
        );
        assert_eq!(
            EchoConfig::parse("2x2048").unwrap(),
            EchoConfig {
                pieces: 2,
                size: 2048
            }
        );
        assert_eq!(EchoConfig::parse("128k").unwrap().size, 131_072);
        assert_eq!(EchoConfig::zflatbuffers_sizes().len(), 8);
        assert!(EchoConfig::parse("zz").is_err());
    }
}
