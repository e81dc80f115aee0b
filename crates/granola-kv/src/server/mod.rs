//! The server: configuration, the shared state, and the protocol services
//! mounted on a `granola_net::server::Server`.
//!
//! ```text
//!   config   flags (memcached-compatible where they mean the same)
//!   native   native granola frames (TCP + UDP)
//!   baselines the native protocol with prost/flatbuffers/capnp payloads
//!            (`--serializer`), and their client-side codecs
//!   memcache memcached text + meta (TCP), get/gets over UDP
//!   resp     RESP2 (Redis)
//!   sink     replies into granola-net's TX queue (copy vs reference)
//! ```

pub mod baselines;
pub mod config;
pub mod memcache;
pub mod native;
pub mod resp;
pub mod sink;

use crate::store::{Store, StoreConfig};
use config::Config;
use granola::{Pool, PoolConfig};
use granola_net::server::{
    DatagramHandler, DatagramService, Server, ServerConfig, ServerHandle, ServerStats, Service,
    Session,
};
use granola_net::{Prefetch, TxConfig};
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
    /// When the server started (for `uptime`).
    pub started: Instant,
    /// The configuration it runs with.
    pub config: Config,
    /// Worker threads.
    pub threads: usize,
    /// memcached command counters.
    pub memcache: memcache::McCounters,
}

struct Svc<F: Fn(SocketAddr) -> Box<dyn Session> + Send + Sync> {
    name: &'static str,
    make: F,
}

impl<F: Fn(SocketAddr) -> Box<dyn Session> + Send + Sync> Service for Svc<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn session(&self, peer: SocketAddr) -> Box<dyn Session> {
        (self.make)(peer)
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
    let pool = Pool::new(PoolConfig {
        capacity: config.pool_capacity(),
        huge_pages: !config.no_huge_pages,
    })?;
    let store = Arc::new(Store::new(
        pool.clone(),
        StoreConfig {
            memory_limit: config.memory_bytes(),
            max_item_size: config.max_item_size + 1024,
            ..StoreConfig::default()
        },
    ));
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
    let shared = Arc::new(Shared {
        store,
        copy_threshold: threshold,
        net: std::sync::OnceLock::new(),
        started: Instant::now(),
        config: config.clone(),
        threads: handle_threads(&config),
        memcache: memcache::McCounters::default(),
    });
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
        rx_max: (config.max_item_size + (64 << 10)).max(1 << 20),
        datapath: config.datapath_kind(),
        ..ServerConfig::default()
    };
    let ip: IpAddr = config.listen;
    let mut server = Server::new(pool.clone(), net_cfg);
    let mut order = Vec::new();
    if let Some(port) = config.bind_port(config.port) {
        let s = shared.clone();
        server = server.tcp(
            SocketAddr::new(ip, port),
            Arc::new(Svc {
                name: "memcached",
                make: move |_| {
                    Box::new(memcache::MemcacheSession::new(s.clone())) as Box<dyn Session>
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
                make: move |_| Box::new(resp::RespSession::new(s.clone())) as Box<dyn Session>,
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
                // `--serializer`: native itself or a baseline codec.
                make: move |_| baselines::session(s.clone()),
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
        "granola-kv listening: memcached tcp {} udp {}, resp {}, native tcp {} udp {} ({}); {} threads; memory limit {} MiB; copy threshold {} B; prefetch {}; MSG_ZEROCOPY {}; huge pages {:?}",
        show(addrs.memcache),
        show(addrs.memcache_udp),
        show(addrs.resp),
        show(addrs.native),
        show(addrs.native_udp),
        config.serializer,
        handle_threads(&config),
        config.memory_mb,
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
