//! Workloads: what the load generator asks for.
//!
//! A [`Workload`] hands out [`Op`]s — one arrival of the open-loop schedule,
//! made of one or more [`Cmd`]s (a CDN object's sub-object GETs, the pieces
//! of a split Twitter value, a Redis list's `DEL` + `RPUSH`) — and says how
//! to fill the store first ([`Workload::load_op`]). Commands name keys by
//! [`KeyRef`] and values by length only; the bytes come from the
//! deterministic generator in [`crate::load::value`], so responses are
//! checked without remembering what was sent.
//!
//! | workload | module | parameters and sources |
//! |---|---|---|
//! | YCSB-C | [`ycsb`] | N keys, Zipf 0.99, single / list / vector / multi-key values |
//! | Google protobuf bytes sizes | [`google`] | size buckets of the fleet study, lists of 1, 1–4, 1–8, 1–16 |
//! | Twitter cache trace | [`twitter`] | reader of the published CSV format, synthetic generator, value splitting |
//! | CDN | [`cdn`] | bounded-Pareto object sizes (1 KB … 116 MB, mean ≈ 20 KB), 8 KB sub-objects |
//! | Facebook memcached pools | [`facebook`] | ETC/USR/APP/VAR/SYS key/value sizes and GET/SET/DELETE mixes |
//! | echo | [`echo`] | 1 KiB string, 2×2048, 1 KiB … 128 KiB |
//!
//! [`WorkloadSpec`] parses the command-line form (`ycsb:keys=100000,value=4096`)
//! and builds any of them.

pub mod cdn;
pub mod dist;
pub mod echo;
pub mod facebook;
pub mod google;
pub mod spec;
pub mod twitter;
pub mod ycsb;

pub use crate::load::value::{KeyRef, ValueSpec};
pub use spec::WorkloadSpec;

use crate::load::Rng64;

/// One command of an [`Op`]. Ranges index [`Op::keys`] and [`Op::lens`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// Read one value of `len` bytes.
    Get {
        /// The key.
        key: KeyRef,
        /// Expected value length.
        len: u32,
    },
    /// Read several keys at once (memcached `get k1 k2…`, Redis `MGET`,
    /// native GetM): `(key, value length)` pairs `op.keys[first..first+n]`.
    MultiGet {
        /// First index into `keys`/`lens`.
        first: u32,
        /// Number of keys.
        n: u32,
    },
    /// Write one value of `len` bytes.
    Set {
        /// The key.
        key: KeyRef,
        /// Value length.
        len: u32,
    },
    /// Delete a key (a missing key is a miss, not an error).
    Delete {
        /// The key.
        key: KeyRef,
    },
    /// Read a whole list whose element lengths are `op.lens[first..first+n]`
    /// (Redis `LRANGE k 0 -1`, native GetList; on memcached, a multi-get of
    /// the sub-keys `k.0 … k.n-1`).
    GetList {
        /// The key.
        key: KeyRef,
        /// First index into `lens`.
        first: u32,
        /// Number of elements.
        n: u32,
    },
    /// Replace a key by a list with element lengths `op.lens[first..first+n]`
    /// (Redis `DEL` + `RPUSH`, native PutList; memcached: one `set` per
    /// sub-key).
    PutList {
        /// The key.
        key: KeyRef,
        /// First index into `lens`.
        first: u32,
        /// Number of elements.
        n: u32,
    },
    /// Read element `index` (length `len`) of a list/vector (native
    /// GetFromList, Redis `LINDEX`, memcached `get k.index`).
    GetFromList {
        /// The key.
        key: KeyRef,
        /// Element index.
        index: u32,
        /// Expected element length.
        len: u32,
    },
    /// Append element `index` (length `len`) to a list (native
    /// AppendToList, Redis `RPUSH`, memcached `set` of sub-key `key.index`).
    Append {
        /// The key.
        key: KeyRef,
        /// The element's index once appended (names its value).
        index: u32,
        /// Element length.
        len: u32,
    },
    /// Send a message of pieces `op.lens[first..first+n]` and expect it back
    /// unchanged (native kind 0, Redis `ECHO` of the concatenation).
    Echo {
        /// First index into `lens`.
        first: u32,
        /// Number of pieces.
        n: u32,
    },
}

/// One arrival: a reusable list of commands (cleared, never shrunk, so the
/// steady state does not allocate).
#[derive(Clone, Debug, Default)]
pub struct Op {
    /// The commands, sent back to back at the op's scheduled time.
    pub cmds: Vec<Cmd>,
    /// `(key, value length)` pairs referenced by [`Cmd::MultiGet`].
    pub keys: Vec<(KeyRef, u32)>,
    /// Lengths referenced by range commands.
    pub lens: Vec<u32>,
}

impl Op {
    /// Empties the op, keeping its capacity.
    pub fn clear(&mut self) {
        self.cmds.clear();
        self.keys.clear();
        self.lens.clear();
    }

    /// Adds a [`Cmd::Get`].
    pub fn get(&mut self, key: KeyRef, len: u32) {
        self.cmds.push(Cmd::Get { key, len });
    }

