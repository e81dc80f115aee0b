//! YCSB-C: read-only, N keys, Zipf-distributed popularity (default 0.99).
//!
//! Cornflakes §6.1.4: 1 M keys of 30–31 bytes, Zipf 0.99; values of a
//! constant size and [`Shape`] — one value (`get`), `k` separate keys read
//! together (`mget-k`), a list of `k` elements read whole (`lrange-k`,
//! GetList) or one element of a `k`-element vector (GetFromList). The
//! total payload `value` is split evenly over the `k` elements.
//!
//! Popularity: [`Popularity`] (plain Zipf over ranks via `rand_distr::Zipf`;
//! key id = rank − 1). Keys: `ycsb:<hex id>` padded to `key_len` (30).

use super::dist::Popularity;
use super::{KeyRef, Op, Shape, Workload};
use crate::load::Rng64;
use rand::RngExt;

/// Key prefix.
pub const PREFIX: &str = "ycsb:";

/// YCSB-C parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct YcsbConfig {
    /// Number of keys (default 1 M).
    pub keys: u64,
    /// Zipf exponent (default 0.99; 0 = uniform).
    pub zipf: f64,
    /// Total value bytes per request (default 4096).
    pub value: u32,
    /// Key length (default 30).
    pub key_len: u16,
    /// Value shape (default single).
    pub shape: Shape,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            keys: 1_000_000,
            zipf: 0.99,
            value: 4096,
            key_len: 30,
            shape: Shape::Single,
        }
    }
}

/// The YCSB-C workload.
#[derive(Clone, Debug)]
pub struct Ycsb {
    cfg: YcsbConfig,
    pop: Popularity,
}

impl Ycsb {
    /// A workload from its parameters.
    pub fn new(cfg: YcsbConfig) -> Result<Ycsb, String> {
        let pop = Popularity::new(cfg.keys, cfg.zipf)?;
        Ok(Ycsb { cfg, pop })
    }

    fn k(&self) -> u32 {
        match self.cfg.shape {
            Shape::Single => 1,
            Shape::Multi(k) | Shape::List(k) | Shape::Vector(k) => k,
        }
    }

    /// Bytes per element.
    pub fn elem_len(&self) -> u32 {
        match self.cfg.shape {
            // mget-k reads k separate keys, each holding value/k bytes.
            Shape::Single => self.cfg.value,
            _ => (self.cfg.value / self.k()).max(1),
        }
    }

    fn key(&self, id: u64) -> KeyRef {
        KeyRef::new(PREFIX, id, self.cfg.key_len)
    }
}

impl Workload for Ycsb {
    fn describe(&self) -> String {
        let c = &self.cfg;
        format!(
            "ycsb:keys={},zipf={},value={},key_len={},shape={}",
            c.keys, c.zipf, c.value, c.key_len, c.shape
        )
    }

    fn load_count(&self) -> u64 {
        self.cfg.keys
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        let e = self.elem_len();
        match self.cfg.shape {
            Shape::Single | Shape::Multi(_) => op.set(self.key(i), e),
            Shape::List(k) | Shape::Vector(k) => op.put_list(self.key(i), (0..k).map(|_| e)),
        }
    }

    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let e = self.elem_len();
        let id = self.pop.sample(rng);
        match self.cfg.shape {
            Shape::Single => op.get(self.key(id), e),
            Shape::Multi(k) => {
                let first = self.key(id);
                let pop = &self.pop;
                let rest = (1..k).map(|_| (KeyRef::new(PREFIX, pop.sample(rng), first.len), e));
                op.multi_get(std::iter::once((first, e)).chain(rest));
            }
            Shape::List(k) => op.get_list(self.key(id), (0..k).map(|_| e)),
            Shape::Vector(k) => {
                let index = rng.random_range(0..k);
                op.cmds.push(super::Cmd::GetFromList {
                    key: self.key(id),
                    index,
                    len: e,
                });
            }
        }
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Cmd;
    use rand::SeedableRng;

    #[test]
    fn shapes_become_commands() {
        let mut rng = Rng64::seed_from_u64(1);
        let mut op = Op::default();
        let mk = |shape| {
            Ycsb::new(YcsbConfig {
                keys: 100,
                shape,
                ..Default::default()
            })
            .unwrap()
        };

        let mut w = mk(Shape::Single);
        w.next_op(&mut rng, &mut op);
        assert!(matches!(op.cmds[..], [Cmd::Get { len: 4096, .. }]));
        w.load_op(5, &mut op);
        assert_eq!(
            op.cmds,
            vec![Cmd::Set {
                key: KeyRef::new(PREFIX, 5, 30),
                len: 4096
            }]
        );
        assert_eq!(KeyRef::new(PREFIX, 5, 30).to_vec().len(), 30);

        let mut w = mk(Shape::Multi(2));
        w.next_op(&mut rng, &mut op);
        assert!(matches!(op.cmds[..], [Cmd::MultiGet { first: 0, n: 2 }]));
        assert!(op.keys.iter().all(|&(_, l)| l == 2048));

        let mut w = mk(Shape::List(2));
        w.next_op(&mut rng, &mut op);
        assert!(matches!(op.cmds[..], [Cmd::GetList { n: 2, .. }]));
        assert_eq!(op.lens, vec![2048, 2048]);
        w.load_op(0, &mut op);
        assert!(matches!(op.cmds[..], [Cmd::PutList { n: 2, .. }]));

        let mut w = mk(Shape::Vector(4));
        w.next_op(&mut rng, &mut op);
        assert!(matches!(
            op.cmds[..],
            [Cmd::GetFromList {
                index: 0..=3,
                len: 1024,
                ..
            }]
        ));
    }
}
