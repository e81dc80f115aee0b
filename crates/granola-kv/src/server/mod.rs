//! The server: configuration, the shared state, and the protocol services
//! mounted on a `granola_net::server::Server`.
//!
//! ```text
//!   config   flags (memcached-compatible where they mean the same)
//!   native   native granola frames (TCP + UDP)
//!   baselines the native protocol with prost/flatbuffers/capnp payloads
//!            (`--serializer`), and their client-side codecs
//!   session  the one session driver of every TCP protocol (back-pressure,
//!            also inside a command; pipelined replies; resumable parsing)
//!   memcache memcached text + meta (TCP), get/gets over UDP
//!   resp     RESP2/RESP3 (Redis)
//! ```

pub mod baselines;
pub mod config;
pub mod cron;
pub mod extended;
pub mod memcache;
pub mod metrics;
pub mod native;
pub mod resp;
pub mod session;

use crate::store::{Store, StoreConfig};
use config::Config;
use granola::{Pool, PoolConfig};
use granola_net::server::{
    Accepted, DatagramHandler, DatagramService, Server, ServerConfig, ServerHandle, ServerStats,
    Service, Session,
};
use granola_net::{Prefetch, TxConfig};
use session::Driver;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

/// State every connection shares.
pub struct Shared {
    /// The store.
    pub store: Arc<Store>,
    /// Values at least this long are sent by reference.
    pub copy_threshold: usize,
    /// Connection and send counters of the network layer.
    pub net: std::sync::OnceLock<Arc<ServerStats>>,
    /// The datapath that runs (after any fallback) and, with AF_XDP, its
    /// socket and counters.
    pub datapath: std::sync::OnceLock<RunningDatapath>,
    /// When the server started (for `uptime`).
    pub started: Instant,
    /// The configuration it runs with.
    pub config: Config,
    /// Worker threads.
    pub threads: usize,
    /// memcached command counters.
    pub memcache: crate::command::memcache::McCounters,
    /// Keeps other RESP commands out while an EXEC runs.
    pub resp_gate: crate::command::resp::gate::Gate,
    /// The pool of connection buffers (the `--conn-memory` share).
    pub conn_pool: Pool,
    /// Keys blocked Redis clients wait on (`BLPOP`...), and their wakers.
    pub waiters: Arc<crate::command::resp::blocking::Waiters>,
    /// Redis Pub/Sub channels and patterns.
    pub bus: Arc<crate::command::resp::pubsub_bus::Bus>,
    /// Lua scripts by SHA1 (`EVALSHA`, `SCRIPT LOAD`).
    pub scripts: crate::command::resp::scripting::Scripts,
    /// Function libraries (`FUNCTION LOAD`, `FCALL`).
    pub functions: crate::command::resp::functions::Functions,
    /// Keyspace notifications (`notify-keyspace-events`).
    pub notifier: Arc<crate::command::resp::notify::Notifier>,
    /// Client-side caching: who tracks which keys.
    pub tracker: Arc<crate::command::resp::tracking::Tracker>,
    /// Which keyspace each RESP database number names (SWAPDB).
    pub dbs: Arc<crate::command::databases::DbMap>,
    /// Failed authentications (`ACL LOG`).
    pub acl_log: crate::command::resp::acl::AclLog,
    /// Error replies by code (INFO errorstats).
    pub errors: crate::command::resp::errorstats::ErrorStats,
    /// Calls, time and latency per command (INFO commandstats and
    /// latencystats).
    pub commandstats: crate::command::resp::commandstats::CommandStats,
    /// INFO stats' counters at the last `CONFIG RESETSTAT`.
    pub stats_base: crate::command::resp::resetstat::StatsBase,
    /// Peaks and rates the server cron measures (INFO).
    pub metrics: metrics::Metrics,
    /// A random 40-hex-digit id of this run (INFO `run_id`).
    pub run_id: String,
    /// The Redis connections (`CLIENT LIST`, `CLIENT KILL`).
    pub clients: Arc<crate::command::resp::clients::Registry>,
    /// Every RESP connection's WATCHed keys.
    pub watch_book: Arc<crate::command::resp::transaction::WatchBook>,
}

