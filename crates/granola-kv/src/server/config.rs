//! Command-line flags. Where memcached has a flag with the same meaning,
//! granola-kv uses the same letter (`-p -U -m -M -t -l -c -I`), so it drops in.

use super::baselines::Serializer;
use clap::Parser;
use std::net::{IpAddr, Ipv4Addr};

pub use crate::store::EvictionPolicy;
use crate::store::LfuTuning;

/// Who may run `DEBUG`: Redis's `enable-debug-command`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugCommand {
    /// Nobody (Redis's default).
    No,
    /// Every client.
    Yes,
    /// Clients connected over loopback.
    Local,
}

impl DebugCommand {
    /// Redis's name.
    pub fn name(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }
}

/// granola-kv: a cache server (memcached, Redis RESP2/RESP3 and native granola
/// protocols) whose replies reference stored values instead of copying them.
#[derive(Parser, Clone, Debug)]
#[command(name = "granola-kv", version, about, long_about = None)]
pub struct Config {
    /// memcached TCP port (0 = off).
    #[arg(short = 'p', long = "port", default_value_t = 11211)]
    pub port: u16,

    /// The store's clock: the system's, or a manual one that tests move
    /// (expiry and access times without sleeping). Not a flag.
    #[arg(skip)]
    pub clock: crate::store::Clock,

    /// memcached UDP port (0 = off; off by default, as in memcached 1.5.6+:
    /// UDP replies can be used for amplification attacks).
    #[arg(short = 'U', long = "udp-port", default_value_t = 0)]
    pub udp_port: u16,

    /// Redis protocol (RESP2/RESP3) TCP port (0 = off).
    #[arg(long = "resp-port", default_value_t = 6379)]
    pub resp_port: u16,

    /// Native granola protocol TCP port (0 = off).
    #[arg(long = "native-port", default_value_t = 11311)]
    pub native_port: u16,

    /// Native granola protocol UDP port (0 = off).
    #[arg(long = "native-udp-port", default_value_t = 0)]
    pub native_udp_port: u16,

    /// Native protocol payload encoding: the same frames, kinds and
    /// statuses, encoded by granola or by a baseline library, each with its
    /// best send path (see `server::baselines`). prost, flatbuffers and
    /// capnp are built in only with the cargo feature `baselines`.
    #[arg(long = "serializer", value_enum, default_value_t = Serializer::Granola)]
    pub serializer: Serializer,

    /// Address to listen on.
    #[arg(short = 'l', long = "listen", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub listen: IpAddr,

    /// Memory limit in MiB for everything the server holds: items (keys,
    /// values, metadata, index), values pinned by replies in flight, and
    /// connection buffers (their share is `--conn-memory`). Least recently
    /// used items are evicted (CLOCK, and whole cold segments when a size
    /// class needs memory) to stay under it.
    #[arg(short = 'm', long = "memory-limit", default_value_t = 64)]
    pub memory_mb: usize,

    /// What a write that needs memory past `-m` does, as Redis's policy
    /// of the same name: `allkeys-lru` evicts the least recently used
    /// items, as a cache does; `allkeys-lfu` the least frequently used,
    /// `allkeys-random` any; the `volatile-` forms (`-lru`, `-lfu`,
    /// `-random`, and `-ttl`: the soonest to expire) evict only keys with
    /// an expiry; `noeviction` refuses the write (Redis `-OOM`, memcached
    /// `SERVER_ERROR out of memory`), as a job queue or session store
    /// wants its data kept. Expired items are removed either way. `CONFIG
    /// SET maxmemory-policy` changes it at run time.
    #[arg(long = "maxmemory-policy", value_enum, default_value_t = EvictionPolicy::AllkeysLru)]
    pub maxmemory_policy: EvictionPolicy,

    /// Redis's `lfu-log-factor`: how many uses it takes to raise an item's
    /// LFU counter (the LFU policies only).
    #[arg(long = "lfu-log-factor", default_value_t = LfuTuning::default().log_factor)]
    pub lfu_log_factor: u32,