    /// Adds a [`Cmd::Set`].
    pub fn set(&mut self, key: KeyRef, len: u32) {
        self.cmds.push(Cmd::Set { key, len });
    }

    /// Adds a [`Cmd::Delete`].
    pub fn delete(&mut self, key: KeyRef) {
        self.cmds.push(Cmd::Delete { key });
    }

    /// Adds a [`Cmd::MultiGet`] over `(key, len)` pairs.
    pub fn multi_get(&mut self, items: impl IntoIterator<Item = (KeyRef, u32)>) {
        let first = self.keys.len() as u32;
        self.keys.extend(items);
        let n = self.keys.len() as u32 - first;
        self.cmds.push(Cmd::MultiGet { first, n });
    }

    /// Appends lengths and returns their `(first, n)` range.
    pub fn push_lens(&mut self, lens: impl IntoIterator<Item = u32>) -> (u32, u32) {
        let first = self.lens.len();
        self.lens.extend(lens);
        (first as u32, (self.lens.len() - first) as u32)
    }

    /// Adds a [`Cmd::GetList`].
    pub fn get_list(&mut self, key: KeyRef, lens: impl IntoIterator<Item = u32>) {
        let (first, n) = self.push_lens(lens);
        self.cmds.push(Cmd::GetList { key, first, n });
    }

    /// Adds a [`Cmd::PutList`].
    pub fn put_list(&mut self, key: KeyRef, lens: impl IntoIterator<Item = u32>) {
        let (first, n) = self.push_lens(lens);
        self.cmds.push(Cmd::PutList { key, first, n });
    }

    /// Adds a [`Cmd::Echo`].
    pub fn echo(&mut self, lens: impl IntoIterator<Item = u32>) {
        let (first, n) = self.push_lens(lens);
        self.cmds.push(Cmd::Echo { first, n });
    }

    /// Lengths of a range command.
    pub fn range(&self, first: u32, n: u32) -> &[u32] {
        &self.lens[first as usize..(first + n) as usize]
    }

    /// Keys of a [`Cmd::MultiGet`].
    pub fn key_range(&self, first: u32, n: u32) -> &[(KeyRef, u32)] {
        &self.keys[first as usize..(first + n) as usize]
    }
}

/// A source of operations.
///
/// `next_op` is called from one client thread with that thread's RNG; a
/// workload is cloned per thread ([`Workload::fork`]), so it may keep
/// per-thread cursors (CDN sub-objects, trace positions).
pub trait Workload: Send {
    /// Short name and parameters, for reports.
    fn describe(&self) -> String;

    /// Number of load operations that fill the store ([`load_op`](Self::load_op)
    /// `0..load_count()`); 0 when nothing needs loading (echo).
    fn load_count(&self) -> u64;

    /// Fills `op` with load operation `i` (`op` is cleared first).
    fn load_op(&self, i: u64, op: &mut Op);

    /// Fills `op` with the next operation (`op` is cleared first).
    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op);

    /// A copy for client thread `thread` of `threads` (trace replays start
    /// each thread at a different place).
    fn fork(&self, thread: usize, threads: usize) -> Box<dyn Workload>;

    /// Whether a single-key GET that misses is followed by a SET of the
    /// same key and length, as a look-aside cache's client does (the op
    /// then completes with the SET). Workloads with DELETEs and no trace of
    /// their own refills (the Facebook pools) say yes, so the working set
    /// does not drain; default no.
    fn demand_fill(&self) -> bool {
        false
    }
}

/// Lengths of list elements ("shape" of a value) shared by several workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One value per key (GET).
    Single,
    /// `k` separate keys read together (multi-get / MGET / GetM); each value
    /// is `value_len / k` bytes.
    Multi(u32),
    /// One key holding a list of `k` elements, read whole (GetList / LRANGE);
    /// each element `value_len / k` bytes.
    List(u32),
    /// One key holding a vector of `k` elements; each request reads one
    /// random element (GetFromList / LINDEX).
    Vector(u32),
}

impl Shape {
    /// Parses `single`, `multi:K` (or `mget:K`), `list:K` (or `lrange:K`),
    /// `vector:K`.
    pub fn parse(s: &str) -> Result<Shape, String> {
        let (name, k) = match s.split_once(':') {
            Some((n, k)) => (
                n,
                Some(k.parse::<u32>().map_err(|e| format!("shape {s:?}: {e}"))?),
            ),
            None => (s, None),
        };
        let k = k.unwrap_or(1);
        if k == 0 {
            return Err(format!("shape {s:?}: k must be at least 1"));
        }
        match name {
            "single" | "get" => Ok(Shape::Single),
            "multi" | "mget" => Ok(Shape::Multi(k)),
            "list" | "lrange" => Ok(Shape::List(k)),
            "vector" | "vec" => Ok(Shape::Vector(k)),
            _ => Err(format!(
                "unknown shape {s:?} (single, multi:K, list:K, vector:K)"
            )),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Single => write!(f, "single"),
            Shape::Multi(k) => write!(f, "multi:{k}"),
            Shape::List(k) => write!(f, "list:{k}"),
            Shape::Vector(k) => write!(f, "vector:{k}"),
        }
    }
}
