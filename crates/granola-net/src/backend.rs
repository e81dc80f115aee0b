//! Choosing the event-loop backend (the datapath) a [`crate::server::Server`]
//! runs on.
//!
//! The protocol code is written once, against the
//! [`Service`](crate::server::Service) / [`Session`](crate::server::Session) /
//! [`ConnIo`](crate::server::ConnIo) and
//! [`DatagramService`](crate::server::DatagramService) traits with
//! [`TxQueue`](crate::TxQueue), [`RxBuffer`](crate::RxBuffer) and
//! [`UdpTx`](crate::udp::UdpTx); each backend is one module that drives those
//! traits with its own kernel interface:
//!
//! ```text
//!   Epoll      server.rs       readiness: epoll_wait, recv, sendmsg
//!   Uring      uring/          completions: one io_uring_enter per loop turn
//!   Xdp        xdp/            AF_XDP rings over the pool's UMEM
//! ```
//!
//! The kind is chosen at run time ([`ServerConfig::datapath`]). A backend
//! that the kernel, its settings or the process's privileges do not allow is
//! detected by [`resolve`] before any worker starts, and the server falls
//! back to epoll with one log line saying why.
//!
//! [`ServerConfig::datapath`]: crate::server::ServerConfig::datapath

use std::fmt;
use std::str::FromStr;

/// Environment variable that test harnesses and benchmarks read to pick the
/// datapath ([`DatapathKind::from_env`]); the servers themselves take the
/// kind from their configuration only.
pub const DATAPATH_ENV: &str = "GRANOLA_DATAPATH";

/// AF_XDP settings: which interface and queue the socket binds, and the
/// static neighbour configuration (there is no ARP on this datapath).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpConfig {
    /// Network interface name (e.g. `veth0`).
    pub interface: String,
    /// Receive queue id on that interface.
    pub queue_id: u32,
    /// Bind in copy mode only (otherwise zero-copy is tried first).
    pub force_copy: bool,
    /// Attach the XDP program in generic (skb) mode instead of trying the
    /// driver first (on veth, generic mode has the lower latency here).
    pub generic: bool,
    /// Entries per ring (0: [`crate::xdp::DEFAULT_RING_SIZE`]).
    pub ring_size: u32,
    /// Source address of replies (default: the address the first request
    /// was sent to).
    pub local_ip: Option<std::net::Ipv4Addr>,
    /// Static neighbours: peer IPv4 address -> MAC. Peers not listed get
    /// replies at the MAC their requests came from.
    pub neighbours: Vec<(std::net::Ipv4Addr, [u8; 6])>,
    /// Reply packets whose payload is larger than this go out as one
    /// descriptor per payload piece (values named where they lie);
    /// smaller ones are copied behind their headers. `None`: 512 B in
    /// zero-copy mode, never in copy mode (where the kernel copies every
    /// byte anyway and each extra descriptor costs it a page fragment).
    pub gather_min: Option<usize>,
}

/// The event-loop backend of a server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DatapathKind {
    /// Readiness-based loop over epoll with `recv`/`sendmsg` (always
    /// available on Linux).
    #[default]
    Epoll,
    /// Completion-based loop over io_uring.
    Uring,
    /// Kernel bypass over AF_XDP (UDP only).
    Xdp(XdpConfig),
}

impl DatapathKind {
    /// Short name for flags and log lines.
    pub fn name(&self) -> &'static str {
        match self {
            DatapathKind::Epoll => "epoll",
            DatapathKind::Uring => "uring",
            DatapathKind::Xdp(_) => "xdp",
        }
    }

    /// The kind named by [`DATAPATH_ENV`], or epoll when it is unset.
    /// Panics on a value that names no datapath, so a mistyped test setting
    /// cannot silently test epoll twice.
    pub fn from_env() -> DatapathKind {
        match std::env::var(DATAPATH_ENV) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .unwrap_or_else(|e| panic!("{DATAPATH_ENV}={v:?}: {e}")),
            _ => DatapathKind::Epoll,
        }
    }

    /// Checks at run time whether this backend can run here; `Err` says
    /// why not.
    pub fn probe(&self) -> Result<(), String> {
        match self {
            DatapathKind::Epoll => Ok(()),
            DatapathKind::Uring => crate::uring::probe(),
            DatapathKind::Xdp(cfg) => crate::xdp::probe(cfg),
        }
    }
}

impl fmt::Display for DatapathKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DatapathKind {
    type Err = String;

    /// `epoll`, `uring` (`io_uring` too), `xdp` (interface and queue filled
    /// in by the caller) or `xdp:IF[:QUEUE]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "epoll" => Ok(DatapathKind::Epoll),
            "uring" | "io_uring" | "io-uring" => Ok(DatapathKind::Uring),
            "xdp" | "af_xdp" => Ok(DatapathKind::Xdp(XdpConfig::default())),
            x if x.starts_with("xdp:") => {
                // xdp:IF or xdp:IF:QUEUE
                let mut parts = s[4..].splitn(2, ':');
                let interface = parts.next().unwrap_or_default().to_string();
                let queue_id = match parts.next() {
                    Some(q) => q.parse().map_err(|_| format!("bad queue id in {s:?}"))?,
                    None => 0,
                };
                Ok(DatapathKind::Xdp(XdpConfig {
                    interface,
                    queue_id,
                    ..XdpConfig::default()
                }))
            }
            other => Err(format!(
                "unknown datapath {other:?} (expected epoll, uring, xdp or xdp:IF[:QUEUE])"
            )),
        }
    }
}

/// The backend that will actually run for `wanted`: `wanted` itself if its
/// probe passes, otherwise epoll, with one log line saying why.
pub fn resolve(wanted: &DatapathKind) -> DatapathKind {
    match wanted.probe() {
        Ok(()) => wanted.clone(),
        Err(why) => {
            log::warn!("datapath {wanted} unavailable ({why}); falling back to epoll");
            DatapathKind::Epoll
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        assert_eq!("epoll".parse::<DatapathKind>(), Ok(DatapathKind::Epoll));
        assert_eq!("io_uring".parse::<DatapathKind>(), Ok(DatapathKind::Uring));
        assert!("dpdk".parse::<DatapathKind>().is_err());
    }

    #[test]
    fn resolve_follows_the_probe() {
        for kind in [
            DatapathKind::Epoll,
            DatapathKind::Uring,
            DatapathKind::Xdp(XdpConfig::default()),
        ] {
            let expect = if kind.probe().is_ok() {
                kind.clone()
            } else {
                DatapathKind::Epoll
            };
            assert_eq!(resolve(&kind), expect);
        }
        assert_eq!(DatapathKind::Epoll.probe(), Ok(()));
    }
}