    /// Redis's `lfu-decay-time`: minutes unused per step down of an item's
    /// LFU counter; 0 never decays it (the LFU policies only).
    #[arg(long = "lfu-decay-time", default_value_t = LfuTuning::default().decay_minutes)]
    pub lfu_decay_time: u32,

    /// memcached's `-M`: return errors instead of evicting (the same as
    /// `--maxmemory-policy noeviction`).
    #[arg(short = 'M', long = "disable-evictions")]
    pub disable_evictions: bool,

    /// The share of `-m`, in MiB, for connection receive/transmit buffers
    /// and UDP buffers (0 = auto: an eighth of `-m`, at least 8 MiB, plus
    /// 2.5 MiB per UDP port and worker thread for its receive batch; at
    /// most half of `-m`). A connection that cannot get buffer memory is
    /// closed with a log line; the items' memory is never used for it.
    #[arg(long = "conn-memory", default_value_t = 0)]
    pub conn_memory_mb: usize,

    /// Worker threads (default: one per core).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,

    /// Most simultaneous connections.
    #[arg(short = 'c', long = "conn-limit", default_value_t = 4096)]
    pub max_conns: usize,

    /// Close a connection whose peer has read none of its queued replies
    /// for this many seconds, with a log line (0 = never). A client that
    /// stops reading otherwise holds its queued replies (and the values
    /// they pin) for as long as it stays connected.
    #[arg(long = "write-timeout", default_value_t = 30)]
    pub write_timeout_secs: u64,

    /// Close a connection that has sent nothing for this many seconds and
    /// has no reply queued (0 = never, the default, as memcached's
    /// `-o idle_timeout`).
    #[arg(long = "idle-timeout", default_value_t = 0)]
    pub idle_timeout_secs: u64,

    /// Longest idle nap of a worker, in microseconds (0, the default: no
    /// naps; 50 is a good value): after serving, a worker that finds
    /// nothing ready sleeps up to half as long as it just worked, at most
    /// this, before blocking, so that its clients need not wake it (a
    /// cross-CPU wake-up they pay for). Clients get more requests through
    /// and the server spends more CPU per request. Never under a cgroup
    /// CPU quota. See docs/datapaths.md.
    #[arg(long = "idle-nap-us", default_value_t = 0)]
    pub idle_nap_us: u64,

    /// memcached's extended options, comma-separated (`-o
    /// idle_timeout=600,modern`): `idle_timeout=N` as `--idle-timeout`;
    /// memcached's tuning options (hashpower, slab_reassign, lru_crawler,
    /// modern, ...) are accepted with a log line saying they have no
    /// effect here; anything else is an error.
    #[arg(short = 'o', long = "extended", value_delimiter = ',', value_parser = super::extended::parse_extended)]
    pub extended: Vec<super::extended::ExtendedOption>,

    /// Largest value in bytes (memcached's -I).
    #[arg(short = 'I', long = "max-item-size", default_value_t = 1 << 20, value_parser = parse_size)]
    pub max_item_size: usize,

    /// Values at least this many bytes are sent by reference (their own
    /// iovec); shorter ones are copied into the reply buffer. A number, or
    /// `auto` to measure this machine's crossover at start (about a second).
    #[arg(long = "copy-threshold", default_value = "1024")]
    pub copy_threshold: String,

    /// Turn off prefetching referenced values before the gathering send.
    #[arg(long = "no-prefetch")]
    pub no_prefetch: bool,

    /// Native protocol: build each reply's scatter-gather list first
    /// (`to_sga`) and queue that (`send_sga`), instead of serialize-and-send
    /// straight into the TX buffer. Only for measuring what the fused path
    /// saves (Cornflakes Table 5).
    #[arg(long = "no-fused")]
    pub no_fused: bool,

    /// Send with MSG_ZEROCOPY (falls back to plain sends, with a log line,
    /// where the kernel refuses). Only a real NIC benefits; on loopback the
    /// kernel copies anyway.
    #[arg(long = "zerocopy")]
    pub zerocopy: bool,