/// 40 random hex digits, as Redis makes its `run_id` and the end mark
/// of an RDB transfer.
pub(crate) fn random_hex_id() -> String {
    let mut bytes = [0u8; 20];
    // The id only tells runs apart; a clock-derived one does if the OS
    // has no randomness to give.
    if getrandom::fill(&mut bytes).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes[..16].copy_from_slice(&t.to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the network layer runs on, for `stats` and `INFO`.
pub struct RunningDatapath {
    /// The event loop after any fallback.
    pub kind: granola_net::DatapathKind,
    /// The AF_XDP socket, when `kind` is AF_XDP.
    pub xdp: Option<granola_net::xdp::XdpInfo>,
    /// The AF_XDP worker's counters.
    pub xdp_stats: Arc<granola_net::xdp::XdpStats>,
}

impl Shared {
    /// One of the network layer's counters (0 before it starts).
    pub fn net_counter(&self, f: fn(&ServerStats) -> &std::sync::atomic::AtomicU64) -> u64 {
        self.net
            .get()
            .map_or(0, |n| f(n).load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The datapath's name and counters, for `stats` and `INFO`: the
    /// event loop that runs (`epoll`, `uring`, `xdp`), datagrams the server
    /// dropped, and with AF_XDP the socket's mode (copy or zero-copy),
    /// where the program is attached, and its receive and send counters.
    pub fn datapath_parts(&self) -> Vec<(&'static str, String)> {
        let mut parts = Vec::new();
        let Some(d) = self.datapath.get() else {
            return parts;
        };
        parts.push(("datapath", d.kind.name().to_string()));
        let load = |a: &std::sync::atomic::AtomicU64| {
            a.load(std::sync::atomic::Ordering::Relaxed).to_string()
        };
        if let Some(net) = self.net.get() {
            parts.push(("udp_dropped", load(&net.udp_dropped)));
        }
        if let Some(x) = &d.xdp {
            let s = &d.xdp_stats;
            parts.extend([
                ("xdp_interface", x.interface.clone()),
                ("xdp_queue", x.queue_id.to_string()),
                ("xdp_mode", x.mode.name().to_string()),
                ("xdp_attach", x.attach.to_string()),
                ("xdp_mtu", x.mtu.to_string()),
                ("xdp_rx_delivered", load(&s.rx_delivered)),
                ("xdp_rx_reassembled", load(&s.rx_reassembled)),
                ("xdp_rx_dropped", load(&s.rx_dropped)),
                ("xdp_tx_packets", load(&s.tx_packets)),
                ("xdp_tx_bytes_gathered", load(&s.tx_bytes_gathered)),
                ("xdp_tx_bytes_copied_in", load(&s.tx_bytes_copied_in)),
                ("xdp_tx_dropped", load(&s.tx_dropped)),
                ("xdp_kernel_path_delivered", load(&s.kernel_path_delivered)),
            ]);
        }
        parts
    }

    /// Where the memory limit goes, part by part, for `stats` and `INFO`:
    /// (name, bytes). `memory_limit` is `-m`; the item share holds stored
    /// items (`item_bytes`, plus `index_bytes` of heap) and values pinned
    /// by replies in flight (`pinned_bytes`), resident as `item_pool_bytes`
    /// of at most `item_pool_limit`; connection receive/transmit and UDP
    /// buffers take `conn_buffer_bytes` of their share `conn_buffer_limit`,
    /// resident as `conn_pool_bytes` (the share plus
    /// [`config::CONN_CLASS_SLACK_SEGMENTS`] at most).
    pub fn memory_parts(&self) -> [(&'static str, u64); 12] {
        let s = self.store.stats();
        let c = self.conn_pool.stats();
        [
            ("memory_limit", self.config.memory_bytes() as u64),
            ("item_bytes", s.item_bytes as u64),
            ("index_bytes", s.index_bytes as u64),
            ("pinned_bytes", s.pinned_bytes as u64),
            ("item_pool_bytes", s.pool_bytes as u64),
            ("item_pool_limit", s.pool_capacity as u64),
            ("conn_buffer_bytes", c.budget_used as u64),
            ("conn_buffer_limit", self.config.conn_memory_bytes() as u64),
            ("conn_pool_bytes", c.resident_bytes as u64),
            ("segment_evictions", s.segment_evictions),
            ("segment_rescues", s.segment_rescues),
            ("segment_chunk_moves", s.segment_chunk_moves),
        ]
    }
}

struct Svc<F: Fn(&Accepted) -> Box<dyn Session> + Send + Sync> {
    name: &'static str,
    make: F,
    /// What a connection over `-c` is told before it is closed.
    refusal: Option<&'static [u8]>,
}

impl<F: Fn(&Accepted) -> Box<dyn Session> + Send + Sync> Service for Svc<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn session(&self, conn: &Accepted) -> Box<dyn Session> {
        (self.make)(conn)
    }
    fn refusal(&self) -> Option<&[u8]> {
        self.refusal
    }
}

struct UdpSvc<F: Fn() -> Box<dyn DatagramHandler> + Send + Sync> {
    name: &'static str,
    make: F,
}

impl<F: Fn() -> Box<dyn DatagramHandler> + Send + Sync> DatagramService for UdpSvc<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn handler(&self) -> Box<dyn DatagramHandler> {
        (self.make)()
    }
}

/// A running granola-kv.
pub struct Running {
    /// The network server.
    pub handle: ServerHandle,
    /// Shared state (store, counters).
    pub shared: Arc<Shared>,
    /// Bound addresses by protocol.
    pub addrs: Addrs,
}

/// Where each protocol listens (None = off).
#[derive(Clone, Debug, Default)]
pub struct Addrs {
    /// memcached over TCP.
    pub memcache: Option<SocketAddr>,
    /// memcached over UDP.
    pub memcache_udp: Option<SocketAddr>,
    /// RESP over TCP.
    pub resp: Option<SocketAddr>,
    /// Native over TCP.
    pub native: Option<SocketAddr>,
    /// Native over UDP.
    pub native_udp: Option<SocketAddr>,
}

/// Starts the server described by `config` (a port of 0 turns that
/// protocol off; [`Config::for_tests`] binds kernel-chosen ports).
pub fn start(config: Config) -> std::io::Result<Running> {
    // Two pools, one memory limit: items (and the values replies pin) in
    // one, connection buffers in the other, each capped at its share.
    let item_cfg = PoolConfig {
        capacity: config.item_pool_capacity(),
        huge_pages: !config.no_huge_pages,
        budget: None,
    };
    let conn_cfg = PoolConfig {
        capacity: config.conn_pool_capacity(),
        huge_pages: !config.no_huge_pages,
        budget: Some(config.conn_memory_bytes()),
    };
    let (pool, conn_pool) = if matches!(config.datapath, granola_net::DatapathKind::Xdp(_)) {
        // One mapping for both, registered as one AF_XDP UMEM: receive
        // frames come from the connection pool (its budget, so the store
        // cannot starve the fill ring) and transmit descriptors name
        // stored values where they lie.
        let mut group = Pool::new_group(&[item_cfg, conn_cfg])?;
        let conn_pool = group.pop().expect("two pools");
        (group.pop().expect("two pools"), conn_pool)
    } else {
        (Pool::new(item_cfg)?, Pool::new(conn_cfg)?)
    };
    let threshold = match config.copy_threshold.as_str() {
        "auto" => {
            let cal = granola_net::calibrate::calibrate(&pool, Default::default())?;
            log::info!("calibrated copy threshold: {} bytes", cal.threshold);
            cal.threshold
        }
        s => s.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("bad --copy-threshold {s:?}"),
            )
        })?,
    };
    let store = Arc::new(Store::with_clock(
        pool.clone(),
        StoreConfig {
            memory_limit: config.item_memory_bytes(),
            // memcached values are bounded by -I in the parser; Redis
            // values by --proto-max-bulk-len.
            max_item_size: config.max_bulk() + 1024,
            max_list_len: config.max_list_len,
            // Elements replies would reference live where they can (not
            // the tiny ones: a slot of their own costs more than a copy).
            pooled_element_min: threshold.max(64),
            policy: config.policy(),
            lfu: config.lfu_tuning(),
            ..StoreConfig::default()
        },
        config.clock.clone(),
    ));
    let bus: Arc<crate::command::resp::pubsub_bus::Bus> = Default::default();
    let notifier = Arc::new(crate::command::resp::notify::Notifier::new(bus.clone()));
    if !notifier.configure(config.notify_keyspace_events.as_bytes()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "--notify-keyspace-events {:?}: the letters are K E g $ l s h z x e t m d n A",
                config.notify_keyspace_events
            ),
        ));
    }
    let tracker: Arc<crate::command::resp::tracking::Tracker> = Default::default();
    let dbs: Arc<crate::command::databases::DbMap> = Default::default();
    store.watch_removals(Arc::new(crate::command::resp::notify::Removals {
        notifier: notifier.clone(),
        tracker: tracker.clone(),
        dbs: dbs.clone(),
    }));
    let shared = Arc::new(Shared {
        store,
        copy_threshold: threshold,
        net: std::sync::OnceLock::new(),
        datapath: std::sync::OnceLock::new(),
        started: Instant::now(),
        config: config.clone(),
        threads: handle_threads(&config),
        memcache: crate::command::memcache::McCounters::default(),
        resp_gate: Default::default(),
        conn_pool: conn_pool.clone(),
        waiters: Default::default(),
        bus,
        scripts: Default::default(),
        functions: Default::default(),
        notifier,
        tracker,
        acl_log: Default::default(),
        errors: Default::default(),
        commandstats: Default::default(),
        stats_base: Default::default(),
        metrics: Default::default(),
        run_id: random_hex_id(),
        clients: Default::default(),
        watch_book: Default::default(),
        dbs,
    });
    cron::spawn(&shared)?;
    let tx = TxConfig {
        copy_threshold: threshold,
        prefetch: if config.no_prefetch {
            Prefetch::Off
        } else {
            Prefetch::default()
        },
        zerocopy: config.zerocopy,
        ..TxConfig::default()
    };
    let net_cfg = ServerConfig {
        threads: config
            .threads
            .unwrap_or_else(|| ServerConfig::default().threads),
        tx,
        max_conns: config.max_conns,
        rx_max: (config.max_bulk() + (64 << 10)).max(1 << 20),
        datapath: config.datapath_kind(),
        write_timeout: config.write_timeout(),
        idle_timeout: config.idle_timeout(),
        idle_nap: config.idle_nap(),
        ..ServerConfig::default()
    };
    for o in &config.extended {
        if let extended::ExtendedOption::NoEffect(text) = o {
            log::info!("-o {text}: a memcached tuning option with no effect in granola-kv");
        }
    }
    let ip: IpAddr = config.listen;
    let mut server = Server::new(conn_pool.clone(), net_cfg);
    let mut order = Vec::new();
    if let Some(port) = config.bind_port(config.port) {
        let s = shared.clone();
        server = server.tcp(
            SocketAddr::new(ip, port),
            Arc::new(Svc {
                name: "memcached",
                refusal: Some(b"ERROR Too many open connections\r\n"),
                make: move |conn: &Accepted| {
                    Box::new(Driver::new(memcache::Memcache::new(s.clone(), conn.peer)))
                        as Box<dyn Session>
                },
            }),
        );
        order.push("memcache");
    }
    if let Some(port) = config.bind_port(config.resp_port) {
        let s = shared.clone();
        server = server.tcp(
            SocketAddr::new(ip, port),
            Arc::new(Svc {
                name: "resp",
                refusal: Some(b"-ERR max number of clients reached\r\n"),
                make: move |conn: &Accepted| {
                    Box::new(Driver::new(resp::Resp::new(s.clone(), conn))) as Box<dyn Session>
                },
            }),
        );
        order.push("resp");
    }
    if let Some(port) = config.bind_port(config.native_port) {
        let s = shared.clone();
        server = server.tcp(
            SocketAddr::new(ip, port),
            Arc::new(Svc {
                name: "native",
                refusal: None,
                // `--serializer`: native itself or a baseline codec.
                make: move |_: &Accepted| baselines::session(s.clone()),
            }),
        );
        order.push("native");
    }
    let mut udp_order = Vec::new();
    if let Some(port) = config.bind_port(config.udp_port) {
        let s = shared.clone();
        server = server.udp(
            SocketAddr::new(ip, port),
            Arc::new(UdpSvc {
                name: "memcached-udp",
                make: move || {
                    Box::new(memcache::MemcacheUdp::new(s.clone())) as Box<dyn DatagramHandler>
                },
            }),
        );
        udp_order.push("memcache");
    }
    if let Some(port) = config.bind_port(config.native_udp_port) {
        let s = shared.clone();
        server = server.udp(
            SocketAddr::new(ip, port),
            Arc::new(UdpSvc {
                name: "native-udp",
                // `--serializer`: native itself or a baseline codec.
                make: move || baselines::datagram_handler(s.clone()),
            }),
        );
        udp_order.push("native");
    }
    let handle = server.start()?;
    let _ = shared.net.set(handle.stats.clone());
    let _ = shared.datapath.set(RunningDatapath {
        kind: handle.datapath.clone(),
        xdp: handle.xdp.clone(),
        xdp_stats: handle.xdp_stats.clone(),
    });
    let mut addrs = Addrs::default();
    for (name, a) in order.iter().zip(&handle.tcp_addrs) {
        match *name {
            "memcache" => addrs.memcache = Some(*a),
            "resp" => addrs.resp = Some(*a),
            _ => addrs.native = Some(*a),
        }
    }
    for (name, a) in udp_order.iter().zip(&handle.udp_addrs) {
        match *name {
            "memcache" => addrs.memcache_udp = Some(*a),
            _ => addrs.native_udp = Some(*a),
        }
    }
    log::info!(
        "granola-kv listening: memcached tcp {} udp {}, resp {}, native tcp {} udp {} ({}); {} threads; memory limit {} MiB ({} MiB connection buffers); copy threshold {} B; prefetch {}; MSG_ZEROCOPY {}; huge pages {:?}",
        show(addrs.memcache),
        show(addrs.memcache_udp),
        show(addrs.resp),
        show(addrs.native),
        show(addrs.native_udp),
        config.serializer,
        handle_threads(&config),
        config.memory_mb,
        config.conn_memory_bytes() >> 20,
        threshold,
        if config.no_prefetch { "off" } else { "on" },
        if config.zerocopy { "requested" } else { "off" },
        pool.huge_pages(),
    );
    Ok(Running {
        handle,
        shared,
        addrs,
    })
}

fn handle_threads(config: &Config) -> usize {
    config
        .threads
        .unwrap_or_else(|| ServerConfig::default().threads)
}

fn show(a: Option<SocketAddr>) -> String {
    a.map_or_else(|| "off".to_string(), |a| a.to_string())
}