    /// Event loop: `epoll`, `uring` (io_uring) or `xdp` (AF_XDP for the UDP
    /// protocols, with `--xdp-if`; TCP stays on epoll). Falls back to epoll,
    /// with a log line, where the kernel or privileges do not allow it.
    #[arg(long = "datapath", default_value = "epoll")]
    pub datapath: granola_net::DatapathKind,

    /// `--datapath xdp`: the network interface whose queue the AF_XDP socket
    /// binds (the UDP ports are steered to it by an XDP program).
    #[arg(long = "xdp-if")]
    pub xdp_if: Option<String>,

    /// `--datapath xdp`: the receive queue id.
    #[arg(long = "xdp-queue", default_value_t = 0)]
    pub xdp_queue: u32,

    /// `--datapath xdp`: bind in copy mode (do not try zero-copy).
    #[arg(long = "xdp-copy")]
    pub xdp_copy: bool,

    /// `--datapath xdp`: attach the XDP program in generic (skb) mode.
    #[arg(long = "xdp-generic")]
    pub xdp_generic: bool,

    /// `--datapath xdp`: a static neighbour `IP=MAC` (repeatable); other
    /// peers get replies at the MAC their requests came from.
    #[arg(long = "xdp-neighbour", value_parser = parse_neighbour)]
    pub xdp_neighbours: Vec<(Ipv4Addr, [u8; 6])>,

    /// `--datapath xdp`: reply packets whose payload is larger than this
    /// many bytes go out as one descriptor per piece, stored values named
    /// where they lie; smaller ones are copied behind their headers.
    /// Default: 512 in zero-copy mode, never in copy mode (veth, lo),
    /// where the kernel copies every byte anyway.
    #[arg(long = "xdp-gather-min")]
    pub xdp_gather_min: Option<usize>,

    /// Do not ask for transparent huge pages for the value pool.
    #[arg(long = "no-huge-pages")]
    pub no_huge_pages: bool,

    /// Maximum UDP reply bytes per request byte, memcached and native UDP
    /// alike (replies to unverified sources are bounded to limit
    /// amplification; 0 = no cap).
    #[arg(long = "udp-amplification", default_value_t = 10)]
    pub udp_amplification: usize,

    /// RESP: clients must authenticate (`AUTH <password>` or `HELLO 3 AUTH
    /// default <password>`) before other commands, as Redis' `requirepass`.
    #[arg(long = "requirepass")]
    pub requirepass: Option<String>,

    /// RESP: how long a Lua script (EVAL) may run, in milliseconds, before
    /// it is stopped with an error (it holds every other RESP client while
    /// it runs). Redis' `busy-reply-threshold` default.
    #[arg(long = "script-time-limit", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub script_time_limit_ms: u64,

    /// RESP: keyspace notifications, as Redis's `notify-keyspace-events`
    /// (`KEA` for all; empty = off; `CONFIG SET` changes it at run time).
    #[arg(long = "notify-keyspace-events", default_value = "")]
    pub notify_keyspace_events: String,

    /// RESP: who may run `DEBUG` (Redis's `enable-debug-command`): `no`
    /// (Redis's default), `yes`, or `local` (loopback clients only).
    #[arg(long = "enable-debug-command", value_enum, default_value_t = DebugCommand::No)]
    pub enable_debug_command: DebugCommand,

    /// RESP: number of databases (`SELECT 0..n-1`), as Redis' `databases`.
    #[arg(long = "databases", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub databases: u16,

    /// RESP: largest bulk string in a request (Redis' `proto-max-bulk-len`,
    /// 512 MiB), and so the largest value a Redis client can store; capped
    /// at the memory limit (`-m`).
    #[arg(long = "proto-max-bulk-len", default_value = "512m", value_parser = parse_size)]
    pub proto_max_bulk_len: usize,

    /// Most elements one list, hash or set may hold (a push past it is
    /// refused); the memory limit usually binds first.
    #[arg(long = "max-list-len", default_value_t = u32::MAX as usize)]
    pub max_list_len: usize,

    /// Bind every enabled protocol to a kernel-chosen port instead of its
    /// configured one (tests; the ports are in `Running::addrs`).
    #[arg(skip)]
    pub ephemeral_ports: bool,

    /// Reads an MGET makes to find one snapshot before it runs again alone
    /// in the RESP gate (tests lower it to make that happen). Not a flag.
    #[arg(skip = 32usize)]
    pub mget_snapshot_tries: usize,
}

/// Pool segment size: the memory shares are whole segments.
const SEGMENT: usize = granola::SEGMENT_SIZE;

/// Segments the item pool has beyond the item share (16 MiB): room for
/// the partly filled segments of the size classes in use.
pub const CLASS_SLACK_SEGMENTS: usize = 8;

/// Segments the connection pool has beyond the connection share (8 MiB),
/// for the same reason: receive buffers double from 16 KiB to the largest
/// request (seven classes up to 1 MiB), and without slack a share of four
/// segments fails the fifth class in use while most of its bytes are
/// free. The share itself is the pool's byte budget.
pub const CONN_CLASS_SLACK_SEGMENTS: usize = 4;

fn parse_neighbour(s: &str) -> Result<(Ipv4Addr, [u8; 6]), String> {
    granola_net::xdp::parse_neighbour(s).ok_or_else(|| format!("not IP=MAC: {s:?}"))
}

/// Parses `1048576`, `1m`, `512k`, `2g`.
fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&s[..s.len() - 1], 1usize << 10),
        Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("not a size: {s:?}"))
}

impl Config {
    /// Defaults with every protocol (UDP too) on a kernel-chosen port of
    /// 127.0.0.1 — for tests; the ports are in [`super::Running::addrs`].
    pub fn for_tests() -> Config {
        let mut c = Config::parse_from(["granola-kv"]);
        c.udp_port = 1;
        c.native_udp_port = 1;
        c.threads = Some(2);
        c.ephemeral_ports = true;
        // The suites run once per datapath (scripts/test.sh).
        c.datapath = granola_net::DatapathKind::from_env();
        if let Err(why) = c.datapath.probe() {
            eprintln!(
                "NOTE: datapath {} unavailable here ({why}); tests run on epoll",
                c.datapath
            );
        }
        c
    }

    /// The datapath with the `--xdp-*` flags filled in.
    pub fn datapath_kind(&self) -> granola_net::DatapathKind {
        match &self.datapath {
            granola_net::DatapathKind::Xdp(x) => {
                let mut x = x.clone();
                if let Some(i) = &self.xdp_if {
                    x.interface = i.clone();
                    x.queue_id = self.xdp_queue;
                }
                x.force_copy |= self.xdp_copy;
                x.generic |= self.xdp_generic;
                x.neighbours.extend(self.xdp_neighbours.iter().copied());
                x.gather_min = self.xdp_gather_min.or(x.gather_min);
                granola_net::DatapathKind::Xdp(x)
            }
            other => other.clone(),
        }
    }

    /// The port to bind for a protocol configured with `port` (None = off).
    pub fn bind_port(&self, port: u16) -> Option<u16> {
        match (port, self.ephemeral_ports) {
            (0, _) => None,
            (_, true) => Some(0),
            (p, false) => Some(p),
        }
    }

    /// The largest RESP bulk string: `--proto-max-bulk-len`, at most the
    /// memory limit, at least `-I`.
    pub fn max_bulk(&self) -> usize {
        self.proto_max_bulk_len
            .min(self.memory_bytes())
            .max(self.max_item_size)
    }

    /// The Lua memory of a worker's scripting state: a 32nd of `-m`,
    /// 4 MiB to 256 MiB.
    pub fn script_memory_limit(&self) -> usize {
        (self.memory_bytes() / 32).clamp(4 << 20, 256 << 20)
    }

    /// How long a script may run (`--script-time-limit`).
    pub fn script_time_limit(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.script_time_limit_ms)
    }

    /// The write timeout (`--write-timeout`; None = off).
    pub fn write_timeout(&self) -> Option<std::time::Duration> {
        (self.write_timeout_secs > 0)
            .then(|| std::time::Duration::from_secs(self.write_timeout_secs))
    }

    /// The longest idle nap (`--idle-nap-us`; None = off).
    pub fn idle_nap(&self) -> Option<std::time::Duration> {
        (self.idle_nap_us > 0).then(|| std::time::Duration::from_micros(self.idle_nap_us))
    }

    /// The idle timeout: `-o idle_timeout=N` if given (the last one),
    /// else `--idle-timeout` (None = off).
    pub fn idle_timeout(&self) -> Option<std::time::Duration> {
        let from_o = self.extended.iter().rev().find_map(|o| match o {
            super::extended::ExtendedOption::IdleTimeout(d) => Some(*d),
            super::extended::ExtendedOption::NoEffect(_) => None,
        });
        let d = from_o.unwrap_or(std::time::Duration::from_secs(self.idle_timeout_secs));
        (!d.is_zero()).then_some(d)
    }

    /// The memory limit in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory_mb.saturating_mul(1 << 20)
    }

    /// The connection buffers' share of the memory limit (`--conn-memory`,
    /// whole pool segments).
    pub fn conn_memory_bytes(&self) -> usize {
        let m = self.memory_bytes();
        let want = match self.conn_memory_mb {
            0 => {
                let udp_ports = [self.udp_port, self.native_udp_port]
                    .iter()
                    .filter(|&&p| p != 0)
                    .count();
                let threads = self
                    .threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                // A UDP receive batch: 32 slots of 80 KiB (64 KiB datagrams).
                let udp = udp_ports * threads * ((32 * 80) << 10);
                // AF_XDP: the fill ring holds a ring of pool frames for
                // the kernel, and replies are framed in pool buffers.
                let xdp = if matches!(self.datapath, granola_net::DatapathKind::Xdp(_)) {
                    2 * granola_net::xdp::DEFAULT_RING_SIZE as usize * granola_net::xdp::FRAME_SIZE
                } else {
                    0
                };
                ((m / 8).max(8 << 20) + udp + xdp).min(m / 2)
            }
            mb => mb
                .saturating_mul(1 << 20)
                .min(m.saturating_sub(2 * SEGMENT)),
        };
        (want / SEGMENT).max(2) * SEGMENT
    }

    /// The eviction policy in force: `--maxmemory-policy`, or
    /// `noeviction` under `-M`.
    pub fn policy(&self) -> EvictionPolicy {
        if self.disable_evictions {
            EvictionPolicy::NoEviction
        } else {
            self.maxmemory_policy
        }
    }

    /// The LFU counter's tunables (`--lfu-log-factor`, `--lfu-decay-time`).
    pub fn lfu_tuning(&self) -> LfuTuning {
        LfuTuning {
            log_factor: self.lfu_log_factor,
            decay_minutes: self.lfu_decay_time,
        }
    }

    /// The items' share of the memory limit: what is left after the
    /// connection buffers, in whole pool segments (at least two). This is
    /// the capacity of the item pool, which bounds the resident item
    /// memory (stored items and values pinned by replies).
    pub fn item_memory_bytes(&self) -> usize {
        let rest = self.memory_bytes().saturating_sub(self.conn_memory_bytes());
        (rest / SEGMENT).max(2) * SEGMENT
    }

    /// Capacity of the connection pool: the connection share (its byte
    /// budget) plus [`CONN_CLASS_SLACK_SEGMENTS`] segments.
    pub fn conn_pool_capacity(&self) -> usize {
        self.conn_memory_bytes() + CONN_CLASS_SLACK_SEGMENTS * SEGMENT
    }

    /// Capacity of the item pool: the item share plus
    /// [`CLASS_SLACK_SEGMENTS`] segments, so that the size classes in use
    /// each have a partly filled segment even when the share is smaller
    /// than one segment per class (a 64 MiB limit is 32 segments; there
    /// are 46 classes). The store keeps the items' slot bytes within the
    /// share; the slack is part of the documented fixed overhead.
    pub fn item_pool_capacity(&self) -> usize {
        self.item_memory_bytes() + CLASS_SLACK_SEGMENTS * SEGMENT
    }
}
